package fsm

import (
	"context"
	"sync"

	"github.com/looplab/fsm"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
)

// State is where an agent's lifecycle stands.
type State string

// The states of an agent.
const (
	Idle     State = "idle"     // no session has been current yet
	Active   State = "active"   // a session is current, no restore in flight
	Saved    State = "saved"    // runtime restore: the current session was saved
	Ending   State = "ending"   // SessionEnd hooks may be running
	Ended    State = "ended"    // SessionEnd hooks have run
	Loaded   State = "loaded"   // the target session is current
	Starting State = "starting" // SessionStart hooks may be running
	Started  State = "started"  // SessionStart hooks have run; injection is next
	Stopping State = "stopping" // Stop hooks may be running

	Prompting     State = "prompting"     // UserPromptSubmit hooks may be running
	PreCompacting State = "precompacting" // PreCompact hooks may be running
	PreCompacted  State = "precompacted"  // PreCompact hooks have run; the compaction is next
)

// Event labels a transition. Most labels are event types of the log;
// SessionLoaded is split by source, because each source has its own path:
// a startup cannot finish a runtime restore, nor a clear start from idle.
type Event string

// The transition labels.
const (
	SaveAttempted           = Event(schema.TypeSaveAttempted)
	SessionEndHookStarted   = Event(schema.TypeSessionEndHookStarted)
	SessionEndHookRan       = Event(schema.TypeSessionEndHookRan)
	SessionLoadedStartup    = Event(schema.TypeSessionLoaded + "/startup")
	SessionLoadedResume     = Event(schema.TypeSessionLoaded + "/resume")
	SessionLoadedNew        = Event(schema.TypeSessionLoaded + "/new")
	SessionLoadedClear      = Event(schema.TypeSessionLoaded + "/clear")
	SessionLoadedFork       = Event(schema.TypeSessionLoaded + "/fork")
	SessionCompacted        = Event(schema.TypeSessionCompacted)
	SessionClosed           = Event(schema.TypeSessionClosed)
	StopHookStarted         = Event(schema.TypeStopHookStarted)
	StopHookRan             = Event(schema.TypeStopHookRan)
	SessionStartHookStarted = Event(schema.TypeSessionStartHookStarted)
	SessionStartHookRan     = Event(schema.TypeSessionStartHookRan)
	ContextInjected         = Event(schema.TypeContextInjected)
	PromptHookStarted       = Event(schema.TypePromptHookStarted)
	PromptHookRan           = Event(schema.TypePromptHookRan)
	PreCompactHookStarted   = Event(schema.TypePreCompactHookStarted)
	PreCompactHookRan       = Event(schema.TypePreCompactHookRan)
	PreCompactBlocked       = Event(schema.TypePreCompactHookRan + "/blocked")
)

// Transition is one row of the table: Event moves an agent from any of From
// to To.
type Transition struct {
	Event Event
	From  []State
	To    State
}

// table is the whole lifecycle. It is the single source for Apply, for the
// generated diagram and for audits.
var table = []Transition{
	{SessionLoadedStartup, []State{Idle, Active}, Loaded},
	{SaveAttempted, []State{Active}, Saved},
	{SessionEndHookStarted, []State{Saved}, Ending},
	{SessionEndHookRan, []State{Ending}, Ended},
	{SessionLoadedResume, []State{Idle, Active, Ended}, Loaded}, // from Idle or Active: a resume at process start
	{SessionLoadedClear, []State{Ended}, Loaded},
	{SessionLoadedNew, []State{Idle, Ended}, Loaded},
	{SessionLoadedFork, []State{Idle, Ended}, Loaded},
	{SessionClosed, []State{Ended}, Idle},
	{PreCompactHookStarted, []State{Active}, PreCompacting},
	{PreCompactHookRan, []State{PreCompacting}, PreCompacted},
	{PreCompactBlocked, []State{PreCompacting}, Active},
	{SessionCompacted, []State{Active, PreCompacted}, Loaded},
	{SessionStartHookStarted, []State{Loaded}, Starting},
	{SessionStartHookRan, []State{Starting}, Started},
	{ContextInjected, []State{Started}, Active},
	{StopHookStarted, []State{Active}, Stopping},
	{StopHookRan, []State{Stopping}, Active},
	{PromptHookStarted, []State{Active}, Prompting},
	{PromptHookRan, []State{Prompting}, Active},
}

