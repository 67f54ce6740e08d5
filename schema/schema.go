package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/reprise-dev/reprise/eventlog"

	"github.com/vmihailenco/msgpack/v5"
)

// The event types. Session streams hold SessionCreated
// and MessageAppended; agent streams hold the lifecycle steps.
const (
	TypeSessionCreated   eventlog.Type = "SessionCreated"
	TypeMessageAppended  eventlog.Type = "MessageAppended"
	TypeTranscriptRecord eventlog.Type = "TranscriptRecord"
	TypeCompactBoundary  eventlog.Type = "CompactBoundary"

	TypeSaveAttempted           eventlog.Type = "SaveAttempted"
	TypeSessionEndHookStarted   eventlog.Type = "SessionEndHookStarted"
	TypeSessionEndHookRan       eventlog.Type = "SessionEndHookRan"
	TypeSessionLoaded           eventlog.Type = "SessionLoaded"
	TypeSessionStartHookStarted eventlog.Type = "SessionStartHookStarted"
	TypeSessionStartHookRan     eventlog.Type = "SessionStartHookRan"
	TypeContextInjected         eventlog.Type = "ContextInjected"
	TypeSessionCompacted        eventlog.Type = "SessionCompacted"
	TypeSessionClosed           eventlog.Type = "SessionClosed"
	TypeStopHookStarted         eventlog.Type = "StopHookStarted"
	TypeStopHookRan             eventlog.Type = "StopHookRan"
	TypePromptHookStarted       eventlog.Type = "PromptHookStarted"
	TypePromptHookRan           eventlog.Type = "PromptHookRan"
	TypePreCompactHookStarted   eventlog.Type = "PreCompactHookStarted"
	TypePreCompactHookRan       eventlog.Type = "PreCompactHookRan"

	TypeSessionDeleted eventlog.Type = "SessionDeleted"
	TypeVacuumed       eventlog.Type = "Vacuumed"
	TypeImportStarted  eventlog.Type = "ImportStarted"
	TypeImportFinished eventlog.Type = "ImportFinished"
)

// Payload is the typed body of an event.
type Payload interface {
	EventType() eventlog.Type
}

// SessionCreated starts a session stream. A forked session names the
// session it was copied from and the last message it copied.
type SessionCreated struct {
	ID  string `msgpack:"id"`
	Cwd string `msgpack:"cwd"`
	// ImportedCwd is the working directory an imported transcript named,
	// kept for the record: hooks never run there unless the user chose it
	// as Cwd.
	ImportedCwd string `msgpack:"imported_cwd,omitempty"`
	Parent      string `msgpack:"parent,omitempty"`
	ForkPoint   string `msgpack:"forkpoint,omitempty"`
	// Subagent, in a subagent's session, names the call that started it;
	// nil in any other session.
	Subagent *Subagent `msgpack:"subagent,omitempty"`
}

// Subagent links a subagent's session to the parent session's call of
// the Agent tool that started it: one session per call.
type Subagent struct {
	Session   string `msgpack:"session"`     // the parent session
	ToolUseID string `msgpack:"tool_use_id"` // the parent's Agent call
	AgentID   string `msgpack:"agent_id"`    // the hooks' agent_id
	Type      string `msgpack:"type"`        // the call's subagent_type
	Depth     int    `msgpack:"depth"`       // 1 for the main agent's subagent, 2 for one of those, ...
	// PromptID is the prompt_id of the parent's turn that made the call,
	// which every hook inside the subagent is told.
	PromptID    string `msgpack:"prompt_id,omitempty"`
	Description string `msgpack:"description,omitempty"`
}

