package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/spf13/cobra"
)

// sessionJSON is one session in the JSON output of sessions.
type sessionJSON = jsonview.Session

// sessionsOptions are the options of sessions: its filters.
type sessionsOptions struct {
	cmdIO
	cwd   string // --cwd: only sessions in this directory or below it
	agent string // --agent: only sessions this agent has had
	since string // --since: only sessions active at or after this time
	until string // --until: only sessions created at or before this time
}

// newSessionsCmd returns the sessions command: list the sessions.
func newSessionsCmd(a *app, runF func(context.Context, *sessionsOptions) error) *cobra.Command {
	var o sessionsOptions
	cmd := &cobra.Command{
		Use:   "sessions [--cwd DIR] [--agent NAME] [--since TIME] [--until TIME]",
		Short: "List the sessions of the store",
		Long: `sessions lists every session, oldest first, with its working directory
(for an imported session whose transcript named another, that one too, in
parentheses: hooks never run there), its number of messages, when it was
created, when an agent last restored it, and its title: the last one a
SessionStart or UserPromptSubmit hook gave (sessionTitle), else the
summary an imported Claude Code transcript carries, else the first line of
its first prompt. A session whose import started and did not finish is marked
"(import unfinished)": it holds only the first part of its transcript
(see reprise import --resume). A session holding events written by a
newer reprise is marked "(newer events)": this build lists it but cannot
read those events, and shows what it can.

The filters keep the sessions that match all of those given: --cwd DIR,
those whose working directory is DIR or below it; --agent NAME, those the
agent has had as its current session; --since and --until, those active
in that window: last used at or after --since, created at or before
--until. A TIME is an RFC 3339 time (2026-11-20T10:00:00Z), a date
(2026-11-20, midnight UTC), or a duration before now (90m, 36h, 7d).

It reads the session index the store keeps (one row per session, written
with the events), read-only, and for --agent that agent's events. With
--json it prints one JSON array. Where there is no store yet, the list is
empty.`,
		Example: `  reprise sessions
  reprise sessions --cwd ~/src/app --since 7d
  reprise sessions --agent ide --json | jq -r '.[] | select(.messages > 0) | .id'`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runSessions(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.cwd, "cwd", "", "only sessions whose working directory is `DIR` or below it")
	cmd.Flags().StringVar(&o.agent, "agent", "", "only sessions the agent `NAME` has had")
	cmd.Flags().StringVar(&o.since, "since", "", "only sessions used at or after `TIME`: RFC 3339, a date, or a duration ago such as 7d")
	cmd.Flags().StringVar(&o.until, "until", "", "only sessions created at or before `TIME`")
	return cmd
}

// sessionFilter is what the flags of sessions keep.
type sessionFilter struct {
	cwd          string          // "" for any
	agent        map[string]bool // nil for any
	since, until int64           // UTC unix nanoseconds; 0 for no bound
}

// keeps reports whether f keeps s.
func (f sessionFilter) keeps(s projection.SessionInfo) bool {
	switch {
	case f.cwd != "" && s.Cwd != f.cwd && !strings.HasPrefix(s.Cwd, strings.TrimSuffix(f.cwd, string(filepath.Separator))+string(filepath.Separator)):
		return false
	case f.agent != nil && !f.agent[s.ID]:
		return false
	case f.since != 0 && s.LastActivity < f.since:
		return false
	case f.until != 0 && s.Created > f.until:
		return false
	}
	return true
}

// filter returns the filter o's flags give, with now as the present; it
// checks the flags that need no store.
func (o *sessionsOptions) filter(now time.Time) (f sessionFilter, err error) {
	if o.cwd != "" {
		if f.cwd, err = filepath.Abs(o.cwd); err != nil {
			return f, fmt.Errorf("--cwd: %w", err)
		}
	}
	if o.agent != "" {
		if err := validID("--agent", o.agent); err != nil {
			return f, err
		}
	}
	if f.since, err = parseWhen("--since", o.since, now); err != nil {
		return f, err
	}
	f.until, err = parseWhen("--until", o.until, now)
	return f, err
}

// parseWhen reads the TIME of flag: an RFC 3339 time, a date (midnight
// UTC), or a duration before now, in Go's units or whole days ("7d"). An
// empty value is 0, no bound.
func parseWhen(flag, v string, now time.Time) (int64, error) {
	if v == "" {
		return 0, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UnixNano(), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t.UnixNano(), nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n).UnixNano(), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d).UnixNano(), nil
	}
	return 0, usagef("%s %q: give an RFC 3339 time (2026-11-20T10:00:00Z), a date (2026-11-20) or a duration ago (90m, 36h, 7d)", flag, v)
}

// agentSessions returns the sessions agent, a whole id or a unique
// prefix, has had as its current session.
func agentSessions(ctx context.Context, store eventlog.Store, agent string) (map[string]bool, error) {
	id, err := resolveID(ctx, store, "agent", agent)
	if err != nil {
		return nil, err
	}
	a := projection.NewAgent(id)
	if err := store.ReadStream(ctx, projection.AgentStream(id), 1, a.Apply); err != nil {
		return nil, err
	}
	if a.Head == 0 {
		return nil, fmt.Errorf("agent %s has no events", agent)
	}
	had := map[string]bool{}
	for _, r := range a.History {
		had[r.From], had[r.To] = true, true
	}
	if a.Restore != nil {
		had[a.Restore.From], had[a.Restore.To] = true, true
	}
	had[a.Current] = true
	delete(had, "")
	return had, nil
}

// runSessions lists the sessions of the store that the filters keep.
func runSessions(ctx context.Context, o *sessionsOptions) (err error) {
	f, err := o.filter(time.Now())
	if err != nil {
		return err
	}
	var sessions []projection.SessionInfo
	e, err := o.openReadOnly(ctx, o.stderr)
	switch {
	case isNoStore(err):
		// No store yet, as on a fresh machine: no sessions either.
	case err != nil:
		return err
	default:
		defer closeEngine(e, &err)
		if o.agent != "" {
			if f.agent, err = agentSessions(ctx, e.Store(), o.agent); err != nil {
				return err
			}
		}
		if sessions, err = e.Sessions(ctx); err != nil {
			return err
		}
	}
	sessions = slices.DeleteFunc(sessions, func(s projection.SessionInfo) bool { return !f.keeps(s) })
	if o.json {
		out := make([]sessionJSON, len(sessions))
		for i, s := range sessions {
			out[i] = jsonview.NewSession(s)
		}
		return printJSON(o.stdout, out)
	}
	tw := tabwriter.NewWriter(o.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCWD\tMESSAGES\tCREATED\tLAST RESTORED\tTITLE")
	for _, s := range sessions {
		id, cwd := s.ID, s.Cwd
		if s.Importing {
			id += " (import unfinished)"
		}
		if s.Newer {
			id += " (newer events)"
		}
		if s.Subagent != nil {
			id += " (subagent of " + s.Subagent.Session + ")"
		}
		if s.ImportedCwd != "" && s.ImportedCwd != s.Cwd {
			cwd += " (transcript: " + s.ImportedCwd + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", id, cwd, s.Messages, shortTime(s.Created), shortTime(s.LastRestored), orDash(s.Title))
	}
	return tw.Flush()
}
