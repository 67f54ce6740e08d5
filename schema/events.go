package schema

import (
	"slices"
	"time"
)

// HookType names a kind of hook handler, as a settings file's "type" key
// spells it.
type HookType string

// The hook types of Claude Code 2.1.328.
const (
	HookCommand HookType = "command"  // a shell command, or an exec-form argument list
	HookHTTP    HookType = "http"     // a POST of the input to a URL
	HookMCPTool HookType = "mcp_tool" // a tool of a connected MCP server
	HookPrompt  HookType = "prompt"   // one model call answering {ok, reason}
	HookAgent   HookType = "agent"    // a bounded multi-turn run answering {ok, reason}
)

// Firer says who fires a hook event by default. A host may fire any event
// itself.
type Firer uint8

// The firers.
const (
	// FiredByLifecycle: an Agent or turn.Runner fires the event where
	// Claude Code fires it, because reprise owns the step.
	FiredByLifecycle Firer = iota + 1
	// FiredByHost: the event belongs to machinery only the host has (its
	// UI, its MCP client, its file watchers), so the host fires it.
	FiredByHost
)

func (f Firer) String() string {
	switch f {
	case FiredByLifecycle:
		return "lifecycle"
	case FiredByHost:
		return "host"
	}
	return "unknown"
}

// ExitTwo says what a command hook that exits with status 2 does on an
// event, as Claude Code 2.1.328 describes each event.
type ExitTwo uint8

// The meanings of exit status 2.
const (
	// ExitTwoShowsUser: nothing is blocked; stderr is shown to the user.
	ExitTwoShowsUser ExitTwo = iota + 1
	// ExitTwoBlocks: the action does not happen, and stderr goes to the
	// model (a denied tool call, a task not created).
	ExitTwoBlocks
	// ExitTwoBlocksUser: the action does not happen, and stderr goes to the
	// user only (a prompt erased, a compaction or model switch refused).
	ExitTwoBlocksUser
	// ExitTwoContinues: stderr goes to the model, which keeps going instead
	// of stopping (Stop, SubagentStop, TeammateIdle).
	ExitTwoContinues
	// ExitTwoFeedback: the action already happened; stderr goes to the
	// model beside its result.
	ExitTwoFeedback
	// ExitTwoIgnored: the exit status decides nothing (fire-and-forget and
	// observability events, and the permission events, whose decision is
	// their JSON).
	ExitTwoIgnored
)

func (x ExitTwo) String() string {
	switch x {
	case ExitTwoShowsUser:
		return "stderr to the user"
	case ExitTwoBlocks:
		return "blocks; stderr to the model"
	case ExitTwoBlocksUser:
		return "blocks; stderr to the user"
	case ExitTwoContinues:
		return "keeps the agent going; stderr to the model"
	case ExitTwoFeedback:
		return "stderr to the model"
	case ExitTwoIgnored:
		return "ignored"
	}
	return "unknown"
}

// MatchRule says how a matcher's exact list is told from a regular
// expression on an event, following Claude Code 2.1.328.
type MatchRule uint8

// The matching rules.
const (
	// MatchNone: the event has no matcher field; a matcher set on it is
	// ignored and its hooks run every time.
	MatchNone MatchRule = iota
	// MatchWide: a matcher of letters, digits, '_', '|', ',', ' ' and '-'
	// is an exact list split on '|' or ',' with spaces trimmed; anything
	// else is a regular expression.
	MatchWide
	// MatchNarrow: only letters, digits, '_' and '|' make an exact list
	// (FileChanged, StopFailure); anything else is a regular expression.
	MatchNarrow
)

// CommonInput are the input fields every event's hooks receive, required
// first. The slice is shared: read it, never change it.
var CommonInput = []string{"session_id", "transcript_path", "cwd", "hook_event_name",
	"prompt_id", "permission_mode", "agent_id", "agent_type", "effort"}

