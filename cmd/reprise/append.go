package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
)

// newAppendCmd returns the append command: add a message to a session.
func newAppendCmd(a *app) *cobra.Command {
	var role string
	var meta bool
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
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			id, text := args[0], args[1]
			if err := validID("session", id); err != nil {
				return err
			}
			if role != "user" && role != "assistant" {
				return usagef("--role must be user or assistant, not %q", role)
			}
			if text == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("read the text from standard input: %w", err)
				}
				text = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
			}
			e, err := a.openWritable(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeEngine(e, &err)
			m := reprise.Text(role, text)
			m.IsMeta = meta
			m, err = e.Append(cmd.Context(), id, m)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), struct {
					Session string `json:"session"`
					messageJSON
				}{id, newMessageJSON(m)})
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), m.UUID)
			return err
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "who wrote the message, `ROLE` user or assistant (required)")
	cmd.Flags().BoolVar(&meta, "meta", false, "mark the message as meta: seen by the model, not typed by the user")
	return cmd
}
