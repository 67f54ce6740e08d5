package reprise_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// quiet drops the warnings about the hooks these tests cut short.
var quiet = slog.New(slog.DiscardHandler)

// cancellingHooks registers a SessionEnd hook that cancels the action's
// context and waits until it sees it done, and a SessionStart hook; both
// count their runs.
func cancellingHooks(t *testing.T, reg *hookexec.Registry, cancel context.CancelFunc, ends, starts *atomic.Int32) {
	t.Helper()
	err := reg.OnSessionEnd("cancel", "", func(ctx context.Context, _ hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
		ends.Add(1)
		cancel()
		<-ctx.Done()
		return hookexec.SessionEndOutput{}, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	err = reg.OnSessionStart("count", "", func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		starts.Add(1)
		return hookexec.SessionStartOutput{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A restore whose context is cancelled while its SessionEnd hooks run
// records them as cancelled, starts no new step and returns an error that
// is both ErrInterrupted and the context's. The next Engine on the file
// finishes it without running the SessionEnd hook again.
func TestInterruptedRestoreStopsAtTheStepBoundary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	e, err := reprise.Open(path, reprise.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	a := startedOnA(t, e)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var ends, starts atomic.Int32
	cancellingHooks(t, e.Hooks(), cancel, &ends, &starts)

	r, err := a.Restore(ctx, "b")
	if !errors.Is(err, reprise.ErrInterrupted) || !errors.Is(err, context.Canceled) || r != nil {
		t.Fatalf("Restore = %v, %v; want ErrInterrupted and context.Canceled", r, err)
	}
	want := append(slices.Clone(startupSteps), schema.TypeSaveAttempted, schema.TypeSessionEndHookStarted, schema.TypeSessionEndHookRan)
	if got := testkit.StreamTypes(t, e.Store(), projection.AgentStream("ide")); !slices.Equal(got, want) {
		t.Fatalf("agent steps after the interrupt:\n got %v\nwant %v", got, want)
	}
	var ran *schema.SessionEndHookRan
	err = e.Store().ReadStream(t.Context(), projection.AgentStream("ide"), uint64(len(want)), func(ev eventlog.Event) error {
		p, err := schema.Decode(ev)
		ran, _ = p.(*schema.SessionEndHookRan)
		return err
	})
	if err != nil || ran == nil || len(ran.Outcomes) != 1 || ran.Outcomes[0].Status != schema.HookCancelled || ran.Interrupted {
		t.Fatalf("SessionEndHookRan %+v, %v: want the hook recorded as cancelled", ran, err)
	}
	if starts.Load() != 0 {
		t.Fatalf("SessionStart ran %d times after the interrupt", starts.Load())
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e, err = reprise.Open(path, reprise.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cancellingHooks(t, e.Hooks(), func() {}, &ends, &starts)
	a, err = e.Agent(t.Context(), "ide")
	if err != nil {
		t.Fatal(err)
	}
	if a.Current() != "b" || ends.Load() != 1 || starts.Load() != 1 {
		t.Fatalf("after the roll forward: current %q, SessionEnd ran %d times, SessionStart %d; want b, 1, 1",
			a.Current(), ends.Load(), starts.Load())
	}
	if got, want := testkit.StreamTypes(t, e.Store(), projection.AgentStream("ide")), append(slices.Clone(startupSteps), resumeSteps...); !slices.Equal(got, want) {
		t.Fatalf("agent steps after the roll forward:\n got %v\nwant %v", got, want)
	}
}

// appendContexts is a store that notes, for each append, whether its
// context was done and how long it had left.
type appendContexts struct {
	*eventlog.MemoryStore
	mu    sync.Mutex
	notes map[eventlog.Type]appendNote
}

type appendNote struct {
	err      error
	deadline time.Duration // 0 when there is none
}

func (s *appendContexts) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	n := appendNote{err: ctx.Err()}
	if d, ok := ctx.Deadline(); ok {
		n.deadline = time.Until(d)
	}
	s.mu.Lock()
	for _, r := range recs {
		s.notes[r.Type] = n
	}
	s.mu.Unlock()
	return s.MemoryStore.Append(ctx, expect, recs)
}

// The outcome of hooks cut short is appended under a context that is not
// cancelled but has a short deadline: the caller has given up, and the
// record must still be written, without waiting forever.
func TestInterruptRecordsTheOutcomeUnderABoundedContext(t *testing.T) {
	store := &appendContexts{MemoryStore: eventlog.NewMemoryStore(), notes: map[eventlog.Type]appendNote{}}
	e := reprise.New(store, reprise.Options{Files: reprise.NewMemoryFiles(), Logger: quiet})
	defer e.Close()
	a := startedOnA(t, e)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var ends, starts atomic.Int32
	cancellingHooks(t, e.Hooks(), cancel, &ends, &starts)
	clear(store.notes)
	if _, err := a.Restore(ctx, "b"); !errors.Is(err, reprise.ErrInterrupted) {
		t.Fatalf("Restore: %v", err)
	}
	n, ok := store.notes[schema.TypeSessionEndHookRan]
	if !ok || n.err != nil || n.deadline <= 0 || n.deadline > 10*time.Second {
		t.Fatalf("SessionEndHookRan appended: %v, context error %v, time left %s; want a live context with a short deadline",
			ok, n.err, n.deadline)
	}
	if _, ok := store.notes[schema.TypeSessionLoaded]; ok {
		t.Fatal("SessionLoaded was appended after the interrupt")
	}
}

// startedOnA creates sessions a and b and returns agent ide, started on a.
func startedOnA(t *testing.T, e *reprise.Engine) *reprise.Agent {
	t.Helper()
	dir := t.TempDir()
	for _, id := range []string{"a", "b"} {
		if _, err := e.CreateSession(t.Context(), id, dir); err != nil {
			t.Fatal(err)
		}
	}
	a, err := e.Agent(t.Context(), "ide")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Start(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	return a
}

// An action whose context is done before its first step records nothing
// and leaves nothing to finish: its error is the context's alone.
func TestCancelledBeforeTheFirstStepRecordsNothing(t *testing.T) {
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Files: reprise.NewMemoryFiles(), Logger: quiet})
	defer e.Close()
	a := startedOnA(t, e)
	before := lastPosition(t, e.Store())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := a.Restore(ctx, "b")
	if !errors.Is(err, context.Canceled) || errors.Is(err, reprise.ErrInterrupted) {
		t.Fatalf("Restore on a cancelled context: %v; want context.Canceled only", err)
	}
	if after := lastPosition(t, e.Store()); after != before {
		t.Fatalf("the log moved from position %d to %d", before, after)
	}
}
