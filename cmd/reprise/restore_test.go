package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/internal/testkit"
)

func TestResumeRunsCommandHooksFromSettings(t *testing.T) {
	c := newCLI(t)
	endLog := filepath.Join(c.dir, "end.log")
	settings := c.writeFile("hooks.json", testkit.Settings(t,
		[]string{testkit.Script(t, "context.sh"), testkit.Script(t, "fail.sh")},
		[]string{testkit.Script(t, "record.sh") + " " + endLog}))
	c.session("a", "hello")
	c.session("b", "hi")
	flags := []string{"--agent", "ide", "--settings", settings, "--no-default-settings"}

	out := c.ok(append([]string{"start"}, append(flags, "a")...)...)
	if out != "hook saw session a, source startup, in "+c.dir+"\n" {
		t.Fatalf("start printed %q", out)
	}

	r := c.run(append([]string{"resume"}, append(flags, "b")...)...)
	if r.code != exitOK {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"agent ide: resume restore a -> b",
		"SessionEnd hooks on a (reason resume):\n  ok ",
		"record.sh " + endLog + "  (" + settings + ")",
		"SessionStart hooks on b (source resume):\n  ok ",
		"context.sh  (" + settings + ")",
		"failed ",
		"fail.sh: exit status 3; stderr \"no context today\"",
		"injected context as message ",
		"  hook saw session b, source resume, in " + c.dir + "\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("resume output lacks %q:\n%s", want, r.stdout)
		}
	}
	// The report lists the failed hook; standard error does not tell it
	// again.
	if strings.Contains(r.stderr, "fail.sh") {
		t.Errorf("the failed hook is reported twice, on standard error too: %s", r.stderr)
	}
	ended, err := os.ReadFile(endLog)
	if err != nil || !strings.Contains(string(ended), `"session_id":"a"`) || !strings.Contains(string(ended), `"reason":"resume"`) {
		t.Fatalf("SessionEnd hook input: %s %v", ended, err)
	}

	// The context is in b, as the last message, meta.
	var conv conversationJSON
	c.okJSON(&conv, "replay", "b")
	last := conv.Messages[len(conv.Messages)-1]
	if text := last.Content[0].(map[string]any)["text"].(string); !last.Meta ||
		!strings.Contains(text, "<system-reminder>") || !strings.Contains(text, "hook saw session b, source resume") {
		t.Fatalf("last message of b = %+v", last)
	}

	// Back to a, as JSON.
	var rep restoreJSON
	c.okJSON(&rep, append([]string{"resume"}, append(flags, "a")...)...)
	if !rep.Restored || rep.From != "b" || rep.To != "a" || rep.Source != "resume" || rep.RestoreID == "" ||
		rep.SessionEnd == nil || len(rep.SessionEnd.Hooks) != 1 || rep.SessionEnd.Hooks[0].Status != "ok" ||
		len(rep.SessionStart.Hooks) != 2 || rep.SessionStart.Hooks[1].Status != "failed" || rep.SessionStart.Hooks[1].ExitCode != 3 ||
		rep.SessionStart.Hooks[0].Source != settings || rep.Context != "hook saw session a, source resume, in "+c.dir ||
		rep.Injected == "" || !validTime(rep.Began) || !validTime(rep.Ended) {
		t.Fatalf("resume --json = %+v", rep)
	}
}