// Message is one conversation message as stored in the log.
type Message struct {
	UUID       string `msgpack:"uuid"`
	ParentUUID string `msgpack:"parent,omitempty"`
	Role       string `msgpack:"role"` // "user" or "assistant"
	IsMeta     bool   `msgpack:"meta,omitempty"`
	// Summary marks the summary that starts a compacted conversation.
	Summary   bool    `msgpack:"summary,omitempty"`
	Timestamp int64   `msgpack:"ts"` // UTC unix nanoseconds
	Content   []Block `msgpack:"content"`
	// Record is the message's line of an imported Claude Code transcript,
	// kept verbatim so that export writes it back byte for byte.
	Record []byte `msgpack:"record,omitempty"`
	// ToolUseResult is, on a tool_result message, the tool's result as the
	// hooks got it (JSON), which the transcript carries as toolUseResult.
	ToolUseResult []byte `msgpack:"tooluse,omitempty"`
	// Attachment is, on a meta message that holds what a tool call's hooks
	// added for the model, the attachment object Claude Code records it as
	// (JSON: type hook_additional_context, content, hookName, toolUseID,
	// hookEvent). A transcript writes such a message as an attachment
	// record rather than as a user message.
	Attachment []byte `msgpack:"attachment,omitempty"`
}

// Block is one content block of a message. Text blocks carry Text; other
// block kinds (thinking, tool_use, tool_result, image) keep their JSON
// verbatim in Raw.
type Block struct {
	Type string `msgpack:"type"`
	Text string `msgpack:"text,omitempty"`
	Raw  []byte `msgpack:"raw,omitempty"`
}

// MessageAppended adds one message to a session.
type MessageAppended struct {
	Message Message `msgpack:"msg"`
}

// TranscriptRecord keeps a line of an imported Claude Code transcript that
// is not a conversation message (summary, system, progress,
// file-history-snapshot, ...), verbatim, at its place among the messages.
type TranscriptRecord struct {
	Record []byte `msgpack:"record"`
}

// CompactBoundary starts the compacted view of a session: the messages
// before it stay in the log but are replaced, for the model, by the summary
// message that follows it.
type CompactBoundary struct {
	UUID          string `msgpack:"uuid"`
	LogicalParent string `msgpack:"logicalparent,omitempty"` // the last message before it
	Trigger       string `msgpack:"trigger"`                 // "manual" or "auto"
	PreMessages   int    `msgpack:"premessages"`             // messages in the view it replaced
}

// SaveAttempted is step 1 of leaving a session: its pending messages were
// flushed (Saved of them), or the flush failed with Error and they stay
// pending. It names the session left, the one going to be current (empty
// when the session just ends), why the session ends and how the next one
// starts.
type SaveAttempted struct {
	From   string `msgpack:"from"`
	To     string `msgpack:"to"`
	Saved  int    `msgpack:"saved"`
	Error  string `msgpack:"error,omitempty"`
	Reason Reason `msgpack:"reason,omitempty"` // SessionEnd reason; "resume" when empty
	Source Source `msgpack:"source,omitempty"` // SessionStart source of To; "resume" when empty
	// FinalMessage and EndError are passed to function SessionEnd hooks.
	FinalMessage string `msgpack:"finalmsg,omitempty"`
	EndError     string `msgpack:"enderror,omitempty"`
	// Prompt is the first prompt the host gave New or Fork for To,
	// recorded here so that a restore finished after a crash has it.
	Prompt string `msgpack:"prompt,omitempty"`
}

// SessionEndHookStarted is the durable intent recorded before SessionEnd
// hooks run. Hooks names them in configuration order.
type SessionEndHookStarted struct {
	Session string   `msgpack:"session"`
	Reason  Reason   `msgpack:"reason"`
	Hooks   []string `msgpack:"hooks,omitempty"`
	// Status holds the hooks' statusMessage, in the order of Hooks ("" for
	// one without); nil when none has one.
	Status []string `msgpack:"status,omitempty"`
}

// SessionEndHookRan is step 2 of a runtime restore: the SessionEnd hooks'
// outcomes. Interrupted means the process died while they ran; they were
// not run again.
type SessionEndHookRan struct {
	Session     string        `msgpack:"session"`
	Reason      Reason        `msgpack:"reason"`
	Outcomes    []HookOutcome `msgpack:"outcomes,omitempty"`
	Interrupted bool          `msgpack:"interrupted,omitempty"`
}

