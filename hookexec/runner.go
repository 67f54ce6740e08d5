package hookexec

import (
	"context"
	"log/slog"

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
	Stop(ctx context.Context, hooks []Hook, in StopInput, env CommandEnv) (outcomes []schema.HookOutcome, blocked bool, reason, feedback string)
	Prompt(ctx context.Context, hooks []Hook, in PromptInput, env CommandEnv) (outcomes []schema.HookOutcome, blocked bool, reason, feedback string)
	PreCompact(ctx context.Context, hooks []Hook, in PreCompactInput, env CommandEnv) (outcomes []schema.HookOutcome, blocked bool, reason, instructions string)
}

// Exec runs hooks for real: command hooks as processes in their own process
// groups, function hooks on goroutines, all in parallel, under their
// timeouts.
type Exec struct {
	// Supervisor is NoSupervisor to run command hooks bare; by default
	// ("") the process's supervisor holds each hook's process group and
	// kills it when this process dies, even by SIGKILL, so a hook and
	// what it started die with the host. The supervisor is one /bin/sh
	// for the whole process, started with its first hook; exit codes,
	// output, timeouts, cancellation, $$ and $PPID are the same either
	// way. A hook's children that outlive the hook itself, or that leave
	// its process group, are left alone either way. Any value but
	// NoSupervisor means the default (docs/hooks.md says what the
	// supervisor's gate shows of itself).
	Supervisor string
	// InheritEnv, when not nil, names the only variables of this
	// process's environment that command hooks inherit, such as PATH,
	// HOME and LANG; a name missing from the environment is skipped. Nil
	// means the whole environment, as Claude Code passes it, secrets
	// included. Either way hooks get the variables of the hook protocol
	// (CLAUDE_PROJECT_DIR, CLAUDE_ENV_FILE, CLAUDE_PLUGIN_ROOT) and
	// CommandEnv.Extra.
	InheritEnv []string
	// Logger receives the warnings of hook runs, such as a hook's "if"
	// that cannot be evaluated for a call; nil means slog.Default().
	Logger *slog.Logger
	// Evaluator answers prompt hooks with one model request, and
	// AgentEvaluator agent hooks with a bounded run of a model that may
	// read the session's directory. Nil makes each such hook fail, as a
	// hook whose model cannot be reached fails: it blocks nothing, and
	// its outcome says why.
	Evaluator, AgentEvaluator Evaluator
	// MCP calls the tools of mcp_tool hooks; nil fails each one as a
	// hook whose MCP server is not connected.
	MCP MCPCaller
}

var _ Runner = Exec{}

// env is env with x's supervisor and inherited variables.
func (x Exec) env(env CommandEnv) CommandEnv {
	env.supervisor = x.Supervisor
	env.inherit = x.InheritEnv
	env.log = x.Logger
	env.evaluator, env.agentEvaluator, env.mcp = x.Evaluator, x.AgentEvaluator, x.MCP
	return env
}

// SessionStart is RunSessionStart.
func (x Exec) SessionStart(ctx context.Context, hooks []Hook, in SessionStartInput, env CommandEnv) ([]schema.HookOutcome, string) {
	return RunSessionStart(ctx, hooks, in, x.env(env))
}

// SessionEnd is RunSessionEnd.
func (x Exec) SessionEnd(ctx context.Context, hooks []Hook, in SessionEndInput, env CommandEnv) []schema.HookOutcome {
	return RunSessionEnd(ctx, hooks, in, x.env(env))
}

// Prompt is RunPrompt.
func (x Exec) Prompt(ctx context.Context, hooks []Hook, in PromptInput, env CommandEnv) ([]schema.HookOutcome, bool, string, string) {
	return RunPrompt(ctx, hooks, in, x.env(env))
}

// PreCompact is RunPreCompact.
func (x Exec) PreCompact(ctx context.Context, hooks []Hook, in PreCompactInput, env CommandEnv) ([]schema.HookOutcome, bool, string, string) {
	return RunPreCompact(ctx, hooks, in, x.env(env))
}

// Stop is RunStop.
func (x Exec) Stop(ctx context.Context, hooks []Hook, in StopInput, env CommandEnv) ([]schema.HookOutcome, bool, string, string) {
	return RunStop(ctx, hooks, in, x.env(env))
}
