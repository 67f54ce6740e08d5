package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/schema"
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

	c.ok("append", "a", "--role", "assistant", "--content", `[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"rm -rf build"}},
		{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"ls"}}]`)
	var d jsonview.ToolDecision
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
	var f jsonview.ToolFeedback
	var conv conversationJSON
	c.okJSON(&f, append([]string{"tool-result", "--tool-use-id", "t2", "--output", `"go.mod"`}, flags...)...)
	if f.Context != "lint is clean" || f.Blocked {
		t.Fatalf("tool-result = %+v", f)
	}
	// Recorded again, or for the denied call: the result is not kept, and
	// tool-result says so.
	r := c.fails(exitAlreadyRecorded, append([]string{"tool-result", "--tool-use-id", "t2", "--output", `"other"`}, flags...)...)
	if out := r.stdout; !strings.HasPrefix(out, "already recorded: ") || !strings.Contains(out, "PostToolUse hooks of t2:\n  ok ") || !strings.Contains(out, "additionalContext") ||
		!strings.HasSuffix(out, "\ncontext:\n  lint is clean\n") || !strings.Contains(r.stderr, "already recorded") {
		t.Fatalf("tool-result again printed %q, %q", out, r.stderr)
	}
	r = c.fails(exitAlreadyRecorded, append([]string{"--json", "tool-result", "--tool-use-id", "t1", "--output", `"ran anyway"`}, flags...)...)
	if err := json.Unmarshal([]byte(r.stdout), &f); err != nil || !f.AlreadyRecorded {
		t.Fatalf("tool-result --json for the denied call: %s, %v", r.stdout, err)
	}
	c.okJSON(&conv, "replay", "a")
	if data, _ := json.Marshal(conv.Messages); strings.Contains(string(data), "other") || strings.Contains(string(data), "ran anyway") {
		t.Fatalf("a result given again was kept: %s", data)
	}
	if r := c.fails(exitFailure, append([]string{"tool-result", "--tool-use-id", "t9", "--output", `"x"`}, flags...)...); !strings.Contains(r.stderr, "no decision recorded: t9") {
		t.Fatalf("tool-result of an unknown call: %s", r.stderr)
	}
	c.fails(exitUsage, append([]string{"tool", "--tool-use-id", "t3", "--name", "Bash", "--input", "{not json"}, flags...)...)
	c.fails(exitUsage, append([]string{"tool-result", "--tool-use-id", "t3"}, flags...)...)
	c.fails(exitUsage, append([]string{"tool", "--tool-use-id", "t3", "--name", "Bash", "--input", "[1]"}, flags...)...)
	if r := c.fails(exitUsage, append([]string{"tool", "--tool-use-id", "t3", "--name", "Bash", "--input", "{\"command\":\"rm \xff -rf /\"}"}, flags...)...); !strings.Contains(r.stderr, "not valid UTF-8") {
		t.Errorf("--input with invalid UTF-8: %s", r.stderr)
	}
	for _, id := range []string{"../x", "a\nb"} {
		if r := c.fails(exitUsage, append([]string{"tool", "--tool-use-id", id, "--name", "Bash"}, flags...)...); !strings.Contains(r.stderr, "--tool-use-id") {
			t.Errorf("tool --tool-use-id %q: %s", id, r.stderr)
		}
		c.fails(exitUsage, append([]string{"tool-result", "--tool-use-id", id, "--output", `"x"`}, flags...)...)
	}
	c.okJSON(&conv, "replay", "a")
	data, _ := json.Marshal(conv.Messages)
	if strings.Count(string(data), `tool_use`) < 2 || !strings.Contains(string(data), `is_error`) {
		t.Fatalf("the session lacks the calls and the denial: %s", data)
	}
	// The audit counts the tool hooks with the others: two PreToolUse
	// runs, one PostToolUse.
	var rep struct {
		OK       bool `json:"ok"`
		HooksRun int  `json:"hooks_run"`
	}
	c.okJSON(&rep, "audit")
	if !rep.OK || rep.HooksRun != 3 {
		t.Errorf("audit: %+v; want ok, 3 hooks run", rep)
	}
}

