package main

import (
	"bytes"
	"strings"
	"testing"
)

// titleSettings writes settings whose SessionStart command hook names the
// session, and whose UserPromptSubmit one names it again when the prompt
// says "rename", blocks with a title when it says "deploy", and answers
// with a title of 60,000 or of 1 MiB characters when it says "long" or
// "huge".
func titleSettings(c *cli) string {
	start := c.writeFile("start.sh", `cat >/dev/null
printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"SessionStart","sessionTitle":"<b>Fix</b> the\u001b[31m build\nnow"}}'
`)
	prompt := c.writeFile("prompt.sh", `input=$(cat)
answer() { printf '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","sessionTitle":"%s"}%s}\n' "$1" "$2"; }
case "$input" in
*rename*) answer "Renamed on a prompt" ;;
*deploy*) answer "Blocked prompt's title" ',"decision":"block","reason":"no deploys"' ;;
*long*) answer "$(head -c 60000 /dev/zero | tr '\0' x)" ;;
*huge*) answer "$(head -c 1048576 /dev/zero | tr '\0' y)" ;;
esac
`)
	return settingsFile(c, "title.json", map[string][]string{"SessionStart": {"sh " + start}, "UserPromptSubmit": {"sh " + prompt}})
}

// sessionTitles returns the title sessions --json gives each session.
func (c *cli) sessionTitles() map[string]string {
	c.t.Helper()
	var list []sessionJSON
	c.okJSON(&list, "sessions")
	titles := map[string]string{}
	for _, s := range list {
		titles[s.ID] = s.Title
	}
	return titles
}

// The title a SessionStart or UserPromptSubmit command hook gives is the
// session's title in reprise sessions: on one line, without control
// characters, at most 200 characters; a blocked prompt's hooks give none,
// and an answer too large to keep gives none either.
func TestSessionsShowTheHooksTitle(t *testing.T) {
	c := newCLI(t)
	flags := []string{"--agent", "ide", "--no-default-settings", "--settings", titleSettings(c)}
	with := func(args ...string) []string { return append(args, flags...) }
	c.ok(with("new", "--id", "s", "--cwd", c.dir)...)
	c.session("other", "an untitled prompt")

	const started = "<b>Fix</b> the [31m build now"
	if got := c.sessionTitles(); got["s"] != started || got["other"] != "an untitled prompt" {
		t.Fatalf("titles after SessionStart = %q", got)
	}
	out := c.ok("sessions")
	if lines := strings.Split(out, "\n"); !strings.HasSuffix(lines[1], "  "+started) || strings.ContainsAny(out, "\x1b\r") {
		t.Fatalf("sessions:\n%q", out)
	}
	c.ok(with("prompt", "please rename the session")...)
	if got := c.sessionTitles()["s"]; got != "Renamed on a prompt" {
		t.Fatalf("title after a renaming prompt = %q", got)
	}
	c.fails(exitFailure, with("prompt", "deploy it")...)
	if got := c.sessionTitles()["s"]; got != "Renamed on a prompt" {
		t.Fatalf("title after a blocked prompt = %q", got)
	}
	c.ok(with("prompt", "a long one")...)
	if got := c.sessionTitles()["s"]; got != strings.Repeat("x", 200) {
		t.Fatalf("title after a long one: %d characters, %q...", len(got), got[:min(len(got), 20)])
	}
	c.ok(with("prompt", "a huge one")...)
	if got := c.sessionTitles()["s"]; got != strings.Repeat("x", 200) {
		t.Fatalf("an answer past the capture limit changed the title: %d characters", len(got))
	}
	// The filters still work beside the title.
	if got := c.sessionIDs("--agent", "ide"); got != "s" {
		t.Fatalf("sessions --agent ide = %q", got)
	}
}

// rm takes a hook's title off the list at once, and the vacuum that
// follows leaves it in no byte of the store.
func TestRmAndVacuumTakeTheHooksTitle(t *testing.T) {
	c := newCLI(t)
	flags := []string{"--agent", "ide", "--no-default-settings", "--settings", titleSettings(c)}
	c.ok(append([]string{"new", "--id", "s", "--cwd", c.dir}, flags...)...)
	c.ok(append([]string{"prompt", "rename it"}, flags...)...)
	c.session("kept", "nothing here")
	title := []byte("Renamed on a prompt")
	if c.sessionTitles()["s"] != string(title) || !bytes.Contains(readFile(t, c.store), title) {
		t.Fatal("the title is not in the list and the store; the test proves nothing")
	}
	c.ok("end", "--agent", "ide", "--reason", "user_exit", "--no-default-settings")
	c.ok("rm", "s")
	if got := c.sessionTitles(); len(got) != 1 || got["kept"] != "nothing here" {
		t.Fatalf("titles after rm = %q", got)
	}
	c.ok("vacuum")
	if bytes.Contains(readFile(t, c.store), title) {
		t.Fatal("the hook's title is still in the store's file after rm and vacuum")
	}
	if out := c.ok("audit"); !strings.HasPrefix(out, "ok:") {
		t.Fatalf("audit after the vacuum: %s", out)
	}
}
