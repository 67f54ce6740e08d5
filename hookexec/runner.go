package hookexec

import (
	"context"

	"github.com/reprise-dev/reprise/schema"
)

// Runner runs hooks that matched an event. Exec is the real one; an Engine
// takes another for tests. Every Runner keeps this contract:
//
//   - it returns one outcome per hook, in the hooks' order, each named by
//     its hook and carrying its Source;
//   - SessionStart's context joins, with newlines and in the hooks' order,
//     the non-empty context of the hooks that succeeded;
//   - Stop, UserPromptSubmit and PreCompact block when any hook blocked,
//     and the reason joins theirs; a UserPromptSubmit's context joins that
//     of the hooks that succeeded without blocking;
//   - a hook that fails, panics, hangs or is cancelled is an outcome, never
//     an error or a panic of the call;
//   - it returns once every hook has an outcome; no hook is run twice.
type Runner interface {
	SessionStart(ctx context.Context, hooks []Hook, in SessionStartInput, env CommandEnv) ([]schema.HookOutcome, string)
	SessionEnd(ctx context.Context, hooks []Hook, in SessionEndInput, env CommandEnv) []schema.HookOutcome
	Stop(ctx context.Context, hooks []Hook, in StopInput, env CommandEnv) (outcomes []schema.HookOutcome, blocked bool, reason string)
	Prompt(ctx context.Context, hooks []Hook, in PromptInput, env CommandEnv) (outcomes []schema.HookOutcome, blocked bool, reason, context string)
	PreCompact(ctx context.Context, hooks []Hook, in PreCompactInput, env CommandEnv) (outcomes []schema.HookOutcome, blocked bool, reason string)
}

// Exec runs hooks for real: command hooks as processes in their own process
// groups, function hooks on goroutines, all in parallel, under their
// timeouts.
type Exec struct{}

var _ Runner = Exec{}

// SessionStart is RunSessionStart.
func (Exec) SessionStart(ctx context.Context, hooks []Hook, in SessionStartInput, env CommandEnv) ([]schema.HookOutcome, string) {
	return RunSessionStart(ctx, hooks, in, env)
}

// SessionEnd is RunSessionEnd.
func (Exec) SessionEnd(ctx context.Context, hooks []Hook, in SessionEndInput, env CommandEnv) []schema.HookOutcome {
	return RunSessionEnd(ctx, hooks, in, env)
}

// Prompt is RunPrompt.
func (Exec) Prompt(ctx context.Context, hooks []Hook, in PromptInput, env CommandEnv) ([]schema.HookOutcome, bool, string, string) {
	return RunPrompt(ctx, hooks, in, env)
}

// PreCompact is RunPreCompact.
func (Exec) PreCompact(ctx context.Context, hooks []Hook, in PreCompactInput, env CommandEnv) ([]schema.HookOutcome, bool, string) {
	return RunPreCompact(ctx, hooks, in, env)
}

// Stop is RunStop.
func (Exec) Stop(ctx context.Context, hooks []Hook, in StopInput, env CommandEnv) ([]schema.HookOutcome, bool, string) {
	return RunStop(ctx, hooks, in, env)
}
