package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/schema"
)

// maxFireInput bounds the input fire reads from standard input: the hooks
// get it whole, and the log keeps it.
const maxFireInput = 16 << 20

// fireOptions are the options of fire.
type fireOptions struct {
	cmdIO
	restoreOptions
	event string // EVENT
	id    string // --id
	input string // --input: JSON, "-" for standard input
}

// stepCommands says, for each event with steps of its own, which commands
// run it: fire refuses it.
var stepCommands = map[hookexec.Event]string{
	schema.HookSessionStart:       "the restores run it: reprise start, resume, clear, fork and compact",
	schema.HookUserPromptSubmit:   "reprise prompt runs it",
	schema.HookPreToolUse:         "reprise tool runs it",
	schema.HookPermissionRequest:  "reprise tool runs it, when the decision is still to ask",
	schema.HookPostToolUse:        "reprise tool-result runs it",
	schema.HookPostToolUseFailure: "reprise tool-result --error runs it",
	schema.HookStop:               "reprise stop runs it",
	schema.HookPreCompact:         "reprise compact runs it",
	schema.HookSessionEnd:         "reprise end runs it, and so do the restores that leave a session",
}

func newFireCmd(a *app, runF func(context.Context, *fireOptions) error) *cobra.Command {
	var o fireOptions
	cmd := &cobra.Command{
		Use:   "fire EVENT --agent NAME --id ID [--input JSON|-]",
		Short: "Run the hooks of an event the host fires (Notification, Setup, ...), once",
		Long: `fire runs, on the agent's current session, the hooks of EVENT, any of
Claude Code's hook events that has no steps of its own in reprise (Setup,
Notification, PermissionDenied, TaskCreated, CwdChanged, FileChanged,
WorktreeCreate, ...: docs/hooks.md lists all 33), for a host that fires
them itself. The hooks get Claude Code's input: the common fields, then
--input, the event's own fields as a JSON object holding every field its
row requires ("-" reads it from standard input). Their matchers select on
the field the row names, such as notification_type.

What the hooks decide is read as the event's row says and recorded once
for ID, the host's name for this fire: fired again with the same ID,
nothing runs; fire prints what the log holds, says "already recorded"
("already_recorded": true with --json), and exits 3. Hooks that a dying
process left running are recorded as interrupted, never run again.
MessageDisplay, which fires for every streamed delta, is not recorded.

fire prints each hook's outcome, then what they decided: whether one
blocked and why, the context for the model, the feedback for the model
after the fact, the system message for the user, the hookSpecificOutput
fields the event honours (retry, watchPaths, worktreePath, ...) as JSON,
what they wrote to CLAUDE_ENV_FILE, and whether one stops the turn. It
exits 0 whatever they decided. An event with steps of its own (SessionStart,
PreToolUse, Stop, ...) is a usage error naming the command that runs it,
and so is input the event's row refuses.

` + hookSourcesHelp,
		Example: `  reprise fire Notification --agent ide --id n1 --input '{"message":"Claude needs your permission","notification_type":"permission_prompt"}'
  reprise fire TaskCreated --agent ide --id task-1 --input '{"task_id":"1","task_subject":"ship"}'
  jq -n '{old_cwd: "/src", new_cwd: "/src/app"}' | reprise fire CwdChanged --agent ide --id cd-7 --input - --json`,
		Args:              positional("EVENT"),
		ValidArgsFunction: completeFiredEvents,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.event = args[0]
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runFire(cmd.Context(), &o)
		},
	}
	o.register(cmd)
	cmd.Flags().StringVar(&o.id, "id", "", "the fire's `ID`, the host's: fired again with it, nothing runs (required)")
	cmd.Flags().StringVar(&o.input, "input", "{}", "the event's own fields, a `JSON` object (- for standard input)")
	if f := cmd.Flags().Lookup("agent"); f != nil {
		f.Usage = "the agent host `NAME` on whose current session the hooks run (required)"
	}
	return cmd
}

