package reprise_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// TestEachSessionStartRunHasItsOwnEnvFile checks that every SessionStart
// run of one session gets a CLAUDE_ENV_FILE of its own, so that two agents
// starting a session at once never write one file, and that the run's
// record names the file its hooks were given and holds what they wrote.
func TestEachSessionStartRunHasItsOwnEnvFile(t *testing.T) {
	ctx := context.Background()
	e, path := testkit.NewEngine(t, reprise.Options{})
	testkit.Session(t, e, "s", "", "hello")
	testkit.Session(t, e, "t", "", "hello")
	hook := `echo "export RUN=$$" >> "$CLAUDE_ENV_FILE"; printf %s "$CLAUDE_ENV_FILE"`
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: hook}}); err != nil {
		t.Fatal(err)
	}
	a := testkit.Agent(t, e, "ide")
	first, err := a.Start(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Restore(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	second, err := a.Restore(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*reprise.Transition{first, second} {
		if r.EnvFile == "" || !strings.Contains(r.Context, r.EnvFile) || !strings.HasPrefix(r.Env, "export RUN=") {
			t.Fatalf("restore %s recorded env file %q and env %q; its hook was given %q", r.ID, r.EnvFile, r.Env, r.Context)
		}
	}
	if first.EnvFile == second.EnvFile || first.Env == second.Env {
		t.Fatalf("two runs shared the env file %s: %q, %q", first.EnvFile, first.Env, second.Env)
	}
	// Its content recorded, each run's file is gone: none piles up.
	for _, r := range []*reprise.Transition{first, second} {
		if _, err := os.Lstat(r.EnvFile); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("env file %s left after the run: %v", r.EnvFile, err)
		}
	}
	// The record survives a reopen: it is in the log, not in the Engine.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	h := testkit.Agent(t, testkit.OpenEngine(t, path, reprise.Options{}), "ide").History()
	if got := h[len(h)-1].EnvFile; got != second.EnvFile {
		t.Fatalf("the log names env file %q, want %q", got, second.EnvFile)
	}
}

// TestHostileEnvFiles checks what a hook may do to its CLAUDE_ENV_FILE:
// replace it with a link to /dev/zero or a FIFO, or write 50 MB to it.
// Nothing hangs or runs out of memory, the Engine warns, nothing past
// MaxFileRead is recorded, and later runs of the session work.
func TestHostileEnvFiles(t *testing.T) {
	for name, hook := range map[string]string{
		"link to /dev/zero": `rm "$CLAUDE_ENV_FILE" && ln -s /dev/zero "$CLAUDE_ENV_FILE"`,
		"FIFO":              `rm "$CLAUDE_ENV_FILE" && mkfifo "$CLAUDE_ENV_FILE"`,
		"50 MB":             `head -c 50000000 /dev/zero | tr '\0' x >> "$CLAUDE_ENV_FILE"`,
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var logged bytes.Buffer
			e, path := testkit.NewEngine(t, reprise.Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			testkit.Session(t, e, "s", "", "hello")
			testkit.Session(t, e, "t", "", "hello")
			if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: hook}}); err != nil {
				t.Fatal(err)
			}
			before := fileSize(t, path)
			a := testkit.Agent(t, e, "ide")
			for i, id := range []string{"s", "t", "s"} {
				restore := a.Restore
				if i == 0 {
					restore = func(ctx context.Context, id string) (*reprise.Transition, error) { return a.Start(ctx, id) }
				}
				r, err := restore(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if r.Env != "" || r.StartOutcomes[0].Status != "ok" {
					t.Fatalf("restore of %s recorded %d bytes of env; outcome %+v", id, len(r.Env), r.StartOutcomes[0])
				}
			}
			if n := strings.Count(logged.String(), "CLAUDE_ENV_FILE not read"); n != 3 {
				t.Errorf("%d warnings, want one per run:\n%s", n, logged.String())
			}
			if grown := fileSize(t, path) - before; grown > reprise.MaxFileRead {
				t.Errorf("the store grew by %d bytes", grown)
			}
		})
	}
}

// fileSize returns the size of the file at path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// TestVacuumRemovesEnvFilesOfTheDeletedSessionOnly checks that the env
// files of every run of a deleted session go with it, the one file of an
// older store too, and that a session whose id continues with ".env-"
// keeps its files.
func TestVacuumRemovesEnvFilesOfTheDeletedSessionOnly(t *testing.T) {
	ctx := context.Background()
	files := reprise.NewMemoryFiles()
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Files: files})
	testkit.Session(t, e, "a", "", "one")
	testkit.Session(t, e, "a.env-b", "", "two")
	gone := []string{"a.jsonl", "a.env", "a.env-1f0c2a9e-run1", "a.env-7d3b-run2"}
	kept := []string{"a.env-b.env-run3", "a.env-b.jsonl"} // in name order
	for _, name := range append(gone, kept...) {
		if err := files.Replace(name, func(io.Writer) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	if left, err := files.List(""); err != nil || !slices.Equal(left, kept) {
		t.Fatalf("files left: %q, %v; want %q", left, err, kept)
	}
}
