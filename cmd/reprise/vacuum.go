package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// vacuumOptions are the options of vacuum: none of its own.
type vacuumOptions struct{ cmdIO }

// newVacuumCmd returns the vacuum command: remove deleted sessions for good.
func newVacuumCmd(a *app, runF func(context.Context, *vacuumOptions) error) *cobra.Command {
	var o vacuumOptions
	return &cobra.Command{
		Use:   "vacuum",
		Short: "Remove deleted sessions' data for good",
		Long: `vacuum removes what reprise rm left of deleted sessions: every event of
their streams but the tombstone (which keeps the id from being used
again); the copies of their text in agents' events (hook output and
context, prompts, summaries, reasons), which are blanked while the events
stay, so the agents' restores still audit; and their transcript, env and
spilled-output files. It also blanks the text of prompts that hooks
blocked, which stores written by older versions kept in the agent's log,
leaving each prompt's SHA-256 and length; their sessions stay. It records what it removed in the log, so that
reprise audit accepts the gaps, and then compacts a bbolt file, so the
bytes are gone from it. On PostgreSQL the rows are deleted; see
docs/postgres.md for what the server keeps.

vacuum writes: it waits for the store like any command that writes.`,
		Example: `  reprise vacuum
  reprise rm "$id" && reprise vacuum --json`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runVacuum(cmd.Context(), &o)
		},
	}
}

// runVacuum vacuums the store and says what went.
func runVacuum(ctx context.Context, o *vacuumOptions) (err error) {
	e, err := o.openWritable(ctx, o.stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	rep, err := e.Vacuum(ctx)
	if err != nil {
		return err
	}
	if path, perr := o.storePath(); perr == nil {
		if uerr := o.updateIndex(ctx, path, e.Store()); uerr != nil {
			warn(o.stderr, "%v", uerr)
		}
	}
	if o.json {
		if rep.Sessions == nil {
			rep.Sessions = []string{}
		}
		return printJSON(o.stdout, struct {
			Sessions  []string `json:"sessions"`
			Events    int      `json:"events"`
			Rewritten int      `json:"rewritten"`
			Files     int      `json:"files"`
		}{rep.Sessions, rep.Events, rep.Rewritten, rep.Files})
	}
	_, err = fmt.Fprintf(o.stdout, "removed %d event(s) of %d deleted session(s), blanked %d agent event(s), removed %d file(s)\n",
		rep.Events, len(rep.Sessions), rep.Rewritten, rep.Files)
	return err
}
