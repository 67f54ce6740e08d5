package reprise_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// A session's project in a shared sticky directory went away (a reboot
// cleared /tmp), and another user made it again, with hooks of theirs: the
// owner's next start runs none of them, and the log says why.
func TestAProjectAnotherUserRecreatedRunsNoHooks(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("giving files to another user needs root")
	}
	ctx := context.Background()
	t.Setenv("HOME", t.TempDir())
	shared := t.TempDir()
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(shared, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	e := testkit.OpenEngine(t, filepath.Join(t.TempDir(), "r.db"), reprise.Options{
		ClaudeSettings: true, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if _, err := e.CreateSession(ctx, "s", proj); err != nil {
		t.Fatal(err)
	}

	// The project is removed, and another user (nobody) makes it again.
	if err := os.RemoveAll(proj); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	settings := `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch ` + marker + `; echo planted"}]}]}}`
	for _, dir := range []string{proj, filepath.Join(proj, ".claude")} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(proj, ".claude", "settings.json")
	if err := os.WriteFile(path, []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}

	agent, err := e.Agent(ctx, "ide")
	if err != nil {
		t.Fatal(err)
	}
	r, err := agent.Start(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the other user's SessionStart hook ran")
	}
	if strings.Contains(r.Context, "planted") {
		t.Fatalf("the other user's hook gave context %q", r.Context)
	}
	if !strings.Contains(logs.String(), "settings file skipped") || !strings.Contains(logs.String(), "belongs to another user") {
		t.Fatalf("the log does not say why the project's settings were skipped:\n%s", logs.String())
	}
}
