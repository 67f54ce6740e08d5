// Command reprise drives and inspects reprise stores from the shell: it
// creates sessions, appends messages, runs startup and runtime restores with
// Claude Code hooks, imports and exports Claude Code transcripts, and shows
// and audits the event log.
//
// Run "reprise --help" for the commands, and see docs/cli.md.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/bench"
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
	bench.MaybeServeWriter()  // nor when started as a writer of bench's PostgreSQL figures
	// Warnings logged below the Engine, such as that of a store opened
	// while accepting a damaged meta page, are the command's warnings.
	slog.SetDefault(warnLogger(os.Stderr))
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
	code := exitCode(ctx, err)
	printError(stderr, cmd, err, code, wantsJSON(args))
	return code
}

// exitCode returns the exit code of a command that failed with err, under
// ctx: 130 or 143 when SIGINT or SIGTERM stopped it.
func exitCode(ctx context.Context, err error) int {
	if code, ok := signalExitCode(ctx); ok {
		return code
	}
	var usage usageError
	if errors.As(err, &usage) {
		return exitUsage
	}
	return exitFailure
}

// printError writes err to stderr: as {"error": ..., "code": ...} with
// --json, else as one line prefixed "reprise: ", followed for a usage
// error by where to find the usage of cmd.
func printError(stderr io.Writer, cmd *cobra.Command, err error, code int, asJSON bool) {
	msg := userMessage(err)
	if asJSON {
		_ = printJSON(stderr, struct {
			Error string `json:"error"`
			Code  int    `json:"code"`
		}{msg, code})
		return
	}
	fmt.Fprintln(stderr, "reprise: "+msg)
	if code == exitUsage {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
}

// internalPrefixes are the prefixes the packages of reprise put on their
// errors; the user needs none of them.
var internalPrefixes = []string{"reprise", "eventlog", "boltstore", "pgstore", "hookexec", "schema", "projection", "lifecycle", "fsm"}

// longWord is a run of more than 160 bytes without a space: a value the
// user gave (an id, a flag's value) that a message should not repeat whole.
var longWord = regexp.MustCompile(`\S{161,}`)

// userMessage returns the message of err as plainMessage words it.
func userMessage(err error) string { return plainMessage(err.Error()) }

// plainMessage returns msg, an error's or a warning's, on one line,
// without the names of the packages it went through, and with each long
// word cut to its first 32 bytes or so, an ellipsis and its length; the
// punctuation that ends a word, and the rest of the message, stay.
func plainMessage(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	for i, line := range lines {
		for _, p := range internalPrefixes {
			line = strings.ReplaceAll(strings.TrimPrefix(line, p+": "), ": "+p+": ", ": ")
		}
		lines[i] = line
	}
	msg = strings.Join(lines, "; ")
	return longWord.ReplaceAllStringFunc(msg, func(w string) string {
		word := strings.TrimRight(w, ":;,.)")
		if len(word) <= 40 {
			return w
		}
		w, end := word, w[len(word):]
		cut := 32
		for !utf8.RuneStart(w[cut]) {
			cut--
		}
		return fmt.Sprintf("%s… (%d bytes)%s", w[:cut], len(w), end)
	})
}

// flagError words err, an error parsing a flag, for the user: a bad
// duration says what one looks like, rather than how parsing it failed.
func flagError(err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) && bad.GetFlag().Value.Type() == "duration" {
		return fmt.Errorf("--%s %s: give a duration with a unit, such as 5s, 2m or 1h30m", bad.GetFlag().Name, bad.GetValue())
	}
	return err
}

// wantsJSON reports whether args ask for JSON output, read from the
// arguments themselves so that it works when they do not parse.
func wantsJSON(args []string) bool {
	for _, arg := range args {
		if arg == "--" {
			return false
		}
		if v, ok := strings.CutPrefix(arg, "--json"); ok && (v == "" || v[0] == '=') {
			on, err := strconv.ParseBool(cmp.Or(strings.TrimPrefix(v, "="), "true"))
			return on || err != nil
		}
	}
	return false
}

// app holds the flags every command shares.
type app struct {
	store    string        // --store, "" for the default
	json     bool          // --json
	version  bool          // --version, on the root command
	lockWait time.Duration // --lock-timeout, when lockFlag.Changed
	lockFlag *pflag.Flag
	// warnedSocket is set once a socket that is not the user's own has
	// been reported.
	warnedSocket bool
	// heldBy names the process whose socket openReadOnly read the store
	// through, as eventlog.LockedError.Holder does; "" when it read the
	// store itself.
	heldBy string
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

With --json, results and errors are JSON; an error is
{"error": MESSAGE, "code": EXIT_CODE} on standard error.

Exit codes: 0 ok, 1 the operation failed or the audit found violations,
2 bad usage, 130 and 143 interrupted by SIGINT and SIGTERM (the next
command on the agent finishes a restore left midway).`,
		Example: `  id=$(reprise new --cwd ~/src/app)
  reprise append "$id" --role user "Why does TestRefund flake?"
  reprise start --agent ide "$id"
  reprise log "$id"
  reprise audit`,
		Args: rootArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.version {
				return runVersion(a, cmd.OutOrStdout())
			}
			return cmd.Help()
		},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{flagError(err)} })
	root.PersistentFlags().StringVar(&a.store, "store", "",
		"store: a bbolt file `PATH` or a postgres:// URL (default $REPRISE_STORE, else $XDG_STATE_HOME/reprise/reprise.db)")
	root.PersistentFlags().DurationVar(&a.lockWait, "lock-timeout", 0,
		"how long to wait for a store file another process holds, `DURATION` such as 30s (default $"+lockTimeoutEnv+", else 1s)")
	a.lockFlag = root.PersistentFlags().Lookup("lock-timeout")
	root.Flags().BoolVar(&a.version, "version", false, "print reprise's version and build")
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
		newToolCmd(a),
		newToolResultCmd(a),
		newRmCmd(a),
		newVacuumCmd(a),
		newBenchCmd(a),
		newDemoCmd(a),
		newServeCmd(a),
		newBackupCmd(a),
		newCopyCmd(a),
		newVersionCmd(a),
	)
	// Every command above prints JSON with --json; completion and help
	// print neither, so they do not list it.
	for _, cmd := range append(root.Commands(), root) {
		cmd.Flags().BoolVar(&a.json, "json", false, "print machine-readable JSON (errors too, on standard error)")
	}
	root.InitDefaultCompletionCmd()
	for _, cmd := range root.Commands() {
		if cmd.Name() == "completion" {
			// Runnable, so that an unknown shell is a usage error rather
			// than a silent help.
			cmd.Long += completionHelp
			cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
	usageArgs(root)
	return root
}

// completionHelp tells how to install the completion scripts.
const completionHelp = `
To load completions in every new shell:

  bash:  reprise completion bash > ~/.local/share/bash-completion/completions/reprise
  zsh:   reprise completion zsh > "${fpath[1]}/_reprise"
  fish:  reprise completion fish > ~/.config/fish/completions/reprise.fish

and open a new shell. The scripts complete commands and flags. The bash
script needs the bash-completion package (_get_comp_words_by_ref), such as
apt install bash-completion or brew install bash-completion@2.`

// usageArgs makes the argument checks of cmd and its subcommands, cobra's
// own included (completion), report usage errors.
func usageArgs(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			err := check(c, args)
			var usage usageError
			if err != nil && !errors.As(err, &usage) {
				err = usageError{err}
			}
			return err
		}
	}
	for _, sub := range cmd.Commands() {
		usageArgs(sub)
	}
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
