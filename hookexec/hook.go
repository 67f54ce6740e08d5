package hookexec

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reprise-dev/reprise/schema"
)

// Event names a hook event, as Claude Code's settings files spell it. It
// is the schema's word, so that the stepper, which decides which hooks
// run, needs nothing of this package.
type Event = schema.HookEvent

// The hook events reprise runs.
const (
	SessionStart     = schema.HookSessionStart
	SessionEnd       = schema.HookSessionEnd
	Stop             = schema.HookStop             // the agent finished a turn
	UserPromptSubmit = schema.HookUserPromptSubmit // the user submitted a prompt
	PreCompact       = schema.HookPreCompact       // a compaction is about to start
)

// Events are the hook events reprise runs: all of schema.Events, in its
// order. Those of schema.HookEvents have steps of their own in the
// lifecycle; the others are fired (Agent.Fire, or the lifecycle where it
// owns them) and run with RunEvent. The slice is shared: read it, never
// change it.
var Events = func() []Event {
	out := make([]Event, len(schema.Events))
	for i, s := range schema.Events {
		out[i] = s.Event
	}
	return out
}()

// Default timeouts for hooks that set none of their own. A command hook's
// default is its event's, from schema.Events: DefaultCommandTimeout on most
// events, 30 seconds on UserPromptSubmit, 10 on MessageDisplay.
const (
	DefaultFuncTimeout    = 5 * time.Second
	DefaultCommandTimeout = 600 * time.Second
	// DefaultSessionEndCommandTimeout is the short budget of SessionEnd
	// command hooks: a session that is being left should not wait long.
	DefaultSessionEndCommandTimeout = schema.SessionEndBudget
)

// SessionStartInput is what a SessionStart hook receives. Messages is the
// session's conversation as saved, shared with the Engine: read it, never
// change it, and do not keep it past the call.
type SessionStartInput struct {
	SessionID      string
	TranscriptPath string // the session's transcript in Claude Code's JSONL format
	Timestamp      int64  // unix milliseconds when the hook was triggered
	Cwd            string // the session's working directory
	Source         schema.Source
	InitialPrompt  string // the first prompt the host gave Start or New, if any
	Messages       []schema.Message
}

// SessionStartOutput is what a SessionStart hook may return. A non-empty
// AdditionalContext is shown to the model. ModifiedConfig is recorded as
// JSON with the outcome and merged, key by key in hook order, into the
// restore's ModifiedConfig for the host.
type SessionStartOutput struct {
	AdditionalContext string
	ModifiedConfig    map[string]any
}

// SessionEndInput is what a SessionEnd hook receives.
type SessionEndInput struct {
	SessionID      string
	TranscriptPath string // the session's transcript in Claude Code's JSONL format
	Timestamp      int64  // unix milliseconds
	Cwd            string // the session's working directory
	Reason         schema.Reason
	FinalMessage   string // the host's, or the text of the session's last assistant message
	Error          string
	Messages       []schema.Message // as in SessionStartInput
}

// SessionEndOutput is what a SessionEnd hook may return. All of it is
// recorded with the outcome; reprise does not act on it: cleanup actions
// are for the host to carry out.
type SessionEndOutput struct {
	SuppressOutput bool
	CleanupActions []string
	SessionSummary string
}

// StopInput is what a Stop hook receives when the agent finishes a turn.
// StopHookActive is true when the previous stop was blocked by a hook, so
// the agent is continuing because of one.
type StopInput struct {
	SessionID      string
	TranscriptPath string
	Cwd            string
	StopHookActive bool
	StopReason     string // why the turn ended, such as "end_turn", as the host says
	// LastAssistantMessage is the text of the model's last answer; PromptID
	// the turn's prompt, when its UserPromptSubmit hooks ran; PermissionMode
	// the host's (DefaultPermissionMode when empty).
	LastAssistantMessage string
	PromptID             string
	PermissionMode       string
	Messages             []schema.Message // as in SessionStartInput
}