// SessionLoaded makes Session current: step 3 of a runtime restore and the
// first step of a startup restore. From is the session it replaced, if any.
type SessionLoaded struct {
	Session  string `msgpack:"session"`
	Source   Source `msgpack:"source"`
	From     string `msgpack:"from,omitempty"`
	Messages int    `msgpack:"messages"`
	Head     uint64 `msgpack:"head"`
	// Prompt is the first prompt the host gave Start or New, which
	// SessionStart hooks receive as initialPrompt.
	Prompt string `msgpack:"prompt,omitempty"`
}

// SessionStartHookStarted is the durable intent recorded before SessionStart
// hooks run.
type SessionStartHookStarted struct {
	Session string   `msgpack:"session"`
	Source  Source   `msgpack:"source"`
	Hooks   []string `msgpack:"hooks,omitempty"`
	// Event is HookSubagentStart when the session is a subagent's, whose
	// start runs SubagentStart hooks in place of SessionStart's; "" for
	// SessionStart.
	Event HookEvent `msgpack:"event,omitempty"`
	// Status holds the hooks' statusMessage, in the order of Hooks ("" for
	// one without); nil when none has one.
	Status []string `msgpack:"status,omitempty"`
}

// SessionStartHookRan records the SessionStart hooks' outcomes and the
// additional context they returned, joined in configuration order.
type SessionStartHookRan struct {
	Session     string        `msgpack:"session"`
	Source      Source        `msgpack:"source"`
	Outcomes    []HookOutcome `msgpack:"outcomes,omitempty"`
	Context     string        `msgpack:"context,omitempty"`
	Env         string        `msgpack:"env,omitempty"`      // what hooks wrote to CLAUDE_ENV_FILE
	EnvFile     string        `msgpack:"env_file,omitempty"` // the CLAUDE_ENV_FILE of this run
	Interrupted bool          `msgpack:"interrupted,omitempty"`
}

// SessionCompacted starts a compaction of Session: the same append wrote
// the boundary and the summary message to the session. SessionStart hooks
// with source "compact" follow.
type SessionCompacted struct {
	Session     string `msgpack:"session"`
	Boundary    string `msgpack:"boundary"` // uuid of the CompactBoundary
	SummaryUUID string `msgpack:"summary"`
	// Trigger is the boundary's, "manual" or "auto"; "" in logs written
	// before it was recorded here.
	Trigger string `msgpack:"trigger,omitempty"`
}

// SessionClosed ends an explicit End: the agent has no current session.
type SessionClosed struct {
	Session string `msgpack:"session"`
}

// StopHookStarted is the durable intent recorded before Stop hooks run at
// the end of an agent's turn. Active is the stop_hook_active the hooks get.
// Capped means the consecutive-block cap was reached, so no hook runs.
type StopHookStarted struct {
	Session string   `msgpack:"session"`
	Active  bool     `msgpack:"active,omitempty"`
	Hooks   []string `msgpack:"hooks,omitempty"`
	Capped  bool     `msgpack:"capped,omitempty"`
	// Event is HookSubagentStop when the session is a subagent's, whose
	// stop runs SubagentStop hooks in place of Stop's; "" for Stop.
	Event HookEvent `msgpack:"event,omitempty"`
	// StopReason is why the turn ended, as the host said (e.g. end_turn).
	StopReason string `msgpack:"stopreason,omitempty"`
	// Answer is the uuid of the assistant message the turn ended with, ""
	// when the session has none: a turn runner that restarts knows from it
	// that this answer's Stop ran.
	Answer string `msgpack:"answer,omitempty"`
	// Status holds the hooks' statusMessage, in the order of Hooks ("" for
	// one without); nil when none has one.
	Status []string `msgpack:"status,omitempty"`
}

