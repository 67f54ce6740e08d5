package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
)

// agentStep is one lifecycle call on an agent: clear, compact, fork, end.
type agentStep func(ctx context.Context, agent *reprise.Agent) (*reprise.Transition, error)

// runAgent opens the agent as openAgent does and runs step on it.
func (a *app) runAgent(ctx context.Context, f *restoreOptions, projectOf *string, dir string, step agentStep, stderr io.Writer) (r *reprise.Transition, err error) {
	e, _, err := a.openAgent(ctx, f, projectOf, dir, stderr)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			closeEngine(e, &err)
			return
		}
		// Closed once the command has printed its answer: Close waits
		// for the async hooks the step started.
		a.later = append(a.later, e.Close)
	}()
	defer func() { err = explainInterrupt(e, f.agent, err) }()
	agent, err := e.Agent(ctx, f.agent)
	if err != nil {
		return nil, err
	}
	r, err = step(ctx, agent)
	return r, explainNoSession(err, f.agent)
}

// openAgent opens the store for writing, with each session's own
// project's hooks (openHooked), makes f.agent and *projectOf, when given,
// the whole ids they are prefixes of (restoreOptions.resolve), and checks
// that the session the command works in can be used: dir's, or when dir
// is empty session *projectOf's, or the agent's current session's when
// that is nil or empty too. It returns the Engine, which the caller
// closes, and the agent as the log holds it, before Engine.Agent rolls
// forward a step in flight.
func (a *app) openAgent(ctx context.Context, f *restoreOptions, projectOf *string, dir string, stderr io.Writer) (e *reprise.Engine, before *projection.Agent, err error) {
	if f.agent == "" {
		return nil, nil, usagef("missing --agent")
	}
	if err := validID("--agent", f.agent); err != nil {
		return nil, nil, err
	}
	if err := f.hooks.check(); err != nil {
		return nil, nil, err
	}
	e, err = a.openHooked(ctx, f.hooks, stderr)
	if err != nil {
		return nil, nil, err
	}
	if err := f.resolve(ctx, e, projectOf); err != nil {
		return nil, nil, errors.Join(err, e.Close())
	}
	session := ""
	if projectOf != nil {
		session = *projectOf
	}
	if before, err = loadAgent(ctx, e, f, session, dir); err != nil {
		return nil, nil, errors.Join(err, e.Close())
	}
	return e, before, nil
}

// loadAgent reads the agent from the log of e and checks that the session
// whose directory the command works in, as openAgent describes, can be
// used.
func loadAgent(ctx context.Context, e *reprise.Engine, f *restoreOptions, projectOf, dir string) (*projection.Agent, error) {
	before := projection.NewAgent(f.agent)
	if err := e.Store().ReadStream(ctx, projection.AgentStream(f.agent), 1, before.Apply); err != nil {
		return nil, err
	}
	current := projectOf == ""
	if current {
		projectOf = before.Current
	}
	if dir == "" {
		if _, _, err := projectDir(ctx, e, projectOf); err != nil {
			if current && errors.Is(err, reprise.ErrSessionDeleted) {
				return nil, reprise.CurrentDeleted(f.agent, projectOf)
			}
			return nil, err
		}
	}
	return before, nil
}

// report prints r, or its JSON when --json is set.
func (a *app) report(w io.Writer, agent string, r *reprise.Transition) error {
	if a.json {
		return printJSON(w, jsonview.NewRestore(agent, r.To, r))
	}
	printRestore(w, agent, r)
	return nil
}

// clearOptions are the options of clear.
type clearOptions struct {
	cmdIO
	restoreOptions
}

func newClearCmd(a *app, runF func(context.Context, *clearOptions) error) *cobra.Command {
	var o clearOptions
	cmd := &cobra.Command{
		Use:   "clear --agent NAME",
		Short: "End the agent's session and start a fresh one, as /clear does",
		Long: `clear saves the agent's current session and runs its SessionEnd hooks with
reason "clear", then makes a new, empty session in the same working
directory current and runs its SessionStart hooks with source "clear".

` + hookSourcesHelp,
		Example: `  reprise clear --agent ide`,
		Args:    positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runClear(cmd.Context(), &o)
		},
	}
	o.register(cmd)
	return cmd
}

// runClear ends the agent's session and starts a fresh one.
func runClear(ctx context.Context, o *clearOptions) error {
	o.hooksReported = true // in the report
	r, err := o.runAgent(ctx, &o.restoreOptions, nil, "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Transition, error) {
		return agent.Clear(ctx)
	}, o.stderr)
	if err != nil {
		return err
	}
	return o.report(o.stdout, o.agent, r)
}

// compactOptions are the options of compact.
type compactOptions struct {
	cmdIO
	restoreOptions
	summary      string // SUMMARY, "-" for standard input
	trigger      string // --trigger: manual or auto
	instructions string // --instructions, for PreCompact hooks
}

