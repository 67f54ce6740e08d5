package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes.
const (
	exitOK      = 0 // the command did what it was asked
	exitFailure = 1 // the operation failed, or the audit found violations
	exitUsage   = 2 // the command line is wrong
	// exitAlreadyRecorded: tool-result found the call's result recorded
	// before (or the call denied): the result given was not kept; fire
	// found the fire recorded before: its hooks did not run again.
	exitAlreadyRecorded = 3
)

// statusError ends a command with an exit code of its own, after it
// printed what it found.
type statusError struct {
	error
	code int
}

// usageError marks errors of the command line itself; they exit with 2.
type usageError struct{ error }

// usagef returns a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
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
	var status statusError
	if errors.As(err, &status) {
		return status.code
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
// errors; the user needs none of them. A test checks that every package
// whose errors begin with its name is here.
var internalPrefixes = []string{"reprise", "eventlog", "boltstore", "pgstore", "remote", "hookexec", "schema", "projection", "lifecycle", "fsm", "audit", "vacuum", "golden", "turn", "messages", "search"}

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