// StopHookRan records the Stop hooks' outcomes. When a hook blocked the
// stop, Reason is its reason and the same append queued it as the next
// user message (MessageUUID). Deleted says that another process deleted
// the session while the hooks ran: the stop ended on the agent's stream
// alone, and nothing was queued.
type StopHookRan struct {
	Session     string        `msgpack:"session"`
	Outcomes    []HookOutcome `msgpack:"outcomes,omitempty"`
	Blocked     bool          `msgpack:"blocked,omitempty"`
	Reason      string        `msgpack:"reason,omitempty"`
	MessageUUID string        `msgpack:"message,omitempty"`
	Capped      string        `msgpack:"capped,omitempty"` // why no hook was asked
	Interrupted bool          `msgpack:"interrupted,omitempty"`
	Deleted     bool          `msgpack:"deleted,omitempty"`
	// Context is the hooks' additionalContext when none blocked: the
	// meta message MessageUUID holds it, and the turn goes on.
	Context string `msgpack:"context,omitempty"`
}

// PromptHookStarted is the durable intent recorded before UserPromptSubmit
// hooks run on a prompt the user submitted, which is not kept yet. The
// intent holds the prompt's SHA-256 (hex) and length in bytes, not its
// text, so that a prompt the hooks block (a pasted secret, say) is never
// written: the process that runs the hooks keeps the text, and writes it
// as a user message only if they let it through. Intents written before
// PromptSHA256 existed hold the text in Prompt instead; Forget replaces it.
type PromptHookStarted struct {
	Session      string   `msgpack:"session"`
	Prompt       string   `msgpack:"prompt"`
	PromptID     string   `msgpack:"promptid"`
	Hooks        []string `msgpack:"hooks,omitempty"`
	PromptSHA256 string   `msgpack:"promptsha256,omitempty"`
	PromptLen    int      `msgpack:"promptlen,omitempty"`
	// Status holds the hooks' statusMessage, in the order of Hooks ("" for
	// one without); nil when none has one.
	Status []string `msgpack:"status,omitempty"`
}

// NewPromptHookStarted returns the intent of running hooks on prompt in
// session: the prompt's digest and length, without its text.
func NewPromptHookStarted(session, prompt, promptID string, hooks []string) *PromptHookStarted {
	p := &PromptHookStarted{Session: session, Prompt: prompt, PromptID: promptID, Hooks: hooks}
	p.Forget()
	return p
}

// Forget replaces the text of the intent's prompt by its SHA-256 and
// length, and reports whether there was text to replace.
func (p *PromptHookStarted) Forget() bool {
	if p.Prompt == "" {
		return false
	}
	sum := sha256.Sum256([]byte(p.Prompt))
	p.PromptSHA256, p.PromptLen, p.Prompt = hex.EncodeToString(sum[:]), len(p.Prompt), ""
	return true
}

// PromptHookRan records the UserPromptSubmit hooks' outcomes. Unless a hook
// blocked the prompt (Blocked, Reason) or the run was interrupted, the
// same append kept the prompt as user message MessageUUID and, when the
// hooks gave Context, the meta message ContextUUID after it. Deleted says
// that another process deleted the session before the prompt could be
// kept: it was not.
type PromptHookRan struct {
	Session     string        `msgpack:"session"`
	Outcomes    []HookOutcome `msgpack:"outcomes,omitempty"`
	Context     string        `msgpack:"context,omitempty"`
	Blocked     bool          `msgpack:"blocked,omitempty"`
	Reason      string        `msgpack:"reason,omitempty"`
	MessageUUID string        `msgpack:"message,omitempty"`
	ContextUUID string        `msgpack:"contextmsg,omitempty"`
	Interrupted bool          `msgpack:"interrupted,omitempty"`
	Deleted     bool          `msgpack:"deleted,omitempty"`
}

