package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestIDPrefixesNameOneSessionOrAgent(t *testing.T) {
	c := newCLI(t)
	c.session("ab", "in ab")
	c.session("abc1", "in abc1")
	c.session("abd2", "in abd2")
	flags := []string{"--no-default-settings"}

	// An exact id wins over the longer ids it begins.
	if out := c.ok("log", "ab"); !strings.Contains(out, `"in ab"`) || strings.Contains(out, "abc1") {
		t.Fatalf("log ab:\n%s", out)
	}
	// A prefix of one id is that id, for reads and for actions.
	if out := c.ok("replay", "abc"); !strings.HasPrefix(out, "session abc1,") {
		t.Fatalf("replay abc:\n%s", out)
	}
	c.ok("append", "abd", "--role", "assistant", "appended")
	if out := c.ok("log", "abd2"); !strings.Contains(out, `"appended"`) {
		t.Fatalf("append abd did not reach abd2:\n%s", out)
	}
	var exported struct{ Session string }
	c.okJSON(&exported, "export", "abd", "-o", filepath.Join(c.dir, "abd.jsonl"))
	if exported.Session != "abd2" {
		t.Fatalf("export abd exported %q", exported.Session)
	}
	var started restoreJSON
	c.okJSON(&started, append([]string{"start", "--agent", "ide", "abc"}, flags...)...)
	if started.To != "abc1" {
		t.Fatalf("start abc restored %q", started.To)
	}
	var hooks []hookEventJSON
	c.okJSON(&hooks, append([]string{"hooks", "--session", "abd"}, flags...)...)

	// start takes --agent whole: "i" is a new agent, not a prefix of ide.
	c.ok(append([]string{"start", "--agent", "i", "ab"}, flags...)...)
	var resumed restoreJSON
	c.okJSON(&resumed, append([]string{"resume", "--agent", "id", "abd"}, flags...)...)
	if resumed.Agent != "ide" || resumed.From != "abc1" || resumed.To != "abd2" {
		t.Fatalf("resume --agent id abd = %+v", resumed)
	}
	if out := c.ok("log", "--agent", "i"); strings.Contains(out, "abc1") || !strings.Contains(out, "session=ab ") {
		t.Fatalf("log --agent i, an exact name, showed another agent:\n%s", out)
	}

	// An ambiguous prefix is an error that lists the candidates.
	r := c.fails(exitFailure, "log", "a")
	if want := `reprise: session id prefix "a" is ambiguous: it begins the ids of several sessions: ab, abc1, abd2; give more of the id` + "\n"; r.stderr != want {
		t.Fatalf("log a: %q, want %q", r.stderr, want)
	}
	r = c.fails(exitFailure, append([]string{"stop", "--agent", "x"}, flags...)...)
	if !strings.Contains(r.stderr, "agent x has no current session") {
		t.Fatalf("stop --agent x: %s", r.stderr)
	}

	// rm takes whole ids only.
	r = c.fails(exitFailure, "rm", "abc")
	if r.stderr != "reprise: session not found: abc\n" {
		t.Fatalf("rm abc: %q", r.stderr)
	}
	c.ok("replay", "abc1")
}

func TestAnAmbiguousPrefixListsTenCandidates(t *testing.T) {
	c := newCLI(t)
	for i := range 12 {
		c.ok("new", "--id", fmt.Sprintf("x%02d", i))
	}
	r := c.fails(exitFailure, "replay", "x")
	if !strings.Contains(r.stderr, ": x00, x01, x02, x03, x04, x05, x06, x07, x08, x09 and more; give more of the id") {
		t.Fatalf("replay x: %s", r.stderr)
	}
}

func TestEveryCommandSaysSessionNotFoundAlike(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hi")
	c.ok("start", "--agent", "ide", "--no-default-settings", "s")
	for _, args := range [][]string{
		{"log", "zz"}, {"replay", "zz"}, {"export", "zz"}, {"append", "zz", "--role", "user", "x"},
		{"start", "--agent", "ide", "zz"}, {"resume", "--agent", "ide", "zz"}, {"fork", "--agent", "ide", "zz"},
		{"hooks", "--session", "zz"}, {"rm", "zz"},
	} {
		r := c.fails(exitFailure, args...)
		if r.stderr != "reprise: session not found: zz\n" {
			t.Errorf("reprise %s: %q", strings.Join(args, " "), r.stderr)
		}
	}
}
