package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
)

// newOptions are the options of new.
type newOptions struct {
	cmdIO
	restoreOptions
	id       string // --id, "" for a new UUID
	idSet    bool   // --id was given, even empty
	cwd      string // --cwd, "" for the current directory
	agentSet bool   // --agent was given, even empty
	prompt   string // --prompt, with --agent: the session's first prompt
}

// newNewCmd returns the new command: create a session.
func newNewCmd(a *app, runF func(context.Context, *newOptions) error) *cobra.Command {
	var o newOptions
	cmd := &cobra.Command{
		Use:   "new [--id ID] [--cwd DIR] [--agent NAME [--prompt TEXT]]",
		Short: "Create a session and print its id",
		Long: `new creates an empty session and prints its id: a random UUID unless --id
gives one. Ids hold letters, digits, '-', '_', '.' and ':', start with a
letter or digit, have at most 128 characters and never contain "..".

--cwd is the session's working directory, where its hooks run and where
its project settings are looked for; it defaults to the current directory.

With --agent, the new session also becomes that agent's current session:
a current session is saved and ended with reason "clear", and the new one's
SessionStart hooks run with source "new" (command hooks see "startup", as
Claude Code has no "new"). What happened is printed after the id. --prompt,
only with --agent, gives the session's first prompt, which is recorded and
passed to Go function hooks as initialPrompt.

` + hookSourcesHelp,
		Example: `  reprise new
  reprise new --id bugfix-42 --cwd ~/src/payments
  id=$(reprise new) && reprise append "$id" --role user "hello"
  reprise new --agent ide --cwd ~/src/payments
  reprise new --agent ide --prompt "Add retries to the payment client"`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.idSet = cmd.Flags().Changed("id")
			o.agentSet = cmd.Flags().Changed("agent")
			if cmd.Flags().Changed("prompt") && !o.agentSet {
				return usagef("--prompt needs --agent: it is given to the agent's SessionStart hooks")
			}
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runNew(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.id, "id", "", "the session's `ID` (default a new UUID)")
	cmd.Flags().StringVar(&o.cwd, "cwd", "", "the session's working `DIR` (default the current directory)")
	cmd.Flags().StringVar(&o.prompt, "prompt", "", "with --agent, the session's first prompt `TEXT`, for SessionStart hooks (initialPrompt)")
	o.register(cmd)
	return cmd
}

// runNew creates a session and prints its id; with an agent, it also makes
// the session the agent's current one and prints what happened.
func runNew(ctx context.Context, o *newOptions) (err error) {
	if o.idSet {
		if err := validID("--id", o.id); err != nil {
			return err
		}
	}
	cwd := o.cwd
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return fmt.Errorf("current directory: %w", err)
		}
	}
	if cwd, err = filepath.Abs(cwd); err != nil {
		return fmt.Errorf("--cwd: %w", err)
	}
	if o.agent != "" || o.agentSet {
		o.newAgent = true
		r, err := o.runAgent(ctx, &o.restoreOptions, nil, cwd, func(ctx context.Context, agent *reprise.Agent) (*reprise.Transition, error) {
			return agent.New(ctx, o.id, cwd, reprise.WithInitialPrompt(o.prompt))
		}, o.stderr)
		if err != nil {
			return err
		}
		if !o.json {
			fmt.Fprintln(o.stdout, r.To)
		}
		return o.report(o.stdout, o.agent, r)
	}
	e, err := o.openWritable(ctx, o.stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	id, err := e.CreateSession(ctx, o.id, cwd)
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(o.stdout, struct {
			Session string `json:"session"`
			Cwd     string `json:"cwd"`
		}{id, cwd})
	}
	_, err = fmt.Fprintln(o.stdout, id)
	return err
}
