package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/jsonview"
)

// prompt runs the UserPromptSubmit hooks: a kept prompt and its context are
// appended and exit 0; a blocked one is not and exits 1.
func TestPrompt(t *testing.T) {
	c := newCLI(t)
	log := filepath.Join(c.dir, "prompt.log")
	settings := settingsFile(c, "prompt.json", map[string][]string{
		"UserPromptSubmit": {testkit.Script(t, "record.sh") + " " + log, testkit.Script(t, "guard.sh")},
	})
	flags := []string{"--agent", "ide", "--no-default-settings", "--settings", settings}
	with := func(args ...string) []string { return append(args, flags...) }
	c.session("s", "hello")

	r := c.fails(exitFailure, with("prompt", "hi")...)
	if !strings.Contains(r.stderr, "reprise start --agent ide") {
		t.Fatalf("no current session: %s", r.stderr)
	}
	c.fails(exitUsage, with("prompt")...)
	c.ok(with("start", "s")...)

	out := c.ok(with("prompt", "Why does TestRefund flake?")...)
	if !strings.HasPrefix(out, "kept as message ") || !strings.Contains(out, "UserPromptSubmit hooks on ") ||
		!strings.Contains(out, "context added as message ") || !strings.Contains(out, "  remember the style guide\n") {
		t.Fatalf("prompt printed:\n%s", out)
	}
	in := logInputs(t, log)
	if len(in) != 1 || in[0]["hook_event_name"] != "UserPromptSubmit" || in[0]["prompt"] != "Why does TestRefund flake?" {
		t.Fatalf("UserPromptSubmit hook read %v", in)
	}

	var kept jsonview.Prompt
	if r := c.runIn(strings.NewReader("from stdin\n"), with("--json", "prompt", "-")...); r.code != exitOK {
		t.Fatalf("prompt -: %d %s", r.code, r.stderr)
	} else if err := json.Unmarshal([]byte(r.stdout), &kept); err != nil {
		t.Fatal(err)
	}
	if kept.Blocked || kept.Session != "s" || kept.Message == "" || kept.Context != "remember the style guide" ||
		kept.ContextMessage == "" || len(kept.Hooks) != 2 || kept.Hooks[1].Status != "ok" {
		t.Fatalf("prompt --json = %+v", kept)
	}

	r = c.fails(exitFailure, with("--json", "prompt", "deploy it")...)
	var blocked jsonview.Prompt
	if err := json.Unmarshal([]byte(r.stdout), &blocked); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if !blocked.Blocked || blocked.Reason != "no deploys on Friday" || blocked.Message != "" || blocked.ContextMessage != "" ||
		r.stderr != `{"error":"prompt blocked by a UserPromptSubmit hook: no deploys on Friday","code":1}`+"\n" {
		t.Fatalf("blocked prompt: %+v\nstderr: %s", blocked, r.stderr)
	}
	r = c.fails(exitFailure, with("prompt", "deploy again")...)
	if !strings.HasPrefix(r.stdout, "blocked: no deploys on Friday\n") {
		t.Fatalf("blocked prompt printed:\n%s", r.stdout)
	}

	// The conversation holds the kept prompts, each followed by its
	// context, and neither blocked one.
	var conv conversationJSON
	c.okJSON(&conv, "replay", "s")
	var texts []string
	for _, m := range conv.Messages {
		text := m.Content[0].(map[string]any)["text"].(string)
		if m.Meta {
			text = "meta"
		}
		texts = append(texts, text)
	}
	if got := strings.Join(texts, " | "); got != "hello | Why does TestRefund flake? | meta | from stdin | meta" {
		t.Fatalf("conversation = %s", got)
	}
	if out := c.ok("audit"); !strings.HasPrefix(out, "ok:") {
		t.Fatalf("audit: %s", out)
	}
}
