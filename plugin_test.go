package reprise_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// TestClaudeSettingsRunInstalledPlugins checks that with ClaudeSettings an
// Engine runs the hooks of the plugins the user's settings enable, found
// where Claude Code installs them, and skips a broken one with a warning.
func TestClaudeSettingsRunInstalledPlugins(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	plugin := func(name, hooksJSON string) string {
		dir := filepath.Join(home, ".claude", "plugins", "cache", "market", name, "1.0.0")
		if err := os.MkdirAll(filepath.Join(dir, "hooks"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "hooks", "hooks.json"), []byte(hooksJSON), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	good := plugin("notes", `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"cat \"${CLAUDE_PLUGIN_ROOT}/note.txt\""}]}]}}`)
	if err := os.WriteFile(filepath.Join(good, "note.txt"), []byte("from the plugin"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := plugin("broken", `{"hooks": [`)
	installed := `{"version": 2, "plugins": {
		"notes@market": [{"scope": "user", "installPath": "` + good + `", "version": "1.0.0"}],
		"broken@market": [{"scope": "user", "installPath": "` + broken + `", "version": "1.0.0"}]}}`
	if err := os.WriteFile(hookexec.InstalledPluginsPath(home), []byte(installed), 0o600); err != nil {
		t.Fatal(err)
	}
	settings := `{"enabledPlugins": {"notes@market": true, "broken@market": true}}`
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	var warnings strings.Builder
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{ClaudeSettings: true, Files: reprise.NewMemoryFiles(),
		Logger: slog.New(slog.NewTextHandler(&warnings, nil))})
	defer e.Close()
	testkit.Session(t, e, "s", t.TempDir())
	r, err := testkit.Agent(t, e, "ide").Start(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if r.Context != "from the plugin" || len(r.StartOutcomes) != 1 || r.StartOutcomes[0].Source != "plugin:"+good {
		t.Fatalf("context %q, outcomes %+v; want the plugin's hook", r.Context, r.StartOutcomes)
	}
	if !strings.Contains(warnings.String(), "broken@market") {
		t.Fatalf("no warning names the broken plugin: %q", warnings.String())
	}
}
