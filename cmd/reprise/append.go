package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/jsonview"
)

// appendOptions are the options of append.
type appendOptions struct {
	session string // SESSION
	text    string // TEXT, "-" for standard input
	role    string // --role
	meta    bool   // --meta
}

// newAppendCmd returns the append command: add a message to a session.
func newAppendCmd(a *app) *cobra.Command {
	var o appendOptions
	cmd := &cobra.Command{
		Use:   "append SESSION --role user|assistant [--meta] TEXT",
		Short: "Append a message to a session, durably",
		Long: `append writes one text message to the end of a session and prints its
uuid once it is on disk. TEXT "-" reads the text from standard input, without
its final newline.

--meta marks a message the model sees but the user did not type, as hook
context is.`,
		Example: `  reprise append "$id" --role user "Why does TestRefund flake?"
  reprise append "$id" --role assistant "It races on the shared ledger."
  git diff | reprise append "$id" --role user --meta -`,
		Args: positional("SESSION", "TEXT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.session, o.text = args[0], args[1]
			return runAppend(cmd.Context(), a, o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&o.role, "role", "", "who wrote the message, `ROLE` user or assistant (required)")
	cmd.Flags().BoolVar(&o.meta, "meta", false, "mark the message as meta: seen by the model, not typed by the user")
	return cmd
}

// runAppend appends one message to o.session and prints its uuid.
func runAppend(ctx context.Context, a *app, o appendOptions, stdin io.Reader, stdout, stderr io.Writer) (err error) {
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
	if text == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("read the text from standard input: %w", err)
		}
		text = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	e, err := a.openWritable(ctx, stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	m := reprise.Text(o.role, text)
	m.IsMeta = o.meta
	m, err = e.Append(ctx, id, m)
	if err != nil {
		return err
	}
	if a.json {
		return printJSON(stdout, struct {
			Session string `json:"session"`
			messageJSON
		}{id, jsonview.NewMessage(m)})
	}
	_, err = fmt.Fprintln(stdout, m.UUID)
	return err
}
