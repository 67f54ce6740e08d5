package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// hookEventJSON is one event of hooks --json and the hooks it would run.
type hookEventJSON struct {
	Event   string     `json:"event"`
	Run     bool       `json:"run"`               // false for hooks reprise does not run (other types, unknown events)
	Source  string     `json:"source,omitempty"`  // SessionStart
	Reason  string     `json:"reason,omitempty"`  // SessionEnd
	Trigger string     `json:"trigger,omitempty"` // PreCompact
	Tool    string     `json:"tool,omitempty"`    // the tool events: the tool, or * for any
	Value   string     `json:"value,omitempty"`   // a fired event: the value --source matched, when given
	Hooks   []hookJSON `json:"hooks"`
}

// hookJSON is one hook as configured.
type hookJSON struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"` // command, http, mcp_tool, prompt, agent or function
	Command    string  `json:"command,omitempty"`
	Shell      string  `json:"shell,omitempty"`
	Matcher    string  `json:"matcher"`
	TimeoutMS  float64 `json:"timeout_ms"`
	Source     string  `json:"source"`
	PluginRoot string  `json:"plugin_root,omitempty"`
	// Args are an exec-form hook's arguments; If, OnFailure and
	// StatusMessage its keys of those names.
	Args          []string `json:"args,omitempty"`
	If            string   `json:"if,omitempty"`
	OnFailure     string   `json:"on_failure,omitempty"`
	StatusMessage string   `json:"status_message,omitempty"`
	// URL is an http hook's; Server and Tool an mcp_tool hook's; Prompt
	// and Model a prompt or agent hook's.
	URL    string `json:"url,omitempty"`
	Server string `json:"server,omitempty"`
	Tool   string `json:"tool,omitempty"`
	Prompt string `json:"prompt,omitempty"`
	Model  string `json:"model,omitempty"`
}

// hooksOptions are the options of hooks.
type hooksOptions struct {
	cmdIO
	hooks      hookOptions
	event      string // --event, "" for all
	value      string // --source: the SessionStart source, SessionEnd reason or PreCompact trigger
	valueSet   bool   // --source was given
	session    string // --session, "" for none
	sessionSet bool   // --session was given
}

