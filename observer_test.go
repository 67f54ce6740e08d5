package reprise_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/schema"
)

// recorder is an Observer that notes what it is told.
type recorder struct {
	mu    sync.Mutex
	lines []string
}

type depth struct{}

func (r *recorder) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *recorder) Action(ctx context.Context, agent, action, session string) (context.Context, func(*reprise.Transition, error)) {
	r.note("action %s %s %s", agent, action, session)
	return context.WithValue(ctx, depth{}, "in "+action), func(rs *reprise.Transition, err error) {
		steps := 0
		if rs != nil {
			steps = len(rs.Steps)
		}
		r.note("end %s steps=%d err=%v", action, steps, err)
	}
}

func (r *recorder) Step(ctx context.Context, ev eventlog.Event) {
	r.note("step %s (%v)", ev.Type, ctx.Value(depth{}))
}

func (r *recorder) Hooks(ctx context.Context, event hookexec.Event, session, value string, hooks []hookexec.Hook) (context.Context, []string, func([]schema.HookOutcome)) {
	r.note("hooks %s %s %s (%v)", event, session, value, ctx.Value(depth{}))
	return ctx, []string{"TRACEPARENT=00-trace-span-01"}, func(outcomes []schema.HookOutcome) {
		for _, o := range outcomes {
			r.note("outcome %s %s", o.Name, o.Status)
		}
	}
}

func (r *recorder) Appended(_ context.Context, records int, took time.Duration, err error) {
	if took < 0 {
		r.note("negative duration")
	}
	r.note("appended %d err=%v", records, err)
}

// TestObserverIsToldEverything checks the Observer seam: each action with
// its end, each step within it, each hook run with its outcomes, each
// append, and the environment it gives command hooks.
func TestObserverIsToldEverything(t *testing.T) {
	rec := &recorder{}
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Files: reprise.NewMemoryFiles(), Observer: rec})
	defer e.Close()
	testkit.Session(t, e, "a", t.TempDir())
	testkit.Session(t, e, "b", t.TempDir())
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: `echo "$TRACEPARENT"`}}); err != nil {
		t.Fatal(err)
	}
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	r, err := a.Restore(t.Context(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if r.Context != "00-trace-span-01" {
		t.Fatalf("the command hook saw TRACEPARENT %q", r.Context)
	}
	got := strings.Join(rec.lines, "\n")
	for _, want := range []string{
		"action ide start a", "end start steps=4 err=<nil>",
		"action ide restore b", "step SaveAttempted (in restore)", "step ContextInjected (in restore)",
		"hooks SessionEnd a resume (in restore)", "hooks SessionStart b resume (in restore)",
		"outcome echo \"$TRACEPARENT\" ok", "end restore steps=7 err=<nil>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the observer was not told %q; it was told:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "appended "); n < 11 {
		t.Errorf("told of %d appends, want at least the two sessions' and 11 steps'", n)
	}
	if _, err := a.Restore(t.Context(), "missing"); err == nil || !strings.Contains(strings.Join(rec.lines, "\n"), "end restore steps=0 err=reprise: session not found") {
		t.Errorf("a refused action's end was not told with its error: %v", err)
	}
}

// TestObserverDoesNotMakeASecondActionWait checks that with an Observer a
// second action on a busy agent still fails at once with
// ErrAgentBusy, instead of waiting and running afterwards.
func TestObserverDoesNotMakeASecondActionWait(t *testing.T) {
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Files: reprise.NewMemoryFiles(), Observer: &recorder{}})
	defer e.Close()
	testkit.Session(t, e, "a", t.TempDir())
	started, release := make(chan struct{}), make(chan struct{})
	e.Hooks().OnStop("slow", func(context.Context, hookexec.StopInput) (hookexec.StopOutput, error) {
		close(started)
		<-release
		return hookexec.StopOutput{}, nil
	})
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := a.Stop(t.Context()); done <- err }()
	<-started
	second := make(chan error, 1)
	go func() { _, err := a.Stop(t.Context()); second <- err }()
	select {
	case err := <-second:
		if !errors.Is(err, reprise.ErrAgentBusy) {
			t.Errorf("second Stop: %v, want ErrAgentBusy", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the second Stop waited for the first")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
