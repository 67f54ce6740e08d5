package hookexec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/reprise-dev/reprise/schema"
)

// EventInput is what the hooks of any event receive: the fields every
// event has, typed, and the event's own fields (those schema.Events lists
// for it) as one JSON object. Messages is as in SessionStartInput.
type EventInput struct {
	SessionID      string
	TranscriptPath string
	Cwd            string
	PromptID       string // "" when unknown
	PermissionMode string // "" when the event has none
	AgentID        string // set inside a subagent
	AgentType      string
	Effort         string // the effort level, when known
	Fields         json.RawMessage
	Messages       []schema.Message
}

// EventOutput is a hook's answer in Claude Code's shape: what a command
// hook prints as JSON, and what a Go EventFunc returns.
type EventOutput struct {
	// Continue false stops the agent after the hooks, with StopReason for
	// the user; SystemMessage is a warning for the user.
	Continue      *bool  `json:"continue,omitempty"`
	StopReason    string `json:"stopReason,omitempty"`
	SystemMessage string `json:"systemMessage,omitempty"`
	// Decision "block" with a Reason blocks what the event guards, on the
	// events that honour it (schema.EventSpec.Decision).
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// HookSpecificOutput holds the event's own fields, such as
	// additionalContext.
	HookSpecificOutput json.RawMessage `json:"hookSpecificOutput,omitempty"`
}

// EventFunc is a Go hook of any event. It should return when ctx is done.
type EventFunc func(ctx context.Context, in EventInput) (EventOutput, error)

func (f EventFunc) runsOn(e Event) bool { return f != nil && generic(e) }

// EventResult is what the hooks of one event decided together, after the
// event's row of schema.Events.
type EventResult struct {
	// Blocked is true when a hook blocked what the event guards: a
	// "decision": "block" where the event honours it, or an exit 2 (or a
	// failure with onFailure "block") where exit 2 blocks, or keeps the
	// agent going; Reason says why.
	Blocked bool
	Reason  string
	// Feedback is what goes to the model from hooks that exited 2 where
	// that reports to it after the fact (PostToolUse's kind).
	Feedback string
	// Context is the hooks' additionalContext, and their plain stdout on
	// the events that take it, joined in hook order.
	Context string
	// Halt is a "continue": false, with the first StopReason.
	Halt       bool
	StopReason string
	// SystemMessage joins the hooks' warnings for the user.
	SystemMessage string
	// Specific merges the hooks' hookSpecificOutput fields that the event
	// honours, key by key, a later hook winning: a JSON object, nil when
	// none gave one (a hook's fields over 64 KiB are not kept).
	Specific json.RawMessage
}

// ErrBadInput is returned by RunEvent when the input lacks a field the
// event requires, or its fields are not a JSON object.
var ErrBadInput = errors.New("hookexec: invalid event input")

// RunEvent runs hooks, of event, in parallel with in, and returns their
// outcomes and what they decided, following the event's row of
// schema.Events: its input, what of the output it honours and what exit
// 2 means. Command hooks get Claude Code's stdin: the common fields and
// in.Fields, which must hold every field the event requires.
func RunEvent(ctx context.Context, hooks []Hook, event Event, in EventInput, env CommandEnv) ([]schema.HookOutcome, EventResult, error) {
	spec, ok := schema.LookupEvent(event)
	if !ok {
		return nil, EventResult{}, fmt.Errorf("%w: %q is not a hook event", ErrBadInput, event)
	}
	stdin, err := eventStdin(spec, in)
	if err != nil {
		return nil, EventResult{}, err
	}
	if toolEvent(event) {
		var call struct {
			Name  string          `json:"tool_name"`
			Input json.RawMessage `json:"tool_input"`
		}
		_ = json.Unmarshal(in.Fields, &call) // eventStdin checked they are an object
		hooks = meetingIf(hooks, ToolInput{ToolName: call.Name, ToolInput: call.Input}, env)
	}
	env.session, env.effort = in.SessionID, in.Effort
	if !spec.EnvFile {
		env.EnvFile = ""
	}
	outcomes, answers := runAll(ctx, hooks, stdin, env, in.Messages, func(ctx context.Context, h Hook) (answer, error) {
		out, err := h.Body.(EventFunc)(ctx, in)
		return eventAnswer(spec, out), err
	})
	return outcomes, combine(spec, outcomes, answers), nil
}