// Control is what any Go hook of the turn's events (UserPromptSubmit,
// PreToolUse, PermissionRequest, PostToolUse, PostToolUseFailure, Stop)
// may say besides its answer, as Claude Code's common output fields:
// Halt is a "continue": false, which stops the agent after the hooks with
// StopReason for the user; SystemMessage is a warning for the user. Both
// are kept in the hook's outcome.
type Control struct {
	Halt          bool
	StopReason    string
	SystemMessage string
}

// apply puts c in a.
func (c Control) apply(a answer) answer {
	a.halt, a.stopReason, a.systemMessage = c.Halt, c.StopReason, c.SystemMessage
	return a
}

// StopOutput is what a Stop hook may return: Decision "block" with a Reason
// makes the agent continue, with the reason as its next user message.
type StopOutput struct {
	Decision string
	Reason   string
	Control
}

// PromptInput is what a UserPromptSubmit hook receives when the user
// submits Prompt, before it is kept.
type PromptInput struct {
	SessionID      string
	TranscriptPath string
	Cwd            string
	Prompt         string
	PromptID       string
	PermissionMode string           // the host's; DefaultPermissionMode when empty
	Messages       []schema.Message // as in SessionStartInput
}

// PromptOutput is what a UserPromptSubmit hook may return: context shown
// to the model with the prompt, or Decision "block" with a Reason, which
// keeps the prompt out of the conversation.
type PromptOutput struct {
	AdditionalContext string
	Decision          string
	Reason            string
	Control
}

// PreCompactInput is what a PreCompact hook receives before a compaction.
// Trigger is "manual" or "auto".
type PreCompactInput struct {
	SessionID          string
	TranscriptPath     string
	Cwd                string
	Trigger            string
	CustomInstructions string
	Messages           []schema.Message // as in SessionStartInput
}

// PreCompactOutput is what a PreCompact hook may return: Decision "block"
// with a Reason stops the compaction.
type PreCompactOutput struct {
	Decision string
	Reason   string
}

// PromptFunc is a Go UserPromptSubmit hook. It should return when ctx is
// done.
type PromptFunc func(ctx context.Context, in PromptInput) (PromptOutput, error)

// PreCompactFunc is a Go PreCompact hook. It should return when ctx is done.
type PreCompactFunc func(ctx context.Context, in PreCompactInput) (PreCompactOutput, error)

// StopFunc is a Go Stop hook. It should return when ctx is done.
type StopFunc func(ctx context.Context, in StopInput) (StopOutput, error)

// SessionStartFunc is a Go SessionStart hook. It should return when ctx is
// done.
type SessionStartFunc func(ctx context.Context, in SessionStartInput) (SessionStartOutput, error)

// SessionEndFunc is a Go SessionEnd hook. It should return when ctx is done.
type SessionEndFunc func(ctx context.Context, in SessionEndInput) (SessionEndOutput, error)

// Hook is one configured hook: when it runs (Event and Matcher), where it
// was configured, and its Body, whose type says what kind of hook it is.
type Hook struct {
	Event   Event
	Name    string // shown in outcomes and intents; a command hook's CommandName
	Source  string // where it was configured: "function", a settings file, "plugin:<dir>"
	Matcher Matcher
	Timeout time.Duration // 0 means the default for its kind
	// If is a permission rule ("Bash(git *)", "Edit(*.ts)") that a tool
	// call must meet for the hook to run, as a settings file's "if" says;
	// on an event that is not a tool's the hook never runs. "" runs it
	// whenever its matcher selects it.
	If string
	// OnFailure is OnFailureBlock to make the hook's failure block what
	// its event guards, as exit 2 does; "" or "continue" reports it only.
	OnFailure string
	// StatusMessage is what a host shows while the hook runs.
	StatusMessage string
	// Async runs a command hook in the background: its step does not wait
	// for it, and how it ended is handed to CommandEnv.Background's end.
	// AsyncRewake does too, and its exit code 2 asks for the model to be
	// woken with what it printed. Both apply only when the run has a
	// CommandEnv.Background; without one the hook is waited for.
	Async, AsyncRewake bool
	// RewakeMessage opens what an asyncRewake hook's exit 2 gives the
	// model, before what it printed; "" means Claude Code's
	// "Stop hook blocking error from command" line.
	RewakeMessage string
	Body          Body

	scoped string // the id of a session-scoped hook, which tells it apart
	once   bool   // the entry's "once", which only frontmatter honours
}

