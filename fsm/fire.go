package fsm

import "github.com/reprise-dev/reprise/schema"

// The states of one fired hook event, by its fire id: the events of the
// table that have no steps of their own (Setup, PostToolBatch,
// Notification, ...). Like a tool call's, a fire's steps need the agent
// Active, and a lifecycle action waits until no fire has hooks running.
const (
	NoFire    State = "none"       // no step yet
	FireHooks State = "fire-hooks" // its hooks may be running
	FireDone  State = "done"       // what its hooks decided is recorded
)

// The fire labels: the intent, and the outcome after it or, when no hook
// matched, alone.
const (
	FireStarted = Event(schema.TypeHookEventStarted)
	FireRan     = Event(schema.TypeHookEventRan)
)

// fireTable is the life of one fire: its hooks run at most once.
var fireTable = []Transition{
	{FireStarted, []State{NoFire}, FireHooks},
	{FireRan, []State{NoFire, FireHooks}, FireDone},
}

var fireMachines = machines(fireTable, NoFire)

// ApplyFire returns the state that e leads a fire to from s, or a
// *TransitionError when the fire table does not allow it. It is pure and
// safe for concurrent use.
func ApplyFire(s State, e Event) (State, error) { return apply(fireMachines, s, e) }

// FireEventOf maps a fire's payload to its label; ok is false for any
// other payload.
func FireEventOf(p schema.Payload) (e Event, ok bool) {
	switch p.(type) {
	case *schema.HookEventStarted:
		return FireStarted, true
	case *schema.HookEventRan:
		return FireRan, true
	}
	return "", false
}

// FireTable returns a copy of the fire table.
func FireTable() []Transition { return copyTable(fireTable) }