// CheckEventInput returns the error RunEvent would return for in on
// event before running anything (ErrBadInput), or nil.
func CheckEventInput(event Event, in EventInput) error {
	spec, ok := schema.LookupEvent(event)
	if !ok {
		return fmt.Errorf("%w: %q is not a hook event", ErrBadInput, event)
	}
	_, err := eventStdin(spec, in)
	return err
}

// EventRunner runs the hooks of any event of schema.Events, as a Runner
// runs the lifecycle's. Exec is one; an Engine whose Runner is no
// EventRunner runs them with RunEvent.
type EventRunner interface {
	Event(ctx context.Context, hooks []Hook, event Event, in EventInput, env CommandEnv) ([]schema.HookOutcome, EventResult, error)
}

var _ EventRunner = Exec{}

// Event is RunEvent.
func (x Exec) Event(ctx context.Context, hooks []Hook, event Event, in EventInput, env CommandEnv) ([]schema.HookOutcome, EventResult, error) {
	return RunEvent(ctx, hooks, event, in, x.env(env))
}

// eventStdin is the JSON a command hook of spec's event reads: the common
// fields, then the event's own.
func eventStdin(spec schema.EventSpec, in EventInput) ([]byte, error) {
	fields := map[string]json.RawMessage{}
	if raw := bytes.TrimSpace(in.Fields); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
			return nil, fmt.Errorf("%w: %s: the event's fields must be a JSON object", ErrBadInput, spec.Event)
		}
		if !utf8.Valid(raw) {
			// encoding/json takes such strings, but hooks would read JSON
			// that is not text, which a hook cannot parse.
			return nil, fmt.Errorf("%w: %s: the event's fields are not valid UTF-8", ErrBadInput, spec.Event)
		}
	}
	common := map[string]string{"session_id": in.SessionID, "transcript_path": in.TranscriptPath, "cwd": in.Cwd,
		"hook_event_name": string(spec.Event), "prompt_id": in.PromptID, "permission_mode": in.PermissionMode,
		"agent_id": in.AgentID, "agent_type": in.AgentType}
	for k, v := range common {
		if v != "" || slices.Contains(schema.CommonInput[:4], k) {
			fields[k], _ = json.Marshal(v)
		}
	}
	if in.Effort != "" {
		fields["effort"], _ = json.Marshal(map[string]string{"level": in.Effort})
	}
	for _, f := range spec.Required {
		if _, ok := fields[f]; !ok {
			return nil, fmt.Errorf("%w: %s needs the field %q", ErrBadInput, spec.Event, f)
		}
	}
	// encoding/json writes a map's keys sorted: the same input, the same
	// bytes.
	return json.Marshal(fields)
}

// eventAnswer is what out says on spec's event.
func eventAnswer(spec schema.EventSpec, out EventOutput) answer {
	a := answer{halt: out.Continue != nil && !*out.Continue, stopReason: out.StopReason, systemMessage: out.SystemMessage}
	if spec.Decision && out.Decision == "block" {
		a.block, a.reason = true, out.Reason
	}
	var specific map[string]json.RawMessage
	if json.Unmarshal(out.HookSpecificOutput, &specific) == nil {
		var text string
		if slices.Contains(spec.Output, "additionalContext") && json.Unmarshal(specific["additionalContext"], &text) == nil {
			a.context = text
		}
		a.specific = honoured(spec, specific, []string{"additionalContext"})
	}
	return a
}

