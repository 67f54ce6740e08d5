package hookexec

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reprise-dev/reprise/schema"
)

// startStdin is what a SessionStart command hook reads on stdin, field for
// field as Claude Code sends it.
type startStdin struct {
	SessionID      string        `json:"session_id"`
	TranscriptPath string        `json:"transcript_path"`
	Cwd            string        `json:"cwd"`
	HookEventName  Event         `json:"hook_event_name"`
	Source         schema.Source `json:"source"`
}

// endStdin is what a SessionEnd command hook reads on stdin. end_source
// repeats reason under the name other hosts use.
type endStdin struct {
	SessionID      string        `json:"session_id"`
	TranscriptPath string        `json:"transcript_path"`
	Cwd            string        `json:"cwd"`
	HookEventName  Event         `json:"hook_event_name"`
	Reason         schema.Reason `json:"reason"`
	EndSource      schema.Reason `json:"end_source"`
}

// RunSessionStart runs hooks in parallel with in and returns their outcomes
// and the additional context of those that succeeded, joined with newlines
// in configuration order. Command hooks run with env.
func RunSessionStart(ctx context.Context, hooks []Hook, in SessionStartInput, env CommandEnv) ([]schema.HookOutcome, string) {
	env.session = in.SessionID
	stdin, _ := json.Marshal(startStdin{in.SessionID, in.TranscriptPath, in.Cwd, SessionStart, CommandSource(in.Source)}) // strings always marshal
	outcomes, answers := runAll(ctx, hooks, stdin, env, in.Messages, func(ctx context.Context, h Hook) (answer, error) {
		out, err := h.Body.(SessionStartFunc)(ctx, in)
		a := answer{text: out.AdditionalContext}
		if err == nil && len(out.ModifiedConfig) > 0 {
			a.config, err = json.Marshal(out.ModifiedConfig)
		}
		return a, err
	})
	return outcomes, join(texts(answers))
}

// RunSessionEnd runs hooks in parallel with in and returns their outcomes.
// Command hooks run with env, whose EnvFile is ignored.
func RunSessionEnd(ctx context.Context, hooks []Hook, in SessionEndInput, env CommandEnv) []schema.HookOutcome {
	env.budget = SessionEndBudget(hooks)
	reason := CommandReason(in.Reason)
	stdin, _ := json.Marshal(endStdin{in.SessionID, in.TranscriptPath, in.Cwd, SessionEnd, reason, reason})
	env.EnvFile, env.session = "", in.SessionID
	fin := in
	fin.Reason = FunctionReason(in.Reason)
	outcomes, _ := runAll(ctx, hooks, stdin, env, in.Messages, func(ctx context.Context, h Hook) (answer, error) {
		out, err := h.Body.(SessionEndFunc)(ctx, fin)
		return answer{summary: out.SessionSummary, cleanup: out.CleanupActions, suppress: out.SuppressOutput}, err
	})
	return outcomes
}

// stopStdin is what a Stop command hook reads on stdin.
type stopStdin struct {
	SessionID            string `json:"session_id"`
	TranscriptPath       string `json:"transcript_path"`
	Cwd                  string `json:"cwd"`
	PromptID             string `json:"prompt_id,omitempty"`
	PermissionMode       string `json:"permission_mode"`
	HookEventName        Event  `json:"hook_event_name"`
	StopHookActive       bool   `json:"stop_hook_active"`
	LastAssistantMessage string `json:"last_assistant_message"`
}

// RunStop runs Stop hooks in parallel with in. blocked is true when any hook
// blocked the stop; reason joins their reasons in configuration order.
//
// feedback joins the additionalContext of the command hooks that answered
// without blocking: non-error feedback for the model, after which, as in
// Claude Code 2.1.328, the conversation goes on so the model can act on it.
func RunStop(ctx context.Context, hooks []Hook, in StopInput, env CommandEnv) (outcomes []schema.HookOutcome, blocked bool, reason, feedback string) {
	stdin, _ := json.Marshal(stopStdin{in.SessionID, in.TranscriptPath, in.Cwd, in.PromptID,
		cmpString(in.PermissionMode, DefaultPermissionMode), Stop, in.StopHookActive, in.LastAssistantMessage})
	env.EnvFile, env.session = "", in.SessionID
	outcomes, answers := runAll(ctx, hooks, stdin, env, in.Messages, func(ctx context.Context, h Hook) (answer, error) {
		out, err := h.Body.(StopFunc)(ctx, in)
		return out.apply(answer{text: out.Reason, block: out.Decision == "block"}), err
	})
	blocked, reason, _ = blocks(outcomes, texts(answers))
	var contexts []string
	for i, o := range outcomes {
		if o.Status == schema.HookOK && o.Decision != "block" {
			contexts = append(contexts, answers[i].context)
		}
	}
	return outcomes, blocked, reason, join(contexts)
}