// PreCompactHookStarted is the durable intent recorded before PreCompact
// hooks run. It keeps the summary, so that a compaction whose process died
// after its hooks can still be finished.
type PreCompactHookStarted struct {
	Session      string   `msgpack:"session"`
	Trigger      string   `msgpack:"trigger"` // "manual" or "auto"
	Instructions string   `msgpack:"instructions,omitempty"`
	Summary      string   `msgpack:"summary"`
	Hooks        []string `msgpack:"hooks,omitempty"`
	// Status holds the hooks' statusMessage, in the order of Hooks ("" for
	// one without); nil when none has one.
	Status []string `msgpack:"status,omitempty"`
}

// PreCompactHookRan records the PreCompact hooks' outcomes. A blocked
// compaction ends here; otherwise SessionCompacted follows. Deleted says
// that another process deleted the session while the hooks ran: the
// compaction ends here too, as blocked.
type PreCompactHookRan struct {
	Session     string        `msgpack:"session"`
	Outcomes    []HookOutcome `msgpack:"outcomes,omitempty"`
	Blocked     bool          `msgpack:"blocked,omitempty"`
	Reason      string        `msgpack:"reason,omitempty"`
	Interrupted bool          `msgpack:"interrupted,omitempty"`
	Deleted     bool          `msgpack:"deleted,omitempty"`
	// Instructions is what the hooks printed for the compaction's
	// instructions; Summary the summary the host made after them, when
	// the intent held none.
	Instructions string `msgpack:"instructions,omitempty"`
	Summary      string `msgpack:"summary,omitempty"`
}

// ContextInjected ends a restore. When MessageUUID is set, the same atomic
// append added that meta message to Session; otherwise there was no context.
// Initial is the user message the same append added with a SessionStart
// hook's initialUserMessage, "" when none.
type ContextInjected struct {
	Session     string `msgpack:"session"`
	MessageUUID string `msgpack:"message,omitempty"`
	Initial     string `msgpack:"initial,omitempty"`
}

// SessionDeleted is the tombstone that ends a session stream: the session
// leaves every listing and no action may use it again. A vacuum removes
// the events before it and keeps it, so the id is never reused.
type SessionDeleted struct {
	ID     string `msgpack:"id"`
	Reason string `msgpack:"reason,omitempty"` // what the user gave, e.g. "older than 720h0m0s"
	// Messages and LastActivity describe what was deleted: its saved
	// messages, and the time (UTC unix nanoseconds) of its last event.
	Messages     int   `msgpack:"messages"`
	LastActivity int64 `msgpack:"lastactivity"`
}

// ImportStarted follows SessionCreated in a session made by importing a
// Claude Code transcript. Until ImportFinished follows, the session holds
// only the first part of the transcript: the import is running, or its
// process died.
type ImportStarted struct {
	Bytes int64 `msgpack:"bytes,omitempty"` // the transcript's size, when known
}

// ImportFinished ends an import: the whole transcript is in the session.
// It counts what the import kept and skipped, over all its runs.
type ImportFinished struct {
	Messages int   `msgpack:"messages"`          // user and assistant records
	Records  int   `msgpack:"records"`           // other records, kept verbatim
	Skipped  int   `msgpack:"skipped,omitempty"` // lines that are not JSON objects
	Bytes    int64 `msgpack:"bytes"`             // the transcript's size
}

// Vacuumed is written to VacuumStream by a vacuum, in the same transaction
// that removed the events of deleted sessions for good. It says what went,
// so that an audit tells the gaps it left from damage.
type Vacuumed struct {
	// Sessions are the deleted sessions whose events went, each with the
	// sequences removed from its stream.
	Sessions []VacuumedSession `msgpack:"sessions"`
	// Positions are the store-wide positions the removed events had.
	Positions []PositionRange `msgpack:"positions"`
	// Rewritten are the agent-stream events whose copies of those
	// sessions' text were blanked; the events stay.
	Rewritten []EventRef `msgpack:"rewritten,omitempty"`
	// Files counts the transcript, env and spilled-output files removed.
	Files int `msgpack:"files,omitempty"`
}