// TestAppendContentHoldsToolCalls appends the model's answer with its
// tool_use blocks as a shell host does, then asks about one of its calls:
// the call is found in the answer, not recorded a second time.
func TestAppendContentHoldsToolCalls(t *testing.T) {
	c := newCLI(t)
	c.session("a", "look around")
	flags := []string{"--agent", "ide", "--no-default-settings"}
	c.ok(append([]string{"start", "a"}, flags...)...)
	answer := `[{"type":"text","text":"Let me look."},
		{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}},
		{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"go.mod"}}]`
	c.ok("append", "a", "--role", "assistant", "--content", answer)
	var d jsonview.ToolDecision
	c.okJSON(&d, append([]string{"tool", "--tool-use-id", "t1", "--name", "Bash", "--input", `{"command":"ls"}`, "--permission", "allow"}, flags...)...)
	if d.Decision != "allow" {
		t.Fatalf("tool ls = %+v", d)
	}
	c.okJSON(&d, append([]string{"tool", "--tool-use-id", "t2", "--name", "Read", "--input", `{"file_path":"go.mod"}`, "--permission", "deny"}, flags...)...)
	if d.Decision != "deny" {
		t.Fatalf("tool read = %+v", d)
	}
	var conv conversationJSON
	c.okJSON(&conv, "replay", "a")
	var roles []string
	for _, m := range conv.Messages {
		if !m.Meta {
			data, _ := json.Marshal(m.Content)
			roles = append(roles, m.Role+" "+string(data))
		}
	}
	want := []string{
		`user [{"text":"look around","type":"text"}]`,
		`assistant [{"text":"Let me look.","type":"text"},{"id":"t1","input":{"command":"ls"},"name":"Bash","type":"tool_use"},{"id":"t2","input":{"file_path":"go.mod"},"name":"Read","type":"tool_use"}]`,
	}
	if len(roles) < 3 || strings.Join(roles[:2], "\n") != strings.Join(want, "\n") || strings.Contains(strings.Join(roles[2:], "\n"), `"type":"tool_use"`) {
		t.Fatalf("conversation:\n%s", strings.Join(roles, "\n"))
	}
	// From standard input, and a string is one text block.
	if r := c.runIn(strings.NewReader(`"plain words"`+"\n"), "append", "a", "--role", "user", "--content", "-"); r.code != exitOK {
		t.Fatalf("append --content -: exit %d: %s", r.code, r.stderr)
	}
	c.okJSON(&conv, "replay", "a")
	if last, _ := json.Marshal(conv.Messages[len(conv.Messages)-1].Content); string(last) != `[{"text":"plain words","type":"text"}]` {
		t.Fatalf("last message %s", last)
	}
	for _, bad := range []string{`{not json`, `[]`, `[{"text":"no type"}]`, `[1]`, `{"type":"text"}`} {
		if r := c.fails(exitUsage, "append", "a", "--role", "user", "--content", bad); !strings.Contains(r.stderr, "--content must be") {
			t.Errorf("--content %s: %s", bad, r.stderr)
		}
	}
	c.fails(exitUsage, "append", "a", "--role", "user", "--content", `"x"`, "also text")
	for _, bad := range []struct{ role, content, says string }{
		{"user", `""`, "empty text"},
		{"user", `[{"type":"text","text":" "}]`, "empty text"},
		{"user", `[{"type":"tool_use","id":"t9","name":"Bash","input":{}}]`, "only the assistant"},
		{"assistant", `[{"type":"tool_result","tool_use_id":"t1","content":"x"}]`, "only the user"},
	} {
		if r := c.fails(exitUsage, "append", "a", "--role", bad.role, "--content", bad.content); !strings.Contains(r.stderr, bad.says) {
			t.Errorf("%s --content %s: %s", bad.role, bad.content, r.stderr)
		}
	}
}

