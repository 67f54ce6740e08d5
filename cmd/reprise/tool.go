package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/jsonview"
)

// toolOptions are the options of tool and tool-result.
type toolOptions struct {
	cmdIO
	restoreOptions
	id         string // --tool-use-id
	name       string // --name, tool
	input      string // --input, tool: JSON
	permission string // --permission, tool
	output     string // --output, tool-result: JSON
	failure    string // --error, tool-result
	addUse     bool   // --add-tool-use, tool
	answer     string // --answer, tool: allow or refuse
	refusal    string // --refusal, tool
	feedback   string // --feedback, tool
}

func newToolCmd(a *app, runF func(context.Context, *toolOptions) error) *cobra.Command {
	var o toolOptions
	cmd := &cobra.Command{
		Use:   "tool --agent NAME --tool-use-id ID (--name TOOL [--input JSON] [--permission allow|deny|ask] [--add-tool-use] | --answer allow|refuse [--refusal TEXT | --feedback WORDS])",
		Short: "Ask, before a tool call runs, whether it may: its PreToolUse hooks, once",
		Long: `tool asks, for a host that runs the model's tool calls itself, whether the
call ID of TOOL with input JSON may run: its PreToolUse hooks run with
Claude Code's input, then, when the decision is still to ask, its
PermissionRequest hooks, and the decision is recorded once for the
tool_use id. Asked again about the same id, it runs nothing and prints the
recorded decision, interrupted when the call was allowed and has no
result (the tool may have run). A deny is recorded in the session as the
call's error tool_result, which the model is told.

The call must be one of an answer recorded in the agent's current session
(append the model's answer with "append --content" first): a tool_use id
no answer holds is refused, unless --add-tool-use asks for the call's
tool_use to be recorded, as an answer of its own.

When the decision is ask, the host asks its user, then records the
answer with --answer: allow, after which the tool may run and tool-result
takes its result (a result for an asked call not allowed is refused), or
refuse, which records the call's error tool_result, what the model is
told: --refusal TEXT; or, given --feedback WORDS, the user's words as
Claude Code tells them: "` + reprise.UserRefusedSaying("WORDS") + `";
or else Claude Code's words for a refusal: "` + reprise.UserRefused + `"
The answer is recorded once; given again, tool prints the recorded
decision.

--permission is what the host's own rules say of the call; a deny from the
hooks or the rules wins, then an ask, then an allow; a call nobody decides
is ask. tool prints the decision, its reason, the input to run the tool
with and the hooks' context, and exits 0 whatever the decision.

` + hookSourcesHelp,
		Example: `  reprise tool --agent ide --tool-use-id toolu_1 --name Bash --input '{"command":"ls"}'
  reprise tool --agent ide --json --tool-use-id toolu_1 --name Bash --input '{"command":"rm -rf build"}' | jq -r .decision`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runTool(cmd.Context(), &o)
		},
	}
	o.register(cmd)
	cmd.Flags().StringVar(&o.id, "tool-use-id", "", "the call's tool_use `ID` (required)")
	cmd.Flags().StringVar(&o.name, "name", "", "the `TOOL` the call is of, such as Bash (required)")
	cmd.Flags().StringVar(&o.input, "input", "{}", "the call's input, a JSON object")
	cmd.Flags().StringVar(&o.permission, "permission", "", "what the host's rules say: allow, deny or ask")
	cmd.Flags().BoolVar(&o.addUse, "add-tool-use", false, "record the call's tool_use, as an answer of its own, when no answer holds it")
	cmd.Flags().StringVar(&o.answer, "answer", "", "record the user's answer to a call left to ask: allow or refuse")
	cmd.Flags().StringVar(&o.refusal, "refusal", "", "with --answer refuse, what the model is told, as `TEXT`")
	cmd.Flags().StringVar(&o.feedback, "feedback", "", "with --answer refuse, what the user said, told to the model after Claude Code's words for a refusal, as `WORDS`")
	agentFlag(cmd)
	return cmd
}