// completeFiredEvents offers the events fire runs for EVENT.
func completeFiredEvents(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, ev := range hookexec.Events {
		if !slices.Contains(schema.HookEvents, ev) && strings.HasPrefix(string(ev), prefix) {
			out = append(out, string(ev))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// checkFireEvent returns a usage error unless name is an event fire runs.
func checkFireEvent(name string) error {
	ev := hookexec.Event(name)
	if runs, ok := stepCommands[ev]; ok {
		return usagef("%s has steps of its own: %s, not fire", ev, runs)
	}
	if slices.Contains(hookexec.Events, ev) {
		return nil
	}
	msg := fmt.Sprintf("EVENT must be one of Claude Code's hook events without steps of their own (Setup, Notification, TaskCreated, ...: docs/hooks.md lists all %d), not %q",
		len(hookexec.Events), name)
	if i := slices.IndexFunc(hookexec.Events, func(e hookexec.Event) bool { return strings.EqualFold(string(e), name) }); i >= 0 {
		msg += fmt.Sprintf("; did you mean %s?", hookexec.Events[i])
	}
	return usageError{errors.New(msg)}
}

// fireInput returns the input o gives, read from standard input for "-".
func fireInput(o *fireOptions) (string, error) {
	input := o.input
	if input == "-" {
		data, err := io.ReadAll(io.LimitReader(o.stdin, maxFireInput+1))
		if err != nil {
			return "", fmt.Errorf("read the input from standard input: %w", err)
		}
		if len(data) > maxFireInput {
			return "", usagef("--input -: standard input holds more than %d MiB", maxFireInput>>20)
		}
		input = string(data)
	}
	switch {
	case !json.Valid([]byte(input)) || !strings.HasPrefix(strings.TrimSpace(input), "{"):
		return "", usagef("--input is not a JSON object: %q", clip(input))
	case !utf8.ValidString(input):
		// As tool's --input: hooks would read JSON that is not text.
		return "", usagef("--input is not valid UTF-8: %q", clip(input))
	}
	return input, nil
}

// runFire runs the hooks of o.event once for o.id and prints what they
// decided.
func runFire(ctx context.Context, o *fireOptions) error {
	o.hooksReported = true // in the report
	if err := checkFireEvent(o.event); err != nil {
		return err
	}
	switch {
	case o.id == "":
		return usagef("fire needs --id")
	case reprise.ValidateID(o.id) != nil:
		return validID("--id", o.id)
	}
	input, err := fireInput(o)
	if err != nil {
		return err
	}
	var f *reprise.Fired
	_, err = o.runAgent(ctx, &o.restoreOptions, nil, "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Transition, error) {
		var err error
		f, err = agent.Fire(ctx, hookexec.Event(o.event), o.id, json.RawMessage(input))
		return nil, err
	}, o.stderr)
	if errors.Is(err, reprise.ErrBadFire) {
		// What the event's row requires, or an id another event's fire
		// holds: the command line is wrong.
		return usageError{err}
	}
	if err != nil {
		return err
	}
	if o.json {
		err = printJSON(o.stdout, jsonview.NewFired(f))
	} else {
		printFired(o.stdout, f)
	}
	if err != nil || !f.AlreadyRecorded {
		return err
	}
	return statusError{fmt.Errorf("fire %s: already recorded; its hooks did not run again", f.ID), exitAlreadyRecorded}
}

// printFired writes what the hooks of fire f decided, for people.
func printFired(w io.Writer, f *reprise.Fired) {
	if f.AlreadyRecorded {
		fmt.Fprintln(w, "already recorded: the log held this fire before; its hooks did not run again")
	}
	fmt.Fprintf(w, "%s hooks of fire %s:\n", f.Event, f.ID)
	printOutcomes(w, f.Outcomes, f.Interrupted)
	if f.Blocked {
		fmt.Fprintf(w, "blocked: %s\n", f.Reason)
	}
	for _, part := range []struct{ label, text string }{
		{"context:", f.Context},
		{"feedback (for the model):", f.Feedback},
		{"system message (for the user):", f.SystemMessage},
	} {
		if part.text != "" {
			fmt.Fprintln(w, part.label)
			printIndented(w, part.text)
		}
	}
	if len(f.Specific) > 0 {
		var compact bytes.Buffer
		if json.Compact(&compact, f.Specific) != nil {
			compact.Reset()
			compact.Write(f.Specific)
		}
		fmt.Fprintf(w, "hookSpecificOutput: %s\n", compact.Bytes())
	}
	if f.Env != "" {
		fmt.Fprintln(w, "CLAUDE_ENV_FILE:")
		printIndented(w, strings.TrimSuffix(f.Env, "\n"))
	}
	printHalt(w, f.Halt)
}
