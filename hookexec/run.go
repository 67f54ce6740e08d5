package hookexec

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
)

// RunSessionStart runs hooks in parallel with in and returns their outcomes
// and the additional context of those that succeeded, joined with newlines
// in configuration order.
func RunSessionStart(ctx context.Context, hooks []Hook, in SessionStartInput) ([]eventlog.HookOutcome, string) {
	return runAll(ctx, hooks, func(ctx context.Context, h Hook) (string, error) {
		out, err := h.Start(ctx, in)
		return out.AdditionalContext, err
	})
}

// RunSessionEnd runs hooks in parallel with in and returns their outcomes.
func RunSessionEnd(ctx context.Context, hooks []Hook, in SessionEndInput) []eventlog.HookOutcome {
	outcomes, _ := runAll(ctx, hooks, func(ctx context.Context, h Hook) (string, error) {
		_, err := h.End(ctx, in)
		return "", err
	})
	return outcomes
}

// call runs one hook's body and returns the context it contributes.
type call func(ctx context.Context, h Hook) (string, error)

func runAll(ctx context.Context, hooks []Hook, fn call) ([]eventlog.HookOutcome, string) {
	outcomes := make([]eventlog.HookOutcome, len(hooks))
	texts := make([]string, len(hooks))
	var wg sync.WaitGroup
	for i, h := range hooks {
		wg.Go(func() { outcomes[i], texts[i] = runOne(ctx, h, fn) })
	}
	wg.Wait()
	var parts []string
	for _, t := range texts {
		if t != "" {
			parts = append(parts, t)
		}
	}
	return outcomes, strings.Join(parts, "\n")
}

type callResult struct {
	text     string
	err      error
	panicked any
}

// runOne runs h under its timeout, recovering a panic. It returns as soon
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
		text, err := fn(hctx, h)
		done <- callResult{text: text, err: err}
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
			o.Status, text = eventlog.HookOK, r.text
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
