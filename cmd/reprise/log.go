package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
)

// eventJSON is one line of log --json.
type eventJSON = jsonview.Event

// logOptions are the options of log: one of session and agent, or
// neither with follow.
type logOptions struct {
	cmdIO
	session   string // SESSION
	agent     string // --agent
	bySession bool   // SESSION was given, even empty
	follow    bool   // --follow
}

// newLogCmd returns the log command: the events of one stream.
func newLogCmd(a *app, runF func(context.Context, *logOptions) error) *cobra.Command {
	var o logOptions
	cmd := &cobra.Command{
		Use:   "log (SESSION | --agent NAME | --follow)",
		Short: "Show the events of a session or of an agent",
		Long: `log prints the event timeline of one stream: a session's creation and
messages, or an agent's restores step by step. Each line has the event's
sequence in its stream, its time (UTC), its type and what it says.

With --json it prints one JSON object per event and line: position, stream,
seq, type, time (RFC 3339, UTC), restore_id and payload, the event's payload
with the keys listed in docs/events.md.

With --follow it goes on to print each event as it is appended, until
interrupted (Ctrl-C); without SESSION or --agent it follows every stream,
each line starting with the event's stream. It reads through the socket
of a process that holds the store, else opens the file for each read and
lets it go between reads, so that it never keeps writers out.`,
		Example: `  reprise log "$id"
  reprise log --agent ide
  reprise log --follow
  reprise log --follow --json "$id"
  reprise log --agent ide --json | jq 'select(.type == "SessionStartHookRan") | .payload.outcomes'`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) > 1:
				return usagef("unexpected argument %q", args[1])
			case len(args) == 1 && o.agent != "":
				return usagef("give SESSION or --agent, not both")
			case len(args) == 0 && o.agent == "" && !o.follow:
				return usagef("missing SESSION, --agent or --follow")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.session, o.bySession = args[0], true
			}
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runLog(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.agent, "agent", "", "show the restores of agent `NAME` instead of a session")
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "go on printing events as they are appended, until interrupted")
	return cmd
}

// runLog prints the events of o.session's stream, or of o.agent's when no
// session is given.
func runLog(ctx context.Context, o *logOptions) (err error) {
	what, stream, id := "agent", projection.AgentStream(o.agent), o.agent
	if o.bySession {
		what, stream, id = "session", projection.SessionStream(o.session), o.session
	}
	if o.follow && !o.bySession && o.agent == "" {
		return follow(ctx, o.app, o.stderr, 1, func(ev eventlog.Event) error {
			if o.json {
				return printEventJSON(o.stdout, ev)
			}
			return printFollowLine(o.stdout, ev)
		})
	}
	if err := validID(what, id); err != nil {
		return err
	}
	show := func(ev eventlog.Event) error {
		if o.json {
			return printEventJSON(o.stdout, ev)
		}
		return printLogLine(o.stdout, ev)
	}
	if o.follow {
		return follow(ctx, o.app, o.stderr, 1, func(ev eventlog.Event) error {
			if ev.Stream != stream {
				return nil
			}
			return show(ev)
		})
	}
	e, err := o.openReadOnly(ctx, o.stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	if id, err = resolveID(ctx, e.Store(), what, id); err != nil {
		return err
	}
	stream = what + "/" + id
	head, err := e.Store().Head(ctx, stream)
	if err != nil {
		return err
	}
	if head == 0 && what == "session" {
		return fmt.Errorf("%w: %s", reprise.ErrSessionNotFound, id)
	}
	if head == 0 {
		return fmt.Errorf("%s %s has no events", what, id)
	}
	return e.Store().ReadStream(ctx, stream, 1, show)
}

// printEventJSON prints ev as one line of log --json.
func printEventJSON(w io.Writer, ev eventlog.Event) error {
	line, err := jsonview.NewEvent(ev)
	if err != nil {
		return err
	}
	return printJSON(w, line)
}
