package hookexec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"time"

	"github.com/reprise-dev/reprise/schema"
)

// The hook events of a tool call, as Claude Code's settings files spell
// them. Their matchers select tool names (Bash, Edit|Write,
// mcp__memory__.*).
const (
	PreToolUse         = schema.HookPreToolUse
	PermissionRequest  = schema.HookPermissionRequest
	PostToolUse        = schema.HookPostToolUse
	PostToolUseFailure = schema.HookPostToolUseFailure
)

// AnyTool is the value every matcher of a tool event, or of a fired
// event, selects, for listing the hooks that would run for some tool or
// value.
const AnyTool = "*"

// DefaultPermissionMode is the permission_mode tool hooks get when the
// host gives none, as Claude Code sends it in its default mode.
const DefaultPermissionMode = "default"

// The decisions of PreToolUse and PermissionRequest hooks.
const (
	Allow = "allow"
	Deny  = "deny"
	Ask   = "ask"
)

// ToolInput is what the hooks of a tool call receive: PreToolUse and
// PermissionRequest hooks before it runs, PostToolUse hooks with its
// Response, PostToolUseFailure hooks with its Error. Messages is the
// session's conversation as saved, shared: read it, never change it.
type ToolInput struct {
	SessionID      string
	TranscriptPath string
	Cwd            string
	PermissionMode string // DefaultPermissionMode when empty
	PromptID       string // the prompt whose turn asked for the call, if known
	AgentID        string // inside a subagent, its agent_id; "" outside one
	AgentType      string // inside a subagent, its agent_type
	Timestamp      int64  // unix milliseconds, for function hooks
	ToolName       string
	ToolInput      json.RawMessage // the call's input, a JSON object
	ToolUseID      string
	Response       json.RawMessage // PostToolUse: what the tool returned, as JSON
	Error          string          // PostToolUseFailure: why the tool failed
	Interrupt      bool            // PostToolUseFailure: it failed because it was stopped
	Duration       time.Duration   // PostToolUse, PostToolUseFailure: how long it ran; 0 unknown
	Messages       []schema.Message
}

// PreToolUseOutput is what a Go PreToolUse hook may return, in Claude
// Code's words: a PermissionDecision (Allow, Deny, Ask; "" decides
// nothing) with its reason, UpdatedInput that replaces the call's input,
// and context for the model.
type PreToolUseOutput struct {
	PermissionDecision       string
	PermissionDecisionReason string
	UpdatedInput             json.RawMessage
	// ModifiedArgs is UpdatedInput under the Copilot SDK's name; when both
	// are set, UpdatedInput wins.
	//
	// Deprecated: use UpdatedInput, Claude Code's word for it.
	ModifiedArgs      json.RawMessage
	AdditionalContext string
	SuppressOutput    bool
	Control
}

// PostToolUseOutput is what a Go PostToolUse hook may return: a result
// that replaces the tool's for the model (UpdatedToolOutput), and context
// for the model.
type PostToolUseOutput struct {
	UpdatedToolOutput json.RawMessage
	// ModifiedResult is UpdatedToolOutput under the Copilot SDK's name;
	// when both are set, UpdatedToolOutput wins.
	//
	// Deprecated: use UpdatedToolOutput, Claude Code's word for it.
	ModifiedResult    json.RawMessage
	AdditionalContext string
	SuppressOutput    bool
	Control
}

// either is a when it is set, else b.
func either(a, b json.RawMessage) json.RawMessage {
	if len(a) > 0 {
		return a
	}
	return b
}

// ErrorOccurredOutput is what a Go PostToolUseFailure hook may return, as
// the Copilot SDK's onErrorOccurred does: how the host should go on
// ("retry", "skip" or "abort") and a notification for the user.
type ErrorOccurredOutput struct {
	SuppressOutput   bool
	ErrorHandling    string
	RetryCount       int
	UserNotification string
	Control
}

// PreToolUseFunc is a Go PreToolUse hook. It should return when ctx is
// done.
type PreToolUseFunc func(ctx context.Context, in ToolInput) (PreToolUseOutput, error)

// PostToolUseFunc is a Go PostToolUse hook. It should return when ctx is
// done.
type PostToolUseFunc func(ctx context.Context, in ToolInput) (PostToolUseOutput, error)

// ErrorOccurredFunc is a Go PostToolUseFailure hook. It should return when
// ctx is done.
type ErrorOccurredFunc func(ctx context.Context, in ToolInput) (ErrorOccurredOutput, error)

