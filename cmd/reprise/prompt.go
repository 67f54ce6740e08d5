package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
)

// errPromptBlocked is why prompt exits 1: a UserPromptSubmit hook kept the
// prompt out of the conversation.
var errPromptBlocked = errors.New("prompt blocked by a UserPromptSubmit hook")

// promptOptions are the options of prompt.
type promptOptions struct {
	cmdIO
	restoreOptions
	text string // TEXT, "-" for standard input
}

func newPromptCmd(a *app, runF func(context.Context, *promptOptions) error) *cobra.Command {
	var o promptOptions
	cmd := &cobra.Command{
		Use:   "prompt --agent NAME TEXT",
		Short: "Submit the user's prompt to the agent's session through the UserPromptSubmit hooks",
		Long: `prompt submits TEXT, the user's prompt, to the agent's current session. The
UserPromptSubmit hooks run first, with Claude Code's input (the prompt in
"prompt"). Unless one blocks it (exit 2, or {"decision": "block", "reason":
...}), the prompt is appended as a user message, and the context the hooks
add (plain stdout, or additionalContext) is kept right after it as a
<system-reminder> meta message. TEXT "-" reads it from standard input.

prompt prints whether the prompt was kept (and as which message) or why it
was blocked, each hook's outcome, and the context added. Exit code 0 when
the prompt was kept, 1 when a hook blocked it.

` + hookSourcesHelp,
		Example: `  reprise prompt --agent ide "Why does TestRefund flake?"
  reprise prompt --agent ide --settings ./guard.json - < prompt.txt
  reprise prompt --agent ide --json "deploy it" | jq .blocked`,
		Args: positional("TEXT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.text = args[0]
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runPrompt(cmd.Context(), &o)
		},
	}
	o.register(cmd)
	return cmd
}

// runPrompt submits o.text to the agent's current session and prints what
// became of it.
func runPrompt(ctx context.Context, o *promptOptions) error {
	o.hooksReported = true // in the report
	text := o.text
	if text == "-" {
		data, err := io.ReadAll(o.stdin)
		if err != nil {
			return fmt.Errorf("read prompt: %w", err)
		}
		text = strings.TrimSuffix(string(data), "\n")
	}
	if strings.TrimSpace(text) == "" {
		return usagef("the prompt is empty")
	}
	var (
		res     *reprise.PromptResult
		session string
	)
	_, err := o.runAgent(ctx, &o.restoreOptions, nil, "", func(ctx context.Context, agent *reprise.Agent) (*reprise.Transition, error) {
		session = agent.Current()
		var err error
		res, err = agent.Prompt(ctx, text)
		return nil, err
	}, o.stderr)
	if err != nil {
		return err
	}
	if o.json {
		err = printJSON(o.stdout, jsonview.NewPrompt(o.agent, session, res))
	} else {
		printPrompt(o.stdout, session, res)
	}
	if err == nil && res.Blocked {
		err = fmt.Errorf("%w: %s", errPromptBlocked, res.Reason)
	}
	return err
}

// printPrompt writes what became of a prompt, for people.
func printPrompt(w io.Writer, session string, res *reprise.PromptResult) {
	switch {
	case res.Blocked:
		fmt.Fprintf(w, "blocked: %s\n", res.Reason)
	case res.Message != nil:
		fmt.Fprintf(w, "kept as message %s of %s\n", res.Message.UUID, session)
	default:
		fmt.Fprintf(w, "kept in %s\n", session)
	}
	fmt.Fprintf(w, "UserPromptSubmit hooks on %s:\n", session)
	printOutcomes(w, res.Outcomes, false)
	switch {
	case res.Context == "":
		fmt.Fprintln(w, "no context added")
	case res.ContextMessage != nil:
		fmt.Fprintf(w, "context added as message %s:\n", res.ContextMessage.UUID)
		printIndented(w, res.Context)
	default:
		fmt.Fprintln(w, "context (not kept, as the prompt was not):")
		printIndented(w, res.Context)
	}
	printAsync(w, res.AsyncMessage)
}

// printAsync says which message brought the context of async hooks that
// ended since the model last heard from them, and what it says.
func printAsync(w io.Writer, m *reprise.Message) {
	if m == nil {
		return
	}
	fmt.Fprintf(w, "async hooks' context added as message %s:\n", m.UUID)
	printIndented(w, projection.FirstText(*m))
}
