package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
)

// hookEventJSON is one event of hooks --json and the hooks it would run.
type hookEventJSON struct {
	Event  string     `json:"event"`
	Source string     `json:"source,omitempty"` // SessionStart
	Reason string     `json:"reason,omitempty"` // SessionEnd
	Hooks  []hookJSON `json:"hooks"`
}

// hookJSON is one hook as configured.
type hookJSON struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"` // "command" or "function"
	Command    string  `json:"command,omitempty"`
	Shell      string  `json:"shell,omitempty"`
	Matcher    string  `json:"matcher"`
	TimeoutMS  float64 `json:"timeout_ms"`
	Source     string  `json:"source"`
	PluginRoot string  `json:"plugin_root,omitempty"`
}

// hooksOptions are the options of hooks.
type hooksOptions struct {
	hooks   hookOptions
	event   string // --event, "" for both
	value   string // --source: the SessionStart source or SessionEnd reason
	session string // --session, "" for none
}

// newHooksCmd returns the hooks command: which hooks a restore would run.
func newHooksCmd(a *app) *cobra.Command {
	var o hooksOptions
	cmd := &cobra.Command{
		Use:   "hooks [--event SessionStart|SessionEnd] [--source S] [--session ID]",
		Short: "Show which hooks a restore would run, in order, and where each comes from",
		Long: `hooks loads hooks the way start and resume do and lists, for each event,
those that would run, in the order they run: each with its matcher, its
timeout (the default when it sets none), its command and where it was
configured (a settings file or plugin:<dir>). A command configured in several
places is listed, and run, once.

Without --event both events are listed. --source is the SessionStart source
(startup or resume) or the SessionEnd reason that matchers see; it defaults
to resume. --session takes the project settings from that session's working
directory; only then is the store read, read-only.

` + hookSourcesHelp,
		Example: `  reprise hooks
  reprise hooks --event SessionStart --source startup --session "$id"
  reprise hooks --settings ./hooks.json --no-default-settings --json`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runHooks(cmd.Context(), a, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&o.event, "event", "", "list only `EVENT`: SessionStart or SessionEnd")
	cmd.Flags().StringVar(&o.value, "source", string(reprise.SourceResume), "the SessionStart `SOURCE` or SessionEnd reason to match")
	cmd.Flags().StringVar(&o.session, "session", "", "the session `ID` whose project settings apply")
	o.hooks.register(cmd)
	return cmd
}

// runHooks lists, for each event, the hooks a restore would run.
func runHooks(ctx context.Context, a *app, o hooksOptions, stdout, stderr io.Writer) (err error) {
	events := []hookexec.Event{hookexec.SessionStart, hookexec.SessionEnd}
	switch hookexec.Event(o.event) {
	case "":
	case hookexec.SessionStart, hookexec.SessionEnd:
		events = []hookexec.Event{hookexec.Event(o.event)}
	default:
		return usagef("--event must be SessionStart or SessionEnd, not %q", o.event)
	}
	if o.value == "" {
		return usagef("--source must not be empty")
	}
	// Without --session no store is needed: the hooks come from
	// files, and an Engine over an empty log matches them.
	var e *reprise.Engine
	if o.session == "" {
		e = reprise.New(eventlog.NewMemoryStore(), reprise.Options{Logger: warnLogger(stderr)})
	} else {
		if err := validID("--session", o.session); err != nil {
			return err
		}
		if e, err = a.openReadOnly(ctx, stderr); err != nil {
			return err
		}
	}
	defer closeEngine(e, &err)
	dir, found, err := projectDir(ctx, e, o.session)
	if err != nil {
		return err
	}
	if o.session != "" && !found {
		return fmt.Errorf("%w: %s", reprise.ErrSessionNotFound, o.session)
	}
	o.hooks.load(e, dir, stderr)
	var out []hookEventJSON
	for _, ev := range events {
		x := hookEventJSON{Event: string(ev), Hooks: []hookJSON{}}
		if ev == hookexec.SessionStart {
			x.Source = o.value
		} else {
			x.Reason = o.value
		}
		for _, h := range e.HooksFor(ctx, ev, o.value, o.session) {
			x.Hooks = append(x.Hooks, newHookJSON(h))
		}
		out = append(out, x)
	}
	if a.json {
		return printJSON(stdout, out)
	}
	return printHooks(stdout, out)
}

// newHookJSON describes h for JSON output, with its effective timeout.
func newHookJSON(h hookexec.Hook) hookJSON {
	c, isCommand := h.Body.(hookexec.Command)
	out := hookJSON{Name: h.Name, Type: "function", Command: c.Line, Shell: c.Shell,
		Matcher: h.Matcher.String(), Source: h.Source, PluginRoot: c.PluginRoot}
	timeout := h.Timeout
	if isCommand {
		out.Type = "command"
	}
	if timeout == 0 {
		switch {
		case !isCommand:
			timeout = hookexec.DefaultFuncTimeout
		case h.Event == hookexec.SessionEnd:
			timeout = hookexec.DefaultSessionEndCommandTimeout
		default:
			timeout = hookexec.DefaultCommandTimeout
		}
	}
	out.TimeoutMS = float64(timeout) / float64(time.Millisecond)
	return out
}

// printHooks writes the hooks of each event as a table, for people.
func printHooks(w io.Writer, events []hookEventJSON) error {
	for i, ev := range events {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if ev.Event == string(hookexec.SessionStart) {
			fmt.Fprintf(w, "%s (source %s):\n", ev.Event, ev.Source)
		} else {
			fmt.Fprintf(w, "%s (reason %s):\n", ev.Event, ev.Reason)
		}
		if len(ev.Hooks) == 0 {
			fmt.Fprintln(w, "  none")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tMATCHER\tTIMEOUT\tHOOK\tFROM")
		for j, h := range ev.Hooks {
			matcher := h.Matcher
			if matcher == "" {
				matcher = `""`
			}
			timeout := time.Duration(h.TimeoutMS * float64(time.Millisecond))
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", j+1, matcher, timeout, h.Name, h.Source)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