// Table returns a copy of the transition table, in lifecycle order.
func Table() []Transition { return copyTable(table) }

// copyTable is a deep copy of table.
func copyTable(table []Transition) []Transition {
	out := make([]Transition, len(table))
	for i, t := range table {
		t.From = append([]State(nil), t.From...)
		out[i] = t
	}
	return out
}

// agentMachines holds looplab FSMs built from table. Each Apply takes one
// that no other call is using, so agents and audits step in parallel
// without a shared lock; looplab itself decides every transition.
var agentMachines = machines(table, Idle)

// machines is a pool of looplab machines of table, each starting at
// initial.
func machines(table []Transition, initial State) *sync.Pool {
	return &sync.Pool{New: func() any { return newLooplab(table, initial) }}
}

func newLooplab(table []Transition, initial State) *fsm.FSM {
	descs := make([]fsm.EventDesc, 0, len(table))
	for _, t := range table {
		src := make([]string, len(t.From))
		for i, s := range t.From {
			src[i] = string(s)
		}
		descs = append(descs, fsm.EventDesc{Name: string(t.Event), Src: src, Dst: string(t.To)})
	}
	return fsm.NewFSM(string(initial), descs, nil)
}

// Apply returns the state that e leads to from s, or a *TransitionError when
// the table does not allow e from s. It is pure and safe for concurrent use.
func Apply(s State, e Event) (State, error) { return apply(agentMachines, s, e) }

// apply steps a machine of pool from s with e.
func apply(pool *sync.Pool, s State, e Event) (State, error) {
	m := pool.Get().(*fsm.FSM)
	defer pool.Put(m)
	m.SetState(string(s))
	// context.Background never cancels, so looplab cannot be left "in
	// transition"; with no callbacks the only errors are illegal events.
	if err := m.Event(context.Background(), string(e)); err != nil {
		return s, &TransitionError{From: s, Event: e}
	}
	return State(m.Current()), nil
}

// EventOf maps a decoded payload to its transition label. ok is false for
// payloads that are not lifecycle steps, such as messages.
func EventOf(p schema.Payload) (e Event, ok bool) {
	switch p := p.(type) {
	case *schema.SessionLoaded:
		// Unknown sources get a label the table rejects.
		return Event(schema.TypeSessionLoaded + "/" + eventlog.Type(p.Source)), true
	case *schema.PreCompactHookRan:
		if p.Blocked {
			return PreCompactBlocked, true
		}
		return PreCompactHookRan, true
	case *schema.SaveAttempted, *schema.SessionEndHookStarted, *schema.SessionEndHookRan,
		*schema.PromptHookStarted, *schema.PromptHookRan, *schema.PreCompactHookStarted,
		*schema.SessionStartHookStarted, *schema.SessionStartHookRan, *schema.ContextInjected,
		*schema.SessionCompacted, *schema.SessionClosed, *schema.StopHookStarted, *schema.StopHookRan:
		return Event(p.EventType()), true
	}
	return "", false
}

// InFlight reports whether s is inside a restore.
func InFlight(s State) bool { return s != Idle && s != Active }

// Diagram returns the table as a Mermaid state diagram, starting from Idle.
func Diagram() string {
	// StateDiagram is a known diagram type, so this cannot fail.
	out, _ := fsm.VisualizeForMermaidWithGraphType(newLooplab(table, Idle), fsm.StateDiagram)
	return out
}
