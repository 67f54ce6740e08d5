package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/hookexec"
)

// TestHooksListsInstalledPlugins checks that reprise hooks finds the hooks
// of an installed plugin the user's settings enable, and names it.
func TestHooksListsInstalledPlugins(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	dir := filepath.Join(home, ".claude", "plugins", "cache", "market", "notes", "1.0.0")
	if err := os.MkdirAll(filepath.Join(dir, "hooks"), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(path, data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "hooks", "hooks.json"), `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"cat ${CLAUDE_PLUGIN_ROOT}/note"}]}]}}`)
	write(hookexec.InstalledPluginsPath(home), `{"version":2,"plugins":{"notes@market":[{"scope":"user","installPath":"`+dir+`"}]}}`)
	write(filepath.Join(home, ".claude", "settings.json"), `{"enabledPlugins":{"notes@market":true}}`)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"hooks", "--event", "SessionStart", "--source", "startup"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "cat "+dir+"/note") || !strings.Contains(stdout.String(), "plugin:"+dir) {
		t.Fatalf("the installed plugin's hook is not listed with its origin:\n%s", stdout.String())
	}
}