// PermissionRequestFunc is a Go PermissionRequest hook: it answers, for a
// call whose decision is still to ask, as the permission dialog would. It
// should return when ctx is done.
type PermissionRequestFunc func(ctx context.Context, in ToolInput) (PermissionRequestOutput, error)

// PermissionRequestOutput is what a Go PermissionRequest hook returns, as
// Claude Code reads hookSpecificOutput.decision: Behavior Allow (with the
// input to run, UpdatedInput, or nil for the call's) or Deny with Message,
// the reason the model is told; "" decides nothing.
type PermissionRequestOutput struct {
	Behavior     string
	UpdatedInput json.RawMessage
	Message      string
	Control
}

func (f PreToolUseFunc) runsOn(e Event) bool        { return f != nil && e == PreToolUse }
func (f PermissionRequestFunc) runsOn(e Event) bool { return f != nil && e == PermissionRequest }
func (f PostToolUseFunc) runsOn(e Event) bool       { return f != nil && e == PostToolUse }
func (f ErrorOccurredFunc) runsOn(e Event) bool     { return f != nil && e == PostToolUseFailure }

// ToolDecision is what the PreToolUse or PermissionRequest hooks of a call
// decided together. The strictest decision wins: Deny over Ask over
// Allow; "" when no hook decided.
type ToolDecision struct {
	Decision string
	// Reason joins the reasons of the hooks that made Decision: for a
	// deny, what the model is told; for allow and ask, what the user is.
	Reason string
	// UpdatedInput replaces the call's input: the first, in configuration
	// order, of the hooks that allowed, asked or decided nothing; nil when
	// none gave one, or when the call is denied.
	UpdatedInput json.RawMessage
	Context      string // the hooks' additionalContext, joined
	Interrupt    bool   // PermissionRequest: a deny that also stops the turn
}

// ToolFeedback is what the PostToolUse or PostToolUseFailure hooks of a
// call said together: context for the model, a block (whose reason the
// model is told beside the result), a result that replaces the tool's,
// and, from Go PostToolUseFailure hooks, how to go on.
type ToolFeedback struct {
	Context       string
	Blocked       bool
	Reason        string
	UpdatedResult json.RawMessage
	ErrorHandling string
	Notification  string
}

// toolStdin is what a tool event's command hook reads on stdin, field for
// field as Claude Code sends it.
type toolStdin struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PromptID       string          `json:"prompt_id,omitempty"`
	PermissionMode string          `json:"permission_mode"`
	AgentID        string          `json:"agent_id,omitempty"`
	AgentType      string          `json:"agent_type,omitempty"`
	HookEventName  Event           `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolResponse   json.RawMessage `json:"tool_response,omitempty"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	Error          *string         `json:"error,omitempty"`
	IsInterrupt    *bool           `json:"is_interrupt,omitempty"`
	DurationMS     *int64          `json:"duration_ms,omitempty"`
}

// stdin is what hooks of event read for in.
func (in ToolInput) stdin(event Event) []byte {
	s := toolStdin{SessionID: in.SessionID, TranscriptPath: in.TranscriptPath, Cwd: in.Cwd, PromptID: in.PromptID,
		PermissionMode: cmpString(in.PermissionMode, DefaultPermissionMode), HookEventName: event,
		ToolName: in.ToolName, ToolInput: jsonObject(in.ToolInput), ToolUseID: in.ToolUseID, AgentID: in.AgentID, AgentType: in.AgentType}
	if event == PermissionRequest {
		s.ToolUseID = "" // Claude Code sends none: the dialog is about the call, not its id
	}
	if event == PostToolUse || event == PostToolUseFailure {
		if in.Duration > 0 {
			ms := in.Duration.Milliseconds()
			s.DurationMS = &ms
		}
	}
	switch event {
	case PostToolUse:
		s.ToolResponse = jsonObject(in.Response)
	case PostToolUseFailure:
		s.Error, s.IsInterrupt = &in.Error, &in.Interrupt
	}
	data, _ := json.Marshal(s) // raw fields are valid JSON: jsonObject checked them
	return data
}

