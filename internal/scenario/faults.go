package scenario

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// journal is the lines a command prints: its appends, one block each, and
// its hook runs, in the order they happened.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(lines ...string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, lines...)
}

// block adds the lines of one append, apart from what came before.
func (j *journal) block(lines ...string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.lines) > 0 {
		j.lines = append(j.lines, "")
	}
	j.lines = append(j.lines, lines...)
}

func (j *journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.lines
	j.lines = nil
	return out
}

// crashSignal is the panic that stands for the process dying.
type crashSignal struct{}

// withFaults runs do with the faults d asks for armed on the world's
// store, and reports whether the process died.
func (w *World) withFaults(t *testing.T, d *datadriven.TestData, cancel context.CancelFunc, do func() ([]string, error)) (printed []string, err error, crashed bool) {
	t.Helper()
	f := w.faults
	defer func() {
		f.crashAfter, f.failOnce, f.cancelAfter, f.cancel = "", "", "", nil
		f.deleteBefore, f.deleteOther = "", nil
		if r := recover(); r != nil {
			if _, ok := r.(crashSignal); !ok {
				panic(r)
			}
			crashed = true
		}
	}()
	f.crashAfter = eventlog.Type(opt(d, "crash-after"))
	f.failOnce = eventlog.Type(opt(d, "fail"))
	if after := opt(d, "cancel-after"); after != "" {
		f.cancelAfter, f.cancel = eventlog.Type(after), cancel
	}
	if race := opt(d, "delete-before"); race != "" {
		typ, id, ok := strings.Cut(race, ":")
		if !ok {
			t.Fatalf("%s: delete-before takes TYPE:SESSION, got %q", w.where, race)
		}
		f.deleteBefore, f.deleteOther = eventlog.Type(typ), func() error { return w.otherHostDeletes(id) }
	}
	printed, err = do()
	return printed, err, false
}

// otherHostDeletes deletes session id through a second Engine over the
// world's store, as another host sharing a database would.
func (w *World) otherHostDeletes(id string) error {
	w.journal.add("  another host deletes " + id)
	other := reprise.New(&faultStore{MemoryStore: w.store, journal: &w.journal}, reprise.Options{
		Hooks: hookexec.NewRegistry(), Files: keepOpen{w.files}, Runner: w.runner, AllowMissingCwd: !w.real,
		Logger: slog.New(slog.DiscardHandler), Now: w.now, NewID: w.newID,
	})
	defer other.Close()
	return other.DeleteSession(context.Background(), id)
}

// faultStore is the world's store as one process sees it: it journals
// each append as a block, and can die right after an append that holds an
// event of type crashAfter, cancel the command's context (as a Ctrl-C
// would) right after an append that holds an event of type cancelAfter,
// fail once an append that holds an event of type failOnce, and let
// another host delete a session (with deleteOther) just before an append
// that holds an event of type deleteBefore, after the process checked the
// session was there.
type faultStore struct {
	*eventlog.MemoryStore
	journal     *journal
	crashAfter  eventlog.Type
	cancelAfter eventlog.Type
	cancel      context.CancelFunc
	failOnce    eventlog.Type

	deleteBefore eventlog.Type
	deleteOther  func() error
}

func (c *faultStore) Close() error { return nil } // the store outlives the process

func (c *faultStore) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	if c.failOnce != "" && holds(recs, c.failOnce) {
		c.failOnce = ""
		return nil, errors.New("injected failure: disk full")
	}
	if c.deleteBefore != "" && holds(recs, c.deleteBefore) {
		c.deleteBefore = ""
		if err := c.deleteOther(); err != nil {
			c.journal.add("  another host: error: " + err.Error())
		}
	}
	evs, err := c.MemoryStore.Append(ctx, expect, recs)
	c.journalEvents(evs)
	if err == nil && c.crashAfter != "" && holds(recs, c.crashAfter) {
		panic(crashSignal{})
	}
	if err == nil && c.cancelAfter != "" && holds(recs, c.cancelAfter) {
		c.journal.add("  cancel")
		c.cancel()
		c.cancelAfter = ""
	}
	return evs, err
}

// Purge journals the record a vacuum appends, as Append does.
func (c *faultStore) Purge(ctx context.Context, p eventlog.Purge) ([]eventlog.Event, error) {
	evs, err := c.MemoryStore.Purge(ctx, p)
	c.journalEvents(evs)
	return evs, err
}

func (c *faultStore) journalEvents(evs []eventlog.Event) {
	if len(evs) == 0 {
		return
	}
	lines := make([]string, len(evs))
	for i, ev := range evs {
		lines[i] = describe(ev)
	}
	c.journal.block(lines...)
}

func holds(recs []eventlog.Record, typ eventlog.Type) bool {
	for _, r := range recs {
		if r.Type == typ {
			return true
		}
	}
	return false
}

// describe is the line of an appended event: its type, then for a
// session's events the session, then the fields reprise log prints.
func describe(ev eventlog.Event) string {
	p, err := schema.Decode(ev)
	if err != nil {
		return fmt.Sprintf("%-24s undecodable: %v", ev.Type, err)
	}
	where := ""
	if id := projection.SessionID(ev.Stream); id != "" {
		where = "session=" + id + " "
	}
	return strings.TrimRight(fmt.Sprintf("%-24s %s%s", ev.Type, where, projection.Describe(p)), " ")
}
