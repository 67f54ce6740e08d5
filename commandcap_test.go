package reprise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// settingsWith writes a project settings file in dir with one SessionStart
// command hook.
func settingsWith(t *testing.T, dir, command string) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"hooks": map[string]any{
		"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": command}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, filepath.Join(dir, ".claude", "settings.json"), string(b))
}

// TestLongHookCommands checks the caps on hook commands: a command too long
// for the system to run is refused where it is configured, warned about
// once however many restores read it, and never repeated whole; a long one
// that can run is recorded by a digest, not whole at every restore.
func TestLongHookCommands(t *testing.T) {
	ctx := context.Background()
	testkit.Home(t)
	var logged bytes.Buffer
	path := filepath.Join(t.TempDir(), "r.db")
	e := testkit.OpenEngine(t, path, reprise.Options{ClaudeSettings: true,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	tooLong, long := t.TempDir(), t.TempDir()
	filler := strings.Repeat("x", hookexec.MaxCommandSize)
	settingsWith(t, tooLong, ": "+filler+"; echo never")
	// The longest command allowed runs, under the supervisor's gate.
	settingsWith(t, long, ": "+filler[:hookexec.MaxCommandSize-len(": ; echo ran")]+"; echo ran")
	testkit.Session(t, e, "too-long", tooLong, "hello")
	testkit.Session(t, e, "long", long, "hello")
	a := testkit.Agent(t, e, "ide")
	for range 3 {
		if r, err := a.Start(ctx, "too-long"); err != nil || len(r.StartOutcomes) != 0 {
			t.Fatalf("start with a command too long to run: %v, %+v", err, r)
		}
	}
	if n := strings.Count(logged.String(), "settings file skipped"); n != 1 || logged.Len() > 2000 {
		t.Fatalf("%d warnings in %d bytes of log, want one short one: %.300s", n, logged.Len(), logged.String())
	}
	r, err := a.Start(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.StartOutcomes) != 1 || r.StartOutcomes[0].Status != "ok" || !strings.Contains(r.Context, "ran") {
		t.Fatalf("a long command that can run: %+v", r)
	}
	for _, name := range append(r.StartHooks, r.StartOutcomes[0].Name) {
		if len(name) > 1024 || !strings.Contains(name, "sha256 ") {
			t.Fatalf("recorded the hook as %d bytes: %.100q", len(name), name)
		}
	}
	// The store holds the digest, not the 128 KiB command.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || bytes.Contains(data, []byte(filler[:4096])) {
		t.Fatal("the whole command is in the store")
	}
}
