package fsm_test

import (
	"errors"
	"flag"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/schema"
)

var update = flag.Bool("update", false, "rewrite docs/lifecycle.md's diagram from the table")

var allStates = []fsm.State{fsm.Idle, fsm.Active, fsm.Saved, fsm.Ending, fsm.Ended, fsm.Loaded, fsm.Starting, fsm.Started, fsm.Stopping,
	fsm.Prompting, fsm.PreCompacting, fsm.PreCompacted}

func TestRuntimeRestoreWalksEveryStep(t *testing.T) {
	steps := []struct {
		event fsm.Event
		want  fsm.State
	}{
		{fsm.SaveAttempted, fsm.Saved},
		{fsm.SessionEndHookStarted, fsm.Ending},
		{fsm.SessionEndHookRan, fsm.Ended},
		{fsm.SessionLoadedResume, fsm.Loaded},
		{fsm.SessionStartHookStarted, fsm.Starting},
		{fsm.SessionStartHookRan, fsm.Started},
		{fsm.ContextInjected, fsm.Active},
	}
	s := fsm.Active
	for _, st := range steps {
		next, err := fsm.Apply(s, st.event)
		if err != nil {
			t.Fatalf("Apply(%s, %s): %v", s, st.event, err)
		}
		if next != st.want {
			t.Fatalf("Apply(%s, %s) = %s, want %s", s, st.event, next, st.want)
		}
		s = next
	}
}

func TestStartupEntersFromIdleOrActiveOnly(t *testing.T) {
	for _, s := range allStates {
		next, err := fsm.Apply(s, fsm.SessionLoadedStartup)
		legal := s == fsm.Idle || s == fsm.Active
		if legal && (err != nil || next != fsm.Loaded) {
			t.Errorf("startup from %s = %s, %v; want loaded", s, next, err)
		}
		if !legal && !errors.Is(err, fsm.ErrIllegalTransition) {
			t.Errorf("startup from %s: err = %v, want ErrIllegalTransition", s, err)
		}
	}
}

// legalSteps is the lifecycle as the product describes it, written out by
// hand, one line per legal step, independently of the package's table:
// the runtime restore's five steps with their two intents, the startup
// path, New, Clear, Fork, End, Compact and Stop.
var legalSteps = []struct {
	from  fsm.State
	event fsm.Event
	to    fsm.State
}{
	// A startup restore: from a fresh agent, or one whose process restarts
	// with a current session.
	{fsm.Idle, fsm.SessionLoadedStartup, fsm.Loaded},
	{fsm.Active, fsm.SessionLoadedStartup, fsm.Loaded},
	// A host reopening a stored session as it starts: source resume.
	{fsm.Idle, fsm.SessionLoadedResume, fsm.Loaded},
	{fsm.Active, fsm.SessionLoadedResume, fsm.Loaded},
	// Leaving the current session: save, SessionEnd intent, SessionEnd.
	{fsm.Active, fsm.SaveAttempted, fsm.Saved},
	{fsm.Saved, fsm.SessionEndHookStarted, fsm.Ending},
	{fsm.Ending, fsm.SessionEndHookRan, fsm.Ended},
	// Once it has ended: a restore, a clear, a new or a fork loads the
	// target; an End closes it.
	{fsm.Ended, fsm.SessionLoadedResume, fsm.Loaded},
	{fsm.Ended, fsm.SessionLoadedClear, fsm.Loaded},
	{fsm.Ended, fsm.SessionLoadedNew, fsm.Loaded},
	{fsm.Ended, fsm.SessionLoadedFork, fsm.Loaded},
	{fsm.Ended, fsm.SessionClosed, fsm.Idle},
	// With no current session, New and Fork load their session at once.
	{fsm.Idle, fsm.SessionLoadedNew, fsm.Loaded},
	{fsm.Idle, fsm.SessionLoadedFork, fsm.Loaded},
	// A compaction keeps the session and starts again at SessionStart;
	// with PreCompact hooks, their intent and outcome come first, and a
	// hook that blocks ends it there.
	{fsm.Active, fsm.SessionCompacted, fsm.Loaded},
	{fsm.Active, fsm.PreCompactHookStarted, fsm.PreCompacting},
	{fsm.PreCompacting, fsm.PreCompactHookRan, fsm.PreCompacted},
	{fsm.PreCompacting, fsm.PreCompactBlocked, fsm.Active},
	{fsm.PreCompacted, fsm.SessionCompacted, fsm.Loaded},
	// UserPromptSubmit hooks on a prompt.
	{fsm.Active, fsm.PromptHookStarted, fsm.Prompting},
	{fsm.Prompting, fsm.PromptHookRan, fsm.Active},
	// SessionStart intent, SessionStart, injection.
	{fsm.Loaded, fsm.SessionStartHookStarted, fsm.Starting},
	{fsm.Starting, fsm.SessionStartHookRan, fsm.Started},
	{fsm.Started, fsm.ContextInjected, fsm.Active},
	// A Stop hook run at the end of a turn.
	{fsm.Active, fsm.StopHookStarted, fsm.Stopping},
	{fsm.Stopping, fsm.StopHookRan, fsm.Active},
}

