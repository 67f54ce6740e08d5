package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// complete returns the candidates reprise offers for args, the last one
// being the word under completion, without the directive line.
func (c *cli) complete(args ...string) string {
	c.t.Helper()
	out := c.ok(append([]string{"__complete"}, args...)...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if last := lines[len(lines)-1]; last != ":4" {
		c.t.Fatalf("completing %q: directive %q, want :4 (no files)", args, last)
	}
	return strings.Join(lines[:len(lines)-1], "\n")
}

func TestCompletionOffersSessionsAndAgents(t *testing.T) {
	c := newCLI(t)
	c.session("abc1", "Why does TestRefund flake?")
	c.session("abd2")
	c.session("zed")
	flags := []string{"--no-default-settings"}
	c.ok(append([]string{"start", "--agent", "ide", "abc1"}, flags...)...)
	c.ok(append([]string{"start", "--agent", "cli", "zed"}, flags...)...)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"log", "ab"}, "abc1\tWhy does TestRefund flake?\nabd2"},
		{[]string{"log", "abc1", ""}, ""}, // log takes one SESSION
		{[]string{"resume", "--agent", "ide", "z"}, "zed"},
		{[]string{"resume", "--agent", ""}, "cli\nide"},
		{[]string{"stop", "--agent", "i"}, "ide"},
		{[]string{"sessions", "--agent", ""}, "cli\nide"},
		{[]string{"hooks", "--session", "ze"}, "zed"},
		{[]string{"rm", "abc1", "ab"}, "abd2"}, // not the one given already
		{[]string{"export", "nothing"}, ""},
		{[]string{"replay", "--format", ""}, "text\njson\nclaude"},
		{[]string{"end", "--agent", "ide", "--reason", "user"}, "user_exit"},
		{[]string{"append", "--role", "a"}, "assistant"},
		{[]string{"hooks", "--event", "PreT"}, "PreToolUse"},
	} {
		if got := c.complete(tc.args...); got != tc.want {
			t.Errorf("completing %q = %q, want %q", tc.args, got, tc.want)
		}
	}

	// --cwd offers directories only.
	if out := c.ok("__complete", "new", "--cwd", ""); !strings.HasSuffix(out, ":16\n") {
		t.Errorf("completing --cwd: %q, want the directive to filter directories (:16)", out)
	}

	// Where there is no store, there is nothing to offer, and completing
	// creates none.
	none := filepath.Join(c.dir, "none.db")
	if got := c.complete("--store", none, "log", ""); got != "" {
		t.Errorf("completing on no store = %q", got)
	}
	if _, err := os.Stat(none); err == nil {
		t.Error("completing created a store")
	}
}