// Body is what a hook runs: a Command, or the Go function type of its event
// (SessionStartFunc, SessionEndFunc, StopFunc, PromptFunc or
// PreCompactFunc).
type Body interface {
	// runsOn reports whether the body can serve event.
	runsOn(Event) bool
}

// Command is the body of a command hook: a shell command run with
// /bin/sh -c, or with bash when Shell is "bash"; or, in exec form, a
// program and its arguments, run without a shell.
type Command struct {
	Line string
	// Args, when not nil (an empty list included), makes the hook exec
	// form, as a settings file's "args" does: Line is the program, looked
	// up on PATH when it has no '/', and it runs with Args and no shell, so
	// no word of either is split, globbed or expanded. ${CLAUDE_PROJECT_DIR}
	// in any of them is replaced by the project directory when it runs.
	Args  []string
	Shell string
	// PluginRoot is the plugin directory of a plugin hook: already
	// substituted for ${CLAUDE_PLUGIN_ROOT} in Line (and Args), and
	// exported to it.
	PluginRoot string
	// PluginData is the plugin's data directory, already substituted for
	// ${CLAUDE_PLUGIN_DATA} and exported to it as CLAUDE_PLUGIN_DATA; it is
	// made, private to the user, when the hook runs.
	PluginData string
	// PluginEnv are the plugin's options as CLAUDE_PLUGIN_OPTION_KEY=value.
	PluginEnv []string
	// Unrunnable, when not empty, says why the hook fails whenever it
	// runs, such as a plugin option its arguments name that is not set.
	Unrunnable string
}

// String returns the command as one shell line: Line, or in exec form the
// program and its arguments, each quoted where a shell would split it.
func (c Command) String() string {
	if c.Args == nil {
		return c.Line
	}
	words := make([]string, 0, 1+len(c.Args))
	for _, w := range append([]string{c.Line}, c.Args...) {
		words = append(words, shellQuote(w))
	}
	return strings.Join(words, " ")
}

// shellQuote returns w as a shell would read it back as one word.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

func (c Command) runsOn(Event) bool            { return c.Line != "" }
func (f SessionStartFunc) runsOn(e Event) bool { return f != nil && e == SessionStart }
func (f SessionEndFunc) runsOn(e Event) bool   { return f != nil && e == SessionEnd }
func (f StopFunc) runsOn(e Event) bool         { return f != nil && e == Stop }
func (f PromptFunc) runsOn(e Event) bool       { return f != nil && e == UserPromptSubmit }
func (f PreCompactFunc) runsOn(e Event) bool   { return f != nil && e == PreCompact }

// IsCommand reports whether h runs a shell command.
func (h Hook) IsCommand() bool {
	_, ok := h.Body.(Command)
	return ok
}

// Type returns h's hook type as a settings file names it: command, http,
// mcp_tool, prompt or agent; "" for a Go function hook.
func (h Hook) Type() schema.HookType {
	switch b := h.Body.(type) {
	case Command:
		return schema.HookCommand
	case HTTP:
		return schema.HookHTTP
	case MCPTool:
		return schema.HookMCPTool
	case Prompt:
		return b.kind()
	}
	return ""
}

// defaultName is the name a hook of one of Claude Code's types is shown
// and recorded by: a command hook's CommandName; else its type, a colon
// and its URL (http), server and tool (mcp_tool) or prompt (prompt,
// agent), cut as CommandName cuts a long command.
func (h Hook) defaultName() string {
	switch b := h.Body.(type) {
	case HTTP:
		return CommandName("http: " + b.URL)
	case MCPTool:
		return CommandName("mcp_tool: " + b.Server + " " + b.Tool)
	case Prompt:
		return CommandName(string(b.kind()) + ": " + b.Text)
	}
	return CommandName(h.CommandLine())
}

