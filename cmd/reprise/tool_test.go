package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestToolCommandsDecideAndRecordOnce drives a tool call through the CLI,
// as a shell host would: a settings hook denies one Bash call, another is
// allowed and its result recorded with the PostToolUse hook's context;
// asked again, each answers from the log.
func TestToolCommandsDecideAndRecordOnce(t *testing.T) {
	c := newCLI(t)
	settings := c.writeFile("hooks.json", `{"hooks": {
		"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "grep -q 'rm -rf' && { echo 'no rm -rf' >&2; exit 2; }; exit 0"}]}],
		"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PostToolUse\",\"additionalContext\":\"lint is clean\"}}'"}]}]}}`)
	c.session("a", "clean up")
	flags := []string{"--agent", "ide", "--settings", settings, "--no-default-settings"}
	c.ok(append([]string{"start", "a"}, flags...)...)

	var d toolJSON
	c.okJSON(&d, append([]string{"tool", "--tool-use-id", "t1", "--name", "Bash", "--input", `{"command":"rm -rf build"}`, "--permission", "allow"}, flags...)...)
	if d.Decision != "deny" || d.Reason != "PreToolUse:Bash hook error: no rm -rf" {
		t.Fatalf("tool rm = %+v", d)
	}
	c.okJSON(&d, append([]string{"tool", "--tool-use-id", "t2", "--name", "Bash", "--input", `{"command":"ls"}`, "--permission", "allow"}, flags...)...)
	if d.Decision != "allow" || string(d.UpdatedInput) != `{"command":"ls"}` || d.Interrupted {
		t.Fatalf("tool ls = %+v", d)
	}
	// Asked again before its result: it may have run.
	c.okJSON(&d, append([]string{"tool", "--tool-use-id", "t2", "--name", "Bash", "--input", `{"command":"ls"}`}, flags...)...)
	if d.Decision != "allow" || !d.Interrupted {
		t.Fatalf("tool ls again = %+v", d)
	}
	var f toolResultJSON
	c.okJSON(&f, append([]string{"tool-result", "--tool-use-id", "t2", "--output", `"go.mod"`}, flags...)...)
	if f.Context != "lint is clean" || f.Blocked {
		t.Fatalf("tool-result = %+v", f)
	}
	out := c.ok(append([]string{"tool-result", "--tool-use-id", "t2", "--output", `"go.mod"`}, flags...)...)
	if out != "context:\n  lint is clean\n" {
		t.Fatalf("tool-result again printed %q", out)
	}
	if r := c.fails(exitFailure, append([]string{"tool-result", "--tool-use-id", "t9", "--output", `"x"`}, flags...)...); !strings.Contains(r.stderr, "no decision recorded: t9") {
		t.Fatalf("tool-result of an unknown call: %s", r.stderr)
	}
	c.fails(exitUsage, append([]string{"tool", "--tool-use-id", "t3", "--name", "Bash", "--input", "{not json"}, flags...)...)
	c.fails(exitUsage, append([]string{"tool-result", "--tool-use-id", "t3"}, flags...)...)
	var conv conversationJSON
	c.okJSON(&conv, "replay", "a")
	data, _ := json.Marshal(conv.Messages)
	if strings.Count(string(data), `tool_use`) < 2 || !strings.Contains(string(data), `is_error`) {
		t.Fatalf("the session lacks the calls and the denial: %s", data)
	}
}
