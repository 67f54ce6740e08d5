package turn

import "github.com/reprise-dev/reprise"

// Action is what a turn calls for next, as Next decides it from the log.
type Action int

// The actions of a turn.
const (
	// Over: the turn is over; a host tells the user it waits on them
	// (Notification idle_prompt), unless the turn is a subagent's.
	Over Action = iota
	// Ask: the answer's PostToolBatch is fired, once, then the model is
	// asked with the conversation as it sees it (Agent.ModelView).
	Ask
	// Tools: the calls of the last answer that have no result are taken
	// through PreToolUse, the tool and PostToolUse.
	Tools
	// Unrun: a hook halted the turn: the calls of the last answer that
	// have no result get an error result without running.
	Unrun
	// Stop: the Stop hooks (SubagentStop in a subagent) run; a block sends
	// the turn back to the model.
	Stop
)

// Next decides what turn t, where the log says it stands, calls for
// next. It is the one choice the Runner makes from the log, and the one
// the write API's turn protocol makes; it does no I/O.
func Next(t reprise.Turn) Action {
	switch t.Phase {
	case reprise.TurnAsk:
		return Ask
	case reprise.TurnTools:
		if t.Halted {
			return Unrun
		}
		return Tools
	case reprise.TurnStop:
		return Stop
	}
	return Over
}