// EventSpec is one row of the table of hook events: what Claude Code
// 2.1.328 sends an event's hooks, what it reads back, and who fires it.
// Field names are JSON keys as the hooks see them.
type EventSpec struct {
	Event HookEvent
	// MatchOn is the input field the event's matchers select on; "" when it
	// has none (Rule is MatchNone). FileChanged matches the base name of
	// its file_path.
	MatchOn string
	Rule    MatchRule
	// Required and Optional are the input fields beyond CommonInput.
	Required, Optional []string
	// Output lists the fields of hookSpecificOutput the event honours.
	Output []string
	// Decision is whether a top-level "decision": "block" is honoured.
	Decision bool
	// PlainContext is whether plain stdout of exit 0 becomes context for
	// the model.
	PlainContext bool
	ExitTwo      ExitTwo
	// Types are the hook types the event accepts; a settings file that
	// configures another is a configuration error.
	Types []HookType
	// Timeout is a command hook's default timeout on the event. SessionEnd
	// hooks share one budget instead (hookexec documents it).
	Timeout time.Duration
	// EnvFile is whether command hooks get a CLAUDE_ENV_FILE to write.
	EnvFile bool
	// Recorded is false only for MessageDisplay, which fires for every
	// streamed delta: it runs, and nothing of it is written to the log.
	Recorded bool
	FiredBy  Firer
	// RunBy says where reprise runs the event's hooks, for people: the
	// Agent method or turn.Runner step that fires it; "" for an event only
	// a host fires (Agent.Fire, reprise fire).
	RunBy string
}

// Accepts reports whether the event accepts hooks of type t.
func (s EventSpec) Accepts(t HookType) bool { return slices.Contains(s.Types, t) }

// The hook events that reprise's lifecycle does not name elsewhere, in
// the table's order.
const (
	HookSetup               HookEvent = "Setup"
	HookUserPromptExpansion HookEvent = "UserPromptExpansion"
	HookPermissionDenied    HookEvent = "PermissionDenied"
	HookPostToolBatch       HookEvent = "PostToolBatch"
	HookNotification        HookEvent = "Notification"
	HookStopFailure         HookEvent = "StopFailure"
	HookSubagentStart       HookEvent = "SubagentStart"
	HookSubagentStop        HookEvent = "SubagentStop"
	HookPostCompact         HookEvent = "PostCompact"
	HookTeammateIdle        HookEvent = "TeammateIdle"
	HookTaskCreated         HookEvent = "TaskCreated"
	HookTaskCompleted       HookEvent = "TaskCompleted"
	HookElicitation         HookEvent = "Elicitation"
	HookElicitationResult   HookEvent = "ElicitationResult"
	HookConfigChange        HookEvent = "ConfigChange"
	HookWorktreeCreate      HookEvent = "WorktreeCreate"
	HookWorktreeRemove      HookEvent = "WorktreeRemove"
	HookInstructionsLoaded  HookEvent = "InstructionsLoaded"
	HookCwdChanged          HookEvent = "CwdChanged"
	HookFileChanged         HookEvent = "FileChanged"
	HookDirectoryAdded      HookEvent = "DirectoryAdded"
	HookMessageDisplay      HookEvent = "MessageDisplay"
	HookPreModelSwitch      HookEvent = "PreModelSwitch"
	HookPostModelSwitch     HookEvent = "PostModelSwitch"
)

// Hook types accepted by groups of events.
var (
	typesAll      = []HookType{HookCommand, HookHTTP, HookMCPTool, HookPrompt, HookAgent}
	typesNoModel  = []HookType{HookCommand, HookHTTP, HookMCPTool}
	typesNoRemote = []HookType{HookCommand, HookMCPTool}
)

const (
	tenMinutes = 600 * time.Second
	// SessionEndBudget is the time all of one SessionEnd's hooks share
	// when no settings file asks for more.
	SessionEndBudget = 1500 * time.Millisecond
)

var (
	modelSwitch  = []string{"from_model", "to_model", "source"}
	switchExtras = []string{"requested_model", "context_tokens", "prompt_cache_warm", "cache_ttl",
		"estimated_cache_write_usd", "pricing"}
	taskFields = []string{"task_id", "task_subject"}
	taskExtras = []string{"task_description", "teammate_name", "team_name"}
	stopExtras = []string{"last_assistant_message", "background_tasks", "session_crons"}
)

