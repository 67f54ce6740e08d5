package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
)

// newNewCmd returns the new command: create a session.
func newNewCmd(a *app) *cobra.Command {
	var id, cwd string
	var f restoreFlags
	cmd := &cobra.Command{
		Use:   "new [--id ID] [--cwd DIR]",
		Short: "Create a session and print its id",
		Long: `new creates an empty session and prints its id: a random UUID unless --id
gives one. Ids hold letters, digits, '-', '_', '.' and ':', start with a
letter or digit, have at most 128 characters and never contain "..".

--cwd is the session's working directory, where its hooks run and where
its project settings are looked for; it defaults to the current directory.

With --agent, the new session also becomes that agent's current session:
a current session is saved and ended with reason "clear", and the new one's
SessionStart hooks run with source "new". What happened is printed after
the id.

` + hookSourcesHelp,
		Example: `  reprise new
  reprise new --id bugfix-42 --cwd ~/src/payments
  id=$(reprise new) && reprise append "$id" --role user "hello"
  reprise new --agent ide --cwd ~/src/payments`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if cmd.Flags().Changed("id") {
				if err := validID("--id", id); err != nil {
					return err
				}
			}
			if cwd == "" {
				if cwd, err = os.Getwd(); err != nil {
					return fmt.Errorf("current directory: %w", err)
				}
			}
			if cwd, err = filepath.Abs(cwd); err != nil {
				return fmt.Errorf("--cwd: %w", err)
			}
			if f.agent != "" || cmd.Flags().Changed("agent") {
				r, err := a.runAgent(cmd, &f, "", cwd, func(ctx context.Context, agent *reprise.Agent) (*reprise.Restore, error) {
					return agent.New(ctx, id, cwd)
				})
				if err != nil {
					return err
				}
				if !a.json {
					fmt.Fprintln(cmd.OutOrStdout(), r.To)
				}
				return a.report(cmd.OutOrStdout(), f.agent, r)
			}
			e, err := a.openWritable(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeEngine(e, &err)
			id, err := e.CreateSession(cmd.Context(), id, cwd)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), struct {
					Session string `json:"session"`
					Cwd     string `json:"cwd"`
				}{id, cwd})
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), id)
			return err
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "the session's `ID` (default a new UUID)")
	cmd.Flags().StringVar(&cwd, "cwd", "", "the session's working `DIR` (default the current directory)")
	f.register(cmd)
	return cmd
}
