package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spf13/cobra"
)

// parse runs reprise args over the one command newCmd makes, with a run
// function that only keeps the options it is given, and returns them, or
// the error of the command line.
func parse[O any](t *testing.T, newCmd func(*app, func(context.Context, *O) error) *cobra.Command, args ...string) (*O, error) {
	t.Helper()
	a := &app{}
	var got *O
	root := newRoot(a, newCmd(a, func(_ context.Context, o *O) error {
		got = o
		return nil
	}))
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	if err := root.Execute(); err != nil {
		return nil, err
	}
	if got == nil {
		t.Fatalf("reprise %v: the run function was not called", args)
	}
	return got, nil
}

// mustParse is parse for a command line that must parse.
func mustParse[O any](t *testing.T, newCmd func(*app, func(context.Context, *O) error) *cobra.Command, args ...string) *O {
	t.Helper()
	o, err := parse(t, newCmd, args...)
	if err != nil {
		t.Fatalf("reprise %v: %v", args, err)
	}
	return o
}

func TestFlagsReachTheRunFunctionWithoutRunningIt(t *testing.T) {
	store := filepath.Join(t.TempDir(), "never.db")

	start := mustParse(t, newStartCmd, "start", "--store", store, "--json", "--agent", "ide", "--prompt", "fix it", "--resume", "--settings", "a.json", "s1")
	if start.session != "s1" || start.agent != "ide" || start.prompt != "fix it" || !start.resume ||
		!reflect.DeepEqual(start.hooks.settings, []string{"a.json"}) || !start.json || start.store != store {
		t.Errorf("start: options = %+v", *start)
	}
	resume := mustParse(t, newResumeCmd, "restore", "--agent", "me", "s2")
	if resume.session != "s2" || resume.agent != "me" || resume.json {
		t.Errorf("restore: options = %+v", *resume)
	}
	log := mustParse(t, newLogCmd, "log", "--agent", "ide")
	if log.agent != "ide" || log.bySession {
		t.Errorf("log --agent: options = %+v", *log)
	}
	export := mustParse(t, newExportCmd, "export", "s1", "-o", "out.jsonl")
	if export.session != "s1" || export.output != "out.jsonl" {
		t.Errorf("export: options = %+v", *export)
	}
	imp := mustParse(t, newImportCmd, "import", "--id", "", "--strict", "-")
	if imp.file != "-" || !imp.idSet || imp.id != "" || !imp.strict || imp.resume {
		t.Errorf("import: options = %+v", *imp)
	}
	rm := mustParse(t, newRmCmd, "rm", "--dry-run", "a", "b")
	if !reflect.DeepEqual(rm.sessions, []string{"a", "b"}) || !rm.dryRun {
		t.Errorf("rm: options = %+v", *rm)
	}
	backup := mustParse(t, newBackupCmd, "backup", "--force", "b.db")
	if backup.file != "b.db" || !backup.force {
		t.Errorf("backup: options = %+v", *backup)
	}
	copied := mustParse(t, newCopyCmd, "copy", "--to", "c.db")
	if copied.to != "c.db" {
		t.Errorf("copy: options = %+v", *copied)
	}
	if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("parsing touched the store: %v", err)
	}
}

func TestUsageErrorsComeBeforeTheRunFunction(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  func(t *testing.T) error
	}{
		{"copy without --to", func(t *testing.T) error { _, err := parse(t, newCopyCmd, "copy"); return err }},
		{"start without a session", func(t *testing.T) error { _, err := parse(t, newStartCmd, "start", "--agent", "ide"); return err }},
		{"sessions with an argument", func(t *testing.T) error { _, err := parse(t, newSessionsCmd, "sessions", "x"); return err }},
		{"a bad duration", func(t *testing.T) error {
			_, err := parse(t, newStartCmd, "--lock-timeout", "5", "start", "--agent", "ide", "s")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var usage usageError
			if err := tc.err(t); !errors.As(err, &usage) {
				t.Fatalf("err = %v, want a usage error", err)
			}
		})
	}
}
