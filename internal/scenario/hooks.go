package scenario

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// hook registers a hook of an event; the input is its command, which is
// also its name. The scripted runner plays status (ok by default) and the
// rest; the real runner runs the command, which must do the same. With
// scoped=SESSION it is a session-scoped hook, with id, error and once as
// Claude Code's options, and prints its id.
//
//	hook SessionStart matcher=startup|resume context=(on branch main)
//	echo 'on branch main'
//
// Options: matcher, status (ok, failed, timeout, ...), context, block
// (the reason a Stop, UserPromptSubmit, PreCompact or PostToolUse hook
// blocks with), summary, cleanup (";"-separated), config (JSON),
// suppress=true, decision and reason (a PreToolUse or PermissionRequest
// hook's allow, deny or ask), input (the JSON it gives instead of the
// call's), check (a Go check over the conversation that lets the action go
// on once a message holds this text, and otherwise blocks it with error),
// timeout (a duration), scoped, id, error, once=true, specific (the JSON
// of the hookSpecificOutput fields it gives that no other option names,
// such as a SessionStart hook's initialUserMessage), halt (the stopReason
// of its "continue": false).
func (w *World) hook(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	line := w.text(t, d)
	m, err := hookexec.ParseMatcher(opt(d, "matcher"))
	if err != nil {
		return nil, err
	}
	h := hookexec.Hook{Event: hookexec.Event(w.arg(t, d, 0)), Name: line, Source: "scenario", Matcher: m,
		Body: hookexec.Command{Line: line}}
	if want := opt(d, "check"); want != "" {
		// A session function hook after Claude Code's: it lets the action
		// go on once a message of the conversation holds want.
		h.Body = hookexec.Check{ErrorMessage: opt(d, "error"), Fn: func(_ context.Context, msgs []schema.Message) (bool, error) {
			return slices.ContainsFunc(msgs, func(m schema.Message) bool { return strings.Contains(projection.FirstText(m), want) }), nil
		}}
	}
	if timeout := opt(d, "timeout"); timeout != "" {
		if h.Timeout, err = time.ParseDuration(timeout); err != nil {
			t.Fatalf("%s: timeout: %v", w.where, err)
		}
	}
	w.scripts[line] = hookScript{status: cmp.Or(opt(d, "status"), schema.HookOK), context: opt(d, "context"),
		block: opt(d, "block"), summary: opt(d, "summary"), cleanup: opt(d, "cleanup"), config: opt(d, "config"),
		suppress: opt(d, "suppress") == "true", decision: opt(d, "decision"), reason: opt(d, "reason"), input: opt(d, "input"),
		specific: opt(d, "specific"), halt: opt(d, "halt")}
	if id := opt(d, "scoped"); id != "" {
		hid, err := w.e.AddSessionHookWith(id, h, hookexec.ScopedOptions{ID: opt(d, "id"), ErrorMessage: opt(d, "error"),
			Once: opt(d, "once") == "true", OnSuccess: func(o schema.HookOutcome) {
				w.journal.add("  on success " + o.Name)
			}})
		return []string{"hook " + hid}, err
	}
	return nil, w.hooks.Add(h)
}

// unhook removes a session-scoped hook by its id and prints whether it was
// there.
//
//	unhook b my-hook
func (w *World) unhook(_ context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	return printf("removed %v", w.e.RemoveSessionHook(w.arg(t, d, 0), w.arg(t, d, 1))), nil
}

// scopedHooks lists a session's scoped hooks, of one event or of all.
//
//	hooks b event=SessionStart
func (w *World) scopedHooks(_ context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	var out []string
	for _, sh := range w.e.SessionHooks(w.arg(t, d, 0), hookexec.Event(opt(d, "event"))) {
		out = append(out, fmt.Sprintf("%s %s %s once=%v", sh.ID, sh.Hook.Event, sh.Hook.Name, sh.Options.Once))
	}
	return out, nil
}

