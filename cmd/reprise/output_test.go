package main

import (
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/internal/testkit"
)

// The reports of the lifecycle commands, as a person reads them.

func TestStopWithoutHooksHasAHeading(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hi")
	flags := []string{"--agent", "ide", "--no-default-settings"}
	c.ok(append([]string{"start"}, append(flags, "s")...)...)
	out := c.ok(append([]string{"stop"}, flags...)...)
	if want := "Stop hooks of agent ide:\n  none\nthe agent may stop\n"; out != want {
		t.Fatalf("stop printed %q, want %q", out, want)
	}
}

func TestStartSaysWhenNoHookGaveContext(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hi")
	r := c.run("start", "--agent", "ide", "--no-default-settings", "s")
	if r.code != exitOK || r.stdout != "" {
		t.Fatalf("start: exit %d, stdout %q", r.code, r.stdout)
	}
	if r.stderr != "reprise: no SessionStart hook gave context; nothing was injected into s\n" {
		t.Fatalf("start: stderr %q", r.stderr)
	}
}

func TestAFailedHookIsToldOnceAndReadably(t *testing.T) {
	c := newCLI(t)
	c.session("a", "hi")
	c.session("b", "hi")
	settings := c.writeFile("hooks.json", testkit.Settings(t, []string{"echo ctx", "echo oops >&2; exit 3"}, []string{"exit 4"}))
	flags := []string{"--agent", "ide", "--no-default-settings", "--settings", settings}

	// start prints the context alone: the failure is one warning.
	r := c.run(append([]string{"start"}, append(flags, "a")...)...)
	want := `reprise: warning: SessionStart hook "echo oops >&2; exit 3": failed, exit status 3` + "\n"
	if r.code != exitOK || r.stdout != "ctx\n" || r.stderr != want {
		t.Fatalf("start: exit %d\nstdout %q\nstderr %q\nwant stderr %q", r.code, r.stdout, r.stderr, want)
	}
	// With --json the outcome is in the JSON: no warning.
	if r := c.run(append([]string{"start", "--json"}, append(flags, "a")...)...); r.code != exitOK || r.stderr != "" {
		t.Fatalf("start --json: exit %d, stderr %q", r.code, r.stderr)
	}
	// resume lists every hook in its report: nothing on standard error.
	r = c.run(append([]string{"resume"}, append(flags, "b")...)...)
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("resume: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, line := range []string{"  failed ", "exit 4: exit status 4", "echo oops >&2; exit 3: exit status 3; stderr \"oops\""} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("resume's report lacks %q:\n%s", line, r.stdout)
		}
	}
}