// configured reports whether h is of one of Claude Code's hook types,
// which speak its protocol (JSON in, an answer read as a command's
// stdout), rather than a Go function hook.
func (h Hook) configured() bool { return h.Type() != "" }

// background reports whether h runs in the background when it can.
func (h Hook) background() bool { return h.IsCommand() && (h.Async || h.AsyncRewake) }

// CommandLine returns the command of a command hook as one shell line
// (Command.String), "" for a function hook.
func (h Hook) CommandLine() string {
	c, _ := h.Body.(Command)
	return c.String()
}

// MaxCommandSize is the longest command a command hook may have, in bytes.
// The command reaches the shell as one argument of /bin/sh -c, after the
// supervisor's gate, and Linux refuses to start a program (E2BIG) with an
// argument of 128 KiB or more, counting its terminating NUL
// (MAX_ARG_STRLEN). A longer command could never run, so it is refused
// where it is configured.
const MaxCommandSize = 128<<10 - 1 - len(gateScript)

// maxNameCommand is the longest command that is its hook's name whole.
const maxNameCommand = 1024

// CommandName returns the name a command hook with command line is shown
// and recorded by: line itself when it is at most 1,024 bytes; else its
// first 256 bytes (ending on a whole character), its length and its
// SHA-256, so that a long command is neither copied into every record of
// every run nor repeated whole in warnings, yet still told apart.
func CommandName(line string) string {
	if len(line) <= maxNameCommand {
		return line
	}
	head := line[:256]
	for len(head) > 0 && !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	return fmt.Sprintf("%s… (%d bytes, sha256 %x)", head, len(line), sha256.Sum256([]byte(line)))
}

// checkCommand refuses a command line, or in exec form a program or an
// argument, too long to run.
func checkCommand(words ...string) error {
	for _, w := range words {
		if len(w) > MaxCommandSize {
			return fmt.Errorf("a command of %d bytes is longer than the %d bytes the system can run", len(w), MaxCommandSize)
		}
	}
	return nil
}

// Registry holds hooks in configuration order. It is safe for concurrent
// use; a run sees the hooks registered when it matched them.
type Registry struct {
	mu    sync.RWMutex
	hooks []Hook
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// validate checks that h has a body that serves an event reprise runs,
// and a command short enough to run.
func validate(h Hook) error {
	name := CommandName(h.Name)
	_, known := schema.LookupEvent(h.Event)
	if !known || h.Body == nil || !h.Body.runsOn(h.Event) {
		return fmt.Errorf("%w: %q needs a body that runs on event %q", ErrBadHook, name, h.Event)
	}
	if h.Timeout < 0 {
		return fmt.Errorf("%w: %q has a negative timeout", ErrBadHook, name)
	}
	if c, ok := h.Body.(Command); ok {
		if err := checkCommand(append([]string{c.Line}, c.Args...)...); err != nil {
			return fmt.Errorf("%w: %q: %w", ErrBadHook, CommandName(h.CommandLine()), err)
		}
	}
	return nil
}

// Add validates h and appends it.
func (r *Registry) Add(h Hook) error {
	if err := validate(h); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case h.Name == "" && h.configured():
		h.Name = h.defaultName()
	case h.Name == "":
		h.Name = fmt.Sprintf("%s#%d", h.Event, len(r.hooks)+1)
	}
	r.hooks = append(r.hooks, h)
	return nil
}

// AddAll adds hooks in order, stopping at the first invalid one.
func (r *Registry) AddAll(hooks []Hook) error {
	for _, h := range hooks {
		if err := r.Add(h); err != nil {
			return err
		}
	}
	return nil
}

// OnSessionStart registers a Go SessionStart hook whose matcher selects
// sources.
func (r *Registry) OnSessionStart(name, matcher string, fn SessionStartFunc) error {
	m, err := ParseMatcher(matcher)
	if err != nil {
		return err
	}
	return r.Add(Hook{Event: SessionStart, Name: name, Source: "function", Matcher: m, Body: fn})
}