// VacuumedSession names the sequences First to Last removed from session
// ID's stream.
type VacuumedSession struct {
	ID    string `msgpack:"id"`
	First uint64 `msgpack:"first"`
	Last  uint64 `msgpack:"last"`
}

// PositionRange is the positions First to Last, both included.
type PositionRange struct {
	First uint64 `msgpack:"first"`
	Last  uint64 `msgpack:"last"`
}

// EventRef names one event by its stream and sequence.
type EventRef struct {
	Stream string `msgpack:"stream"`
	Seq    uint64 `msgpack:"seq"`
}

// VacuumStream is the stream of Vacuumed events.
const VacuumStream = "store/vacuum"

// Hook outcome statuses.
const (
	HookOK          = "ok"          // ran and returned normally
	HookFailed      = "failed"      // returned an error or a non-zero exit
	HookPanicked    = "panicked"    // a function hook panicked
	HookTimedOut    = "timeout"     // ran past its timeout and was stopped
	HookCancelled   = "cancelled"   // the caller's context ended first
	HookInterrupted = "interrupted" // the process died while it ran
	// HookAsync is the status a step records for an "async" command
	// hook: started in the background, not waited for. How it ended is
	// recorded on its own, in an AsyncHookEnded under the outcome's Async.
	HookAsync = "async"
)

// HookOutcome is what one hook did.
type HookOutcome struct {
	Name       string `msgpack:"name"`
	Source     string `msgpack:"source"` // where it was configured
	Status     string `msgpack:"status"`
	ExitCode   int    `msgpack:"exit,omitempty"`
	Duration   int64  `msgpack:"dur"` // nanoseconds
	Error      string `msgpack:"error,omitempty"`
	Stderr     string `msgpack:"stderr,omitempty"`
	ContextLen int    `msgpack:"ctxlen,omitempty"`
	Dropped    int64  `msgpack:"dropped,omitempty"` // output bytes beyond the capture limit
	// What a SessionEnd hook returned, and a Stop hook's block.
	Summary  string   `msgpack:"summary,omitempty"`
	Cleanup  []string `msgpack:"cleanup,omitempty"`
	Decision string   `msgpack:"decision,omitempty"` // "block" when a Stop, UserPromptSubmit or PreCompact hook blocked
	Reason   string   `msgpack:"reason,omitempty"`
	// Config is the modifiedConfig a SessionStart function hook returned,
	// as JSON; Suppress the suppressOutput of a SessionEnd one.
	Config   []byte `msgpack:"config,omitempty"`
	Suppress bool   `msgpack:"suppress,omitempty"`
	// What every command hook's JSON answer may add: "continue": false
	// (Halt), its "stopReason" for the user, and "systemMessage", a
	// warning for the user.
	Halt          bool   `msgpack:"halt,omitempty"`
	StopReason    string `msgpack:"stopreason,omitempty"`
	SystemMessage string `msgpack:"sysmsg,omitempty"`
	// Specific holds, as a JSON object, the fields of a command hook's
	// hookSpecificOutput that its event honours (Events' Output) and that
	// no other field records: SessionStart's sessionTitle,
	// initialUserMessage, watchPaths and reloadSkills, UserPromptSubmit's
	// sessionTitle and suppressOriginalPrompt, and so on; nil when it gave
	// none.
	Specific []byte `msgpack:"specific,omitempty"`
	// Type is the hook's type when it is not a command or a Go function:
	// "http", "prompt", "agent" or "mcp_tool". Request is what a prompt,
	// agent or mcp_tool hook asked (the prompt, the tool's input), Answer
	// what an http, prompt, agent or mcp_tool hook answered (the body, the
	// model's text, the tool's text), each at most 2000 bytes.
	Type    string `msgpack:"type,omitempty"`
	Request string `msgpack:"request,omitempty"`
	Answer  string `msgpack:"answer,omitempty"`
	// Async is the id of an "async" hook's run, in the outcome its step
	// records (status HookAsync) and in its AsyncHookEnded.
	Async string `msgpack:"async,omitempty"`
}