// combine joins the answers of one event's hooks.
func combine(spec schema.EventSpec, outcomes []schema.HookOutcome, answers []answer) EventResult {
	var r EventResult
	var reasons, feedback, contexts, messages []string
	merged := map[string]json.RawMessage{}
	for i, a := range answers {
		o := outcomes[i]
		if a.block || o.Decision == "block" {
			r.Blocked = true
			reasons = append(reasons, cmpString(cmpString(a.reason, o.Reason), "blocked by "+o.Name))
		}
		if a.feedback != "" {
			feedback = append(feedback, a.feedback)
		}
		context := a.context
		if context == "" && !a.block && o.Decision != "block" {
			context = a.text // the answers of the events with runners of their own
		}
		contexts = append(contexts, context)
		if a.halt || o.Halt {
			if !r.Halt {
				r.StopReason = cmpString(a.stopReason, o.StopReason)
			}
			r.Halt = true
		}
		messages = append(messages, cmpString(a.systemMessage, o.SystemMessage))
		var fields map[string]json.RawMessage
		if json.Unmarshal(cmpBytes(a.specific, o.Specific), &fields) == nil {
			maps.Copy(merged, fields)
		}
	}
	r.Reason, r.Feedback, r.Context, r.SystemMessage = join(reasons), join(feedback), join(contexts), join(messages)
	if len(merged) > 0 {
		r.Specific, _ = json.Marshal(merged)
	}
	return r
}

func cmpBytes(a, b []byte) []byte {
	if len(a) > 0 {
		return a
	}
	return b
}

// commandEventAnswer reads what command hook run r said on an event of
// schema.Events that has no answer of its own in this package: exit 2 as
// the event's row says; other failures as failures (a JSON answer still
// read, as Claude Code reads it); on exit 0 a JSON answer, or plain
// stdout as context where the event takes it. WorktreeCreate's plain
// stdout is the worktree's path, and any failure there blocks.
func commandEventAnswer(o *schema.HookOutcome, spec schema.EventSpec, r *commandRun, env CommandEnv) answer {
	code := r.code
	stdout := bytes.TrimSpace(r.stdout.buf)
	var out EventOutput
	parsed := bytes.HasPrefix(stdout, []byte("{")) && json.Unmarshal(stdout, &out) == nil
	stderr := excerpt(r.stderr.buf)
	var a answer
	switch {
	case code == 2:
		o.Status, o.ExitCode, o.Stderr = schema.HookOK, 2, stderr
		switch spec.ExitTwo {
		case schema.ExitTwoBlocks, schema.ExitTwoBlocksUser, schema.ExitTwoContinues:
			a.block, a.reason = true, stderr
			o.Decision, o.Reason = "block", stderr
		case schema.ExitTwoFeedback:
			a.feedback = stderr
		}
		return a
	case code != 0:
		o.Status, o.ExitCode, o.Error, o.Stderr = schema.HookFailed, code, r.status, stderr
		if spec.Event == schema.HookWorktreeCreate {
			a.block, a.reason = true, cmpString(stderr, o.Error)
			o.Decision, o.Reason = "block", a.reason
			return a
		}
		if !parsed {
			return a
		}
	default:
		o.Status = schema.HookOK
	}
	switch {
	case parsed:
		a = eventAnswer(spec, out)
	case spec.Event == schema.HookWorktreeCreate && len(stdout) > 0:
		a.specific, _ = json.Marshal(map[string]string{"worktreePath": string(stdout)})
	case spec.PlainContext:
		a.context = strings.ToValidUTF8(string(stdout), "\uFFFD")
	}
	if text, err := limitContext(a.context, env); err == nil {
		a.context = text
	} else {
		a.context, o.Error = text, err.Error()
	}
	if a.block {
		o.Decision, o.Reason = "block", a.reason
	}
	o.Halt, o.StopReason, o.SystemMessage = a.halt, a.stopReason, a.systemMessage
	o.Specific, o.ContextLen = a.specific, len(a.context)
	return a
}
