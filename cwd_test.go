package reprise_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// TestSessionWorkingDirectoryIsStoredAbsolute checks that a session's cwd is
// resolved when it is created: "" is the process's directory, a relative
// one is made absolute, and one that does not exist is refused unless the
// host allows it.
func TestSessionWorkingDirectoryIsStoredAbsolute(t *testing.T) {
	ctx := t.Context()
	base := t.TempDir()
	if err := os.Mkdir(filepath.Join(base, "project"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(base)
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Files: reprise.NewMemoryFiles()})
	defer e.Close()
	for cwd, want := range map[string]string{"": base, "project": filepath.Join(base, "project"), "./project/..": base} {
		id, err := e.CreateSession(ctx, "", cwd)
		if err != nil {
			t.Fatalf("CreateSession(%q): %v", cwd, err)
		}
		if info, _ := e.Session(ctx, id); info.Cwd != want {
			t.Errorf("CreateSession(%q) stored %q, want %q", cwd, info.Cwd, want)
		}
	}
	for _, bad := range []string{"missing", filepath.Join(base, "missing")} {
		if _, err := e.CreateSession(ctx, "", bad); !errors.Is(err, reprise.ErrNoDirectory) {
			t.Errorf("CreateSession(%q) = %v, want ErrNoDirectory", bad, err)
		}
	}
	a, err := e.Agent(ctx, "ide")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.New(ctx, "", "missing"); !errors.Is(err, reprise.ErrNoDirectory) {
		t.Errorf("New with a missing directory = %v, want ErrNoDirectory", err)
	}

	lax := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Files: reprise.NewMemoryFiles(), AllowMissingCwd: true})
	defer lax.Close()
	id, err := lax.CreateSession(ctx, "", "later")
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := lax.Session(ctx, id); info.Cwd != filepath.Join(base, "later") {
		t.Errorf("allowed missing directory stored as %q", info.Cwd)
	}
}

// TestHooksNeverRunInReprisesDirectory checks that a session with no
// working directory, as an old store may hold, fails its command hooks
// with a clear error instead of running them wherever reprise runs.
func TestHooksNeverRunInReprisesDirectory(t *testing.T) {
	ctx := t.Context()
	store := eventlog.NewMemoryStore()
	rec, err := schema.NewRecord(projection.SessionStream("old"), &schema.SessionCreated{ID: "old"}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, []eventlog.Expect{{Stream: rec.Stream}}, []eventlog.Record{rec}); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	t.Chdir(t.TempDir())
	e := reprise.New(store, reprise.Options{Files: reprise.NewMemoryFiles()})
	defer e.Close()
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: "pwd > " + marker}}); err != nil {
		t.Fatal(err)
	}
	r, err := testkit.Agent(t, e, "ide").Start(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if o := r.StartOutcomes[0]; o.Status != schema.HookFailed || !strings.Contains(o.Error, "no working directory") {
		t.Fatalf("outcome %+v, want a failure naming the missing working directory", o)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the hook ran")
	}
}

// TestTranscriptOnSaveKeepsTheFileCurrent checks Options.TranscriptOnSave:
// every save brings the transcript up to date, with no hook run.
func TestTranscriptOnSaveKeepsTheFileCurrent(t *testing.T) {
	ctx := t.Context()
	files := reprise.NewMemoryFiles()
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Files: files, TranscriptOnSave: true})
	defer e.Close()
	id, err := e.CreateSession(ctx, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"first", "second"} {
		if _, err := e.Append(ctx, id, reprise.Text("user", text)); err != nil {
			t.Fatal(err)
		}
		data, err := files.Read(id + ".jsonl")
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), "\n"); n != i+1 || !strings.Contains(string(data), text) {
			t.Fatalf("after saving %q the transcript has %d lines: %s", text, n, data)
		}
	}
	// Without the option a save writes no transcript: only hooks need one.
	quiet := reprise.NewMemoryFiles()
	other := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Files: quiet})
	defer other.Close()
	id, err = other.CreateSession(ctx, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Append(ctx, id, reprise.Text("user", "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := quiet.Read(id + ".jsonl"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a save without TranscriptOnSave wrote the transcript: %v", err)
	}
}
