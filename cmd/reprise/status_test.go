package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/internal/testkit"
)

// A hook's statusMessage goes to stderr as the hook starts, on one line
// whatever it holds; with --json stderr is left to the error alone.
func TestStatusMessageShownWhileTheHookRuns(t *testing.T) {
	c := newCLI(t)
	settings := testkit.WriteFile(t, filepath.Join(c.dir, "status.json"), `{"hooks": {"SessionStart": [{"hooks": [
		{"type": "command", "command": "echo on main", "statusMessage": "Loading the branch\nforged line"},
		{"type": "command", "command": "true"}]}]}}`)
	c.session("s", "hello")
	r := c.run("start", "s", "--agent", "ide", "--no-default-settings", "--settings", settings)
	if r.code != exitOK || !strings.Contains(r.stderr, "Loading the branch forged line…\n") || strings.Count(r.stderr, "…") != 1 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	c.session("t", "hi")
	r = c.run("--json", "start", "t", "--agent", "ci", "--no-default-settings", "--settings", settings)
	if r.code != exitOK || strings.Contains(r.stderr, "Loading") {
		t.Fatalf("--json: exit %d, stderr %q", r.code, r.stderr)
	}
}