// hookScript is what the scripted runner makes a hook do.
type hookScript struct {
	status   string
	context  string // SessionStart: the context it returns
	block    string // Stop: the reason it blocks with
	summary  string // SessionEnd
	cleanup  string // SessionEnd, ";"-separated
	config   string // SessionStart: modifiedConfig, as JSON
	suppress bool   // SessionEnd: suppressOutput
	decision string // PreToolUse, PermissionRequest: allow, deny or ask
	reason   string // of the decision
	input    string // PreToolUse, PermissionRequest: the input given instead, as JSON
	specific string // the hookSpecificOutput fields recorded in HookOutcome.Specific, as JSON
	halt     string // the stopReason of its "continue": false
}

// scriptedRunner is the in-memory twin of hookexec.Exec: it plays each
// hook's scripted outcome, keeping Exec's contract (one outcome per hook in
// the hooks' order, context joined from the hooks that succeeded, a Stop
// blocked when any hook blocked).
type scriptedRunner struct{ scripts map[string]hookScript }

func (s scriptedRunner) outcomes(ctx context.Context, hooks []hookexec.Hook, msgs []schema.Message) ([]schema.HookOutcome, []string) {
	if len(hooks) == 0 {
		return nil, nil
	}
	out := make([]schema.HookOutcome, len(hooks))
	texts := make([]string, len(hooks))
	for i, h := range hooks {
		sc := s.scripts[h.Name]
		o := schema.HookOutcome{Name: h.Name, Source: h.Source, Status: cmp.Or(sc.status, schema.HookOK)}
		if err := ctx.Err(); err != nil { // cut short, as Exec cuts a hook short
			o.Status, o.Error = schema.HookCancelled, err.Error()
			out[i] = o
			continue
		}
		if check, ok := h.Body.(hookexec.Check); ok {
			// A check is Go code over the conversation: the twin runs it, as
			// Exec does, and a false blocks with its message.
			if pass, err := check.Fn(ctx, msgs); err != nil {
				o.Status, o.Error = schema.HookFailed, err.Error()
			} else if !pass {
				texts[i] = check.ErrorMessage
				o.Decision, o.Reason = "block", check.ErrorMessage
				if h.Event == hookexec.PreToolUse || h.Event == hookexec.PermissionRequest {
					o.Decision = hookexec.Deny
				}
			}
			out[i] = o
			continue
		}
		if o.Status == schema.HookOK {
			texts[i] = sc.context
			o.Summary = sc.summary
			o.Config = []byte(sc.config)
			o.Suppress = sc.suppress
			if sc.specific != "" {
				o.Specific = []byte(sc.specific)
			}
			if sc.halt != "" {
				o.Halt, o.StopReason = true, sc.halt
			}
			if sc.cleanup != "" {
				o.Cleanup = strings.Split(sc.cleanup, ";")
			}
			if sc.block != "" {
				o.Decision, o.Reason, texts[i] = "block", sc.block, sc.block
			}
		} else {
			o.Error = "scripted " + o.Status
		}
		o.ContextLen = len(texts[i])
		out[i] = o
	}
	return out, texts
}

func joinTexts(texts []string) string {
	var kept []string
	for _, t := range texts {
		if t != "" {
			kept = append(kept, t)
		}
	}
	return strings.Join(kept, "\n")
}

func (s scriptedRunner) SessionStart(ctx context.Context, hooks []hookexec.Hook, in hookexec.SessionStartInput, _ hookexec.CommandEnv) ([]schema.HookOutcome, string) {
	out, texts := s.outcomes(ctx, hooks, in.Messages)
	return out, joinTexts(texts)
}

func (s scriptedRunner) SessionEnd(ctx context.Context, hooks []hookexec.Hook, in hookexec.SessionEndInput, _ hookexec.CommandEnv) []schema.HookOutcome {
	out, _ := s.outcomes(ctx, hooks, in.Messages)
	return out
}

func (s scriptedRunner) Prompt(ctx context.Context, hooks []hookexec.Hook, in hookexec.PromptInput, _ hookexec.CommandEnv) ([]schema.HookOutcome, bool, string, string) {
	out, texts := s.outcomes(ctx, hooks, in.Messages)
	reasons := make([]string, len(texts))
	blocked := false
	for i, o := range out {
		if o.Decision == "block" {
			blocked, reasons[i], texts[i] = true, texts[i], ""
		}
	}
	return out, blocked, joinTexts(reasons), joinTexts(texts)
}