func TestResumeNoOpAndFailures(t *testing.T) {
	c := newCLI(t)
	c.session("a")
	c.session("b")
	// No current session yet: resume needs start first.
	r := c.fails(exitFailure, "resume", "--agent", "ide", "a")
	if !strings.Contains(r.stderr, "no current session") || !strings.Contains(r.stderr, "reprise start") {
		t.Fatalf("stderr = %s", r.stderr)
	}
	// Starting a missing session fails and records nothing.
	r = c.fails(exitFailure, "start", "--agent", "ide", "nope")
	if !strings.Contains(r.stderr, "session not found: nope") {
		t.Fatalf("stderr = %s", r.stderr)
	}
	if out := c.ok("start", "--agent", "ide", "a"); out != "" {
		t.Fatalf("start without hooks printed %q", out)
	}
	if out := c.ok("resume", "--agent", "ide", "a"); out != "agent ide is already on session a; nothing to do\n" {
		t.Fatalf("no-op resume printed %q", out)
	}
	var rep restoreJSON
	c.okJSON(&rep, "resume", "--agent", "ide", "a")
	if rep.Restored || rep.To != "a" {
		t.Fatalf("no-op resume --json = %+v", rep)
	}
	r = c.fails(exitFailure, "resume", "--agent", "ide", "nope")
	if !strings.Contains(r.stderr, "session not found: nope") {
		t.Fatalf("stderr = %s", r.stderr)
	}
	out := c.ok("resume", "--agent", "ide", "b")
	if !strings.Contains(out, "SessionEnd hooks on a (reason resume):\n  none\n") || !strings.Contains(out, "no context injected") {
		t.Fatalf("resume without hooks:\n%s", out)
	}
	// The failed restores left no trace: the log holds the startup restore
	// and one resume.
	var n int
	for line := range strings.Lines(c.ok("--json", "log", "--agent", "ide")) {
		var ev eventJSON
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 4+7 {
		t.Fatalf("agent log has %d events, want 11", n)
	}
}

func TestStartJSONAndDefaultSettings(t *testing.T) {
	c := newCLI(t)
	project := filepath.Join(c.dir, "project")
	c.mkdir("project")
	c.ok("new", "--id", "p", "--cwd", project)
	// User settings in HOME, project settings in the session's cwd.
	testkit.WriteFile(t, filepath.Join(c.home, ".claude", "settings.json"), testkit.Settings(t, []string{"echo from-user"}, nil))
	c.writeFile("project/.claude/settings.json", testkit.Settings(t, []string{"echo from-project"}, nil))
	c.writeFile("project/.claude/settings.local.json", `{"hooks": {"SessionStart": [`) // broken

	var rep restoreJSON
	r := c.runIn(nil, "--json", "start", "--agent", "ide", "p")
	if r.code != exitOK {
		t.Fatalf("start: %d %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.stderr, "reprise: warning: settings file skipped") ||
		!strings.Contains(r.stderr, "invalid configuration: "+filepath.Join(project, ".claude", "settings.local.json")) {
		t.Errorf("no warning about the broken file: %s", r.stderr)
	}
	if !rep.Restored || rep.Source != "startup" || rep.SessionEnd != nil || rep.Context != "from-user\nfrom-project" ||
		rep.SessionStart.Hooks[0].Source != filepath.Join(c.home, ".claude", "settings.json") {
		t.Fatalf("start --json = %+v", rep)
	}
	if out := c.ok("start", "--agent", "other", "--no-default-settings", "p"); out != "" {
		t.Fatalf("--no-default-settings still ran hooks: %q", out)
	}
}

func TestHooksListsWhatWouldRun(t *testing.T) {
	c := newCLI(t)
	project := filepath.Join(c.dir, "project")
	c.mkdir("project")
	c.ok("new", "--id", "p", "--cwd", project)
	user := testkit.WriteFile(t, filepath.Join(c.home, ".claude", "settings.json"), testkit.Settings(t, []string{"echo user"}, []string{"echo bye"}))
	proj := c.writeFile("project/.claude/settings.json", testkit.Settings(t, []string{"echo project", "echo user"}, nil))
	extra := c.writeFile("extra.json", `{"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo startup-only", "timeout": 2.5}]}]}}`)
	plugin := filepath.Join(c.dir, "plugin")
	c.writeFile("plugin/hooks/hooks.json", `{"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/end.sh"}]}]}}`)

	var events []hookEventJSON
	c.okJSON(&events, "hooks", "--session", "p", "--settings", extra, "--plugin-dir", plugin)
	type row struct{ name, source string }
	got := map[string][]row{}
	for _, ev := range events {
		for _, h := range ev.Hooks {
			got[ev.Event] = append(got[ev.Event], row{h.Name, h.Source})
		}
	}
	wantStart := []row{{"echo user", user}, {"echo project", proj}}
	wantEnd := []row{{"echo bye", user}, {plugin + "/end.sh", "plugin:" + plugin}}
	// Every event reprise runs, in lifecycle order; nothing else is configured.
	if len(events) != 9 || events[0].Source != "resume" || events[8].Reason != "resume" || events[7].Trigger != "manual" ||
		events[2].Tool != "*" || !slices.Equal(got["SessionStart"], wantStart) || !slices.Equal(got["SessionEnd"], wantEnd) {
		t.Fatalf("hooks --json = %+v", events)
	}
	if events[8].Hooks[0].TimeoutMS != 1500 || events[0].Hooks[0].TimeoutMS != 600000 {
		t.Fatalf("default timeouts: %+v", events)
	}

	// --source startup selects the startup-only hook; --event limits.
	c.okJSON(&events, "hooks", "--event", "SessionStart", "--source", "startup", "--session", "p", "--settings", extra)
	if len(events) != 1 || len(events[0].Hooks) != 3 || events[0].Hooks[2].Name != "echo startup-only" || events[0].Hooks[2].TimeoutMS != 2500 {
		t.Fatalf("hooks --source startup = %+v", events)
	}

	// Text, without --session: the project is the current directory, which
	// has no settings; --no-default-settings drops the user's too.
	out := c.ok("hooks", "--settings", extra, "--source", "startup", "--event", "SessionStart")
	if !strings.Contains(out, "SessionStart (source startup):") || !strings.Contains(out, "echo user") ||
		strings.Contains(out, "echo project") || !strings.Contains(out, "2.5s") || !strings.Contains(out, extra) {
		t.Fatalf("hooks:\n%s", out)
	}
	out = c.ok("hooks", "--no-default-settings")
	if out != "SessionStart (source resume):\n  none\n\nUserPromptSubmit:\n  none\n\n"+
		"PreToolUse (any tool):\n  none\n\nPermissionRequest (any tool):\n  none\n\nPostToolUse (any tool):\n  none\n\n"+
		"PostToolUseFailure (any tool):\n  none\n\nStop:\n  none\n\n"+
		"PreCompact (trigger manual):\n  none\n\nSessionEnd (reason resume):\n  none\n" {
		t.Fatalf("hooks --no-default-settings:\n%s", out)
	}
	c.fails(exitFailure, "hooks", "--session", "nope")
	// Files named on the command line must exist.
	if r := c.fails(exitUsage, "hooks", "--settings", filepath.Join(c.dir, "missing.json")); !strings.Contains(r.stderr, "missing.json: no such file") {
		t.Fatalf("missing settings: %s", r.stderr)
	}
	if r := c.fails(exitUsage, "hooks", "--plugin-dir", filepath.Join(c.dir, "no-plugin")); !strings.Contains(r.stderr, "no-plugin: no such directory") {
		t.Fatalf("missing plugin: %s", r.stderr)
	}
}

// TestResumeAcrossProjectsRunsEachSessionsOwnHooks checks that a resume
// from a session of one project to a session of another runs, on the
// session left, its own project's SessionEnd hooks, in its own directory,
// and on the target its project's SessionStart hooks; neither project's
// hooks run on the other's session. End and clear do the same.
func TestResumeAcrossProjectsRunsEachSessionsOwnHooks(t *testing.T) {
	c := newCLI(t)
	ran := filepath.Join(c.dir, "ran.log")
	for _, p := range []string{"alpha", "beta"} {
		record := fmt.Sprintf("echo %s-$(basename \"$PWD\") >> %s", p, ran)
		c.writeFile(p+"/.claude/settings.json", testkit.Settings(t, []string{record + " start"}, []string{record + " end"}))
	}
	c.ok("new", "--id", "a", "--cwd", filepath.Join(c.dir, "alpha"))
	c.ok("new", "--id", "b", "--cwd", filepath.Join(c.dir, "beta"))
	c.ok("start", "--agent", "ide", "a")
	c.ok("resume", "--agent", "ide", "b")
	c.ok("end", "--agent", "ide", "--reason", "user_exit")
	data, err := os.ReadFile(ran)
	if err != nil {
		t.Fatal(err)
	}
	want := "alpha-alpha start\nalpha-alpha end\nbeta-beta start\nbeta-beta end\n"
	if string(data) != want {
		t.Fatalf("hooks ran:\n%s\nwant:\n%s", data, want)
	}
}

// TestStartResumeGivesSourceResume checks that start --resume, a host
// reopening a stored session as it starts, runs the SessionStart hooks of
// source resume and no SessionEnd, where a plain start runs those of
// source startup.
func TestStartResumeGivesSourceResume(t *testing.T) {
	c := newCLI(t)
	settings := c.writeFile("hooks.json", `{"hooks": {"SessionStart": [
		{"matcher": "startup", "hooks": [{"type": "command", "command": "echo started"}]},
		{"matcher": "resume", "hooks": [{"type": "command", "command": "echo resumed"}]}]}}`)
	c.session("a", "hello")
	flags := []string{"--settings", settings, "--no-default-settings", "a"}
	if out := c.ok(append([]string{"start", "--agent", "one"}, flags...)...); out != "started\n" {
		t.Fatalf("start printed %q", out)
	}
	var rep restoreJSON
	c.okJSON(&rep, append([]string{"start", "--agent", "two", "--resume"}, flags...)...)
	if rep.Context != "resumed" || rep.Source != "resume" || rep.SessionEnd != nil {
		t.Fatalf("start --resume = %+v", rep)
	}
}

// TestRestoreIsResume checks that restore, the name the product gives the
// runtime restore, runs resume with its flags.
func TestRestoreIsResume(t *testing.T) {
	c := newCLI(t)
	c.session("a", "hello")
	c.session("b", "hi")
	c.ok("start", "--agent", "me", "--no-default-settings", "a")
	var rep restoreJSON
	c.okJSON(&rep, "restore", "--agent", "me", "--no-default-settings", "b")
	if !rep.Restored || rep.From != "a" || rep.To != "b" || rep.Source != "resume" {
		t.Fatalf("restore --agent me b = %+v", rep)
	}
}