// newHooksCmd returns the hooks command: which hooks a restore would run.
func newHooksCmd(a *app, runF func(context.Context, *hooksOptions) error) *cobra.Command {
	var o hooksOptions
	cmd := &cobra.Command{
		Use:   "hooks [--event EVENT] [--source S] [--session ID]",
		Short: "Show which hooks reprise would run, in order, and where each comes from",
		Long: `hooks loads hooks the way start and resume do and lists, for each event,
those that would run, in the order they run: each with its matcher, its
timeout (the default when it sets none), what it runs (a command, "http:
URL", "prompt: ...", "agent: ...", "mcp_tool: SERVER TOOL") and where it was
configured (a settings file or plugin:<dir>). A hook configured in several
places is listed, and run, once. Prompt and agent hooks ask the Messages
API at $ANTHROPIC_BASE_URL with $ANTHROPIC_API_KEY; mcp_tool hooks find no
MCP server connected here, and fail without blocking.

Without --event the events of the lifecycle's own steps are listed, with
the fired events that have hooks among them, then the hooks the settings
files and plugins configure for names that are none of Claude Code's
events, marked "found, not run by reprise". --event takes any of Claude
Code's 33 events. --source is the value matchers see: the SessionStart
source, the SessionEnd reason (both default to resume), the PreCompact
trigger (manual or auto, default manual), the tool for the tool events
(without it, hooks for any tool), or a fired event's matcher field; an
event without a matcher (Stop, UserPromptSubmit, ...) takes no --source.
--session takes the project settings from that session's working
directory; only then is the store read, read-only.

` + hookSourcesHelp,
		Example: `  reprise hooks
  reprise hooks --event SessionStart --source startup --session "$id"
  reprise hooks --event PreCompact --source auto
  reprise hooks --settings ./hooks.json --no-default-settings --json`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.valueSet = cmd.Flags().Changed("source")
			o.sessionSet = cmd.Flags().Changed("session")
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runHooks(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.event, "event", "", "list only `EVENT`, any of Claude Code's 33 (SessionStart, PreToolUse, Notification, ...)")
	cmd.Flags().StringVar(&o.value, "source", "", "the SessionStart `SOURCE`, SessionEnd reason, PreCompact trigger, tool or other event's matched value to match (default resume; manual for PreCompact; any for the rest)")
	cmd.Flags().StringVar(&o.session, "session", "", "the session `ID` whose project settings apply")
	o.hooks.register(cmd)
	return cmd
}

// hookValue returns the value event's matchers see when --source is value
// (set says whether it was given), and the key it is reported under.
func hookValue(event hookexec.Event, value string, set bool) string {
	if spec, _ := schema.LookupEvent(event); spec.Rule == schema.MatchNone {
		return ""
	}
	switch event {
	case hookexec.PreCompact:
		if !set {
			return "manual"
		}
	case hookexec.SessionStart, hookexec.SessionEnd:
		if !set {
			return string(reprise.SourceResume)
		}
	default:
		if !set {
			return hookexec.AnyTool
		}
	}
	return value
}

// runHooks lists, for each event, the hooks reprise would run, and without
// --event the hooks found for events it does not run.
func runHooks(ctx context.Context, o *hooksOptions) (err error) {
	// Without --event: the events with steps of their own, and the fired
	// ones that have hooks.
	events, always := hookexec.Events, schema.HookEvents
	if o.event != "" {
		ev := hookexec.Event(o.event)
		switch {
		case !slices.Contains(hookexec.Events, ev):
			return usagef("--event must name one of Claude Code's %d hook events (SessionStart, PreToolUse, Stop, Notification, ...: docs/hooks.md lists them), not %q", len(hookexec.Events), o.event)
		case o.valueSet && hookValue(ev, "x", true) == "":
			return usagef("--source does not apply to %s hooks: they have no matcher", ev)
		default:
			events, always = []hookexec.Event{ev}, []hookexec.Event{ev}
		}
	}
	if o.valueSet && o.value == "" {
		return usagef("--source must not be empty")
	}
	if o.sessionSet && o.session == "" {
		// Not the listing without a session, which would answer for
		// another project than the one asked about.
		return usagef("--session must not be empty: give a session's id, or leave --session out for the hooks of the current directory's project")
	}
	if err := o.hooks.check(); err != nil {
		return err
	}
	// Without --session no store is needed: the hooks come from
	// files, and an Engine over an empty log matches them.
	var e *reprise.Engine
	if o.session == "" {
		e = reprise.New(eventlog.NewMemoryStore(), reprise.Options{Logger: warnLogger(o.stderr)})
	} else {
		if err := validID("--session", o.session); err != nil {
			return err
		}
		if e, err = o.openReadOnly(ctx, o.stderr); err != nil {
			return err
		}
	}
	defer closeEngine(e, &err)
	if o.session != "" {
		if o.session, err = resolveID(ctx, e.Store(), "session", o.session); err != nil {
			return err
		}
	}
	dir, found, err := projectDir(ctx, e, o.session)
	if err != nil {
		return err
	}
	if o.session != "" && !found {
		return fmt.Errorf("%w: %s", reprise.ErrSessionNotFound, o.session)
	}
	paths := o.hooks.load(e, dir, o.stderr)
	var out []hookEventJSON
	for _, ev := range events {
		value := hookValue(ev, o.value, o.valueSet)
		x := hookEventJSON{Event: string(ev), Run: true, Hooks: []hookJSON{}}
		switch ev {
		case hookexec.SessionStart:
			x.Source = value
		case hookexec.SessionEnd:
			x.Reason = value
		case hookexec.PreCompact:
			x.Trigger = value
		case hookexec.PreToolUse, hookexec.PermissionRequest, hookexec.PostToolUse, hookexec.PostToolUseFailure:
			x.Tool = value
		default:
			if value != hookexec.AnyTool {
				x.Value = value
			}
		}
		for _, h := range e.HooksFor(ctx, ev, value, o.session) {
			x.Hooks = append(x.Hooks, newHookJSON(h))
		}
		if len(x.Hooks) > 0 || slices.Contains(always, ev) {
			out = append(out, x)
		}
	}
	for _, x := range otherEventHooks(paths, o.hooks.plugins, o.stderr) {
		if o.event == "" || x.Event == o.event {
			out = append(out, x)
		}
	}
	if o.json {
		return printJSON(o.stdout, out)
	}
	return printHooks(o.stdout, out)
}

// newHookJSON describes h for JSON output, with its effective timeout.
func newHookJSON(h hookexec.Hook) hookJSON {
	c, _ := h.Body.(hookexec.Command)
	out := hookJSON{Name: h.Name, Type: cmp.Or(string(h.Type()), "function"), Command: c.Line, Shell: c.Shell, Args: c.Args,
		Matcher: h.Matcher.String(), Source: h.Source, PluginRoot: c.PluginRoot,
		If: h.If, OnFailure: h.OnFailure, StatusMessage: h.StatusMessage}
	switch b := h.Body.(type) {
	case hookexec.HTTP:
		out.URL = b.URL
	case hookexec.MCPTool:
		out.Server, out.Tool = b.Server, b.Tool
	case hookexec.Prompt:
		out.Prompt, out.Model = b.Text, b.Model
	}
	out.TimeoutMS = float64(hookexec.Timeout(h)) / float64(time.Millisecond)
	return out
}

// printHooks writes the hooks of each event as a table, for people.
func printHooks(w io.Writer, events []hookEventJSON) error {
	for i, ev := range events {
		if i > 0 {
			fmt.Fprintln(w)
		}
		switch {
		case !ev.Run:
			fmt.Fprintf(w, "%s: found, not run by reprise:\n", ev.Event)
		case ev.Source != "":
			fmt.Fprintf(w, "%s (source %s):\n", ev.Event, ev.Source)
		case ev.Reason != "":
			fmt.Fprintf(w, "%s (reason %s):\n", ev.Event, ev.Reason)
		case ev.Trigger != "":
			fmt.Fprintf(w, "%s (trigger %s):\n", ev.Event, ev.Trigger)
		case ev.Value != "":
			fmt.Fprintf(w, "%s (matching %s):\n", ev.Event, ev.Value)
		case ev.Tool == hookexec.AnyTool:
			fmt.Fprintf(w, "%s (any tool):\n", ev.Event)
		case ev.Tool != "":
			fmt.Fprintf(w, "%s (tool %s):\n", ev.Event, ev.Tool)
		default:
			fmt.Fprintf(w, "%s:\n", ev.Event)
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
			timeout := "-"
			if h.TimeoutMS > 0 {
				timeout = time.Duration(h.TimeoutMS * float64(time.Millisecond)).String()
			}
			name := h.Name
			if !ev.Run && h.Type != "command" {
				name = h.Type + ": " + name
			}
			if h.If != "" {
				name += "  if " + h.If
			}
			if h.OnFailure == hookexec.OnFailureBlock {
				name += "  (a failure blocks)"
			}
			if h.StatusMessage != "" {
				name += "  status: " + strconv.Quote(h.StatusMessage)
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", j+1, matcher, timeout, name, h.Source)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