// runTool decides on a tool call and prints the decision.
func runTool(ctx context.Context, o *toolOptions) error {
	if o.answer != "" || o.refusal != "" || o.feedback != "" {
		return runToolAnswer(ctx, o)
	}
	switch {
	case o.id == "" || o.name == "":
		return usagef("tool needs --tool-use-id and --name")
	case reprise.ValidateID(o.id) != nil:
		return validID("--tool-use-id", o.id)
	case !json.Valid([]byte(o.input)) || !strings.HasPrefix(strings.TrimSpace(o.input), "{"):
		return usagef("--input is not a JSON object: %q", clip(o.input))
	case !utf8.ValidString(o.input):
		// encoding/json takes it, but hooks would read JSON that is not
		// text: a guard that cannot parse it decides nothing.
		return usagef("--input is not valid UTF-8: %q", clip(o.input))
	case o.permission != "" && o.permission != hookexec.Allow && o.permission != hookexec.Deny && o.permission != hookexec.Ask:
		return usagef("--permission must be allow, deny or ask, not %q", o.permission)
	}
	var d *reprise.ToolDecision
	_, err := o.runAgent(ctx, &o.restoreOptions, nil, "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Transition, error) {
		var err error
		d, err = agent.PreToolUse(ctx, reprise.ToolCall{ID: o.id, Name: o.name, Input: json.RawMessage(o.input), Permission: o.permission, AddToolUse: o.addUse})
		return nil, err
	}, o.stderr)
	if err != nil {
		return err
	}
	return printDecision(o, d)
}

// runToolAnswer records the user's answer to a call left to ask and prints
// the call's decision.
func runToolAnswer(ctx context.Context, o *toolOptions) error {
	switch {
	case o.id == "":
		return usagef("tool --answer needs --tool-use-id")
	case reprise.ValidateID(o.id) != nil:
		return validID("--tool-use-id", o.id)
	case o.answer != "allow" && o.answer != "refuse":
		return usagef("--answer must be allow or refuse, not %q", o.answer)
	case (o.refusal != "" || o.feedback != "") && o.answer != "refuse":
		return usagef("--refusal and --feedback go with --answer refuse")
	case o.refusal != "" && o.feedback != "":
		return usagef("--refusal and --feedback are two ways to say what the model is told: give one")
	case o.name != "" || o.permission != "" || o.addUse || o.input != "{}":
		return usagef("--answer takes the call from the log: give it no --name, --input, --permission or --add-tool-use")
	}
	refusal := o.refusal
	if o.feedback != "" {
		refusal = reprise.UserRefusedSaying(o.feedback)
	}
	var d *reprise.ToolDecision
	_, err := o.runAgent(ctx, &o.restoreOptions, nil, "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Transition, error) {
		var err error
		d, err = agent.AnswerAsk(ctx, reprise.ToolAnswer{ID: o.id, Allow: o.answer == "allow", Refusal: refusal})
		return nil, err
	}, o.stderr)
	if err != nil {
		return err
	}
	return printDecision(o, d)
}

// printDecision prints the decision on call o.id.
func printDecision(o *toolOptions, d *reprise.ToolDecision) error {
	if o.json {
		return printJSON(o.stdout, jsonview.NewToolDecision(d))
	}
	fmt.Fprintf(o.stdout, "%s\n", d.Decision)
	if d.Reason != "" {
		fmt.Fprintf(o.stdout, "reason: %s\n", d.Reason)
	}
	if len(d.Input) > 0 {
		fmt.Fprintf(o.stdout, "input: %s\n", d.Input)
	}
	fmt.Fprintf(o.stdout, "PreToolUse hooks of %s:\n", o.id)
	printOutcomes(o.stdout, d.Outcomes, false)
	if d.Context != "" {
		fmt.Fprintln(o.stdout, "context:")
		printIndented(o.stdout, d.Context)
	}
	if d.Interrupted {
		fmt.Fprintln(o.stdout, "interrupted: the call was decided before and has no result; the tool may have run")
	}
	printHalt(o.stdout, d.Halt)
	return nil
}

