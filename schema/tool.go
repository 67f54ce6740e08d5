package schema

import "github.com/reprise-dev/reprise/eventlog"

// The event types of a tool call, on the agent's stream; their restore id
// is the call's tool_use id.
const (
	TypeToolHookStarted    eventlog.Type = "ToolHookStarted"
	TypeToolHookRan        eventlog.Type = "ToolHookRan"
	TypeToolDecided        eventlog.Type = "ToolDecided"
	TypeToolResultRecorded eventlog.Type = "ToolResultRecorded"
)

// ToolHookStarted is the durable intent recorded before the hooks of one
// event of a tool call run: PreToolUse or PermissionRequest before the
// decision. (PostToolUse hooks are named by ToolResultRecorded.)
type ToolHookStarted struct {
	Event     HookEvent `msgpack:"event"`
	Session   string    `msgpack:"session"`
	ToolUseID string    `msgpack:"tooluse"`
	Tool      string    `msgpack:"tool"`
	Hooks     []string  `msgpack:"hooks,omitempty"`
	Status    []string  `msgpack:"status,omitempty"` // the hooks' statusMessage, as in SessionStartHookStarted
}

// ToolHookRan records what the hooks of one event of a tool call did.
// Interrupted means the process died while they ran; they were not run
// again. Decision is a PreToolUse or PermissionRequest answer (allow,
// deny, ask, or "" for none) or, after the tool, "block"; Replacement is
// the input (before) or result (after) the hooks gave instead, as JSON;
// Context what they added for the model, which MessageUUID holds after
// the tool.
type ToolHookRan struct {
	Event       HookEvent     `msgpack:"event"`
	Session     string        `msgpack:"session"`
	ToolUseID   string        `msgpack:"tooluse"`
	Tool        string        `msgpack:"tool"`
	Outcomes    []HookOutcome `msgpack:"outcomes,omitempty"`
	Interrupted bool          `msgpack:"interrupted,omitempty"`
	Decision    string        `msgpack:"decision,omitempty"`
	Reason      string        `msgpack:"reason,omitempty"`
	Replacement []byte        `msgpack:"replacement,omitempty"`
	Context     string        `msgpack:"context,omitempty"`
	MessageUUID string        `msgpack:"message,omitempty"`
}

// ToolDecided is the decision on a tool call, recorded once per tool_use
// id: allow (the tool may run, and is taken to have started), ask (the
// host asks its user, then runs it or reports it refused) or deny, whose
// error tool_result ResultUUID is appended to the session in the same
// append. Input is what the tool runs with; UseUUID the assistant message
// holding the tool_use, when the step recorded it.
type ToolDecided struct {
	Session    string `msgpack:"session"`
	ToolUseID  string `msgpack:"tooluse"`
	Tool       string `msgpack:"tool"`
	Input      []byte `msgpack:"input,omitempty"`
	Decision   string `msgpack:"decision"`
	Reason     string `msgpack:"reason,omitempty"`
	Context    string `msgpack:"context,omitempty"`
	UseUUID    string `msgpack:"use,omitempty"`
	ResultUUID string `msgpack:"result,omitempty"`
}

// ToolResultRecorded is the tool's result, or its failure, recorded once:
// the tool_result message MessageUUID is appended to the session in the
// same append. Hooks names the PostToolUse (or PostToolUseFailure) hooks
// about to run: it is their intent.
type ToolResultRecorded struct {
	Session     string `msgpack:"session"`
	ToolUseID   string `msgpack:"tooluse"`
	Tool        string `msgpack:"tool"`
	MessageUUID string `msgpack:"message"`
	Failed      bool   `msgpack:"failed,omitempty"`
	// Interrupted says the call was cut off before its result: the host
	// reports it stopped, or a process that died may have run it and the
	// next one rolled the call forward with an error result.
	Interrupted bool     `msgpack:"interrupted,omitempty"`
	Hooks       []string `msgpack:"hooks,omitempty"`
	Status      []string `msgpack:"status,omitempty"` // the hooks' statusMessage, as in SessionStartHookStarted
}

func (ToolHookStarted) EventType() eventlog.Type    { return TypeToolHookStarted }
func (ToolHookRan) EventType() eventlog.Type        { return TypeToolHookRan }
func (ToolDecided) EventType() eventlog.Type        { return TypeToolDecided }
func (ToolResultRecorded) EventType() eventlog.Type { return TypeToolResultRecorded }
