// Command reprise drives and inspects reprise stores from the shell: it
// creates sessions, appends messages, runs startup and runtime restores with
// Claude Code hooks, imports and exports Claude Code transcripts, and shows
// and audits the event log.
//
// Run "reprise --help" for the commands, and see docs/cli.md.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/reprise-dev/reprise/internal/bench"
)

func main() {
	bench.MaybeServeWriter() // when started as a writer of bench's PostgreSQL figures, it never returns
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
	root, a := newRootApp()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if cerr := a.finish(); cerr != nil && err == nil {
		err = fmt.Errorf("close store: %w", cerr)
	}
	if err == nil {
		return exitOK
	}
	code := exitCode(ctx, err)
	printError(stderr, cmd, err, code, wantsJSON(args))
	return code
}