func newCompactCmd(a *app, runF func(context.Context, *compactOptions) error) *cobra.Command {
	var o compactOptions
	cmd := &cobra.Command{
		Use:   "compact --agent NAME [--trigger manual|auto] [--instructions TEXT] SUMMARY",
		Short: "Replace the agent's conversation so far by a summary",
		Long: `compact records a compaction of the agent's current session: a boundary and
SUMMARY (a meta user message) are appended, the conversation the model sees
starts at the summary, and every earlier message stays in the log (reprise
replay --format claude shows the boundary as Claude Code does). The
SessionStart hooks then run with source "compact" and their context is
injected after the summary. SUMMARY "-" reads it from standard input.

PreCompact hooks run first, with --trigger (manual, the default, or auto;
their matchers match on it) and --instructions (custom_instructions). A
PreCompact hook that blocks (exit 2, or {"decision": "block"}) stops the
compaction: nothing is compacted, the block is recorded, and compact exits
1 naming the reason.

` + hookSourcesHelp,
		Example: `  reprise compact --agent ide "We fixed the refund race; the ledger now locks."
  reprise compact --agent ide --trigger auto --instructions "keep the decisions" - < summary.txt`,
		Args: positional("SUMMARY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.summary = args[0]
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runCompact(cmd.Context(), &o)
		},
	}
	o.register(cmd)
	cmd.Flags().StringVar(&o.trigger, "trigger", "manual", "what started the compaction, `manual` or auto, for PreCompact hooks")
	cmd.Flags().StringVar(&o.instructions, "instructions", "", "the user's custom instructions `TEXT`, for PreCompact hooks")
	return cmd
}

// runCompact replaces the agent's conversation so far by o.summary.
func runCompact(ctx context.Context, o *compactOptions) error {
	o.hooksReported = true // in the report
	if o.trigger != "manual" && o.trigger != "auto" {
		return usagef("--trigger must be manual or auto, not %q", o.trigger)
	}
	summary := o.summary
	if summary == "-" {
		data, err := io.ReadAll(o.stdin)
		if err != nil {
			return fmt.Errorf("read summary: %w", err)
		}
		summary = strings.TrimSpace(string(data))
	}
	r, err := o.runAgent(ctx, &o.restoreOptions, nil, "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Transition, error) {
		return agent.Compact(ctx, summary, reprise.WithTrigger(o.trigger), reprise.WithInstructions(o.instructions))
	}, o.stderr)
	if errors.Is(err, reprise.ErrCompactionBlocked) && r != nil {
		// The restore records the block: report it, then fail.
		if rerr := o.report(o.stdout, o.agent, r); rerr != nil {
			return rerr
		}
		return fmt.Errorf("compaction of %s not done: %w", r.To, err)
	}
	if err != nil {
		return err
	}
	return o.report(o.stdout, o.agent, r)
}

// forkOptions are the options of fork.
type forkOptions struct {
	cmdIO
	restoreOptions
	session string // SESSION, the one copied
	at      string // --at, "" for its last message
}

func newForkCmd(a *app, runF func(context.Context, *forkOptions) error) *cobra.Command {
	var o forkOptions
	cmd := &cobra.Command{
		Use:   "fork --agent NAME SESSION [--at MESSAGE]",
		Short: "Start a new session as a copy of another one and make it current",
		Long: `fork makes a new session whose conversation is a copy of SESSION's up to
and including the message --at (its whole conversation by default), makes
it the agent's current session and runs its SessionStart hooks with source
"fork". SESSION itself is not changed. A current session is left as by
resume: saved, and ended with reason "resume".

` + hookSourcesHelp,
		Example: `  reprise fork --agent ide "$id"
  reprise fork --agent ide "$id" --at 3ac9ad09-50c8-4441-a851-0230a890fe81`,
		Args: positional("SESSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.session = args[0]
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runFork(cmd.Context(), &o)
		},
	}
	o.register(cmd)
	cmd.Flags().StringVar(&o.at, "at", "", "the uuid of the last `MESSAGE` to copy (default the last one)")
	return cmd
}

// runFork makes a copy of o.session the agent's current session.
func runFork(ctx context.Context, o *forkOptions) error {
	o.hooksReported = true // in the report
	if err := validID("session", o.session); err != nil {
		return err
	}
	r, err := o.runAgent(ctx, &o.restoreOptions, &o.session, "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Transition, error) {
		return agent.Fork(ctx, o.session, o.at)
	}, o.stderr)
	if err != nil {
		return err
	}
	return o.report(o.stdout, o.agent, r)
}

// endOptions are the options of end.
type endOptions struct {
	cmdIO
	restoreOptions
	reason string // --reason
	end    reprise.EndOptions
}

