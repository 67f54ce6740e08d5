package hookexec

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/schema"
)

// The permission-rule forms of "if", on the calls Claude Code's docs and
// binary show them with.
func TestIfRulesSelectCalls(t *testing.T) {
	home, _ := os.UserHomeDir()
	call := func(tool string, input map[string]any) ToolInput {
		raw, _ := json.Marshal(input)
		return ToolInput{ToolName: tool, ToolInput: raw, Cwd: "/src/app"}
	}
	bash := func(command string) ToolInput { return call("Bash", map[string]any{"command": command}) }
	edit := func(file string) ToolInput { return call("Edit", map[string]any{"file_path": file}) }
	for _, c := range []struct {
		rule string
		in   ToolInput
		want bool
	}{
		{"Bash", bash("ls"), true},
		{"Bash", edit("/src/app/a.go"), false},
		{"Bash(*)", bash("anything"), true},
		{"Bash(git *)", bash("git status"), true},
		{"Bash(git *)", bash("gitk"), false},
		{"Bash(rm *)", bash("cd build && rm -rf out"), true}, // any simple command of a compound one
		{"Bash(rm *)", bash("echo rm -rf"), false},
		{"Bash(npm run test:*)", bash("npm run test -- --watch"), true},
		{"Bash(npm run test:*)", bash("npm run test"), true},
		{"Bash(npm run test:*)", bash("npm run testing"), false},
		{"Bash(echo one*)", bash("echo one two"), true},
		{"Bash(echo one*)", bash("echo two"), false},
		{"Edit(*.ts)", edit("/src/app/web/index.ts"), true},
		{"Edit(*.ts)", edit("/src/app/web/index.go"), false},
		{"Edit(*.ts)", call("Write", map[string]any{"file_path": "/x/a.ts"}), false}, // another tool
		{"Edit(src/**)", edit("/src/app/src/deep/x.go"), true},
		{"Edit(src/**)", edit("/src/app/other/x.go"), false},
		{"Edit(//etc/*)", edit("/etc/passwd"), true},
		{"Edit(/docs/*.md)", edit("docs/a.md"), true}, // relative to the session's directory
		{"Read(~/.ssh/*)", call("Read", map[string]any{"file_path": home + "/.ssh/id_rsa"}), true},
		{"WebFetch(domain:example.com)", call("WebFetch", map[string]any{"url": "https://docs.example.com/x"}), true},
		{"WebFetch(domain:example.com)", call("WebFetch", map[string]any{"url": "https://example.org/"}), false},
		{"mcp__memory__create", call("mcp__memory__create", nil), true},
		{"mcp__memory", call("mcp__memory__delete", nil), true},
		{"mcp__memory__*", call("mcp__memory__delete", nil), true},
		{"mcp__memory", call("mcp__memoryx__delete", nil), false},
		{"Task", call("Agent", map[string]any{"prompt": "p"}), true}, // the Agent tool's former name
		{"Bash(ls*)", call("mcp__workspace__bash", map[string]any{"command": "ls -la"}), true},
	} {
		got, warning := ifHolds(c.rule, c.in)
		if got != c.want || warning != "" {
			t.Errorf("if %q on %s %s: %v (%q), want %v", c.rule, c.in.ToolName, c.in.ToolInput, got, warning, c.want)
		}
	}
	// A pattern for a tool whose input this package does not know runs the
	// hook, with a warning: a gate fails closed.
	if got, warning := ifHolds("Grep(secret*)", call("Grep", map[string]any{"pattern": "x"})); !got || !strings.Contains(warning, "cannot be evaluated") {
		t.Errorf("an unevaluable rule: %v, %q", got, warning)
	}
	if got, warning := ifHolds("not a (rule", bash("ls")); !got || warning == "" {
		t.Errorf("a malformed rule: %v, %q", got, warning)
	}
}

// A real PreToolUse hook with "if" runs only for the call that meets it;
// on an event that is not a tool's, a hook with "if" never runs, as in
// Claude Code; a rule that cannot be evaluated runs the hook and says so
// in the log.
func TestIfDecidesWhetherAHookRuns(t *testing.T) {
	env := testEnv(t)
	var logs bytes.Buffer
	env.log = slog.New(slog.NewTextHandler(&logs, nil))
	marker := filepath.Join(t.TempDir(), "ran")
	path := filepath.Join(t.TempDir(), "settings.json")
	settings := `{"hooks": {
		"PreToolUse": [{"matcher": "Bash|Grep", "hooks": [
			{"type": "command", "command": "echo \"$(cat)\" >> ` + marker + `", "if": "Bash(echo one*)"},
			{"type": "command", "command": "echo grep >> ` + marker + `", "if": "Grep(secret*)"}]}],
		"SessionStart": [{"hooks": [{"type": "command", "command": "echo start >> ` + marker + `", "if": "Bash(*)"}]}]}}`
	if err := os.WriteFile(path, []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadSettings(path)
	if err != nil || len(loaded) != 3 {
		t.Fatalf("load: %v, %d hooks", err, len(loaded))
	}
	reg := NewRegistry()
	if err := reg.AddAll(loaded); err != nil {
		t.Fatal(err)
	}
	if got := reg.Match(SessionStart, "startup"); len(got) != 0 {
		t.Fatalf("a SessionStart hook with if was selected: %+v", got)
	}
	for _, command := range []string{"echo two", "echo one two"} {
		in := ToolInput{SessionID: "s", Cwd: env.ProjectDir, ToolName: "Bash", ToolUseID: "t-" + command,
			ToolInput: json.RawMessage(`{"command":"` + command + `"}`)}
		RunPreToolUse(context.Background(), reg.Match(PreToolUse, "Bash"), in, env)
	}
	in := ToolInput{SessionID: "s", Cwd: env.ProjectDir, ToolName: "Grep", ToolUseID: "g", ToolInput: json.RawMessage(`{"pattern":"x"}`)}
	outcomes, _ := RunPreToolUse(context.Background(), reg.Match(PreToolUse, "Grep"), in, env)
	if len(outcomes) != 1 || outcomes[0].Status != schema.HookOK {
		t.Fatalf("the Grep hook with an unevaluable if: %+v", outcomes)
	}
	data, _ := os.ReadFile(marker)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"command":"echo one two"`) || lines[1] != "grep" {
		t.Fatalf("hooks ran:\n%s\nwant the Bash hook for echo one two only, then the Grep hook", data)
	}
	if !strings.Contains(logs.String(), "Grep(secret*)") || !strings.Contains(logs.String(), "cannot be evaluated") {
		t.Errorf("no warning names the rule that could not be evaluated:\n%s", logs.String())
	}
}