var allEvents = []fsm.Event{
	fsm.SaveAttempted, fsm.SessionEndHookStarted, fsm.SessionEndHookRan,
	fsm.SessionLoadedStartup, fsm.SessionLoadedResume, fsm.SessionLoadedNew, fsm.SessionLoadedClear, fsm.SessionLoadedFork,
	fsm.SessionCompacted, fsm.SessionClosed, fsm.StopHookStarted, fsm.StopHookRan,
	fsm.SessionStartHookStarted, fsm.SessionStartHookRan, fsm.ContextInjected,
	fsm.PromptHookStarted, fsm.PromptHookRan, fsm.PreCompactHookStarted, fsm.PreCompactHookRan, fsm.PreCompactBlocked,
}

// TestApplyAcceptsExactlyTheLegalSteps checks every (state, event) pair
// against the hand-written list: each legal step leads where the list says,
// and every other pair is rejected and leaves the state as it was. This is
// what makes a second hook run for one restore impossible to record.
func TestApplyAcceptsExactlyTheLegalSteps(t *testing.T) {
	legal := map[[2]string]fsm.State{}
	for _, l := range legalSteps {
		legal[[2]string{string(l.from), string(l.event)}] = l.to
	}
	accepted := 0
	for _, s := range allStates {
		for _, e := range allEvents {
			next, err := fsm.Apply(s, e)
			want, ok := legal[[2]string{string(s), string(e)}]
			switch {
			case ok && (err != nil || next != want):
				t.Errorf("Apply(%s, %s) = %s, %v; want %s", s, e, next, err, want)
			case !ok && !errors.Is(err, fsm.ErrIllegalTransition):
				t.Errorf("Apply(%s, %s) = %s, %v; want ErrIllegalTransition", s, e, next, err)
			case !ok && next != s:
				t.Errorf("rejected Apply(%s, %s) moved the state to %s", s, e, next)
			case ok:
				accepted++
			}
		}
	}
	if accepted != len(legalSteps) {
		t.Errorf("accepted %d steps, the list has %d", accepted, len(legalSteps))
	}
	var te *fsm.TransitionError
	if _, err := fsm.Apply(fsm.Started, fsm.SessionStartHookRan); !errors.As(err, &te) || te.From != fsm.Started || te.Event != fsm.SessionStartHookRan {
		t.Fatalf("second SessionStartHookRan: err = %v, want a TransitionError naming it", err)
	}
}

// TestTableEventsAreTheKnownOnes keeps allEvents complete: an event added
// to the table without a line above would otherwise go unchecked.
func TestTableEventsAreTheKnownOnes(t *testing.T) {
	for _, tr := range fsm.Table() {
		found := false
		for _, e := range allEvents {
			found = found || e == tr.Event
		}
		if !found {
			t.Errorf("the table's event %s is not in allEvents", tr.Event)
		}
	}
}

// TestApplyIsSafeInParallel steps many walks at once; run with -race.
func TestApplyIsSafeInParallel(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				s := fsm.Active
				for _, e := range []fsm.Event{fsm.SaveAttempted, fsm.SessionEndHookStarted, fsm.SessionEndHookRan,
					fsm.SessionLoadedResume, fsm.SessionStartHookStarted, fsm.SessionStartHookRan, fsm.ContextInjected} {
					var err error
					if s, err = fsm.Apply(s, e); err != nil {
						t.Error(err)
						return
					}
				}
				if s != fsm.Active {
					t.Errorf("walk ended in %s", s)
				}
			}
		})
	}
	wg.Wait()
}

func TestEventOfMapsPayloads(t *testing.T) {
	cases := []struct {
		payload schema.Payload
		want    fsm.Event
		ok      bool
	}{
		{&schema.SessionLoaded{Source: "startup"}, fsm.SessionLoadedStartup, true},
		{&schema.SessionLoaded{Source: "resume"}, fsm.SessionLoadedResume, true},
		{&schema.SaveAttempted{}, fsm.SaveAttempted, true},
		{&schema.ContextInjected{}, fsm.ContextInjected, true},
		{&schema.MessageAppended{}, "", false},
		{&schema.SessionCreated{}, "", false},
	}
	for _, c := range cases {
		got, ok := fsm.EventOf(c.payload)
		if got != c.want || ok != c.ok {
			t.Errorf("EventOf(%T) = %q, %v; want %q, %v", c.payload, got, ok, c.want, c.ok)
		}
	}
	e, _ := fsm.EventOf(&schema.SessionLoaded{Source: "bogus"})
	if _, err := fsm.Apply(fsm.Ended, e); err == nil {
		t.Fatal("a SessionLoaded with an unknown source was accepted")
	}
}

const (
	diagramPath  = "../docs/lifecycle.md"
	diagramBegin = "```mermaid\n"
	diagramEnd   = "```\n"
)

// The diagram in docs/lifecycle.md is generated from the table; this test
// fails when someone changes the table without regenerating it
// (go test ./fsm -run TestDiagramIsCurrent -update).
func TestDiagramIsCurrent(t *testing.T) {
	doc, err := os.ReadFile(diagramPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, diagramBegin)
	if start < 0 {
		t.Fatalf("%s has no mermaid block", diagramPath)
	}
	start += len(diagramBegin)
	end := strings.Index(text[start:], diagramEnd)
	if end < 0 {
		t.Fatalf("%s: unterminated mermaid block", diagramPath)
	}
	end += start
	want := fsm.Diagram()
	if text[start:end] == want {
		return
	}
	if *update {
		if err := os.WriteFile(diagramPath, []byte(text[:start]+want+text[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s is stale; regenerate with: go test ./fsm -run TestDiagramIsCurrent -update\nwant:\n%s", diagramPath, want)
}
