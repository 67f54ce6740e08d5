package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
)

// appendOptions are the options of append.
type appendOptions struct {
	cmdIO
	session string // SESSION
	text    string // TEXT, "-" for standard input
	content string // --content: the content as JSON, "-" for standard input
	role    string // --role
	meta    bool   // --meta
}

// newAppendCmd returns the append command: add a message to a session.
func newAppendCmd(a *app, runF func(context.Context, *appendOptions) error) *cobra.Command {
	var o appendOptions
	cmd := &cobra.Command{
		Use:   "append SESSION --role user|assistant [--meta] (TEXT | --content JSON)",
		Short: "Append a message to a session, durably",
		Long: `append writes one message to the end of a session and prints its uuid once
it is on disk. TEXT is a message of one text block; "-" reads the text from
standard input, without its final newline.

--content gives the message's content instead, as the Messages API writes
it: a JSON string, or an array of content blocks (text, tool_use,
tool_result, ...), each kept as it is. "-" reads it from standard input. A
shell host appends the model's answer with its tool_use blocks this way,
before it asks "reprise tool" about each call. An answer the Messages API
would refuse is refused: a tool_use without an id, or with an id the
session holds, or any answer while calls of the one before have no
tool_result (give them results first: an error tool_result for a call
that was interrupted).

--meta marks a message the model sees but the user did not type, as hook
context is.`,
		Example: `  reprise append "$id" --role user "Why does TestRefund flake?"
  reprise append "$id" --role assistant "It races on the shared ledger."
  git diff | reprise append "$id" --role user --meta -
  reprise append "$id" --role assistant --content '[{"type":"text","text":"Let me look."},
    {"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"go test ./..."}}]'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("content") {
				return positional("SESSION")(cmd, args)
			}
			return positional("SESSION", "TEXT")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.session = args[0]
			if len(args) > 1 {
				o.text = args[1]
			}
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runAppend(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.role, "role", "", "who wrote the message, `ROLE` user or assistant (required)")
	cmd.Flags().StringVar(&o.content, "content", "", "the message's content, `JSON`: a string or an array of content blocks (- for standard input)")
	cmd.Flags().BoolVar(&o.meta, "meta", false, "mark the message as meta: seen by the model, not typed by the user")
	return cmd
}

// checkBlocks refuses content the Messages API would refuse for role: an
// empty text, a tool_use from the user, a tool_result from the assistant.
func checkBlocks(role string, blocks []reprise.Block) error {
	for i, b := range blocks {
		switch {
		case b.Type == "text" && strings.TrimSpace(b.Text) == "":
			return usagef("--content: block %d is an empty text", i+1)
		case b.Type == "tool_use" && role != "assistant":
			return usagef("--content: block %d is a tool_use, which only the assistant writes", i+1)
		case b.Type == "tool_result" && role != "user":
			return usagef("--content: block %d is a tool_result, which only the user writes", i+1)
		}
	}
	return nil
}

// runAppend appends one message to o.session and prints its uuid.
func runAppend(ctx context.Context, o *appendOptions) (err error) {
	id, text := o.session, o.text
	if err := validID("session", id); err != nil {
		return err
	}
	if o.role == "" {
		return usagef("missing --role: user or assistant")
	}
	if o.role != "user" && o.role != "assistant" {
		return usagef("--role must be user or assistant, not %q", o.role)
	}
	if text == "-" || o.content == "-" {
		b, err := io.ReadAll(o.stdin)
		if err != nil {
			return fmt.Errorf("read the message from standard input: %w", err)
		}
		text = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	m := reprise.Text(o.role, text)
	if o.content != "" {
		raw := o.content
		if raw == "-" {
			raw = text
		}
		blocks, ok := projection.Content(json.RawMessage(raw))
		if !ok || len(blocks) == 0 || slices.ContainsFunc(blocks, func(b reprise.Block) bool { return b.Type == "" }) {
			return usagef("--content must be a JSON string or a non-empty array of content blocks, each an object with a type")
		}
		if err := checkBlocks(o.role, blocks); err != nil {
			return err
		}
		m.Content = blocks
	}
	m.IsMeta = o.meta
	e, err := o.openWritable(ctx, o.stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	if id, err = resolveID(ctx, e.Store(), "session", id); err != nil {
		return err
	}
	m, err = e.Append(ctx, id, m)
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(o.stdout, struct {
			Session string `json:"session"`
			messageJSON
		}{id, jsonview.NewMessage(m)})
	}
	_, err = fmt.Fprintln(o.stdout, m.UUID)
	return err
}
