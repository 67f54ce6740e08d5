package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"text/tabwriter"

	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/spf13/cobra"
)

// sessionJSON is one session in the JSON output of sessions.
type sessionJSON = jsonview.Session

// sessionsOptions are the options of sessions: none of its own.
type sessionsOptions struct{ cmdIO }

// newSessionsCmd returns the sessions command: list the sessions.
func newSessionsCmd(a *app, runF func(context.Context, *sessionsOptions) error) *cobra.Command {
	var o sessionsOptions
	return &cobra.Command{
		Use:   "sessions",
		Short: "List the sessions of the store",
		Long: `sessions lists every session, oldest first, with its working directory
(for an imported session whose transcript named another, that one too, in
parentheses: hooks never run there), its number of messages, when it was created and when an agent last restored
it. A session whose import started and did not finish is marked
"(import unfinished)": it holds only the first part of its transcript
(see reprise import --resume). A session holding events written by a
newer reprise is marked "(newer events)": this build lists it but cannot
read those events, and shows what it can. It reads the session index the
store keeps (one row per session, written with the events), read-only. With
--json it prints one JSON array.
Where there is no store yet, the list is empty.`,
		Example: `  reprise sessions
  reprise sessions --json | jq -r '.[] | select(.messages > 0) | .id'`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runSessions(cmd.Context(), &o)
		},
	}
}

// runSessions lists the sessions of the store.
func runSessions(ctx context.Context, o *sessionsOptions) (err error) {
	var sessions []projection.SessionInfo
	e, err := o.openReadOnly(ctx, o.stderr)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, pgstore.ErrFormat):
		// No store yet, as on a fresh machine: no sessions either.
	case err != nil:
		return err
	default:
		defer closeEngine(e, &err)
		if sessions, err = e.Sessions(ctx); err != nil {
			return err
		}
	}
	if o.json {
		out := make([]sessionJSON, len(sessions))
		for i, s := range sessions {
			out[i] = jsonview.NewSession(s)
		}
		return printJSON(o.stdout, out)
	}
	tw := tabwriter.NewWriter(o.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCWD\tMESSAGES\tCREATED\tLAST RESTORED")
	for _, s := range sessions {
		id, cwd := s.ID, s.Cwd
		if s.Importing {
			id += " (import unfinished)"
		}
		if s.Newer {
			id += " (newer events)"
		}
		if s.ImportedCwd != "" && s.ImportedCwd != s.Cwd {
			cwd += " (transcript: " + s.ImportedCwd + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", id, cwd, s.Messages, shortTime(s.Created), shortTime(s.LastRestored))
	}
	return tw.Flush()
}
