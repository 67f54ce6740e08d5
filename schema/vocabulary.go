package schema

// Source says how a session became current; SessionStart hooks get it and
// match on it.
type Source string

// The sources.
const (
	SourceStartup Source = "startup" // the host process started
	SourceResume  Source = "resume"  // switched to an existing session
	SourceNew     Source = "new"     // a fresh session
	SourceClear   Source = "clear"   // a fresh session replacing a cleared one
	SourceCompact Source = "compact" // the same session, compacted
	SourceFork    Source = "fork"    // a copy of another session
)

// Reason says why a session stopped being current; SessionEnd hooks get it
// and match on it.
type Reason string

// The reasons.
const (
	ReasonResume          Reason = "resume"
	ReasonClear           Reason = "clear"
	ReasonComplete        Reason = "complete"
	ReasonError           Reason = "error"
	ReasonAbort           Reason = "abort"
	ReasonTimeout         Reason = "timeout"
	ReasonUserExit        Reason = "user_exit"
	ReasonLogout          Reason = "logout"
	ReasonPromptInputExit Reason = "prompt_input_exit"
	ReasonOther           Reason = "other"
)

// HookEvent names a hook event, as Claude Code's settings files spell it.
// The stepper decides which event's hooks run; package hookexec runs them.
type HookEvent string

// The hook events reprise runs.
const (
	HookSessionStart     HookEvent = "SessionStart"
	HookSessionEnd       HookEvent = "SessionEnd"
	HookStop             HookEvent = "Stop"             // the agent finished a turn
	HookUserPromptSubmit HookEvent = "UserPromptSubmit" // the user submitted a prompt
	HookPreCompact       HookEvent = "PreCompact"       // a compaction is about to start
)

// The hook events of a tool call: the Agent's PreToolUse and PostToolUse
// run them.
const (
	HookPreToolUse         HookEvent = "PreToolUse"         // before a tool runs: allow, deny or ask
	HookPermissionRequest  HookEvent = "PermissionRequest"  // when the decision is still to ask the user
	HookPostToolUse        HookEvent = "PostToolUse"        // after a tool succeeded
	HookPostToolUseFailure HookEvent = "PostToolUseFailure" // after a tool failed
)

// HookEvents are the hook events that have steps of their own in
// reprise's lifecycle, in lifecycle order; the other events of Events are
// fired, and recorded as HookEventStarted and HookEventRan. The slice is
// shared: read it, never change it.
var HookEvents = []HookEvent{HookSessionStart, HookUserPromptSubmit, HookPreToolUse, HookPermissionRequest,
	HookPostToolUse, HookPostToolUseFailure, HookStop, HookPreCompact, HookSessionEnd}