func (SessionCreated) EventType() eventlog.Type          { return TypeSessionCreated }
func (MessageAppended) EventType() eventlog.Type         { return TypeMessageAppended }
func (TranscriptRecord) EventType() eventlog.Type        { return TypeTranscriptRecord }
func (SaveAttempted) EventType() eventlog.Type           { return TypeSaveAttempted }
func (SessionEndHookStarted) EventType() eventlog.Type   { return TypeSessionEndHookStarted }
func (SessionEndHookRan) EventType() eventlog.Type       { return TypeSessionEndHookRan }
func (SessionLoaded) EventType() eventlog.Type           { return TypeSessionLoaded }
func (SessionStartHookStarted) EventType() eventlog.Type { return TypeSessionStartHookStarted }
func (SessionStartHookRan) EventType() eventlog.Type     { return TypeSessionStartHookRan }
func (ContextInjected) EventType() eventlog.Type         { return TypeContextInjected }
func (CompactBoundary) EventType() eventlog.Type         { return TypeCompactBoundary }
func (SessionCompacted) EventType() eventlog.Type        { return TypeSessionCompacted }
func (SessionClosed) EventType() eventlog.Type           { return TypeSessionClosed }
func (StopHookStarted) EventType() eventlog.Type         { return TypeStopHookStarted }
func (StopHookRan) EventType() eventlog.Type             { return TypeStopHookRan }
func (PromptHookStarted) EventType() eventlog.Type       { return TypePromptHookStarted }
func (PromptHookRan) EventType() eventlog.Type           { return TypePromptHookRan }
func (PreCompactHookStarted) EventType() eventlog.Type   { return TypePreCompactHookStarted }
func (PreCompactHookRan) EventType() eventlog.Type       { return TypePreCompactHookRan }
func (SessionDeleted) EventType() eventlog.Type          { return TypeSessionDeleted }
func (Vacuumed) EventType() eventlog.Type                { return TypeVacuumed }
func (ImportStarted) EventType() eventlog.Type           { return TypeImportStarted }
func (ImportFinished) EventType() eventlog.Type          { return TypeImportFinished }

var payloads = map[eventlog.Type]func() Payload{
	TypeSessionCreated:          func() Payload { return new(SessionCreated) },
	TypeMessageAppended:         func() Payload { return new(MessageAppended) },
	TypeTranscriptRecord:        func() Payload { return new(TranscriptRecord) },
	TypeSaveAttempted:           func() Payload { return new(SaveAttempted) },
	TypeSessionEndHookStarted:   func() Payload { return new(SessionEndHookStarted) },
	TypeSessionEndHookRan:       func() Payload { return new(SessionEndHookRan) },
	TypeSessionLoaded:           func() Payload { return new(SessionLoaded) },
	TypeSessionStartHookStarted: func() Payload { return new(SessionStartHookStarted) },
	TypeSessionStartHookRan:     func() Payload { return new(SessionStartHookRan) },
	TypeContextInjected:         func() Payload { return new(ContextInjected) },
	TypeCompactBoundary:         func() Payload { return new(CompactBoundary) },
	TypeSessionCompacted:        func() Payload { return new(SessionCompacted) },
	TypeSessionClosed:           func() Payload { return new(SessionClosed) },
	TypeStopHookStarted:         func() Payload { return new(StopHookStarted) },
	TypeStopHookRan:             func() Payload { return new(StopHookRan) },
	TypePromptHookStarted:       func() Payload { return new(PromptHookStarted) },
	TypePromptHookRan:           func() Payload { return new(PromptHookRan) },
	TypePreCompactHookStarted:   func() Payload { return new(PreCompactHookStarted) },
	TypePreCompactHookRan:       func() Payload { return new(PreCompactHookRan) },
	TypeSessionDeleted:          func() Payload { return new(SessionDeleted) },
	TypeVacuumed:                func() Payload { return new(Vacuumed) },
	TypeImportStarted:           func() Payload { return new(ImportStarted) },
	TypeImportFinished:          func() Payload { return new(ImportFinished) },
	TypeToolHookStarted:         func() Payload { return new(ToolHookStarted) },
	TypeToolHookRan:             func() Payload { return new(ToolHookRan) },
	TypeToolDecided:             func() Payload { return new(ToolDecided) },
	TypeToolResultRecorded:      func() Payload { return new(ToolResultRecorded) },
	TypeAsyncHookEnded:          func() Payload { return new(AsyncHookEnded) },
	TypeAsyncContextInjected:    func() Payload { return new(AsyncContextInjected) },
	TypeHookEventStarted:        func() Payload { return new(HookEventStarted) },
	TypeHookEventRan:            func() Payload { return new(HookEventRan) },
}

