package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/projection"
)

// agentStep is one lifecycle call on an agent: clear, compact, fork, end.
type agentStep func(ctx context.Context, agent *reprise.Agent) (*reprise.Restore, error)

// runAgent opens the store for writing, loads the hooks of project
// directory dir (when empty, the directory of session projectOf, or of the
// agent's current session when that is empty too), gets the agent and runs
// step on it.
func (a *app) runAgent(cmd *cobra.Command, f *restoreFlags, projectOf, dir string, step agentStep) (r *reprise.Restore, err error) {
	if f.agent == "" {
		return nil, usagef("missing --agent")
	}
	if err := validID("--agent", f.agent); err != nil {
		return nil, err
	}
	ctx := cmd.Context()
	e, err := a.openWritable(cmd.Context(), cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	defer closeEngine(e, &err)
	if projectOf == "" && dir == "" {
		if projectOf, err = currentSession(ctx, e, f.agent); err != nil {
			return nil, err
		}
	}
	if dir == "" {
		if dir, _, err = projectDir(ctx, e, projectOf); err != nil {
			return nil, err
		}
	}
	f.hooks.load(e, dir, cmd.ErrOrStderr())
	agent, err := e.Agent(ctx, f.agent)
	if err != nil {
		return nil, err
	}
	return step(ctx, agent)
}

// currentSession reads agent's current session from the log, before the
// Engine opens the agent, so that its hooks can be loaded first.
func currentSession(ctx context.Context, e *reprise.Engine, agent string) (string, error) {
	view := projection.NewAgent(agent)
	if err := e.Store().ReadStream(ctx, projection.AgentStream(agent), 1, view.Apply); err != nil {
		return "", err
	}
	return view.Current, nil
}

// report prints r, or its JSON when --json is set.
func (a *app) report(w io.Writer, agent string, r *reprise.Restore) error {
	if a.json {
		return printJSON(w, newRestoreJSON(agent, r.To, r))
	}
	printRestore(w, agent, r)
	return nil
}

func newClearCmd(a *app) *cobra.Command {
	var f restoreFlags
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
			r, err := a.runAgent(cmd, &f, "", "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Restore, error) {
				return agent.Clear(ctx)
			})
			if err != nil {
				return err
			}
			return a.report(cmd.OutOrStdout(), f.agent, r)
		},
	}
	f.register(cmd)
	return cmd
}

func newCompactCmd(a *app) *cobra.Command {
	var f restoreFlags
	cmd := &cobra.Command{
		Use:   "compact --agent NAME SUMMARY",
		Short: "Replace the agent's conversation so far by a summary",
		Long: `compact records a compaction of the agent's current session: a boundary and
SUMMARY (a meta user message) are appended, the conversation the model sees
starts at the summary, and every earlier message stays in the log (reprise
replay --format claude shows the boundary as Claude Code does). The
SessionStart hooks then run with source "compact" and their context is
injected after the summary. SUMMARY "-" reads it from standard input.

` + hookSourcesHelp,
		Example: `  reprise compact --agent ide "We fixed the refund race; the ledger now locks."`,
		Args:    positional("SUMMARY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			summary := args[0]
			if summary == "-" {
				data, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("read summary: %w", err)
				}
				summary = strings.TrimSpace(string(data))
			}
			r, err := a.runAgent(cmd, &f, "", "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Restore, error) {
				return agent.Compact(ctx, summary)
			})
			if err != nil {
				return err
			}
			return a.report(cmd.OutOrStdout(), f.agent, r)
		},
	}
	f.register(cmd)
	return cmd
}

func newForkCmd(a *app) *cobra.Command {
	var f restoreFlags
	var at string
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
			if err := validID("session", args[0]); err != nil {
				return err
			}
			r, err := a.runAgent(cmd, &f, args[0], "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Restore, error) {
				return agent.Fork(ctx, args[0], at)
			})
			if err != nil {
				return err
			}
			return a.report(cmd.OutOrStdout(), f.agent, r)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&at, "at", "", "the uuid of the last `MESSAGE` to copy (default the last one)")
	return cmd
}

func newEndCmd(a *app) *cobra.Command {
	var f restoreFlags
	var reason string
	var opts reprise.EndOptions
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
			if reason == "" {
				return usagef("missing --reason")
			}
			r, err := a.runAgent(cmd, &f, "", "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Restore, error) {
				return agent.End(ctx, reprise.Reason(reason), opts)
			})
			if err != nil {
				return err
			}
			return a.report(cmd.OutOrStdout(), f.agent, r)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why the session ends (`REASON`)")
	cmd.Flags().StringVar(&opts.FinalMessage, "final-message", "", "the agent's last `MESSAGE`, for function hooks")
	cmd.Flags().StringVar(&opts.Error, "error", "", "the `ERROR` that ended the session, for function hooks")
	return cmd
}

func newStopCmd(a *app) *cobra.Command {
	var f restoreFlags
	cmd := &cobra.Command{
		Use:   "stop --agent NAME",
		Short: "Run the Stop hooks at the end of the agent's turn",
		Long: `stop runs the Stop hooks of the agent's current session, as when the agent
has finished a turn. A hook that answers {"decision": "block", "reason": ...}
(or exits 2 with the reason on standard error) asks the agent to continue:
the reason is queued as the next user message and printed, and the next stop
tells the hooks stop_hook_active. After 8 consecutive blocks the hooks are
not asked and the stop is recorded as capped. Exit code 0 either way.

` + hookSourcesHelp,
		Example: `  reprise stop --agent ide`,
		Args:    positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res *reprise.StopResult
			_, err := a.runAgent(cmd, &f, "", "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Restore, error) {
				var err error
				res, err = agent.Stop(ctx)
				return nil, err
			})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if a.json {
				return printJSON(w, struct {
					Blocked bool          `json:"blocked"`
					Capped  bool          `json:"capped"`
					Reason  string        `json:"reason,omitempty"`
					Hooks   []outcomeJSON `json:"hooks"`
				}{res.Blocked, res.Capped, res.Reason, newOutcomesJSON(res.Outcomes)})
			}
			switch {
			case res.Capped:
				fmt.Fprintf(w, "hooks not asked: %s\n", res.Reason)
			case res.Blocked:
				fmt.Fprintf(w, "blocked: %s\n", res.Reason)
			default:
				fmt.Fprintln(w, "the agent may stop")
			}
			printOutcomes(w, res.Outcomes, false)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}
