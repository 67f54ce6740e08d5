package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
)

// The formats of replay.
const (
	formatText   = "text"
	formatJSON   = "json"
	formatClaude = "claude"
)

// conversationJSON is the output of replay --format json.
type conversationJSON = jsonview.Conversation

// messageJSON is one message of a conversation.
type messageJSON = jsonview.Message

// replayOptions are the options of replay.
type replayOptions struct {
	cmdIO
	session   string // SESSION
	format    string // --format
	formatSet bool   // --format was given
}

// newReplayCmd returns the replay command: a conversation rebuilt from its events.
func newReplayCmd(a *app, runF func(context.Context, *replayOptions) error) *cobra.Command {
	var o replayOptions
	cmd := &cobra.Command{
		Use:   "replay SESSION [--format text|json|claude]",
		Short: "Rebuild a session's conversation from its events",
		Long: `replay reads a session's events, read-only, and rebuilds its conversation
from them alone, as any reader of the log would.

  text    each message with its role, time and blocks, for people (default)
  json    one JSON object: session, cwd, created and messages (uuid,
          parent_uuid, role, meta, time, content); --json selects it
  claude  the Claude Code JSONL transcript, exactly what reprise export
          writes`,
		Example: `  reprise replay "$id"
  reprise replay "$id" --format json | jq '.messages | length'
  reprise replay "$id" --format claude > transcript.jsonl`,
		Args: positional("SESSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.session, o.formatSet = args[0], cmd.Flags().Changed("format")
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runReplay(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.format, "format", formatText, "output `FORMAT`: text, json or claude")
	return cmd
}

// runReplay rebuilds o.session's conversation from its events and prints
// it in o.format.
func runReplay(ctx context.Context, o *replayOptions) (err error) {
	id, format := o.session, o.format
	if !o.formatSet && o.json {
		format = formatJSON
	}
	switch {
	case format != formatText && format != formatJSON && format != formatClaude:
		return usagef("--format must be text, json or claude, not %q", format)
	case format == formatText && o.json:
		return usagef("--json and --format text disagree")
	}
	if err := validID("session", id); err != nil {
		return err
	}
	e, err := o.openReadOnly(ctx, o.stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	if id, err = resolveID(ctx, e.Store(), "session", id); err != nil {
		return err
	}
	if format == formatClaude {
		return e.Export(ctx, id, o.stdout)
	}
	conv := projection.NewConversation(id)
	if err := e.Store().ReadStream(ctx, projection.SessionStream(id), 1, conv.Apply); err != nil {
		return err
	}
	if conv.Head == 0 {
		return fmt.Errorf("%w: %s", reprise.ErrSessionNotFound, id)
	}
	if conv.Deleted {
		return fmt.Errorf("%w: %s", reprise.ErrSessionDeleted, id)
	}
	if format == formatJSON {
		return printJSON(o.stdout, jsonview.NewConversation(conv, conv.Messages))
	}
	printConversation(o.stdout, conv)
	return nil
}

// printConversation writes conv for people: a header per message, then its
// text blocks in full and a one-line summary of every other block.
func printConversation(w io.Writer, conv *projection.Conversation) {
	fmt.Fprintf(w, "session %s, cwd %s, %d message(s)\n", conv.ID, orNone(conv.Cwd), len(conv.Messages))
	for i, m := range conv.Messages {
		role := m.Role
		if m.IsMeta {
			role += " (meta)"
		}
		fmt.Fprintf(w, "\n[%d] %s  %s  %s\n", i+1, role, shortTime(m.Timestamp), m.UUID)
		for _, b := range m.Content {
			if b.Type == "text" && b.Raw == nil {
				fmt.Fprintln(w, strings.TrimRight(b.Text, "\n"))
				continue
			}
			fmt.Fprintf(w, "[%s] %s\n", b.Type, projection.Clip(string(b.Raw), 200))
		}
	}
}