// Types returns every event type of the schema, in no particular order.
func Types() []eventlog.Type {
	out := make([]eventlog.Type, 0, len(payloads))
	for t := range payloads {
		out = append(out, t)
	}
	return out
}

var ignorable sync.Map // eventlog.Type -> struct{}

// RegisterIgnorable makes Decode skip events of type t instead of failing:
// it returns (nil, nil) for them. Hosts that write their own event types
// into a shared store register them here so reprise's readers pass them by.
func RegisterIgnorable(t eventlog.Type) { ignorable.Store(t, struct{}{}) }

// Decode returns the typed payload of ev (a pointer to one of the schema
// structs), brought up to the type's current version by its upcasters. An
// unknown type, version 0, or a version newer than this build reads
// returns an *eventlog.EventError naming the stream and sequence, matching
// ErrUnknownType, ErrBadVersion or ErrNewerVersion.
func Decode(ev eventlog.Event) (Payload, error) { return std.decode(ev) }

// messageSize bounds the size of m's MessageAppended encoding from above,
// so that it is written into one allocation: about 96 bytes of field names
// and headers, 32 more for each block, and the strings and bytes.
func messageSize(m *Message) int {
	n := 112 + len(m.UUID) + len(m.ParentUUID) + len(m.Role) + len(m.Record) + len(m.ToolUseResult) + len(m.Attachment)
	for _, b := range m.Content {
		n += 32 + len(b.Type) + len(b.Text) + len(b.Raw)
	}
	return n
}

// AppendMessageRecords appends to recs the records of ms, messages for
// stream stamped with time (UTC unix nanoseconds), as NewRecord makes
// them, their payloads encoded into one allocation: a long save makes one
// instead of one a message.
func AppendMessageRecords(recs []eventlog.Record, stream string, ms []MessageAppended, time int64) []eventlog.Record {
	size := 0
	for i := range ms {
		size += messageSize(&ms[i].Message)
	}
	arena := make([]byte, 0, size)
	v := Version(TypeMessageAppended)
	for i := range ms {
		start := len(arena)
		arena = appendMessageAppended(arena, &ms[i])
		recs = append(recs, eventlog.Record{Stream: stream, Type: TypeMessageAppended, Version: v, Time: time,
			Payload: arena[start:len(arena):len(arena)]})
	}
	return recs
}

// NewRecord encodes p as a record for stream, stamped with time (UTC unix
// nanoseconds), restoreID and the current version of p's type.
func NewRecord(stream string, p Payload, time int64, restoreID string) (eventlog.Record, error) {
	if m, ok := p.(*MessageAppended); ok {
		return eventlog.Record{Stream: stream, Type: TypeMessageAppended, Version: Version(TypeMessageAppended), Time: time, RestoreID: restoreID,
			Payload: appendMessageAppended(make([]byte, 0, messageSize(&m.Message)), m)}, nil
	}
	data, err := msgpack.Marshal(p)
	if err != nil {
		return eventlog.Record{}, fmt.Errorf("schema: encode %s: %w", p.EventType(), err)
	}
	return eventlog.Record{Stream: stream, Type: p.EventType(), Version: Version(p.EventType()), Time: time, RestoreID: restoreID, Payload: data}, nil
}
