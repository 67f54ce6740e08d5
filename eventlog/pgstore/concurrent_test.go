package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
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
