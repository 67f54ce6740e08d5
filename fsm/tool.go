package fsm

import "github.com/reprise-dev/reprise/schema"

// The states of one tool call, by its tool_use id. A call is in no state
// before its first step. An agent's tool steps need it to be Active, and
// a lifecycle action on an agent waits until none of its calls has hooks
// running (ToolInFlight).
const (
	ToolPreHooks        State = "pre-hooks"        // PreToolUse hooks may be running
	ToolPermissionHooks State = "permission-hooks" // PermissionRequest hooks may be running
	ToolHooksRan        State = "hooks-ran"        // the hooks before the decision have run
	ToolAsked           State = "asked"            // left to ask: the user's answer is not recorded yet
	ToolAllowed         State = "decided"          // allowed: the tool may run
	ToolPostHooks       State = "post-hooks"       // the result is recorded; PostToolUse hooks may be running
	ToolDone            State = "done"             // denied, or its result and hooks are recorded
)

// The transition labels of a tool call. A label names the event type, and
// what about it takes the call another way.
const (
	ToolPreHookStarted        = Event(schema.TypeToolHookStarted + "/PreToolUse")
	ToolPermissionHookStarted = Event(schema.TypeToolHookStarted + "/PermissionRequest")
	ToolPreHookRan            = Event(schema.TypeToolHookRan + "/PreToolUse")
	ToolPermissionHookRan     = Event(schema.TypeToolHookRan + "/PermissionRequest")
	ToolPostHookRan           = Event(schema.TypeToolHookRan + "/PostToolUse")
	ToolFailureHookRan        = Event(schema.TypeToolHookRan + "/PostToolUseFailure")
	ToolDecidedAllow          = Event(schema.TypeToolDecided + "/allow")
	ToolDecidedAsk            = Event(schema.TypeToolDecided + "/ask")
	ToolDecidedDeny           = Event(schema.TypeToolDecided + "/deny")
	ToolResultWithHooks       = Event(schema.TypeToolResultRecorded + "/hooks")
	ToolResult                = Event(schema.TypeToolResultRecorded)
)

// toolTable is the life of one tool call: the hooks before the decision,
// the decision once (a call left to ask, twice: the ask, then the user's
// allow or refusal), the result once, the hooks after it. NoTool is the
// state of a call with no step yet.
var toolTable = []Transition{
	{ToolPreHookStarted, []State{NoTool}, ToolPreHooks},
	{ToolPreHookRan, []State{ToolPreHooks}, ToolHooksRan},
	{ToolPermissionHookStarted, []State{NoTool, ToolHooksRan}, ToolPermissionHooks},
	{ToolPermissionHookRan, []State{ToolPermissionHooks}, ToolHooksRan},
	{ToolDecidedAllow, []State{NoTool, ToolHooksRan, ToolAsked}, ToolAllowed},
	{ToolDecidedAsk, []State{NoTool, ToolHooksRan}, ToolAsked},
	{ToolDecidedDeny, []State{NoTool, ToolHooksRan, ToolAsked}, ToolDone},
	// A call left to ask has its result recorded without the user's
	// answer in logs of older builds, and when the host reports a refusal
	// as the call's result.
	{ToolResultWithHooks, []State{ToolAllowed, ToolAsked}, ToolPostHooks},
	{ToolResult, []State{ToolAllowed, ToolAsked}, ToolDone},
	{ToolPostHookRan, []State{ToolPostHooks}, ToolDone},
	{ToolFailureHookRan, []State{ToolPostHooks}, ToolDone},
}

// NoTool is the state of a tool call that has no step yet.
const NoTool State = "none"

var toolMachines = machines(toolTable, NoTool)

// ApplyTool returns the state that e leads a tool call to from s, or a
// *TransitionError when the tool table does not allow it. It is pure and
// safe for concurrent use.
func ApplyTool(s State, e Event) (State, error) { return apply(toolMachines, s, e) }

// ToolEventOf maps a tool call's payload to its label; ok is false for any
// other payload.
func ToolEventOf(p schema.Payload) (e Event, ok bool) {
	switch p := p.(type) {
	case *schema.ToolHookStarted:
		return Event(string(schema.TypeToolHookStarted) + "/" + string(p.Event)), true
	case *schema.ToolHookRan:
		return Event(string(schema.TypeToolHookRan) + "/" + string(p.Event)), true
	case *schema.ToolDecided:
		return Event(string(schema.TypeToolDecided) + "/" + p.Decision), true
	case *schema.ToolResultRecorded:
		if len(p.Hooks) > 0 {
			return ToolResultWithHooks, true
		}
		return ToolResult, true
	}
	return "", false
}

// ToolInFlight reports whether a tool call in state s has hooks that may be
// running.
func ToolInFlight(s State) bool {
	return s == ToolPreHooks || s == ToolPermissionHooks || s == ToolPostHooks
}

// ToolTable returns a copy of the tool call table.
func ToolTable() []Transition { return copyTable(toolTable) }