// Events is the table of the 33 hook events Claude Code 2.1.328 defines,
// in the order a session meets them. docs/hooks.md prints it. The slice
// is shared: read it, never change it.
var Events = []EventSpec{
	{Event: HookSetup, MatchOn: "trigger", Rule: MatchWide, Required: []string{"trigger"},
		Output: []string{"additionalContext"}, ExitTwo: ExitTwoShowsUser, Types: typesNoRemote,
		Timeout: tenMinutes, EnvFile: true, Recorded: true, FiredBy: FiredByHost},
	{Event: HookSessionStart, MatchOn: "source", Rule: MatchWide, Required: []string{"source"},
		Optional: []string{"model", "session_title", "seconds_since_last_response", "context_tokens",
			"prompt_cache_likely_expired", "estimated_cache_write_usd"},
		Output:       []string{"additionalContext", "initialUserMessage", "sessionTitle", "watchPaths", "reloadSkills"},
		PlainContext: true, ExitTwo: ExitTwoShowsUser, Types: typesNoRemote,
		Timeout: tenMinutes, EnvFile: true, Recorded: true, FiredBy: FiredByLifecycle,
		RunBy: "restores: Start, Restore, New, Clear, Fork, Compact"},
	{Event: HookInstructionsLoaded, MatchOn: "load_reason", Rule: MatchWide,
		Required: []string{"file_path", "memory_type", "load_reason"},
		Optional: []string{"globs", "trigger_file_path", "parent_file_path"},
		ExitTwo:  ExitTwoIgnored, Types: typesNoModel, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByHost},
	{Event: HookUserPromptExpansion, MatchOn: "command_name", Rule: MatchWide,
		Required: []string{"expansion_type", "command_name", "command_args"},
		Optional: []string{"command_source", "prompt"},
		Output:   []string{"additionalContext", "suppressOriginalPrompt"}, Decision: true, PlainContext: true,
		ExitTwo: ExitTwoBlocksUser, Types: typesAll, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByHost},
	{Event: HookUserPromptSubmit, Required: []string{"prompt"}, Optional: []string{"source", "session_title"},
		Output:   []string{"additionalContext", "sessionTitle", "suppressOriginalPrompt"},
		Decision: true, PlainContext: true, ExitTwo: ExitTwoBlocksUser, Types: typesAll,
		Timeout: 30 * time.Second, Recorded: true, FiredBy: FiredByLifecycle,
		RunBy: "Agent.Prompt"},
	{Event: HookPreToolUse, MatchOn: "tool_name", Rule: MatchWide,
		Required: []string{"tool_name", "tool_input", "tool_use_id"}, Optional: []string{"mcp_server"},
		Output:   []string{"permissionDecision", "permissionDecisionReason", "updatedInput", "additionalContext"},
		Decision: true, ExitTwo: ExitTwoBlocks, Types: typesAll, Timeout: tenMinutes, Recorded: true,
		FiredBy: FiredByLifecycle,
		RunBy:   "Agent.PreToolUse"},
	{Event: HookPermissionRequest, MatchOn: "tool_name", Rule: MatchWide, Required: []string{"tool_name", "tool_input"},
		Optional: []string{"permission_suggestions", "mcp_server"}, Output: []string{"decision"},
		ExitTwo: ExitTwoIgnored, Types: typesAll, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByLifecycle,
		RunBy: "Agent.PreToolUse, on a call left to ask"},
	{Event: HookPermissionDenied, MatchOn: "tool_name", Rule: MatchWide,
		Required: []string{"tool_name", "tool_input", "tool_use_id", "reason"}, Optional: []string{"mcp_server"},
		Output: []string{"retry"}, ExitTwo: ExitTwoIgnored, Types: typesAll, Timeout: tenMinutes,
		Recorded: true, FiredBy: FiredByHost},
	{Event: HookPostToolUse, MatchOn: "tool_name", Rule: MatchWide,
		Required: []string{"tool_name", "tool_input", "tool_response", "tool_use_id"}, Optional: []string{"duration_ms", "mcp_server"},
		Output:   []string{"additionalContext", "updatedToolOutput", "updatedMCPToolOutput", "classifierContext"},
		Decision: true, ExitTwo: ExitTwoFeedback, Types: typesAll, Timeout: tenMinutes, Recorded: true,
		FiredBy: FiredByLifecycle,
		RunBy:   "Agent.PostToolUse"},
	{Event: HookPostToolUseFailure, MatchOn: "tool_name", Rule: MatchWide,
		Required: []string{"tool_name", "tool_input", "tool_use_id", "error"},
		Optional: []string{"is_interrupt", "duration_ms", "mcp_server"}, Output: []string{"additionalContext"},
		Decision: true, ExitTwo: ExitTwoFeedback, Types: typesAll, Timeout: tenMinutes, Recorded: true,
		FiredBy: FiredByLifecycle,
		RunBy:   "Agent.PostToolUse of a failure"},
	{Event: HookPostToolBatch, Required: []string{"tool_calls"}, Output: []string{"additionalContext"},
		Decision: true, ExitTwo: ExitTwoBlocksUser, Types: typesAll, Timeout: tenMinutes, Recorded: true,
		FiredBy: FiredByLifecycle,
		RunBy:   "Agent.PostToolUse of an answer's last result; Agent.ToolBatch"},
	{Event: HookNotification, MatchOn: "notification_type", Rule: MatchWide, Required: []string{"message"},
		Optional: []string{"title", "notification_type"}, Output: []string{"additionalContext", "terminalSequence"},
		ExitTwo: ExitTwoIgnored, Types: typesNoModel, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByLifecycle,
		RunBy: "turn.Runner: before Ask, and when a turn ends"},
	{Event: HookSubagentStart, MatchOn: "agent_type", Rule: MatchWide, Required: []string{"agent_id", "agent_type"},
		Output: []string{"additionalContext"}, ExitTwo: ExitTwoShowsUser, Types: typesNoModel,
		Timeout: tenMinutes, Recorded: true, FiredBy: FiredByLifecycle,
		RunBy: "Agent.StartSubagent (turn.Runner's Agent calls); Agent.Fire for a host's own subagents"},
	{Event: HookSubagentStop, MatchOn: "agent_type", Rule: MatchWide,
		Required: []string{"stop_hook_active", "agent_id", "agent_transcript_path", "agent_type"},
		Optional: stopExtras, Output: []string{"additionalContext"}, Decision: true,
		ExitTwo: ExitTwoContinues, Types: typesAll, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByLifecycle,
		RunBy: "Agent.Stop on a subagent's session; Agent.Fire for a host's own subagents"},
	{Event: HookTaskCreated, Required: taskFields, Optional: taskExtras, Decision: true,
		ExitTwo: ExitTwoBlocks, Types: typesAll, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByHost},
	{Event: HookTaskCompleted, Required: taskFields, Optional: taskExtras, Decision: true,
		ExitTwo: ExitTwoBlocks, Types: typesAll, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByHost},
	{Event: HookTeammateIdle, Required: []string{"teammate_name"}, Optional: []string{"team_name"},
		ExitTwo: ExitTwoContinues, Types: typesAll, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByHost},
	{Event: HookStop, Required: []string{"stop_hook_active"}, Optional: stopExtras,
		Output: []string{"additionalContext"}, Decision: true, ExitTwo: ExitTwoContinues, Types: typesAll,
		Timeout: tenMinutes, Recorded: true, FiredBy: FiredByLifecycle,
		RunBy: "Agent.Stop"},
	{Event: HookStopFailure, MatchOn: "error", Rule: MatchNarrow, Required: []string{"error"},
		Optional: []string{"error_details", "last_assistant_message"}, Output: []string{"terminalSequence"},
		ExitTwo: ExitTwoIgnored, Types: typesNoModel, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByLifecycle,
		RunBy: "turn.Runner, when it gives a model request up"},
	{Event: HookMessageDisplay, Required: []string{"turn_id", "message_id", "index", "final", "delta"},
		Output: []string{"displayContent"}, ExitTwo: ExitTwoIgnored, Types: typesNoModel,
		Timeout: 10 * time.Second, Recorded: false, FiredBy: FiredByHost},
	{Event: HookPreCompact, MatchOn: "trigger", Rule: MatchWide, Required: []string{"trigger", "custom_instructions"},
		Decision: true, ExitTwo: ExitTwoBlocksUser, Types: typesNoModel, Timeout: tenMinutes, Recorded: true,
		FiredBy: FiredByLifecycle,
		RunBy:   "Agent.Compact, CompactWith"},
	{Event: HookPostCompact, MatchOn: "trigger", Rule: MatchWide, Required: []string{"trigger", "compact_summary"},
		ExitTwo: ExitTwoShowsUser, Types: typesNoModel, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByLifecycle,
		RunBy: "Agent.Compact, CompactWith, once compacted"},
	{Event: HookPreModelSwitch, MatchOn: "to_model", Rule: MatchWide, Required: modelSwitch, Optional: switchExtras,
		Output: []string{"permissionDecision", "permissionDecisionReason"}, Decision: true,
		ExitTwo: ExitTwoBlocksUser, Types: typesNoModel, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByHost},
	{Event: HookPostModelSwitch, MatchOn: "to_model", Rule: MatchWide, Required: modelSwitch, Optional: switchExtras,
		Output: []string{"additionalContext"}, PlainContext: true, ExitTwo: ExitTwoShowsUser, Types: typesNoModel,
		Timeout: tenMinutes, Recorded: true, FiredBy: FiredByHost},
	{Event: HookElicitation, MatchOn: "mcp_server_name", Rule: MatchWide, Required: []string{"mcp_server_name", "message"},
		Optional: []string{"mode", "url", "elicitation_id", "requested_schema"}, Output: []string{"action", "content"},
		ExitTwo: ExitTwoBlocksUser, Types: typesNoModel, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByHost},
	{Event: HookElicitationResult, MatchOn: "mcp_server_name", Rule: MatchWide,
		Required: []string{"mcp_server_name", "action"}, Optional: []string{"elicitation_id", "mode", "content"},
		Output: []string{"action", "content"}, ExitTwo: ExitTwoBlocksUser, Types: typesNoModel, Timeout: tenMinutes,
		Recorded: true, FiredBy: FiredByHost},
	{Event: HookConfigChange, MatchOn: "source", Rule: MatchWide, Required: []string{"source"},
		Optional: []string{"file_path"}, Decision: true, ExitTwo: ExitTwoBlocksUser, Types: typesNoModel,
		Timeout: tenMinutes, Recorded: true, FiredBy: FiredByHost},
	{Event: HookCwdChanged, Required: []string{"old_cwd", "new_cwd"}, Output: []string{"watchPaths"},
		ExitTwo: ExitTwoShowsUser, Types: typesNoModel, Timeout: tenMinutes, EnvFile: true, Recorded: true,
		FiredBy: FiredByHost},
	{Event: HookFileChanged, MatchOn: "file_path", Rule: MatchNarrow, Required: []string{"file_path", "event"},
		Output: []string{"watchPaths"}, ExitTwo: ExitTwoShowsUser, Types: typesNoModel, Timeout: tenMinutes,
		EnvFile: true, Recorded: true, FiredBy: FiredByHost},
	{Event: HookDirectoryAdded, MatchOn: "source", Rule: MatchWide, Required: []string{"directory", "source"},
		ExitTwo: ExitTwoShowsUser, Types: typesNoModel, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByHost},
	{Event: HookWorktreeCreate, Required: []string{"name"}, Output: []string{"worktreePath"},
		ExitTwo: ExitTwoBlocksUser, Types: typesNoModel, Timeout: tenMinutes, Recorded: true, FiredBy: FiredByHost},
	{Event: HookWorktreeRemove, Required: []string{"worktree_path"}, ExitTwo: ExitTwoIgnored, Types: typesNoModel,
		Timeout: tenMinutes, Recorded: true, FiredBy: FiredByHost},
	{Event: HookSessionEnd, MatchOn: "reason", Rule: MatchWide, Required: []string{"reason"},
		ExitTwo: ExitTwoShowsUser, Types: typesNoModel, Timeout: SessionEndBudget, Recorded: true,
		FiredBy: FiredByLifecycle,
		RunBy:   "restores that leave a session; Agent.End"},
}

// LookupEvent returns the row of event e, and false for a name Claude Code
// does not define.
func LookupEvent(e HookEvent) (EventSpec, bool) {
	for _, s := range Events {
		if s.Event == e {
			return s, true
		}
	}
	return EventSpec{}, false
}