func newToolResultCmd(a *app, runF func(context.Context, *toolOptions) error) *cobra.Command {
	var o toolOptions
	cmd := &cobra.Command{
		Use:   "tool-result --agent NAME --tool-use-id ID (--output JSON | --error TEXT)",
		Short: "Record what a tool call gave and run its PostToolUse hooks, once",
		Long: `tool-result records what the call ID, which tool decided, gave: --output,
its result as JSON (a string, or content blocks), appended to the session
as the call's tool_result; or --error, its failure. Then the call's
PostToolUse hooks run (PostToolUseFailure for an error), and their context,
and the reason of a block, are appended after the result for the model.
It prints the hooks' context and whether one blocked, and exits 0 either
way. When the log holds the call's result already (recorded before, or the
error result of its deny), the result given is not kept: tool-result says
"already recorded" ("already_recorded": true with --json), prints what the
log holds, and exits 3.

` + hookSourcesHelp,
		Example: `  reprise tool-result --agent ide --tool-use-id toolu_1 --output '"go.mod main.go"'
  reprise tool-result --agent ide --tool-use-id toolu_2 --error 'Exit code 1'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runToolResult(cmd.Context(), &o)
		},
	}
	o.register(cmd)
	cmd.Flags().StringVar(&o.id, "tool-use-id", "", "the call's tool_use `ID` (required)")
	cmd.Flags().StringVar(&o.output, "output", "", "the call's result, as JSON")
	cmd.Flags().StringVar(&o.failure, "error", "", "the call's failure, as `TEXT`")
	agentFlag(cmd)
	return cmd
}

// runToolResult records a tool call's result and prints what its hooks
// said.
func runToolResult(ctx context.Context, o *toolOptions) error {
	switch {
	case o.id == "":
		return usagef("tool-result needs --tool-use-id")
	case reprise.ValidateID(o.id) != nil:
		return validID("--tool-use-id", o.id)
	case (o.output == "") == (o.failure == ""):
		return usagef("tool-result needs one of --output and --error")
	case o.output != "" && !json.Valid([]byte(o.output)):
		return usagef("--output is not JSON: %q", clip(o.output))
	case !utf8.ValidString(o.output):
		return usagef("--output is not valid UTF-8: %q", clip(o.output))
	}
	var f *reprise.ToolFeedback
	_, err := o.runAgent(ctx, &o.restoreOptions, nil, "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Transition, error) {
		var err error
		f, err = agent.PostToolUse(ctx, reprise.ToolResult{ID: o.id, Output: json.RawMessage(o.output), Error: o.failure})
		return nil, err
	}, o.stderr)
	if err != nil {
		return err
	}
	if o.json {
		if err := printJSON(o.stdout, jsonview.NewToolFeedback(f)); err != nil {
			return err
		}
		return alreadyRecorded(o.id, f)
	}
	if f.AlreadyRecorded {
		fmt.Fprintln(o.stdout, "already recorded: the log held the call's result before; this one was not kept")
	}
	if f.Blocked {
		fmt.Fprintf(o.stdout, "blocked: %s\n", f.Reason)
	}
	fmt.Fprintf(o.stdout, "PostToolUse hooks of %s:\n", o.id)
	printOutcomes(o.stdout, f.Outcomes, false)
	if f.Context == "" {
		fmt.Fprintln(o.stdout, "no context added")
	} else {
		fmt.Fprintln(o.stdout, "context:")
		printIndented(o.stdout, f.Context)
	}
	printAsync(o.stdout, f.AsyncMessage)
	printHalt(o.stdout, f.Halt)
	return alreadyRecorded(o.id, f)
}

// alreadyRecorded is the error tool-result ends with when the call's
// result was in the log before: exit status 3.
func alreadyRecorded(id string, f *reprise.ToolFeedback) error {
	if !f.AlreadyRecorded {
		return nil
	}
	return statusError{fmt.Errorf("tool call %s: already recorded; the result given was not kept", id), exitAlreadyRecorded}
}

// agentFlag words --agent for a tool step, which restores nothing.
func agentFlag(cmd *cobra.Command) {
	if f := cmd.Flags().Lookup("agent"); f != nil {
		f.Usage = "the agent host `NAME` whose current session holds the call (required)"
	}
}

// printHalt says that a hook stopped the turn, with its stopReason.
func printHalt(w io.Writer, h reprise.Halt) {
	if h.Halted {
		fmt.Fprintf(w, "halted: a hook stops the turn: %s\n", cmp.Or(h.StopReason, "no reason given"))
	}
}
