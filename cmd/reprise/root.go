package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/reprise-dev/reprise/search"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

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
	// hooksReported is set by a command that prints every hook's outcome
	// itself: the Engine then does not warn about the failed ones too.
	hooksReported bool
	// later holds the closing of Engines the command ran agents on, done
	// once it has printed (finish): Close waits for async hooks.
	later []func() error
	// heldBy names the process whose socket openReadOnly read the store
	// through, as eventlog.LockedError.Holder does; "" when it read the
	// store itself.
	heldBy string
	// held is the search index the store's holder serves its readers, made
	// when a writable command opens a bbolt file (held): serve --write
	// searches it too. The Engine closes it.
	held *search.Held
}

// cmdIO is what the run function of every command gets besides its own
// flags: the flags all commands share, and the command's streams.
type cmdIO struct {
	*app
	stdin          io.Reader
	stdout, stderr io.Writer
}

// newCmdIO returns the cmdIO of cmd, run under a.
func newCmdIO(a *app, cmd *cobra.Command) cmdIO {
	return cmdIO{app: a, stdin: cmd.InOrStdin(), stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
}

// Each group of reprise --help lists its commands in the order newRootCmd
// gives them, the order of use, rather than by name. cobra keeps this in a
// package variable, so it is set once here, not by each root command, which
// several goroutines may build at once.
func init() { cobra.EnableCommandSorting = false }

// commandGroups are the headings reprise --help lists its commands under.
var commandGroups = []*cobra.Group{
	{ID: "lifecycle", Title: "Lifecycle (sessions, restores, turns):"},
	{ID: "tools", Title: "Tools (a turn's tool calls):"},
	{ID: "inspect", Title: "Inspect (read the store):"},
	{ID: "store", Title: "Store (move, copy, prune):"},
	{ID: "serve", Title: "Serve (the web view, the demo):"},
}

// newRootCmd returns the reprise command with all its subcommands, each
// running its own run function.
func newRootCmd() *cobra.Command {
	root, _ := newRootApp()
	return root
}

// finish closes what the command left open until it had printed.
func (a *app) finish() error {
	var errs []error
	for _, f := range a.later {
		errs = append(errs, f())
	}
	a.later = nil
	return errors.Join(errs...)
}

// newRootApp returns the root command and the app its commands share.
func newRootApp() (*cobra.Command, *app) {
	a := &app{}
	group := func(id string, cmds ...*cobra.Command) []*cobra.Command {
		for _, cmd := range cmds {
			cmd.GroupID = id
		}
		return cmds
	}
	root := newRoot(a, slices.Concat(
		group("lifecycle",
			newNewCmd(a, nil),
			newAppendCmd(a, nil),
			newStartCmd(a, nil),
			newResumeCmd(a, nil),
			newPromptCmd(a, nil),
			newStopCmd(a, nil),
			newClearCmd(a, nil),
			newCompactCmd(a, nil),
			newForkCmd(a, nil),
			newEndCmd(a, nil),
			newFinishCmd(a, nil),
		),
		group("tools",
			newToolCmd(a, nil),
			newToolResultCmd(a, nil),
			newFireCmd(a, nil),
		),
		group("inspect",
			newSessionsCmd(a, nil),
			newAgentsCmd(a, nil),
			newLogCmd(a, nil),
			newReplayCmd(a, nil),
			newAuditCmd(a, nil),
			newHooksCmd(a, nil),
		),
		group("store",
			newImportCmd(a, nil),
			newExportCmd(a, nil),
			newRmCmd(a, nil),
			newVacuumCmd(a, nil),
			newBackupCmd(a, nil),
			newCopyCmd(a, nil),
			newBenchCmd(a, nil),
		),
		group("serve",
			newServeCmd(a, nil),
			newDemoCmd(a, nil),
		),
		[]*cobra.Command{newVersionCmd(a, nil)},
	)...)
	return root, a
}

// newRoot returns the reprise command over a with the subcommands cmds:
// the flags every command shares, the headings of the groups cmds name,
// completion and the checks of arguments. Tests build it over one command
// whose run function they give.
func newRoot(a *app, cmds ...*cobra.Command) *cobra.Command {
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
				return runVersion(cmd.Context(), &versionOptions{newCmdIO(a, cmd)})
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
	for _, g := range commandGroups {
		if slices.ContainsFunc(cmds, func(cmd *cobra.Command) bool { return cmd.GroupID == g.ID }) {
			root.AddGroup(g)
		}
	}
	root.AddCommand(cmds...)
	// Every command of cmds prints JSON with --json; completion and help
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
	completeIDs(a, root)
	return root
}

// completionHelp tells how to install the completion scripts.
const completionHelp = `
To load completions in every new shell:

  bash:  reprise completion bash > ~/.local/share/bash-completion/completions/reprise
  zsh:   reprise completion zsh > "${fpath[1]}/_reprise"
  fish:  reprise completion fish > ~/.config/fish/completions/reprise.fish

and open a new shell. The scripts complete commands and flags, session
ids (with their titles) and agent names from the store. The bash
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