func newEndCmd(a *app, runF func(context.Context, *endOptions) error) *cobra.Command {
	var o endOptions
	cmd := &cobra.Command{
		Use:   "end --agent NAME --reason REASON",
		Short: "End the agent's current session",
		Long: `end saves the agent's current session and runs its SessionEnd hooks with
REASON: complete, error, abort, timeout, user_exit, logout,
prompt_input_exit or other. The agent is then without a current session
until the next start or new. What hooks answer (a summary, cleanup actions)
is recorded with their outcomes.

` + hookSourcesHelp,
		Example: `  reprise end --agent ide --reason user_exit
  reprise end --agent ide --reason error --error "model overloaded"`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runEnd(cmd.Context(), &o)
		},
	}
	o.register(cmd)
	cmd.Flags().StringVar(&o.reason, "reason", "", "why the session ends, `REASON` (required)")
	cmd.Flags().StringVar(&o.end.FinalMessage, "final-message", "", "the agent's last `MESSAGE`, for function hooks")
	cmd.Flags().StringVar(&o.end.Error, "error", "", "the `ERROR` that ended the session, for function hooks")
	return cmd
}

// runEnd ends the agent's current session with o.reason.
func runEnd(ctx context.Context, o *endOptions) error {
	o.hooksReported = true // in the report
	if o.reason == "" {
		return usagef("missing --reason")
	}
	if !slices.Contains(endReasons, reprise.Reason(o.reason)) {
		return usagef("--reason must be one of %s, not %q", joinReasons(endReasons), o.reason)
	}
	r, err := o.runAgent(ctx, &o.restoreOptions, nil, "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Transition, error) {
		return agent.End(ctx, reprise.Reason(o.reason), o.end)
	}, o.stderr)
	if err != nil {
		return err
	}
	return o.report(o.stdout, o.agent, r)
}

// stopOptions are the options of stop.
type stopOptions struct {
	cmdIO
	restoreOptions
	reason string // --reason: why the turn ended, such as end_turn
}

func newStopCmd(a *app, runF func(context.Context, *stopOptions) error) *cobra.Command {
	var o stopOptions
	cmd := &cobra.Command{
		Use:   "stop --agent NAME [--reason REASON]",
		Short: "Run the Stop hooks at the end of the agent's turn",
		Long: `stop runs the Stop hooks of the agent's current session, as when the agent
has finished a turn. A hook that answers {"decision": "block", "reason": ...}
(or exits 2 with the reason on standard error) asks the agent to continue:
the reason is queued as the next user message and printed, and the next stop
tells the hooks stop_hook_active. After 8 consecutive blocks the hooks are
not asked and the stop is recorded as capped. Exit code 0 either way.

--reason says why the turn ended (for example end_turn); it is recorded and
Go function hooks receive it as stopReason.

` + hookSourcesHelp,
		Example: `  reprise stop --agent ide
  reprise stop --agent ide --reason end_turn`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runStop(cmd.Context(), &o)
		},
	}
	o.register(cmd)
	cmd.Flags().StringVar(&o.reason, "reason", "", "why the turn ended, such as `end_turn`, for Stop hooks (stopReason)")
	return cmd
}

// runStop runs the Stop hooks of the agent's current session and prints
// whether they let it stop.
func runStop(ctx context.Context, o *stopOptions) error {
	o.hooksReported = true // in the report
	var res *reprise.StopResult
	_, err := o.runAgent(ctx, &o.restoreOptions, nil, "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Transition, error) {
		var err error
		res, err = agent.Stop(ctx, reprise.WithStopReason(o.reason))
		return nil, err
	}, o.stderr)
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(o.stdout, jsonview.NewStop(res, o.reason))
	}
	fmt.Fprintf(o.stdout, "Stop hooks of agent %s:\n", o.agent)
	printOutcomes(o.stdout, res.Outcomes, false)
	switch {
	case res.Capped:
		fmt.Fprintf(o.stdout, "hooks not asked: %s\n", res.Reason)
	case res.Blocked:
		fmt.Fprintf(o.stdout, "blocked: %s\n", res.Reason)
	default:
		fmt.Fprintln(o.stdout, "the agent may stop")
	}
	return nil
}

// endReasons are the reasons reprise end takes.
var endReasons = []reprise.Reason{reprise.ReasonComplete, reprise.ReasonError, reprise.ReasonAbort, reprise.ReasonTimeout,
	reprise.ReasonUserExit, reprise.ReasonLogout, reprise.ReasonPromptInputExit, reprise.ReasonOther}

func joinReasons(reasons []reprise.Reason) string {
	words := make([]string, len(reasons))
	for i, r := range reasons {
		words[i] = string(r)
	}
	return strings.Join(words, ", ")
}