// PreCompact plays the hooks as Prompt does: a hook's context is the
// instructions it prints, joined by blank lines.
func (s scriptedRunner) PreCompact(ctx context.Context, hooks []hookexec.Hook, in hookexec.PreCompactInput, env hookexec.CommandEnv) ([]schema.HookOutcome, bool, string, string) {
	out, blocked, reason, _ := s.Prompt(ctx, hooks, hookexec.PromptInput{Messages: in.Messages}, env)
	var parts []string
	for _, o := range out {
		if sc := s.scripts[o.Name]; o.Status == schema.HookOK && o.Decision != "block" && sc.context != "" {
			parts = append(parts, sc.context)
		}
	}
	return out, blocked, reason, strings.Join(parts, "\n\n")
}

// Stop plays the hooks: a block's reason, or the context of the others
// (their additionalContext).
func (s scriptedRunner) Stop(ctx context.Context, hooks []hookexec.Hook, in hookexec.StopInput, _ hookexec.CommandEnv) ([]schema.HookOutcome, bool, string, string) {
	out, texts := s.outcomes(ctx, hooks, in.Messages)
	blocked := false
	contexts := make([]string, len(out))
	for i, o := range out {
		if o.Decision == "block" {
			blocked = true
		} else {
			texts[i], contexts[i] = "", texts[i]
		}
	}
	return out, blocked, joinTexts(texts), joinTexts(contexts)
}

// tool plays the scripted answers of a tool call's hooks as
// hookexec.Exec combines them: deny over ask over allow, the first input
// given instead, contexts joined; after the tool, a block.
func (s scriptedRunner) tool(ctx context.Context, hooks []hookexec.Hook, msgs []schema.Message) ([]schema.HookOutcome, hookexec.ToolDecision, hookexec.ToolFeedback) {
	out, texts := s.outcomes(ctx, hooks, msgs)
	var (
		d        hookexec.ToolDecision
		f        hookexec.ToolFeedback
		contexts []string
		reasons  []string
	)
	rank := map[string]int{"": 0, hookexec.Allow: 1, hookexec.Ask: 2, hookexec.Deny: 3}
	for i, o := range out {
		if o.Status != schema.HookOK {
			continue
		}
		sc := s.scripts[hooks[i].Name]
		if o.Decision == hookexec.Deny { // a check that failed
			sc.decision, sc.reason = hookexec.Deny, o.Reason
		}
		contexts = append(contexts, sc.context)
		if rank[sc.decision] > rank[d.Decision] {
			d.Decision = sc.decision
		}
		if sc.input != "" && d.UpdatedInput == nil && sc.decision != hookexec.Deny {
			d.UpdatedInput = []byte(sc.input)
		}
		if o.Decision == "block" {
			f.Blocked, reasons = true, append(reasons, texts[i])
		}
	}
	for i, o := range out {
		sc := s.scripts[hooks[i].Name]
		if o.Decision == hookexec.Deny {
			sc.decision, sc.reason = hookexec.Deny, o.Reason
		}
		if o.Status == schema.HookOK && sc.decision == d.Decision && d.Decision != "" {
			out[i].Decision, out[i].Reason = sc.decision, sc.reason
			d.Reason = joinTexts([]string{d.Reason, sc.reason})
		}
	}
	d.Context, f.Context, f.Reason = joinTexts(contexts), joinTexts(contexts), joinTexts(reasons)
	return out, d, f
}

func (s scriptedRunner) PreToolUse(ctx context.Context, hooks []hookexec.Hook, in hookexec.ToolInput, _ hookexec.CommandEnv) ([]schema.HookOutcome, hookexec.ToolDecision) {
	out, d, _ := s.tool(ctx, hooks, in.Messages)
	return out, d
}

func (s scriptedRunner) PermissionRequest(ctx context.Context, hooks []hookexec.Hook, in hookexec.ToolInput, _ hookexec.CommandEnv) ([]schema.HookOutcome, hookexec.ToolDecision) {
	out, d, _ := s.tool(ctx, hooks, in.Messages)
	d.Context = ""
	return out, d
}

