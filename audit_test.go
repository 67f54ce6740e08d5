package reprise_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/eventlog/remote"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/schema"
)

// auditFile audits the bbolt store at path.
func auditFile(t *testing.T, path string) *reprise.AuditReport {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := reprise.Audit(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func kinds(rep *reprise.AuditReport) []string {
	var out []string
	for _, v := range rep.Violations {
		out = append(out, v.Kind)
	}
	return out
}

func TestAuditPassesACleanStoreAndCountsWhatHappened(t *testing.T) {
	evs := fullRun(t)
	path := testkit.WriteStore(t, evs)
	rep := auditFile(t, path)
	if len(rep.Violations) != 0 {
		t.Fatalf("violations in a clean store: %v", rep.Violations)
	}
	// fullRun: startup (1 SessionStart hook) + resume (1 SessionEnd, 1 SessionStart).
	if rep.Sessions != 2 || rep.Agents != 1 || rep.Restores != 2 || rep.HooksRun != 3 || rep.Events != len(evs) {
		t.Fatalf("report = %+v", rep)
	}
}

func TestAuditFindsAnOutOfOrderStep(t *testing.T) {
	evs := fullRun(t)
	// Drop the resume's SessionEndHookStarted: SessionEndHookRan then follows
	// SaveAttempted directly.
	cut := cutAfter(t, evs, "resume", schema.TypeSessionEndHookStarted) - 1
	broken := renumber(append(append([]eventlog.Event(nil), evs[:cut]...), evs[cut+1:]...))
	rep := auditFile(t, testkit.WriteStore(t, broken))
	if len(rep.Violations) == 0 || rep.Violations[0].Kind != reprise.ViolationOutOfOrder || rep.Violations[0].Stream != "agent/ide" {
		t.Fatalf("violations = %v", rep.Violations)
	}
}

func TestAuditFindsADuplicatedSessionStartHookRan(t *testing.T) {
	evs := fullRun(t)
	i := cutAfter(t, evs, "resume", schema.TypeSessionStartHookRan) - 1
	dup := evs[i]
	broken := renumber(append(append(append([]eventlog.Event(nil), evs[:i+1]...), dup), evs[i+1:]...))
	rep := auditFile(t, testkit.WriteStore(t, broken))
	if len(rep.Violations) == 0 || rep.Violations[0].Kind != reprise.ViolationDoubleHookRun || rep.Violations[0].Seq != dup.Seq+1 {
		t.Fatalf("violations = %v", rep.Violations)
	}
}

func TestAuditFindsAFlippedByte(t *testing.T) {
	e, path := testkit.NewEngine(t, reprise.Options{})
	testkit.Session(t, e, "a", "", "hello", "FLIP-ME-PLEASE")
	e.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte("FLIP-ME-PLEASE"))
	if i < 0 {
		t.Fatal("marker not found in the file")
	}
	data[i+3] ^= 0x20
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rep := auditFile(t, path)
	found := false
	for _, v := range rep.Violations {
		if v.Kind == reprise.ViolationUndecodable && v.Stream == "session/a" && v.Seq == 3 {
			found = true
		}
	}
	if !found {
		t.Fatalf("flipped byte not located: %v", rep.Violations)
	}
}

// A log that ends while hooks run, or between two steps, is mid-restore,
// not damaged: the next Engine.Agent call rolls it forward.
func TestAuditReportsARestoreTheLogEndsInsideAsInProgress(t *testing.T) {
	evs := fullRun(t)
	for _, tc := range []struct {
		step  eventlog.Type
		state string
	}{
		{schema.TypeSessionStartHookStarted, "starting"},
		{schema.TypeSessionEndHookStarted, "ending"},
		{schema.TypeSessionLoaded, "loaded"},
		{schema.TypeSaveAttempted, "saved"},
	} {
		cut := cutAfter(t, evs, "resume", tc.step)
		rep := auditFile(t, testkit.WriteStore(t, evs[:cut]))
		if len(rep.Violations) != 0 || len(rep.InProgress) != 1 {
			t.Fatalf("cut after %s: violations %v, in progress %v", tc.step, rep.Violations, rep.InProgress)
		}
		p := rep.InProgress[0]
		if p.Agent != "ide" || p.Stream != "agent/ide" || p.Seq != evs[cut-1].Seq || p.ID != evs[cut-1].RestoreID || p.State != tc.state {
			t.Errorf("cut after %s: in progress %+v", tc.step, p)
		}
	}
	if rep := auditFile(t, testkit.WriteStore(t, evs)); len(rep.InProgress) != 0 {
		t.Fatalf("a finished log has steps in progress: %v", rep.InProgress)
	}
}

// Only the last step of an agent can be in progress: a restore left
// unfinished and followed by another one is a violation.
func TestAuditFindsARestoreLeftUnfinishedBeforeAnother(t *testing.T) {
	evs := fullRun(t)
	for _, tc := range []struct {
		step eventlog.Type
		kind string
	}{
		{schema.TypeSessionLoaded, reprise.ViolationUnfinished},
		{schema.TypeSessionStartHookStarted, reprise.ViolationUnresolved},
	} {
		// The startup restore stops after step, then the resume follows.
		cut := cutAfter(t, evs, "startup", tc.step)
		resume := cutAfter(t, evs, "resume", schema.TypeSaveAttempted) - 1
		var broken []eventlog.Event
		for i, ev := range evs {
			if i < cut || i >= resume || ev.Stream != "agent/ide" {
				broken = append(broken, ev)
			}
		}
		rep := auditFile(t, testkit.WriteStore(t, renumber(broken)))
		if got := kinds(rep); len(got) != 1 || got[0] != tc.kind || rep.Violations[0].Stream != "agent/ide" || len(rep.InProgress) != 0 {
			t.Fatalf("startup cut after %s: violations %v, in progress %v", tc.step, rep.Violations, rep.InProgress)
		}
	}
}

// renumber gives evs consecutive per-stream sequences, as a writer that
// appended them in this order would have.
func renumber(evs []eventlog.Event) []eventlog.Event {
	seqs := map[string]uint64{}
	out := make([]eventlog.Event, len(evs))
	for i, ev := range evs {
		seqs[ev.Stream]++
		ev.Seq = seqs[ev.Stream]
		out[i] = ev
	}
	return out
}

// A bbolt file whose newest meta page was zeroed opens at the transaction
// before it, its last append gone without a trace in the log; the audit
// reads both meta pages and reports it, whether the store is open for
// reading or for writing (which only an open that accepts the loss may:
// the next commit overwrites the damaged page).
func TestAuditFindsADamagedMetaPage(t *testing.T) {
	path := testkit.WriteStore(t, fullRun(t))
	fallback := testkit.ZeroNewestMeta(t, path)
	for _, readOnly := range []bool{true, false} {
		s, err := boltstore.Open(path, boltstore.Options{ReadOnly: readOnly, AcceptDamagedMeta: !readOnly, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := reprise.Audit(context.Background(), s)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Violations) != 1 {
			t.Fatalf("read-only %v: violations %v, want one damaged meta page", readOnly, rep.Violations)
		}
		v := rep.Violations[0]
		if v.Kind != reprise.ViolationDamagedMeta || !strings.Contains(v.Detail, "(zeroed)") ||
			!strings.Contains(v.Detail, fmt.Sprintf("at transaction %d,", fallback)) {
			t.Errorf("read-only %v: %v", readOnly, v)
		}
	}
}

// An event of a payload version newer than this build reads was written by
// a newer reprise: audit says so, by type and version, apart from damage;
// the other events still read.
func TestAuditReportsANewerEventVersion(t *testing.T) {
	evs := fullRun(t)
	i := slices.IndexFunc(evs, func(ev eventlog.Event) bool { return ev.Type == schema.TypeSessionStartHookRan })
	evs[i].Version = schema.Version(schema.TypeSessionStartHookRan) + 1
	rep := auditFile(t, testkit.WriteStore(t, evs))
	if len(rep.Violations) != 1 {
		t.Fatalf("violations %v, want one", rep.Violations)
	}
	v := rep.Violations[0]
	want := fmt.Sprintf("SessionStartHookRan version %d was written by a newer reprise", evs[i].Version)
	if v.Kind != reprise.ViolationNewerVersion || v.Stream != evs[i].Stream || v.Seq != evs[i].Seq || !strings.Contains(v.Detail, want) {
		t.Errorf("violation %v, want %s at %s#%d: %s", v, reprise.ViolationNewerVersion, evs[i].Stream, evs[i].Seq, want)
	}
	if rep.Sessions != 2 {
		t.Errorf("sessions %d, want 2: the session streams still read", rep.Sessions)
	}
}

// An audit reads one snapshot of the log: writers appending meanwhile,
// to sessions and through restores that inject context into another
// session, never make it report a violation that is not in the log, on
// the file or through the socket of the Engine that holds it.
func TestAuditWhileWritersAppendFindsNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reprise.db")
	e := testkit.OpenEngine(t, path, reprise.Options{ServeReads: true, Logger: testkit.Discard})
	var c calls
	recordingHooks(t, e.Hooks(), &c, "ctx")
	client, err := remote.Dial(context.Background(), remote.SocketPath(path))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for _, tc := range []struct {
		name  string
		store eventlog.Store
	}{
		{"file", e.Store()},
		{"socket", client},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 200
			if testing.Short() {
				n = 40
			}
			if bad := auditWhileWriting(t, e, tc.name, tc.store, n); len(bad) != 0 {
				t.Fatalf("%d of %d audits found violations; the first: %v", len(bad), n, bad[0])
			}
		})
	}
}

