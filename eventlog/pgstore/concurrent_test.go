package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/hookexec"
)

// TestConcurrentEnginesAppendToOneSession has several Engines, each over
// its own connection pool to one database, append to one session at once.
// Each conflict is caught up and tried again inside the Engine, so every
// append succeeds, none is lost, each writer's messages keep their order,
// the messages form one chain, and the audit is clean.
func TestConcurrentEnginesAppendToOneSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newDB(t)
	dir := t.TempDir()
	const writers, each = 8, 15
	first := newEngine(t, db.open(t, pgstore.Options{}), dir)
	if _, err := first.CreateSession(ctx, "shared", dir); err != nil {
		t.Fatal(err)
	}
	engines := []*reprise.Engine{first}
	for range writers - 1 {
		engines = append(engines, newEngine(t, db.open(t, pgstore.Options{}), dir))
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	start := make(chan struct{})
	for w, e := range engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range each {
				if _, err := e.Append(ctx, "shared", reprise.Text("user", fmt.Sprintf("w%d-%02d", w, i))); err != nil {
					errs <- fmt.Errorf("writer %d, append %d: %w", w, i, err)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	reader := newEngine(t, db.open(t, pgstore.Options{}), dir)
	msgs, err := reader.FullConversation(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != writers*each {
		t.Fatalf("the session holds %d messages, want %d", len(msgs), writers*each)
	}
	next := make([]int, writers)
	parent := ""
	for i, m := range msgs {
		var w, n int
		if _, err := fmt.Sscanf(m.Content[0].Text, "w%d-%d", &w, &n); err != nil || n != next[w] {
			t.Fatalf("message %d is %q, want writer %d's message %d", i, m.Content[0].Text, w, next[w])
		}
		next[w]++
		if m.ParentUUID != parent {
			t.Fatalf("message %d has parent %q, want %q, the message before it", i, m.ParentUUID, parent)
		}
		parent = m.UUID
	}
	rep, err := reprise.Audit(ctx, reader.Store())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Violations) != 0 {
		t.Errorf("audit: %v", rep.Violations)
	}
}

// TestAuditWhileEnginesAppendFindsNothing audits the database again and
// again while four Engines, each over its own connection pool, append to
// sessions of their own and restore an agent of their own between them,
// injecting context. Each audit lets the Engines take turns for a few
// writes, so that they write while it reads. The audit reads one
// snapshot, so it never reports a violation that is not in the log.
func TestAuditWhileEnginesAppendFindsNothing(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	dir := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	const turnsPerAudit = 8
	turns := make(chan struct{}, turnsPerAudit)
	for w := range 4 {
		e := newEngine(t, db.open(t, pgstore.Options{}), dir)
		err := e.Hooks().OnSessionStart("ctx", "", func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			return hookexec.SessionStartOutput{AdditionalContext: "ctx"}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("w%d", w)
		sessions := []string{id + "-a", id + "-b"}
		for _, s := range sessions {
			if _, err := e.CreateSession(ctx, s, dir); err != nil {
				t.Fatal(err)
			}
		}
		a, err := e.Agent(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Start(ctx, sessions[0]); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-turns:
				case <-ctx.Done():
					return
				}
				cur := sessions[i/8%2]
				var err error
				if i%8 == 0 && i > 0 {
					_, err = a.Restore(ctx, cur)
				} else {
					_, err = e.Append(ctx, cur, reprise.Text("user", fmt.Sprintf("message %d", i)))
				}
				if err != nil && ctx.Err() == nil {
					errs <- fmt.Errorf("writer %s: %w", id, err)
					return
				}
			}
		}()
	}
	reader := db.open(t, pgstore.Options{})
	const audits = 200
	bad, first := 0, ""
	var events []int
	for range audits {
		for range turnsPerAudit {
			turns <- struct{}{}
		}
		rep, err := reprise.Audit(context.Background(), reader)
		if err != nil {
			t.Error(err)
			break
		}
		if len(rep.Violations) != 0 {
			if bad++; first == "" {
				first = fmt.Sprint(rep.Violations)
			}
		}
		events = append(events, rep.Events)
	}
	if len(events) > 0 && events[len(events)-1] <= events[0] {
		t.Errorf("the audits saw %d events, then %d: nothing was written while they ran", events[0], events[len(events)-1])
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if bad != 0 {
		t.Fatalf("%d of %d audits found violations; the first: %s", bad, audits, first)
	}
}

// TestAuditFindsHeadsThatDisagreeWithTheLog plants damage in the heads
// table, one head above the stream's last event and one below it: reading
// one snapshot, the audit still compares the heads with the log, both ways.
func TestAuditFindsHeadsThatDisagreeWithTheLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newDB(t)
	dir := t.TempDir()
	e := newEngine(t, db.open(t, pgstore.Options{}), dir)
	for _, id := range []string{"a", "b"} {
		if _, err := e.CreateSession(ctx, id, dir); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Append(ctx, id, reprise.Text("user", "hello")); err != nil {
			t.Fatal(err)
		}
	}
	db.exec(t, "UPDATE {schema}.reprise_streams SET head = head + 1 WHERE stream = 'session/a'")
	db.exec(t, "UPDATE {schema}.reprise_streams SET head = head - 1 WHERE stream = 'session/b'")
	rep, err := reprise.Audit(ctx, db.open(t, pgstore.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range rep.Violations {
		got = append(got, fmt.Sprintf("%s %s#%d", v.Kind, v.Stream, v.Seq))
	}
	want := []string{"projection-mismatch session/b#2", "projection-mismatch session/a#2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("violations %v, want %v", rep.Violations, want)
	}
}