func (s scriptedRunner) PostToolUse(ctx context.Context, hooks []hookexec.Hook, in hookexec.ToolInput, _ hookexec.CommandEnv) ([]schema.HookOutcome, hookexec.ToolFeedback) {
	out, _, f := s.tool(ctx, hooks, in.Messages)
	return out, f
}

func (s scriptedRunner) PostToolUseFailure(ctx context.Context, hooks []hookexec.Hook, in hookexec.ToolInput, env hookexec.CommandEnv) ([]schema.HookOutcome, hookexec.ToolFeedback) {
	return s.PostToolUse(ctx, hooks, in, env)
}

// recordingRunner notes every run, in the form scenarios print, before
// passing it on: the proof that a hook ran, and ran once.
type recordingRunner struct {
	inner   hookexec.Runner
	journal *journal
}

func (r *recordingRunner) note(event hookexec.Event, session, value string, hooks []hookexec.Hook) {
	names := strings.Join(hookexec.Names(hooks), ",")
	if names == "" {
		names = "none" // as the intent line says it
	}
	r.journal.add(fmt.Sprintf("  run %s session=%s %s hooks=%s", event, session, value, names))
}

func (r *recordingRunner) SessionStart(ctx context.Context, hooks []hookexec.Hook, in hookexec.SessionStartInput, env hookexec.CommandEnv) ([]schema.HookOutcome, string) {
	value := "source=" + string(in.Source)
	if in.InitialPrompt != "" {
		value += fmt.Sprintf(" initialPrompt=%q", in.InitialPrompt)
	}
	r.note(hookexec.SessionStart, in.SessionID, value, hooks)
	return r.inner.SessionStart(ctx, hooks, in, env)
}

func (r *recordingRunner) SessionEnd(ctx context.Context, hooks []hookexec.Hook, in hookexec.SessionEndInput, env hookexec.CommandEnv) []schema.HookOutcome {
	value := "reason=" + string(in.Reason)
	if in.FinalMessage != "" {
		value += fmt.Sprintf(" finalMessage=%q", in.FinalMessage)
	}
	r.note(hookexec.SessionEnd, in.SessionID, value, hooks)
	return r.inner.SessionEnd(ctx, hooks, in, env)
}

func (r *recordingRunner) Prompt(ctx context.Context, hooks []hookexec.Hook, in hookexec.PromptInput, env hookexec.CommandEnv) ([]schema.HookOutcome, bool, string, string) {
	r.note(hookexec.UserPromptSubmit, in.SessionID, fmt.Sprintf("prompt=%q", in.Prompt), hooks)
	return r.inner.Prompt(ctx, hooks, in, env)
}

func (r *recordingRunner) PreCompact(ctx context.Context, hooks []hookexec.Hook, in hookexec.PreCompactInput, env hookexec.CommandEnv) ([]schema.HookOutcome, bool, string, string) {
	r.note(hookexec.PreCompact, in.SessionID, fmt.Sprintf("trigger=%s instructions=%q", in.Trigger, in.CustomInstructions), hooks)
	return r.inner.PreCompact(ctx, hooks, in, env)
}

func (r *recordingRunner) Stop(ctx context.Context, hooks []hookexec.Hook, in hookexec.StopInput, env hookexec.CommandEnv) ([]schema.HookOutcome, bool, string, string) {
	value := "active=" + strconv.FormatBool(in.StopHookActive)
	if in.StopReason != "" {
		value += " stopReason=" + in.StopReason
	}
	if in.LastAssistantMessage != "" {
		value += fmt.Sprintf(" last=%q", in.LastAssistantMessage)
	}
	r.note(hookexec.Stop, in.SessionID, value, hooks)
	return r.inner.Stop(ctx, hooks, in, env)
}

// toolRunner is the inner runner's tool half.
func (r *recordingRunner) toolRunner() hookexec.ToolRunner {
	if t, ok := r.inner.(hookexec.ToolRunner); ok {
		return t
	}
	return hookexec.Exec{}
}

func (r *recordingRunner) noteTool(event hookexec.Event, in hookexec.ToolInput, hooks []hookexec.Hook) {
	r.note(event, in.SessionID, fmt.Sprintf("tool=%s id=%s input=%s", in.ToolName, in.ToolUseID, in.ToolInput), hooks)
}