// auditWhileWriting audits store n times while four writers append
// through e, each to sessions of its own and restoring an agent of its own
// between them, and returns the violations of each audit that found any.
// Each audit lets the writers take turns for a few writes, so that they
// write while it reads and the log grows with the audits, not faster.
func auditWhileWriting(t *testing.T, e *reprise.Engine, prefix string, store eventlog.Store, n int) [][]reprise.Violation {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	const turnsPerAudit = 8
	turns := make(chan struct{}, turnsPerAudit)
	for w := range 4 {
		id := fmt.Sprintf("%s-w%d", prefix, w)
		testkit.Session(t, e, id+"-a", "", "hello")
		testkit.Session(t, e, id+"-b", "", "hello")
		a := testkit.Agent(t, e, id)
		if _, err := a.Start(ctx, id+"-a"); err != nil {
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
				cur := []string{id + "-a", id + "-b"}[i/8%2]
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
	var bad [][]reprise.Violation
	var first, last int
	for i := range n {
		for range turnsPerAudit {
			turns <- struct{}{}
		}
		rep, err := reprise.Audit(context.Background(), store)
		if err != nil {
			t.Error(err)
			break
		}
		if len(rep.Violations) != 0 {
			bad = append(bad, rep.Violations)
		}
		if i == 0 {
			first = rep.Events
		}
		last = rep.Events
	}
	if last <= first {
		t.Errorf("the audits saw %d events, then %d: nothing was written while they ran", first, last)
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return bad
}

// A damaged event stops the store-wide reading, and the audit reads on
// stream by stream: what the log holds after it is still checked.
func TestAuditFindsAFlippedByteAndWhatFollowsIt(t *testing.T) {
	evs := fullRun(t)
	cut := cutAfter(t, evs, "resume", schema.TypeSessionEndHookStarted) - 1
	path := testkit.WriteStore(t, renumber(append(append([]eventlog.Event(nil), evs[:cut]...), evs[cut+1:]...)))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte("buffered")) // only session/a#4 holds it
	if i < 0 {
		t.Fatal("the buffered message is not in the file")
	}
	data[i] ^= 0x20
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rep := auditFile(t, path)
	if got := kinds(rep); !slices.Equal(got, []string{reprise.ViolationUndecodable, reprise.ViolationOutOfOrder}) ||
		rep.Violations[0].Stream != "session/a" || rep.Violations[1].Stream != "agent/ide" {
		t.Fatalf("violations %v, want the flipped byte in session/a, then the out-of-order step in agent/ide", rep.Violations)
	}
}

// TestAuditReportsASessionTheMessagesAPIWouldRefuse writes, as an older
// build let a host do, an answer while the calls of the answer before it
// have no result (two answers in a row) and, after their results, an
// answer that reuses their ids: the audit reports both messages, and
// counts only the sessions not deleted.
func TestAuditReportsASessionTheMessagesAPIWouldRefuse(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	testkit.Session(t, e, "a", t.TempDir(), "go")
	testkit.Session(t, e, "gone", t.TempDir(), "bye")
	if err := e.DeleteSession(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "a", bashCalls("a1", "b1")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "a", results("a1", "b1")); err != nil {
		t.Fatal(err)
	}
	evs := testkit.Events(t, e.Store())
	if rep, err := reprise.Audit(ctx, e.Store()); err != nil || len(rep.Unsendable) != 0 || rep.Sessions != 1 || rep.DeletedSessions != 1 {
		t.Fatalf("the store as written: %+v, %v", rep, err)
	}
	var messages []eventlog.Event
	for _, ev := range evs {
		if ev.Stream == "session/a" && ev.Type == schema.TypeMessageAppended {
			messages = append(messages, ev)
		}
	}
	answer := messages[len(messages)-2] // then the results
	// The answer twice before the results, and once more after them.
	var broken []eventlog.Event
	for _, ev := range evs {
		broken = append(broken, ev)
		if ev.Seq == answer.Seq && ev.Stream == answer.Stream {
			broken = append(broken, ev)
		}
	}
	broken = append(broken, answer)
	rep := auditFile(t, testkit.WriteStore(t, renumber(broken)))
	var got []string
	for _, v := range rep.Unsendable {
		got = append(got, v.Kind)
		if v.Stream != "session/a" {
			t.Errorf("%s", v)
		}
	}
	if want := []string{reprise.UnsendableAnswerBeforeResults, reprise.UnsendableDuplicateToolUse}; !slices.Equal(got, want) {
		t.Fatalf("unsendable %v, want kinds %v", rep.Unsendable, want)
	}
	if len(rep.Violations) != 0 {
		t.Errorf("violations %v", rep.Violations)
	}
}
