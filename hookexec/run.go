package hookexec

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
)

// startStdin is what a SessionStart command hook reads on stdin, field for
// field as Claude Code sends it.
type startStdin struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	Source         string `json:"source"`
}

// endStdin is what a SessionEnd command hook reads on stdin. end_source
// repeats reason under the name other hosts use.
type endStdin struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	Reason         string `json:"reason"`
	EndSource      string `json:"end_source"`
}

// RunSessionStart runs hooks in parallel with in and returns their outcomes
// and the additional context of those that succeeded, joined with newlines
// in configuration order. Command hooks run with env.
func RunSessionStart(ctx context.Context, hooks []Hook, in SessionStartInput, env CommandEnv) ([]eventlog.HookOutcome, string) {
	stdin, _ := json.Marshal(startStdin{in.SessionID, in.TranscriptPath, in.Cwd, SessionStart, in.Source}) // strings always marshal
	outcomes, texts := runAll(ctx, hooks, stdin, env, func(ctx context.Context, h Hook) (answer, error) {
		out, err := h.Start(ctx, in)
		return answer{text: out.AdditionalContext}, err
	})
	return outcomes, join(texts)
}

// RunSessionEnd runs hooks in parallel with in and returns their outcomes.
// Command hooks run with env, whose EnvFile is ignored.
func RunSessionEnd(ctx context.Context, hooks []Hook, in SessionEndInput, env CommandEnv) []eventlog.HookOutcome {
	stdin, _ := json.Marshal(endStdin{in.SessionID, in.TranscriptPath, in.Cwd, SessionEnd, in.Reason, in.Reason})
	env.EnvFile = ""
	outcomes, _ := runAll(ctx, hooks, stdin, env, func(ctx context.Context, h Hook) (answer, error) {
		out, err := h.End(ctx, in)
		return answer{summary: out.SessionSummary, cleanup: out.CleanupActions}, err
	})
	return outcomes
}

// stopStdin is what a Stop command hook reads on stdin.
type stopStdin struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	StopHookActive bool   `json:"stop_hook_active"`
}

// RunStop runs Stop hooks in parallel with in. blocked is true when any hook
// blocked the stop; reason joins their reasons in configuration order.
func RunStop(ctx context.Context, hooks []Hook, in StopInput, env CommandEnv) (outcomes []eventlog.HookOutcome, blocked bool, reason string) {
	stdin, _ := json.Marshal(stopStdin{in.SessionID, in.TranscriptPath, in.Cwd, Stop, in.StopHookActive})
	env.EnvFile = ""
	outcomes, texts := runAll(ctx, hooks, stdin, env, func(ctx context.Context, h Hook) (answer, error) {
		out, err := h.Stop(ctx, in)
		return answer{text: out.Reason, block: out.Decision == "block"}, err
	})
	for i, o := range outcomes {
		if o.Decision == "block" {
			blocked = true
			if texts[i] == "" {
				texts[i] = "blocked by " + o.Name
			}
		} else {
			texts[i] = ""
		}
	}
	return outcomes, blocked, join(texts)
}

// answer is what a hook body returned that reprise keeps: the text it
// contributes (context for SessionStart, the reason of a block for Stop),
// and what SessionEnd hooks report.
type answer struct {
	text    string
	summary string
	cleanup []string
	block   bool
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
func runAll(ctx context.Context, hooks []Hook, stdin []byte, env CommandEnv, fn call) ([]eventlog.HookOutcome, []string) {
	if len(hooks) == 0 {
		return nil, nil // as a decoded event has it
	}
	outcomes := make([]eventlog.HookOutcome, len(hooks))
	texts := make([]string, len(hooks))
	var wg sync.WaitGroup
	for i, h := range hooks {
		if h.Command != "" {
			wg.Go(func() { outcomes[i], texts[i] = runCommand(ctx, h, stdin, env, commandTimeout(h)) })
			continue
		}
		wg.Go(func() { outcomes[i], texts[i] = runOne(ctx, h, fn) })
	}
	wg.Wait()
	return outcomes, texts
}

// commandTimeout is h's own timeout or the default for its event.
func commandTimeout(h Hook) time.Duration {
	switch {
	case h.Timeout > 0:
		return h.Timeout
	case h.Event == SessionEnd:
		return DefaultSessionEndCommandTimeout
	}
	return DefaultCommandTimeout
}

type callResult struct {
	answer   answer
	err      error
	panicked any
}

// runOne runs function hook h under its timeout, recovering a panic. It returns as soon
// as the hook finishes or its time is up, whichever comes first.
func runOne(ctx context.Context, h Hook, fn call) (eventlog.HookOutcome, string) {
	timeout := h.Timeout
	if timeout == 0 {
		timeout = DefaultFuncTimeout
	}
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan callResult, 1) // buffered: a late hook never blocks
	began := time.Now()
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- callResult{panicked: p}
			}
		}()
		a, err := fn(hctx, h)
		done <- callResult{answer: a, err: err}
	}()
	o := eventlog.HookOutcome{Name: h.Name, Source: h.Source}
	var text string
	select {
	case r := <-done:
		switch {
		case r.panicked != nil:
			o.Status, o.Error = eventlog.HookPanicked, fmt.Sprint("panic: ", r.panicked)
		case r.err != nil && ctx.Err() != nil:
			o.Status, o.Error = eventlog.HookCancelled, r.err.Error()
		case r.err != nil:
			o.Status, o.Error = eventlog.HookFailed, r.err.Error()
		default:
			o.Status, text = eventlog.HookOK, r.answer.text
			o.Summary = r.answer.summary
			if len(r.answer.cleanup) > 0 { // nil for none, as a decoded event has it
				o.Cleanup = r.answer.cleanup
			}
			if r.answer.block {
				o.Decision, o.Reason = "block", r.answer.text
			}
		}
	case <-hctx.Done():
		if ctx.Err() != nil {
			o.Status, o.Error = eventlog.HookCancelled, ctx.Err().Error()
		} else {
			o.Status, o.Error = eventlog.HookTimedOut, fmt.Sprintf("no answer after %s", timeout)
		}
	}
	o.Duration = time.Since(began).Nanoseconds()
	o.ContextLen = len(text)
	return o, text
}