func (r *recordingRunner) PreToolUse(ctx context.Context, hooks []hookexec.Hook, in hookexec.ToolInput, env hookexec.CommandEnv) ([]schema.HookOutcome, hookexec.ToolDecision) {
	r.noteTool(hookexec.PreToolUse, in, hooks)
	return r.toolRunner().PreToolUse(ctx, hooks, in, env)
}

func (r *recordingRunner) PermissionRequest(ctx context.Context, hooks []hookexec.Hook, in hookexec.ToolInput, env hookexec.CommandEnv) ([]schema.HookOutcome, hookexec.ToolDecision) {
	r.noteTool(hookexec.PermissionRequest, in, hooks)
	return r.toolRunner().PermissionRequest(ctx, hooks, in, env)
}

func (r *recordingRunner) PostToolUse(ctx context.Context, hooks []hookexec.Hook, in hookexec.ToolInput, env hookexec.CommandEnv) ([]schema.HookOutcome, hookexec.ToolFeedback) {
	r.noteTool(hookexec.PostToolUse, in, hooks)
	return r.toolRunner().PostToolUse(ctx, hooks, in, env)
}

func (r *recordingRunner) PostToolUseFailure(ctx context.Context, hooks []hookexec.Hook, in hookexec.ToolInput, env hookexec.CommandEnv) ([]schema.HookOutcome, hookexec.ToolFeedback) {
	r.noteTool(hookexec.PostToolUseFailure, in, hooks)
	return r.toolRunner().PostToolUseFailure(ctx, hooks, in, env)
}

// Event plays the hooks of a fired event as hookexec.RunEvent reads
// them on the event's row: a block (a "decision" or an exit 2, as the
// hook's command gives it) where the row honours one, context where it
// honours additionalContext or plain stdout, the specific fields merged,
// a later hook winning.
func (s scriptedRunner) Event(ctx context.Context, hooks []hookexec.Hook, event hookexec.Event, in hookexec.EventInput, _ hookexec.CommandEnv) ([]schema.HookOutcome, hookexec.EventResult, error) {
	if err := hookexec.CheckEventInput(event, in); err != nil {
		return nil, hookexec.EventResult{}, err
	}
	spec, _ := schema.LookupEvent(event)
	out, texts := s.outcomes(ctx, hooks, in.Messages)
	var (
		r                 hookexec.EventResult
		reasons, contexts []string
		merged            = map[string]json.RawMessage{}
	)
	takesContext := spec.PlainContext || slices.Contains(spec.Output, "additionalContext")
	blocks := spec.Decision || slices.Contains([]schema.ExitTwo{schema.ExitTwoBlocks, schema.ExitTwoBlocksUser, schema.ExitTwoContinues}, spec.ExitTwo)
	for i, o := range out {
		switch {
		case o.Decision == "block" && blocks:
			r.Blocked, reasons = true, append(reasons, texts[i])
		case o.Decision == "block":
			out[i].Decision, out[i].Reason = "", "" // the row honours no decision
		case takesContext:
			contexts = append(contexts, texts[i])
		}
		if o.Halt && !r.Halt {
			r.Halt, r.StopReason = true, o.StopReason
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(o.Specific, &fields) == nil {
			maps.Copy(merged, fields)
		}
	}
	r.Reason, r.Context = joinTexts(reasons), joinTexts(contexts)
	if len(merged) > 0 {
		r.Specific, _ = json.Marshal(merged) // raw JSON values always marshal
	}
	return out, r, nil
}

// Event notes the run of a fired event with its own input, then passes it
// on to the inner runner, which must run any event.
func (r *recordingRunner) Event(ctx context.Context, hooks []hookexec.Hook, event hookexec.Event, in hookexec.EventInput, env hookexec.CommandEnv) ([]schema.HookOutcome, hookexec.EventResult, error) {
	r.note(event, in.SessionID, "input="+string(in.Fields), hooks)
	return r.inner.(hookexec.EventRunner).Event(ctx, hooks, event, in, env)
}