func cmpString(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// jsonObject returns raw when it is valid JSON, else {}.
func jsonObject(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 || !json.Valid(raw) {
		return json.RawMessage("{}")
	}
	return raw
}

// toolEvent reports whether event is a tool call's.
func toolEvent(event Event) bool {
	return event == PreToolUse || event == PermissionRequest || event == PostToolUse || event == PostToolUseFailure ||
		event == schema.HookPermissionDenied
}

// meetingIf returns the hooks whose "if" the call in meets, warning of
// each whose "if" cannot be evaluated (such a hook runs).
func meetingIf(hooks []Hook, in ToolInput, env CommandEnv) []Hook {
	out := hooks[:0:0]
	for _, h := range hooks {
		holds, warning := ifHolds(h.If, in)
		if warning != "" {
			env.warn("hook condition not evaluated", "hook", h.Name, "source", h.Source, "why", warning)
		}
		if holds {
			out = append(out, h)
		}
	}
	return out
}

// toolOutput is the JSON a tool event's command hook may print.
type toolOutput struct {
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput struct {
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
		AdditionalContext        string          `json:"additionalContext"`
		UpdatedToolOutput        json.RawMessage `json:"updatedToolOutput"`
		UpdatedMCPToolOutput     json.RawMessage `json:"updatedMCPToolOutput"`
		Decision                 *struct {
			Behavior     string          `json:"behavior"`
			UpdatedInput json.RawMessage `json:"updatedInput"`
			Message      string          `json:"message"`
			Interrupt    bool            `json:"interrupt"`
		} `json:"decision"`
	} `json:"hookSpecificOutput"`
}

// toolAnswer reads what the command hook of a tool event that ran said,
// and completes its outcome o. Exit 2 blocks: a PreToolUse hook denies,
// a PostToolUse one blocks, with its stderr as the reason; for
// PermissionRequest it is a failure, as Claude Code ignores it. Exit 0
// with a JSON object on stdout decides as the object says; plain stdout
// is no context for these events. Any other exit is a failure that
// decides nothing.
func toolAnswer(o *schema.HookOutcome, event Event, r *commandRun, env CommandEnv) answer {
	code := r.code
	var exitErr *exec.ExitError
	if r.err != nil && !errors.As(r.err, &exitErr) && !errors.Is(r.err, exec.ErrWaitDelay) {
		o.Status, o.Error, o.Stderr = schema.HookFailed, r.err.Error(), excerpt(r.stderr.buf)
		return answer{}
	}
	var out toolOutput
	parsed := bytes.HasPrefix(bytes.TrimSpace(r.stdout.buf), []byte("{")) && json.Unmarshal(bytes.TrimSpace(r.stdout.buf), &out) == nil
	switch {
	case code == 2 && event != PermissionRequest:
		o.Status, o.ExitCode = schema.HookOK, 2
		a := answer{reason: excerpt(r.stderr.buf)}
		if parsed {
			a = toolDecision(event, out)
		}
		if event == PreToolUse {
			a.decision = Deny
		} else {
			a.decision = "block"
		}
		if a.reason == "" {
			a.reason = excerpt(r.stderr.buf)
		}
		o.Decision, o.Reason = a.decision, a.reason
		return a
	case code != 0:
		o.Status, o.ExitCode, o.Error = schema.HookFailed, code, r.status
		o.Stderr = excerpt(r.stderr.buf)
		if !parsed {
			return answer{}
		}
		// As in Claude Code, a JSON answer is honoured whatever the exit
		// code: a guard that prints its deny and exits 1 still denies.
	default:
		o.Status = schema.HookOK
		if !parsed {
			return answer{}
		}
	}
	a := toolDecision(event, out)
	if text, err := limitContext(strings.ToValidUTF8(a.context, "\uFFFD"), env); err == nil {
		a.context = text
	} else {
		a.context, o.Error = text, err.Error()
	}
	o.Decision, o.Reason, o.ContextLen = a.decision, a.reason, len(a.context)
	return a
}

// toolDecision reads the decision of a tool event's JSON output.
func toolDecision(event Event, out toolOutput) answer {
	hso := out.HookSpecificOutput
	a := answer{context: hso.AdditionalContext}
	switch event {
	case PreToolUse:
		switch out.Decision { // the older top-level words
		case "approve":
			a.decision = Allow
		case "block":
			a.decision, a.reason = Deny, out.Reason
		}
		if d := hso.PermissionDecision; d == Allow || d == Deny || d == Ask {
			a.decision, a.reason = d, hso.PermissionDecisionReason
		}
		if a.reason == "" && out.Reason != "" && a.decision != "" {
			a.reason = out.Reason
		}
		if a.decision == Deny && a.reason == "" {
			a.reason = "Blocked by hook"
		}
		a.replace = validJSON(hso.UpdatedInput)
	case PermissionRequest:
		if d := hso.Decision; d != nil && (d.Behavior == Allow || d.Behavior == Deny) {
			a.decision, a.reason, a.interrupt = d.Behavior, d.Message, d.Behavior == Deny && d.Interrupt
			if d.Behavior == Allow {
				a.replace = validJSON(d.UpdatedInput)
			}
		}
	case PostToolUse, PostToolUseFailure:
		if out.Decision == "block" {
			a.decision, a.reason = "block", out.Reason
		}
		a.replace = validJSON(hso.UpdatedToolOutput)
		if a.replace == nil {
			a.replace = validJSON(hso.UpdatedMCPToolOutput)
		}
	}
	return a
}

// ToolRunner runs the hooks of tool calls, as a Runner runs the others.
// Exec is one; an Engine whose Runner is no ToolRunner runs tool hooks
// with Exec's functions.
type ToolRunner interface {
	PreToolUse(ctx context.Context, hooks []Hook, in ToolInput, env CommandEnv) ([]schema.HookOutcome, ToolDecision)
	PermissionRequest(ctx context.Context, hooks []Hook, in ToolInput, env CommandEnv) ([]schema.HookOutcome, ToolDecision)
	PostToolUse(ctx context.Context, hooks []Hook, in ToolInput, env CommandEnv) ([]schema.HookOutcome, ToolFeedback)
	PostToolUseFailure(ctx context.Context, hooks []Hook, in ToolInput, env CommandEnv) ([]schema.HookOutcome, ToolFeedback)
}

var _ ToolRunner = Exec{}

// PreToolUse is RunPreToolUse.
func (x Exec) PreToolUse(ctx context.Context, hooks []Hook, in ToolInput, env CommandEnv) ([]schema.HookOutcome, ToolDecision) {
	return RunPreToolUse(ctx, hooks, in, x.env(env))
}

// PermissionRequest is RunPermissionRequest.
func (x Exec) PermissionRequest(ctx context.Context, hooks []Hook, in ToolInput, env CommandEnv) ([]schema.HookOutcome, ToolDecision) {
	return RunPermissionRequest(ctx, hooks, in, x.env(env))
}

// PostToolUse is RunPostToolUse.
func (x Exec) PostToolUse(ctx context.Context, hooks []Hook, in ToolInput, env CommandEnv) ([]schema.HookOutcome, ToolFeedback) {
	return RunPostToolUse(ctx, hooks, in, x.env(env))
}

// PostToolUseFailure is RunPostToolUseFailure.
func (x Exec) PostToolUseFailure(ctx context.Context, hooks []Hook, in ToolInput, env CommandEnv) ([]schema.HookOutcome, ToolFeedback) {
	return RunPostToolUseFailure(ctx, hooks, in, x.env(env))
}

// validJSON returns raw when it is JSON other than null, else nil.
func validJSON(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || !json.Valid(raw) {
		return nil
	}
	return raw
}

// RunPreToolUse runs the PreToolUse hooks of a tool call in parallel with
// in and returns their outcomes and what they decided together. Command
// hooks run with env, whose EnvFile is ignored.
func RunPreToolUse(ctx context.Context, hooks []Hook, in ToolInput, env CommandEnv) ([]schema.HookOutcome, ToolDecision) {
	env.EnvFile, env.session = "", in.SessionID
	hooks = meetingIf(hooks, in, env)
	outcomes, answers := runAll(ctx, hooks, in.stdin(PreToolUse), env, in.Messages, func(ctx context.Context, h Hook) (answer, error) {
		out, err := h.Body.(PreToolUseFunc)(ctx, in)
		a := out.apply(answer{reason: out.PermissionDecisionReason, context: out.AdditionalContext, replace: validJSON(either(out.UpdatedInput, out.ModifiedArgs))})
		if d := out.PermissionDecision; d == Allow || d == Deny || d == Ask {
			a.decision = d
		}
		return a, err
	})
	return outcomes, decide(answers)
}

// RunPermissionRequest runs the PermissionRequest hooks of a tool call
// whose decision is still to ask the user, as Claude Code runs them before
// it shows a permission dialog, and returns their outcomes and what they
// decided: Allow, Deny, or "" when none answered. Command hooks and
// PermissionRequestFunc hooks serve this event.
func RunPermissionRequest(ctx context.Context, hooks []Hook, in ToolInput, env CommandEnv) ([]schema.HookOutcome, ToolDecision) {
	env.EnvFile, env.session = "", in.SessionID
	hooks = meetingIf(hooks, in, env)
	outcomes, answers := runAll(ctx, hooks, in.stdin(PermissionRequest), env, in.Messages, func(ctx context.Context, h Hook) (answer, error) {
		out, err := h.Body.(PermissionRequestFunc)(ctx, in)
		a := out.apply(answer{})
		switch out.Behavior {
		case Allow:
			a.decision, a.replace = Allow, validJSON(out.UpdatedInput)
		case Deny:
			a.decision, a.reason = Deny, out.Message
		}
		return a, err
	})
	return outcomes, decide(answers)
}

// decide combines the decisions of a call's hooks: Deny over Ask over
// Allow, with the reasons of the hooks that made it.
func decide(answers []answer) ToolDecision {
	var d ToolDecision
	rank := map[string]int{"": 0, Allow: 1, Ask: 2, Deny: 3}
	var contexts []string
	for _, a := range answers {
		if rank[a.decision] > rank[d.Decision] {
			d.Decision = a.decision
		}
		contexts = append(contexts, a.context)
	}
	var reasons []string
	for _, a := range answers {
		if a.decision != d.Decision || d.Decision == "" {
			continue
		}
		reasons = append(reasons, a.reason)
		d.Interrupt = d.Interrupt || a.interrupt
	}
	if d.Decision != Deny {
		for _, a := range answers {
			if a.replace != nil && (a.decision == "" || a.decision == Allow || a.decision == Ask) {
				d.UpdatedInput = a.replace
				break
			}
		}
	}
	d.Reason, d.Context = join(reasons), join(contexts)
	return d
}

// RunPostToolUse runs the PostToolUse hooks of a tool call that succeeded,
// with in.Response, and returns their outcomes and what they said.
func RunPostToolUse(ctx context.Context, hooks []Hook, in ToolInput, env CommandEnv) ([]schema.HookOutcome, ToolFeedback) {
	env.EnvFile, env.session = "", in.SessionID
	hooks = meetingIf(hooks, in, env)
	outcomes, answers := runAll(ctx, hooks, in.stdin(PostToolUse), env, in.Messages, func(ctx context.Context, h Hook) (answer, error) {
		out, err := h.Body.(PostToolUseFunc)(ctx, in)
		return out.apply(answer{context: out.AdditionalContext, replace: validJSON(either(out.UpdatedToolOutput, out.ModifiedResult))}), err
	})
	return outcomes, feedback(answers)
}

// RunPostToolUseFailure runs the PostToolUseFailure hooks of a tool call
// that failed, with in.Error, and returns their outcomes and what they
// said.
func RunPostToolUseFailure(ctx context.Context, hooks []Hook, in ToolInput, env CommandEnv) ([]schema.HookOutcome, ToolFeedback) {
	env.EnvFile, env.session = "", in.SessionID
	hooks = meetingIf(hooks, in, env)
	outcomes, answers := runAll(ctx, hooks, in.stdin(PostToolUseFailure), env, in.Messages, func(ctx context.Context, h Hook) (answer, error) {
		out, err := h.Body.(ErrorOccurredFunc)(ctx, in)
		return out.apply(answer{handling: out.ErrorHandling, reason: out.UserNotification}), err
	})
	f := feedback(answers)
	for _, a := range answers {
		if a.handling != "" && f.ErrorHandling == "" {
			f.ErrorHandling = a.handling
		}
		if a.decision == "" && a.reason != "" {
			f.Notification = join([]string{f.Notification, a.reason})
		}
	}
	return outcomes, f
}

// feedback combines what the hooks after a call said.
func feedback(answers []answer) ToolFeedback {
	var f ToolFeedback
	var contexts, reasons []string
	for _, a := range answers {
		contexts = append(contexts, a.context)
		if a.decision == "block" {
			f.Blocked = true
			reasons = append(reasons, a.reason)
		}
		if f.UpdatedResult == nil {
			f.UpdatedResult = a.replace
		}
	}
	f.Context, f.Reason = join(contexts), join(reasons)
	return f
}