// On registers a Go hook of event, any of schema.Events without steps of
// its own (those the Agent fires, or a host with Agent.Fire), whose
// matcher selects what the event matches on with the event's rule (on an
// event without a matcher, the matcher is ignored). RunEvent runs it. The
// events with steps of their own (schema.HookEvents) take the typed hooks
// of OnSessionStart, OnPreToolUse, ...: On refuses them with ErrBadHook.
func (r *Registry) On(event Event, matcher string, fn EventFunc) error {
	if slices.Contains(schema.HookEvents, event) {
		return fmt.Errorf("%w: %s has steps of its own: register its Go hooks with On%s", ErrBadHook, event, event)
	}
	m, err := ParseMatcherFor(event, matcher)
	if err != nil {
		return err
	}
	return r.Add(Hook{Event: event, Source: "function", Matcher: m, Body: fn})
}

// OnStop registers a Go Stop hook. Stop hooks have no matcher: they run at
// the end of every turn.
func (r *Registry) OnStop(name string, fn StopFunc) error {
	return r.Add(Hook{Event: Stop, Name: name, Source: "function", Body: fn})
}

// OnUserPromptSubmit registers a Go UserPromptSubmit hook. Like Claude
// Code's, it has no matcher: it runs on every prompt.
func (r *Registry) OnUserPromptSubmit(name string, fn PromptFunc) error {
	return r.Add(Hook{Event: UserPromptSubmit, Name: name, Source: "function", Body: fn})
}

// OnPreCompact registers a Go PreCompact hook whose matcher selects
// triggers (manual, auto).
func (r *Registry) OnPreCompact(name, matcher string, fn PreCompactFunc) error {
	m, err := ParseMatcher(matcher)
	if err != nil {
		return err
	}
	return r.Add(Hook{Event: PreCompact, Name: name, Source: "function", Matcher: m, Body: fn})
}

// OnSessionEnd registers a Go SessionEnd hook whose matcher selects reasons.
func (r *Registry) OnSessionEnd(name, matcher string, fn SessionEndFunc) error {
	m, err := ParseMatcher(matcher)
	if err != nil {
		return err
	}
	return r.Add(Hook{Event: SessionEnd, Name: name, Source: "function", Matcher: m, Body: fn})
}

// OnPreToolUse registers a Go PreToolUse hook whose matcher selects tool
// names (Bash, Edit|Write, mcp__memory__.*).
func (r *Registry) OnPreToolUse(name, matcher string, fn PreToolUseFunc) error {
	return r.onTool(PreToolUse, name, matcher, fn)
}

// OnPermissionRequest registers a Go PermissionRequest hook whose matcher
// selects tool names: it answers for the user when a call's decision is
// still to ask.
func (r *Registry) OnPermissionRequest(name, matcher string, fn PermissionRequestFunc) error {
	return r.onTool(PermissionRequest, name, matcher, fn)
}

// OnPostToolUse registers a Go PostToolUse hook whose matcher selects tool
// names.
func (r *Registry) OnPostToolUse(name, matcher string, fn PostToolUseFunc) error {
	return r.onTool(PostToolUse, name, matcher, fn)
}

// OnToolError registers a Go PostToolUseFailure hook, the Copilot SDK's
// onErrorOccurred for a tool's failure, whose matcher selects tool names.
func (r *Registry) OnToolError(name, matcher string, fn ErrorOccurredFunc) error {
	return r.onTool(PostToolUseFailure, name, matcher, fn)
}

func (r *Registry) onTool(event Event, name, matcher string, body Body) error {
	m, err := ParseMatcher(matcher)
	if err != nil {
		return err
	}
	return r.Add(Hook{Event: event, Name: name, Source: "function", Matcher: m, Body: body})
}

// Match returns the hooks of event whose matcher selects value, in
// configuration order. The slice is the caller's.
func (r *Registry) Match(event Event, value string) []Hook {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Hook
	for _, h := range r.hooks {
		if h.Event == event && h.Selects(value) {
			out = append(out, h)
		}
	}
	return out
}

// Names returns the hooks' names, in order, for intents; nil for none.
func Names(hooks []Hook) []string {
	if len(hooks) == 0 {
		return nil
	}
	out := make([]string, len(hooks))
	for i, h := range hooks {
		out[i] = h.Name
	}
	return out
}
