package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// hooks --event takes every one of Claude Code's events; without --event
// the events with steps of their own are listed, the fired ones that have
// hooks, and hooks of other types as found, not run.
func TestHooksEveryEventAndOthersFound(t *testing.T) {
	c := newCLI(t)
	settings := c.writeFile("all.json", `{"hooks": {
  "SessionStart": [{"hooks": [{"type": "command", "command": "echo start"}]}],
  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo prompt"}]}],
  "Stop": [{"hooks": [{"type": "command", "command": "echo stop"}]}],
  "PreCompact": [{"matcher": "auto", "hooks": [{"type": "command", "command": "echo auto-only"}]}],
  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/check-bash.sh", "timeout": 5}]}],
  "Notification": [{"hooks": [{"type": "command", "command": "notify-send done"}, {"type": "http", "url": "http://127.0.0.1:9/urgent"}]}]
}}`)
	plugin := filepath.Join(c.dir, "plugin")
	c.writeFile("plugin/hooks/hooks.json", `{"hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/fmt.sh"}]}],
  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/check-bash.sh"}]}]}}`)
	flags := []string{"--no-default-settings", "--settings", settings}

	for ev, want := range map[string]string{"SessionStart": "echo start", "UserPromptSubmit": "echo prompt", "Stop": "echo stop", "SessionEnd": ""} {
		var events []hookEventJSON
		c.okJSON(&events, append([]string{"hooks", "--event", ev}, flags...)...)
		if len(events) != 1 || events[0].Event != ev || !events[0].Run || (want == "") != (len(events[0].Hooks) == 0) ||
			(want != "" && events[0].Hooks[0].Name != want) {
			t.Errorf("hooks --event %s = %+v", ev, events)
		}
	}
	var events []hookEventJSON
	c.okJSON(&events, append([]string{"hooks", "--event", "PreCompact"}, flags...)...)
	if events[0].Trigger != "manual" || len(events[0].Hooks) != 0 {
		t.Fatalf("hooks --event PreCompact = %+v", events)
	}
	c.okJSON(&events, append([]string{"hooks", "--event", "PreCompact", "--source", "auto"}, flags...)...)
	if events[0].Trigger != "auto" || len(events[0].Hooks) != 1 || events[0].Hooks[0].Name != "echo auto-only" {
		t.Fatalf("hooks --event PreCompact --source auto = %+v", events)
	}
	c.fails(exitUsage, "hooks", "--event", "Stop", "--source", "startup")
	// Every event of Claude Code's is known to --event; a fired one lists
	// its hooks of every type as run.
	c.okJSON(&events, append([]string{"hooks", "--event", "Notification"}, flags...)...)
	if len(events) != 1 || events[0].Event != "Notification" || !events[0].Run || len(events[0].Hooks) != 2 ||
		events[0].Hooks[0].Name != "notify-send done" || events[0].Hooks[1].Type != "http" || events[0].Hooks[1].URL != "http://127.0.0.1:9/urgent" {
		t.Fatalf("hooks --event Notification = %+v", events)
	}
	c.okJSON(&events, append([]string{"hooks", "--event", "Notification", "--source", "idle_prompt"}, flags...)...)
	if len(events) != 1 || events[0].Value != "idle_prompt" || len(events[0].Hooks) != 2 {
		t.Fatalf("hooks --event Notification --source idle_prompt = %+v", events)
	}
	c.okJSON(&events, append([]string{"hooks", "--event", "CwdChanged"}, flags...)...)
	if len(events) != 1 || events[0].Event != "CwdChanged" || len(events[0].Hooks) != 0 {
		t.Fatalf("hooks --event CwdChanged, which no file configures = %+v", events)
	}
	c.fails(exitUsage, append([]string{"hooks", "--event", "CwdChanged", "--source", "x"}, flags...)...)
	if r := c.fails(exitUsage, "hooks", "--event", "Notfication"); !strings.Contains(r.stderr, "Claude Code's 33 hook events") {
		t.Fatalf("a misspelt event: %s", r.stderr)
	}
	c.okJSON(&events, append([]string{"hooks", "--event", "PreToolUse", "--source", "Bash"}, flags...)...)
	if events[0].Tool != "Bash" || len(events[0].Hooks) != 1 || events[0].Hooks[0].Name != "~/bin/check-bash.sh" {
		t.Fatalf("hooks --event PreToolUse --source Bash = %+v", events)
	}
	c.okJSON(&events, append([]string{"hooks", "--event", "PreToolUse", "--source", "Read"}, flags...)...)
	if len(events[0].Hooks) != 0 {
		t.Fatalf("hooks --event PreToolUse --source Read = %+v", events)
	}

	c.okJSON(&events, append([]string{"hooks", "--plugin-dir", plugin}, flags...)...)
	var names []string
	for _, ev := range events {
		names = append(names, ev.Event)
	}
	if got := strings.Join(names, ","); got != "SessionStart,UserPromptSubmit,PreToolUse,PermissionRequest,PostToolUse,PostToolUseFailure,Notification,Stop,PreCompact,SessionEnd" {
		t.Fatalf("events listed: %s", got)
	}
	pre, post, note := events[2], events[4], events[6]
	// The plugin's copy of the settings' command runs besides it, as in
	// Claude Code.
	if !pre.Run || pre.Tool != "*" || len(pre.Hooks) != 2 || pre.Hooks[0].Matcher != "Bash" || pre.Hooks[0].TimeoutMS != 5000 || pre.Hooks[0].Source != settings ||
		pre.Hooks[1].Source != "plugin:"+plugin {
		t.Fatalf("PreToolUse = %+v", pre)
	}
	if !post.Run || len(post.Hooks) != 1 || post.Hooks[0].Name != plugin+"/fmt.sh" || post.Hooks[0].Source != "plugin:"+plugin {
		t.Fatalf("PostToolUse = %+v", post)
	}
	if !note.Run || len(note.Hooks) != 2 || note.Hooks[1].Type != "http" || note.Hooks[1].Name != "http: http://127.0.0.1:9/urgent" {
		t.Fatalf("Notification = %+v", note)
	}
	out := c.ok(append([]string{"hooks"}, flags...)...)
	if !strings.Contains(out, "PreToolUse (any tool):\n") || !strings.Contains(out, "~/bin/check-bash.sh") || strings.Contains(out, "not run by reprise") ||
		!strings.Contains(out, "http: http://127.0.0.1:9/urgent") || !strings.Contains(out, "Notification:\n  #") || !strings.Contains(out, "Stop:\n") || !strings.Contains(out, "PreCompact (trigger manual):\n  none") {
		t.Fatalf("hooks:\n%s", out)
	}

	// Only regular files of at most 1 MiB are read: a FIFO does not hang
	// the listing, and a larger file adds nothing. Found as project
	// settings, they are warned about and the listing goes on; named on
	// the command line, they are usage errors.
	fifo := filepath.Join(c.mkdir(".claude"), "settings.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	big := c.writeFile(filepath.Join(".claude", "settings.local.json"), `{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "huge"}]}]}, "pad": "`+strings.Repeat("x", 1<<20)+`"}`)
	r := c.run("--json", "hooks")
	if r.code != exitOK || strings.Contains(r.stdout, "huge") || !strings.Contains(r.stderr, "not a regular file") || !strings.Contains(r.stderr, "larger than") {
		t.Fatalf("FIFO and big file: %d %s %s", r.code, r.stdout, r.stderr)
	}
	for _, path := range []string{fifo, big} {
		c.fails(exitUsage, "hooks", "--no-default-settings", "--settings", path)
	}
}

// reprise hooks shows what a hook's keys make of it: an exec form's
// arguments, its "if", its onFailure and its status message, in text and
// in JSON.
func TestHooksShowTheKeysOfEachHook(t *testing.T) {
	c := newCLI(t)
	path := filepath.Join(c.dir, "keys.json")
	settings := `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard",
		"args": ["--strict", "two words"], "if": "Bash(rm *)", "onFailure": "block", "statusMessage": "Checking rm"}]}]}}`
	if err := os.WriteFile(path, []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	out := c.ok("hooks", "--no-default-settings", "--settings", path, "--event", "PreToolUse", "--source", "Bash")
	for _, want := range []string{"guard --strict 'two words'", "if Bash(rm *)", "(a failure blocks)", `status: "Checking rm"`} {
		if !strings.Contains(out, want) {
			t.Errorf("hooks lacks %q:\n%s", want, out)
		}
	}
	var events []hookEventJSON
	c.okJSON(&events, "hooks", "--no-default-settings", "--settings", path, "--event", "PreToolUse", "--source", "Bash")
	if len(events) != 1 || len(events[0].Hooks) != 1 {
		t.Fatalf("hooks --json = %+v", events)
	}
	h := events[0].Hooks[0]
	if h.Command != "guard" || len(h.Args) != 2 || h.Args[1] != "two words" || h.If != "Bash(rm *)" || h.OnFailure != "block" || h.StatusMessage != "Checking rm" {
		t.Fatalf("hook %+v", h)
	}
}