// TestToolCommandsSayAHookHalts checks that tool and tool-result print a
// hook's "continue": false, as text and as JSON.
func TestToolCommandsSayAHookHalts(t *testing.T) {
	c := newCLI(t)
	settings := c.writeFile("hooks.json", `{"hooks": {
		"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo '{\"continue\":false,\"stopReason\":\"out of budget\"}'"}]}],
		"PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "echo '{\"continue\":false}'"}]}]}}`)
	c.session("a", "go")
	flags := []string{"--agent", "ide", "--settings", settings, "--no-default-settings"}
	c.ok(append([]string{"start", "a"}, flags...)...)
	var d jsonview.ToolDecision
	c.ok("append", "a", "--role", "assistant", "--content", `[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}},
		{"type":"tool_use","id":"t2","name":"Read","input":{}}]`)
	c.okJSON(&d, append([]string{"tool", "--tool-use-id", "t1", "--name", "Bash", "--input", `{"command":"ls"}`, "--permission", "allow"}, flags...)...)
	if !d.Halted || d.StopReason != "out of budget" {
		t.Errorf("tool --json = %+v", d)
	}
	if out := c.ok(append([]string{"tool", "--tool-use-id", "t1", "--name", "Bash"}, flags...)...); !strings.Contains(out, "halted: a hook stops the turn: out of budget\n") {
		t.Errorf("tool printed %q", out)
	}
	c.ok(append([]string{"tool", "--tool-use-id", "t2", "--name", "Read", "--permission", "allow"}, flags...)...)
	out := c.ok(append([]string{"tool-result", "--tool-use-id", "t2", "--output", `"x"`}, flags...)...)
	if !strings.HasPrefix(out, "PostToolUse hooks of t2:\n  ok ") ||
		!strings.HasSuffix(out, "\nno context added\nhalted: a hook stops the turn: no reason given\n") {
		t.Errorf("tool-result printed %q", out)
	}
}

// TestToolOfACallNoAnswerHolds checks that tool refuses a tool_use id no
// recorded answer holds, recording nothing, and records the tool_use
// when --add-tool-use asks for it; and that append refuses an answer
// the Messages API would refuse.
func TestToolOfACallNoAnswerHolds(t *testing.T) {
	c := newCLI(t)
	c.session("a", "go")
	flags := []string{"--agent", "ide", "--no-default-settings"}
	c.ok(append([]string{"start", "a"}, flags...)...)
	before := c.ok("log", "a")
	if r := c.fails(exitFailure, append([]string{"tool", "--tool-use-id", "123", "--name", "Bash", "--permission", "allow"}, flags...)...); !strings.Contains(r.stderr, "holds no answer with tool_use 123") || r.stdout != "" {
		t.Fatalf("tool of a call no answer holds: %q, %q", r.stdout, r.stderr)
	}
	if after := c.ok("log", "a"); after != before {
		t.Fatalf("the refused call changed the session:\n%s", after)
	}
	if out := c.ok(append([]string{"tool", "--tool-use-id", "123", "--name", "Bash", "--permission", "allow", "--add-tool-use"}, flags...)...); !strings.HasPrefix(out, "allow\n") {
		t.Fatalf("tool --add-tool-use printed %q", out)
	}
	// An answer while call 123 has no result, and one that reuses its id.
	c.fails(exitFailure, "append", "a", "--role", "assistant", "--content", `[{"type":"tool_use","id":"c","name":"Bash","input":{}}]`)
	c.ok(append([]string{"tool-result", "--tool-use-id", "123", "--output", `"done"`}, flags...)...)
	if r := c.fails(exitFailure, "append", "a", "--role", "assistant", "--content", `[{"type":"tool_use","id":"123","name":"Bash","input":{}}]`); !strings.Contains(r.stderr, `"123" is used already`) {
		t.Fatalf("an answer that reuses 123: %s", r.stderr)
	}
	if r := c.fails(exitFailure, "append", "a", "--role", "assistant", "--content", `[{"type":"tool_use","id":"","name":"Bash","input":{}}]`); !strings.Contains(r.stderr, "no id") {
		t.Fatalf("a tool_use without an id: %s", r.stderr)
	}
	if help := c.ok("tool", "--help"); strings.Contains(help, "doing the restore") || !strings.Contains(help, "--add-tool-use") {
		t.Errorf("tool --help:\n%s", help)
	}
}

