package schema

import "github.com/reprise-dev/reprise/eventlog"

// The event types of async hooks, on the agent's stream. They are no steps
// of the lifecycle: an async hook ends when it ends, between steps or
// during one, and nothing waits for it.
const (
	TypeAsyncHookEnded       eventlog.Type = "AsyncHookEnded"
	TypeAsyncContextInjected eventlog.Type = "AsyncContextInjected"
)

// AsyncHookEnded is how an "async" command hook ended, recorded once: the
// step that started it recorded the hook with status HookAsync under
// Outcome.Async. Status HookInterrupted means the process that ran it died
// first. Context is what reaches the model on the session's next turn
// (AsyncContextInjected); Rewake says an "asyncRewake" hook exited with
// code 2, asking for the model to be woken with it.
type AsyncHookEnded struct {
	Session string      `msgpack:"session"`
	Event   HookEvent   `msgpack:"event"`
	Outcome HookOutcome `msgpack:"outcome"`
	Context string      `msgpack:"context,omitempty"`
	Rewake  bool        `msgpack:"rewake,omitempty"`
}

// AsyncContextInjected records that the context of the async hooks Runs
// (their Outcome.Async ids), which ended since the session's last turn,
// was appended to the session as the meta message MessageUUID, with the
// prompt of its next turn.
type AsyncContextInjected struct {
	Session     string   `msgpack:"session"`
	Runs        []string `msgpack:"runs"`
	MessageUUID string   `msgpack:"message"`
}

func (AsyncHookEnded) EventType() eventlog.Type       { return TypeAsyncHookEnded }
func (AsyncContextInjected) EventType() eventlog.Type { return TypeAsyncContextInjected }