// blocks splits the texts of hooks that may block: the reasons of those
// that blocked, joined, and the texts of the others, joined.
func blocks(outcomes []schema.HookOutcome, texts []string) (blocked bool, reason, rest string) {
	reasons := make([]string, len(texts))
	others := make([]string, len(texts))
	for i, o := range outcomes {
		if o.Decision != "block" {
			others[i] = texts[i]
			continue
		}
		blocked, reasons[i] = true, texts[i]
		if reasons[i] == "" {
			reasons[i] = "blocked by " + o.Name
		}
	}
	return blocked, join(reasons), join(others)
}

// promptStdin is what a UserPromptSubmit command hook reads on stdin.
type promptStdin struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	HookEventName  Event  `json:"hook_event_name"`
	Prompt         string `json:"prompt"`
	PromptID       string `json:"prompt_id,omitempty"`
}

// RunPrompt runs UserPromptSubmit hooks in parallel with in. blocked is
// true when any hook blocked the prompt (exit 2, or "decision": "block"),
// reason joins their reasons, and text joins the context of the others
// that succeeded, in configuration order.
func RunPrompt(ctx context.Context, hooks []Hook, in PromptInput, env CommandEnv) (outcomes []schema.HookOutcome, blocked bool, reason, text string) {
	stdin, _ := json.Marshal(promptStdin{in.SessionID, in.TranscriptPath, in.Cwd, cmpString(in.PermissionMode, DefaultPermissionMode),
		UserPromptSubmit, in.Prompt, in.PromptID})
	env.EnvFile, env.session = "", in.SessionID
	outcomes, answers := runAll(ctx, hooks, stdin, env, in.Messages, func(ctx context.Context, h Hook) (answer, error) {
		out, err := h.Body.(PromptFunc)(ctx, in)
		if out.Decision == "block" {
			return out.apply(answer{text: out.Reason, block: true}), err
		}
		return out.apply(answer{text: out.AdditionalContext}), err
	})
	blocked, reason, text = blocks(outcomes, texts(answers))
	return outcomes, blocked, reason, text
}

// preCompactStdin is what a PreCompact command hook reads on stdin.
type preCompactStdin struct {
	SessionID          string `json:"session_id"`
	TranscriptPath     string `json:"transcript_path"`
	Cwd                string `json:"cwd"`
	HookEventName      Event  `json:"hook_event_name"`
	Trigger            string `json:"trigger"`
	CustomInstructions string `json:"custom_instructions"`
}

// RunPreCompact runs PreCompact hooks in parallel with in. blocked is true
// when any hook blocked the compaction; reason joins their reasons.
// instructions is what the command hooks that exited 0 printed, each
// trimmed and cut at MaxContextChars, joined by blank lines: Claude Code
// appends it to the compaction's custom instructions (AppendInstructions).
func RunPreCompact(ctx context.Context, hooks []Hook, in PreCompactInput, env CommandEnv) (outcomes []schema.HookOutcome, blocked bool, reason, instructions string) {
	stdin, _ := json.Marshal(preCompactStdin{in.SessionID, in.TranscriptPath, in.Cwd, PreCompact, in.Trigger, in.CustomInstructions})
	env.EnvFile, env.session = "", in.SessionID
	outcomes, answers := runAll(ctx, hooks, stdin, env, in.Messages, func(ctx context.Context, h Hook) (answer, error) {
		out, err := h.Body.(PreCompactFunc)(ctx, in)
		return answer{text: out.Reason, block: out.Decision == "block"}, err
	})
	blocked, reason, _ = blocks(outcomes, texts(answers))
	var parts []string
	for i, o := range outcomes {
		if o.Status == schema.HookOK && o.Decision != "block" && answers[i].instructions != "" {
			parts = append(parts, answers[i].instructions)
		}
	}
	return outcomes, blocked, reason, strings.Join(parts, "\n\n")
}

// AppendInstructions returns the custom instructions of a compaction once
// its PreCompact hooks' instructions are added, as Claude Code joins them:
// the user's, a blank line, the hooks'.
func AppendInstructions(user, hooks string) string {
	switch {
	case hooks == "":
		return user
	case user == "":
		return hooks
	}
	return user + "\n\n" + hooks
}