// TestToolAnswerRecordsTheUsersWordOnce drives a call left to ask through
// the CLI: asked again it is not taken for one that may have run, its
// result is refused until the user's allow is recorded, and a refusal is
// recorded once as the call's error result.
func TestToolAnswerRecordsTheUsersWordOnce(t *testing.T) {
	c := newCLI(t)
	c.session("a", "go")
	flags := []string{"--agent", "ide", "--no-default-settings"}
	c.ok(append([]string{"start", "a"}, flags...)...)
	c.ok("append", "a", "--role", "assistant", "--content", `[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"make"}},
		{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"rm -rf /"}},
		{"type":"tool_use","id":"t3","name":"Bash","input":{"command":"curl x"}},
		{"type":"tool_use","id":"t4","name":"Bash","input":{"command":"curl y"}}]`)
	for _, id := range []string{"t1", "t2", "t3", "t4"} {
		if out := c.ok(append([]string{"tool", "--tool-use-id", id, "--name", "Bash", "--input", `{"command":"make"}`}, flags...)...); !strings.HasPrefix(out, "ask\n") {
			t.Fatalf("tool %s printed %q", id, out)
		}
	}
	if out := c.ok(append([]string{"tool", "--tool-use-id", "t1", "--name", "Bash", "--permission", "allow"}, flags...)...); !strings.HasPrefix(out, "ask\n") || strings.Contains(out, "interrupted") {
		t.Fatalf("tool asked again before the answer printed %q", out)
	}
	if r := c.fails(exitFailure, append([]string{"tool-result", "--tool-use-id", "t1", "--output", `"built"`}, flags...)...); !strings.Contains(r.stderr, "never allowed") {
		t.Fatalf("tool-result of a call never allowed: %s", r.stderr)
	}
	var d jsonview.ToolDecision
	c.okJSON(&d, append([]string{"tool", "--tool-use-id", "t1", "--answer", "allow"}, flags...)...)
	if d.Decision != "allow" || string(d.UpdatedInput) != `{"command":"make"}` {
		t.Fatalf("tool --answer allow = %+v", d)
	}
	c.okJSON(&d, append([]string{"tool", "--tool-use-id", "t2", "--answer", "refuse", "--refusal", "not on this machine"}, flags...)...)
	if d.Decision != "deny" || d.Reason != "not on this machine" {
		t.Fatalf("tool --answer refuse = %+v", d)
	}
	// Without words of its own, the model is told Claude Code's words for
	// a refusal; with the user's words, Claude Code's form that quotes them.
	c.okJSON(&d, append([]string{"tool", "--tool-use-id", "t3", "--answer", "refuse"}, flags...)...)
	if d.Decision != "deny" || !strings.HasPrefix(d.Reason, "The user doesn't want to proceed with this tool use.") || !strings.HasSuffix(d.Reason, "STOP what you are doing and wait for the user to tell you how to proceed.") {
		t.Fatalf("tool --answer refuse without words = %+v", d)
	}
	c.okJSON(&d, append([]string{"tool", "--tool-use-id", "t4", "--answer", "refuse", "--feedback", "use the mirror"}, flags...)...)
	if d.Decision != "deny" || !strings.HasPrefix(d.Reason, "The user doesn't want to proceed with this tool use.") || !strings.HasSuffix(d.Reason, "To tell you how to proceed, the user said:\nuse the mirror") {
		t.Fatalf("tool --answer refuse --feedback = %+v", d)
	}
	c.okJSON(&d, append([]string{"tool", "--tool-use-id", "t2", "--answer", "allow"}, flags...)...)
	if d.Decision != "deny" {
		t.Fatalf("tool --answer allow after the refusal = %+v; want the recorded refusal", d)
	}
	c.ok(append([]string{"tool-result", "--tool-use-id", "t1", "--output", `"built"`}, flags...)...)
	c.fails(exitAlreadyRecorded, append([]string{"tool-result", "--tool-use-id", "t2", "--output", `"ran"`}, flags...)...)
	c.fails(exitUsage, append([]string{"tool", "--tool-use-id", "t1", "--answer", "maybe"}, flags...)...)
	c.fails(exitUsage, append([]string{"tool", "--tool-use-id", "t1", "--answer", "allow", "--refusal", "x"}, flags...)...)
	c.fails(exitUsage, append([]string{"tool", "--tool-use-id", "t1", "--answer", "allow", "--feedback", "x"}, flags...)...)
	c.fails(exitUsage, append([]string{"tool", "--tool-use-id", "t1", "--answer", "refuse", "--refusal", "x", "--feedback", "y"}, flags...)...)
	var conv conversationJSON
	c.okJSON(&conv, "replay", "a")
	data, _ := json.Marshal(conv.Messages)
	if !strings.Contains(string(data), "not on this machine") || strings.Contains(string(data), `"ran"`) {
		t.Fatalf("the session: %s", data)
	}
	var rep struct {
		OK bool `json:"ok"`
	}
	c.okJSON(&rep, "audit")
	if !rep.OK {
		t.Errorf("audit: %+v", rep)
	}
}

