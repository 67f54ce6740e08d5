package schema

import "github.com/reprise-dev/reprise/eventlog"

// The event types of a fired hook event, on the agent's stream: one pair
// for every event of the table that has no steps of its own (Setup,
// PostToolBatch, Notification, CwdChanged, ...), whether the lifecycle or
// the host fires it. Their restore id is the fire's id.
const (
	TypeHookEventStarted eventlog.Type = "HookEventStarted"
	TypeHookEventRan     eventlog.Type = "HookEventRan"
)

// HookEventStarted is the durable intent recorded before the hooks of a
// fired event run, once per fire id: Fields is the event's own input (its
// fields beyond CommonInput, a JSON object), Value what its matchers
// selected on. An event no hook matched is recorded by its HookEventRan
// alone.
type HookEventStarted struct {
	Event   HookEvent `msgpack:"event"`
	Session string    `msgpack:"session"`
	ID      string    `msgpack:"id"`
	Value   string    `msgpack:"value,omitempty"`
	Fields  []byte    `msgpack:"fields,omitempty"`
	Hooks   []string  `msgpack:"hooks,omitempty"`
	Status  []string  `msgpack:"status,omitempty"` // the hooks' statusMessage, as in SessionStartHookStarted
}

// HookEventRan records what the hooks of a fired event decided together,
// as the event's row of Events reads their answers. Interrupted means the
// process died while they ran; they were not run again. Without a
// HookEventStarted before it, no hook matched, and Fields and Value are
// the fire's own.
type HookEventRan struct {
	Event       HookEvent     `msgpack:"event"`
	Session     string        `msgpack:"session"`
	ID          string        `msgpack:"id"`
	Value       string        `msgpack:"value,omitempty"`
	Fields      []byte        `msgpack:"fields,omitempty"`
	Outcomes    []HookOutcome `msgpack:"outcomes,omitempty"`
	Interrupted bool          `msgpack:"interrupted,omitempty"`
	Blocked     bool          `msgpack:"blocked,omitempty"`
	Reason      string        `msgpack:"reason,omitempty"`
	Feedback    string        `msgpack:"feedback,omitempty"`
	Context     string        `msgpack:"context,omitempty"`
	Halt        bool          `msgpack:"halt,omitempty"`
	StopReason  string        `msgpack:"stopreason,omitempty"`
	// SystemMessage joins the hooks' warnings for the user; Specific
	// merges the hookSpecificOutput fields the event honours (JSON).
	SystemMessage string `msgpack:"systemmessage,omitempty"`
	Specific      []byte `msgpack:"specific,omitempty"`
	// Env is what command hooks wrote to CLAUDE_ENV_FILE, on the events
	// that give them one (Setup, CwdChanged, FileChanged).
	Env string `msgpack:"env,omitempty"`
	// MessageUUID is the meta message, appended to the session in the same
	// append, that takes Context to the model, for a fire that asked for
	// it (PostToolBatch's).
	MessageUUID string `msgpack:"message,omitempty"`
}

func (HookEventStarted) EventType() eventlog.Type { return TypeHookEventStarted }
func (HookEventRan) EventType() eventlog.Type     { return TypeHookEventRan }
