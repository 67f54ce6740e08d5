// Command reprise drives and inspects reprise stores from the shell: it
// creates sessions, appends messages, runs startup and runtime restores with
// Claude Code hooks, imports and exports Claude Code transcripts, and shows
// and audits the event log.
//
// Run "reprise --help" for the commands, and see docs/cli.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/reprise-dev/reprise/hookexec"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes.
const (
	exitOK      = 0 // the command did what it was asked
	exitFailure = 1 // the operation failed, or the audit found violations
	exitUsage   = 2 // the command line is wrong
)

// usageError marks errors of the command line itself; they exit with 2.
type usageError struct{ error }

// usagef returns a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func main() {
	hookexec.MaybeSupervise() // when started as a hook's supervisor, it never returns
	ctx, signals := notifySignals(context.Background())
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	signals.stop()
	os.Exit(signals.exitCode(code))
}

// run executes the command line args and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	// Library errors start with their package's name; say it once.
	msg := strings.ReplaceAll(err.Error(), ": reprise: ", ": ")
	fmt.Fprintln(stderr, "reprise: "+strings.TrimPrefix(msg, "reprise: "))
	var usage usageError
	if errors.As(err, &usage) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	return exitFailure
}

// app holds the global flags every command shares.
type app struct {
	store    string        // --store, "" for the default
	json     bool          // --json
	lockWait time.Duration // --lock-timeout, when lockFlag.Changed
	lockFlag *pflag.Flag
	// warnedSocket is set once a socket that is not the user's own has
	// been reported.
	warnedSocket bool
}

// newRootCmd returns the reprise command with all its subcommands.
func newRootCmd() *cobra.Command {
	a := &app{}
	root := &cobra.Command{
		Use:   "reprise",
		Short: "Crash-safe session lifecycle for agent hosts",
		Long: `reprise keeps agent conversations in an append-only event log (a bbolt
file) and runs Claude Code hooks (SessionStart and SessionEnd when an agent
restores a session, UserPromptSubmit, PreCompact and Stop around its turns),
recording every step so that no hook runs twice for one restore, even
across a crash.

The store is --store, else $REPRISE_STORE, else
$XDG_STATE_HOME/reprise/reprise.db (~/.local/state/reprise/reprise.db when
XDG_STATE_HOME is unset): a bbolt file, or a PostgreSQL database given as a
postgres:// URL. Commands that only read open it read-only, so any
number of them can run at once; a command that writes holds it alone, and
meanwhile serves its reads on a socket beside it, through which the
commands that read go on working. A command that cannot get the store
waits --lock-timeout, then names the process that holds it.

Exit codes: 0 ok, 1 the operation failed or the audit found violations,
2 bad usage, 130 and 143 interrupted by SIGINT and SIGTERM (the next
command on the agent finishes a restore left midway).`,
		Example: `  id=$(reprise new --cwd ~/src/app)
  reprise append "$id" --role user "Why does TestRefund flake?"
  reprise start --agent ide "$id"
  reprise log "$id"
  reprise audit`,
		Args:          rootArgs,
		RunE:          func(*cobra.Command, []string) error { return usagef("missing command") },
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&a.store, "store", "",
		"store: a bbolt file `PATH` or a postgres:// URL (default $REPRISE_STORE, else $XDG_STATE_HOME/reprise/reprise.db)")
	root.PersistentFlags().BoolVar(&a.json, "json", false, "print machine-readable JSON")
	root.PersistentFlags().DurationVar(&a.lockWait, "lock-timeout", 0,
		"how long to wait for a store file another process holds, `DURATION` such as 30s (default $"+lockTimeoutEnv+", else 1s)")
	a.lockFlag = root.PersistentFlags().Lookup("lock-timeout")
	root.AddCommand(
		newNewCmd(a),
		newAppendCmd(a),
		newStartCmd(a),
		newResumeCmd(a),
		newSessionsCmd(a),
		newLogCmd(a),
		newReplayCmd(a),
		newAuditCmd(a),
		newImportCmd(a),
		newExportCmd(a),
		newHooksCmd(a),
		newClearCmd(a),
		newCompactCmd(a),
		newForkCmd(a),
		newEndCmd(a),
		newStopCmd(a),
		newFinishCmd(a),
		newPromptCmd(a),
		newBenchCmd(a),
		newDemoCmd(a),
		newBackupCmd(a),
		newCopyCmd(a),
	)
	return root
}

// rootArgs rejects an unknown command, suggesting close ones.
func rootArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageError{errors.New(msg)}
}

// positional returns an argument check that requires exactly the named
// arguments, reporting a missing or extra one as a usage error.
func positional(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return usagef("missing %s", strings.Join(names[len(args):], " and "))
		case len(args) > len(names):
			return usagef("unexpected argument %q", args[len(names)])
		}
		return nil
	}
}

// printJSON writes v as one line of JSON, leaving <, > and & as they are.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