// TestOutcomesOfInterruptedHooksNameNoEmptySource checks that a hook's
// outcome without a source, as the outcome of a hook a dead process was
// running is (finish prints them), is printed without "()".
func TestOutcomesOfInterruptedHooksNameNoEmptySource(t *testing.T) {
	var b strings.Builder
	printOutcomes(&b, []schema.HookOutcome{{Name: "sleep 5", Status: schema.HookInterrupted}, {Name: "ctx", Status: schema.HookOK, Source: "session"}}, true)
	if out := b.String(); strings.Contains(out, "()") || !strings.Contains(out, "sleep 5\n") || !strings.Contains(out, "ctx  (session)\n") {
		t.Errorf("printed %q", out)
	}
}

// TestToolResultGivesAHooksUpdatedOutput checks that tool-result --json
// gives a shell host the output a PostToolUse hook put in place of the
// tool's, to send the model.
func TestToolResultGivesAHooksUpdatedOutput(t *testing.T) {
	c := newCLI(t)
	settings := c.writeFile("hooks.json", `{"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
		"command": "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PostToolUse\",\"updatedToolOutput\":\"[redacted]\"}}'"}]}]}}`)
	c.session("a", "go")
	flags := []string{"--agent", "ide", "--settings", settings, "--no-default-settings"}
	c.ok(append([]string{"start", "a"}, flags...)...)
	c.ok("append", "a", "--role", "assistant", "--content", `[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cat .env"}}]`)
	c.ok(append([]string{"tool", "--tool-use-id", "t1", "--name", "Bash", "--input", `{"command":"cat .env"}`, "--permission", "allow"}, flags...)...)
	var f jsonview.ToolFeedback
	c.okJSON(&f, append([]string{"tool-result", "--tool-use-id", "t1", "--output", `"KEY=secret"`}, flags...)...)
	if string(f.UpdatedOutput) != `"[redacted]"` {
		t.Errorf("tool-result --json = %+v, want the hook's updated output", f)
	}
}

// TestToolHookThatDeniedIsListedAsDenying checks that a PreToolUse hook
// that denied the call by exit 2 is listed as deny, with its reason, in
// the words its decision has, not as ok.
func TestToolHookThatDeniedIsListedAsDenying(t *testing.T) {
	c := newCLI(t)
	settings := c.writeFile("hooks.json", `{"hooks": {
		"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo 'no rm -rf' >&2; exit 2"}]}]}}`)
	c.session("a", "clean up")
	flags := []string{"--agent", "ide", "--settings", settings, "--no-default-settings"}
	c.ok(append([]string{"start", "a"}, flags...)...)
	c.ok("append", "a", "--role", "assistant", "--content", `[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"rm -rf build"}}]`)
	out := c.ok(append([]string{"tool", "--tool-use-id", "t1", "--name", "Bash", "--input", `{"command":"rm -rf build"}`}, flags...)...)
	if !regexp.MustCompile(`\n  deny +\d+ms  echo 'no rm -rf' >&2; exit 2: exit 2  \(\S+\)\n      reason: no rm -rf\n`).MatchString(out) {
		t.Errorf("tool printed:\n%s\nwant the hook listed as deny, with its reason", out)
	}
	// The agent's log says it in the same words.
	if log := c.ok("log", "--agent", "ide"); !strings.Contains(log, `exit 2:deny reason="no rm -rf"]`) || strings.Contains(log, "exit 2:ok") {
		t.Errorf("log --agent ide:\n%s\nwant the hook listed as deny, with its reason", log)
	}
}
