package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/jsonview"
)

// startOptions are the options of start and resume.
type startOptions struct {
	cmdIO
	restoreOptions
	session string // SESSION
	prompt  string // --prompt, start only: the session's first prompt
	resume  bool   // --resume, start only: source "resume" instead of "startup"
}

// newStartCmd returns the start command: the startup restore.
func newStartCmd(a *app, runF func(context.Context, *startOptions) error) *cobra.Command {
	var o startOptions
	cmd := &cobra.Command{
		Use:   "start --agent NAME [--prompt TEXT] [--resume] SESSION",
		Short: "Run the startup restore of a session and print its hook context",
		Long: `start is the startup restore: the agent NAME makes SESSION its current
session and runs the SessionStart hooks with source "startup", without any
SessionEnd hook. Their context is injected into the session as a
<system-reminder> meta message and printed, so that a host can hand it to
the model. When the hooks give no context, nothing is printed on standard
output and standard error says so. A hook that fails is warned about on
standard error, once. Use it when an
agent host starts, also to resume the session it already had.

--resume says that the host reopens a stored session as it starts, as
Claude Code's --resume and --continue do: the SessionStart hooks get source
"resume" instead of "startup". Still no SessionEnd hook runs.

--prompt gives the session's first prompt: it is recorded with the restore
and Go function hooks receive it as initialPrompt. It is information for
SessionStart only; no UserPromptSubmit hook runs and it is not appended
(use reprise prompt for that).

Each step is recorded in the log before the next one begins. Hooks that fail,
time out or crash are warned about on standard error and recorded; they
never stop the restore.

` + hookSourcesHelp,
		Example: `  reprise start --agent ide "$id"
  reprise start --agent ide --settings ./ci-hooks.json --no-default-settings "$id"
  reprise start --agent ide --json "$id" | jq .session_start.hooks
  reprise start --agent ide --prompt "Fix the flaky refund test" "$id"
  reprise start --agent ide --resume "$id"`,
		Args: positional("SESSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.session = args[0]
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runStart(cmd.Context(), &o)
		},
	}
	o.register(cmd)
	cmd.Flags().StringVar(&o.prompt, "prompt", "", "the session's first prompt `TEXT`, for SessionStart hooks (initialPrompt)")
	cmd.Flags().BoolVar(&o.resume, "resume", false, `the host reopens a stored session: SessionStart gets source "resume"`)
	return cmd
}

// runStart runs the startup restore of o.session and prints its context.
func runStart(ctx context.Context, o *startOptions) error {
	o.hooksReported = o.json // in the JSON; the text is the context alone
	o.newAgent = true        // start may give the log a new agent
	_, r, err := o.restore(ctx, &o.restoreOptions, &o.session, func(agent *reprise.Agent, ctx context.Context, id string) (*reprise.Transition, error) {
		opts := []reprise.ActionOption{reprise.WithInitialPrompt(o.prompt)}
		if o.resume {
			opts = append(opts, reprise.WithResume())
		}
		return agent.Start(ctx, id, opts...)
	}, o.stderr)
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(o.stdout, jsonview.NewRestore(o.agent, o.session, r))
	}
	if r == nil || r.Context == "" {
		// Standard output stays the context alone, for the host to hand
		// to the model; the person reading is told there is none.
		_, err = fmt.Fprintf(o.stderr, "reprise: no SessionStart hook gave context; nothing was injected into %s\n", o.session)
		return err
	}
	_, err = fmt.Fprintln(o.stdout, r.Context)
	return err
}

// newResumeCmd returns the resume command: the runtime restore.
func newResumeCmd(a *app, runF func(context.Context, *startOptions) error) *cobra.Command {
	var o startOptions
	cmd := &cobra.Command{
		Use:     "resume --agent NAME SESSION",
		Aliases: []string{"restore"},
		Short:   "Switch an agent to another session: the runtime restore",
		Long: `resume is the runtime restore: the agent NAME leaves its current session
for SESSION. It saves the current session, runs its SessionEnd hooks (reason
"resume"), loads SESSION, runs its SessionStart hooks (source "resume") and
injects their context as a <system-reminder> meta message. It prints what
happened: what was saved, each hook with its outcome, and the context.

Resuming the session the agent is already on does nothing and says so. A
SESSION that does not exist fails (exit 1) before anything is recorded or
run, and so does an agent without a current session: give it one with
reprise start first.

` + hookSourcesHelp,
		Example: `  reprise resume --agent ide "$other"
  reprise resume --agent ide --settings ~/hooks/context.json "$other"
  reprise resume --agent ide --json "$other" | jq -r .context`,
		Args: positional("SESSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.session = args[0]
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runResume(cmd.Context(), &o)
		},
	}
	o.register(cmd)
	return cmd
}

// runResume runs the runtime restore to o.session and prints what happened.
func runResume(ctx context.Context, o *startOptions) error {
	o.hooksReported = true // in the report
	from, r, err := o.restore(ctx, &o.restoreOptions, &o.session, (*reprise.Agent).Restore, o.stderr)
	if err != nil {
		return err
	}
	switch {
	case o.json:
		return printJSON(o.stdout, jsonview.NewRestore(o.agent, o.session, r))
	case r == nil:
		fmt.Fprintf(o.stdout, "agent %s is already on session %s; nothing to do\n", o.agent, from)
	default:
		printRestore(o.stdout, o.agent, r)
	}
	return nil
}