// answer is what a hook body returned that reprise keeps: the text it
// contributes (context for SessionStart, the reason of a block for Stop),
// what SessionEnd hooks report, and what a tool event's hook decided.
type answer struct {
	text     string
	summary  string
	cleanup  []string
	block    bool
	config   json.RawMessage // a SessionStart hook's modifiedConfig
	suppress bool            // a SessionEnd hook's suppressOutput

	// Tool events: the decision (allow, deny, ask; block after a tool),
	// its reason, the context for the model, the replacement input or
	// result, and what else the hook asked for.
	decision  string
	reason    string
	context   string
	replace   json.RawMessage
	interrupt bool   // PermissionRequest: a deny that stops the turn
	handling  string // PostToolUseFailure function hooks: retry, skip or abort

	// EventFunc hooks and the events RunEvent runs: what goes to the model
	// after the fact, and Claude Code's output fields every event has.
	feedback      string
	instructions  string // a PreCompact command hook's stdout
	halt          bool
	stopReason    string
	systemMessage string
	specific      json.RawMessage
}

// call runs one function hook's body.
type call func(ctx context.Context, h Hook) (answer, error)

// join joins the non-empty texts with newlines, in order.
func join(texts []string) string {
	var parts []string
	for _, t := range texts {
		if t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// runAll runs hooks in parallel and returns each one's outcome and text.
// Each function hook runs on a goroutine of its own, so that one which
// ignores its timeout can be left behind. Command hooks end by their
// timeout (their process group is killed), so the last of them runs on the
// caller's goroutine: starting goroutines, and waking the threads that run
// them, is a measurable part of a restore, and one hook is the usual case.
func runAll(ctx context.Context, hooks []Hook, stdin []byte, env CommandEnv, msgs []schema.Message, fn call) ([]schema.HookOutcome, []answer) {
	if len(hooks) == 0 {
		return nil, nil // as a decoded event has it
	}
	env.messages = msgs
	outcomes := make([]schema.HookOutcome, len(hooks))
	answers := make([]answer, len(hooks))
	var funcs []*funcRun
	last := -1 // the last command hook
	for i, h := range hooks {
		if h.background() && env.Background != nil {
			outcomes[i] = background(ctx, h, stdin, env)
			continue
		}
		if check, ok := h.Body.(Check); ok {
			funcs = append(funcs, startFunc(ctx, h, check.call(msgs), i, env.clock()))
		} else if !h.configured() {
			funcs = append(funcs, startFunc(ctx, h, fn, i, env.clock()))
		} else {
			last = i
		}
	}
	var wg sync.WaitGroup
	for i, h := range hooks {
		if h.configured() && i != last && outcomes[i].Status != schema.HookAsync {
			wg.Go(func() { outcomes[i], answers[i] = runCommand(ctx, h, stdin, env, env.timeout(h)) })
		}
	}
	if last >= 0 {
		h := hooks[last]
		outcomes[last], answers[last] = runCommand(ctx, h, stdin, env, env.timeout(h))
	}
	for _, f := range funcs {
		outcomes[f.index], answers[f.index] = f.wait()
	}
	wg.Wait()
	return outcomes, answers
}

// texts returns the text of each answer, in order.
func texts(answers []answer) []string {
	if answers == nil {
		return nil
	}
	out := make([]string, len(answers))
	for i, a := range answers {
		out[i] = a.text
	}
	return out
}

// timeout is how long command hook h may run: the budget all the hooks of
// the run share, when it has one (SessionEnd), else commandTimeout.
func (env CommandEnv) timeout(h Hook) time.Duration {
	if env.budget > 0 {
		return env.budget
	}
	return commandTimeout(h)
}

// SessionEndBudget returns the time the command hooks of one SessionEnd
// share, as Claude Code 2.1.328 reckons it: 1.5 seconds, raised to the
// longest timeout a hook that is not a plugin's asks for, at most 60
// seconds, and raised again to CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS
// milliseconds when that is set, at most an hour. All the hooks run at
// once, each until the budget is spent.
func SessionEndBudget(hooks []Hook) time.Duration {
	var longest time.Duration
	for _, h := range hooks {
		if h.configured() && !strings.HasPrefix(h.Source, "plugin:") {
			longest = max(longest, h.Timeout)
		}
	}
	budget := max(schema.SessionEndBudget, min(longest, time.Minute))
	if ms, err := strconv.ParseInt(os.Getenv("CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS"), 10, 64); err == nil && ms > 0 {
		budget = max(budget, time.Duration(min(ms, int64(time.Hour/time.Millisecond)))*time.Millisecond)
	}
	return budget
}

// Timeout returns how long h may run when it runs alone: its own timeout,
// else for a command hook its event's default (on SessionEnd, the budget
// it has by itself: SessionEndBudget), else DefaultFuncTimeout.
func Timeout(h Hook) time.Duration {
	switch {
	case !h.configured() && h.Timeout > 0:
		return h.Timeout
	case !h.configured():
		return DefaultFuncTimeout
	case h.Event == SessionEnd:
		return SessionEndBudget([]Hook{h})
	}
	return commandTimeout(h)
}

// commandTimeout is h's own timeout or the default for its event, from
// the table of events.
func commandTimeout(h Hook) time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	if b, ok := h.Body.(Prompt); ok {
		if b.Agent {
			return DefaultAgentTimeout
		}
		return DefaultPromptTimeout
	}
	if spec, ok := schema.LookupEvent(h.Event); ok {
		return spec.Timeout
	}
	return DefaultCommandTimeout
}

type callResult struct {
	answer   answer
	err      error
	panicked any
	late     bool // returned once its time was up or the caller gave up
}

// funcRun is a function hook running on its own goroutine.
type funcRun struct {
	h       Hook
	index   int // in the hooks being run
	ctx     context.Context
	hctx    context.Context // ctx under the hook's timeout
	cancel  context.CancelFunc
	timeout time.Duration
	began   time.Time
	now     func() time.Time
	done    chan callResult // buffered: a late hook never blocks
}

// startFunc starts function hook h, the index-th of the hooks being run,
// under its timeout, recovering a panic. A hook whose caller has already
// given up is not started: it is cancelled.
func startFunc(ctx context.Context, h Hook, fn call, index int, now func() time.Time) *funcRun {
	f := &funcRun{h: h, index: index, ctx: ctx, timeout: h.Timeout, now: now, done: make(chan callResult, 1)}
	f.began = now()
	if f.timeout == 0 {
		f.timeout = DefaultFuncTimeout
	}
	f.hctx, f.cancel = context.WithTimeout(ctx, f.timeout)
	if ctx.Err() != nil {
		f.done <- callResult{late: true}
		return f
	}
	go func() {
		var r callResult
		defer func() {
			if p := recover(); p != nil {
				r = callResult{panicked: p}
			}
			r.late = f.hctx.Err() != nil
			f.done <- r
		}()
		r.answer, r.err = fn(f.hctx, h)
	}()
	return f
}

// wait returns f's outcome and text as soon as the hook finishes or its
// time is up, whichever comes first. A hook that answers only once its time
// is up has timed out, or was cancelled if the caller's context ended, even
// when wait is called late.
func (f *funcRun) wait() (schema.HookOutcome, answer) {
	defer f.cancel()
	o := schema.HookOutcome{Name: f.h.Name, Source: f.h.Source}
	var a answer
	var r callResult
	select {
	case r = <-f.done:
	case <-f.hctx.Done():
		select {
		case r = <-f.done: // it answered just now
		default:
			r.late = true
		}
	}
	switch {
	case r.late && f.ctx.Err() != nil:
		o.Status, o.Error = schema.HookCancelled, f.ctx.Err().Error()
	case r.late:
		o.Status, o.Error = schema.HookTimedOut, fmt.Sprintf("no answer after %s", f.timeout)
	case r.panicked != nil:
		o.Status, o.Error = schema.HookPanicked, fmt.Sprint("panic: ", r.panicked)
	case r.err != nil:
		o.Status, o.Error = schema.HookFailed, r.err.Error()
	default:
		o.Status, a = schema.HookOK, r.answer
		o.Summary = r.answer.summary
		if len(r.answer.cleanup) > 0 { // nil for none, as a decoded event has it
			o.Cleanup = r.answer.cleanup
		}
		switch {
		case r.answer.block:
			o.Decision, o.Reason = "block", r.answer.text
		case r.answer.decision != "":
			o.Decision, o.Reason = r.answer.decision, r.answer.reason
		}
		o.Config, o.Suppress = r.answer.config, r.answer.suppress
		o.Halt, o.StopReason, o.SystemMessage, o.Specific = r.answer.halt, r.answer.stopReason, r.answer.systemMessage, r.answer.specific
	}
	o.Duration = f.now().Sub(f.began).Nanoseconds()
	o.ContextLen = len(a.text) + len(a.context)
	return o, a
}
