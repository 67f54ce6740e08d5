package fsm_test

import (
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/schema"
)

var update = flag.Bool("update", false, "rewrite docs/lifecycle.md's diagram from the table")

var allStates = []fsm.State{fsm.Idle, fsm.Active, fsm.Saved, fsm.Ending, fsm.Ended, fsm.Loaded, fsm.Starting, fsm.Started, fsm.Stopping}

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

// Every (state, event) pair not in the table is rejected and leaves the
// state unchanged; this is what makes a second hook run for one restore
// impossible to record.
func TestApplyRejectsEverythingOutsideTheTable(t *testing.T) {
	legal := map[fsm.State]map[fsm.Event]fsm.State{}
	for _, tr := range fsm.Table() {
		for _, from := range tr.From {
			if legal[from] == nil {
				legal[from] = map[fsm.Event]fsm.State{}
			}
			legal[from][tr.Event] = tr.To
		}
	}
	for _, s := range allStates {
		for _, tr := range fsm.Table() {
			next, err := fsm.Apply(s, tr.Event)
			want, ok := legal[s][tr.Event]
			switch {
			case ok && (err != nil || next != want):
				t.Errorf("Apply(%s, %s) = %s, %v; want %s", s, tr.Event, next, err, want)
			case !ok && err == nil:
				t.Errorf("Apply(%s, %s) = %s; want an error", s, tr.Event, next)
			case !ok && next != s:
				t.Errorf("rejected Apply(%s, %s) moved the state to %s", s, tr.Event, next)
			}
		}
	}
	var te *fsm.TransitionError
	if _, err := fsm.Apply(fsm.Started, fsm.SessionStartHookRan); !errors.As(err, &te) || te.From != fsm.Started || te.Event != fsm.SessionStartHookRan {
		t.Fatalf("second SessionStartHookRan: err = %v, want a TransitionError naming it", err)
	}
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
