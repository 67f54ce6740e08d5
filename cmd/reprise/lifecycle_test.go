package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/internal/testkit"
)

// lifecycleSettings is a settings file whose SessionStart and SessionEnd
// hooks record their stdin to log, and whose Stop hook blocks.
func lifecycleSettings(t *testing.T, c *cli, log string) string {
	t.Helper()
	record := testkit.Script(t, "record.sh") + " " + log
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": record}}}},
		"SessionEnd":   []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": record}}}},
		"Stop":         []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": testkit.Script(t, "block.sh")}}}},
	}})
	return c.writeFile("lifecycle.json", string(b))
}

// hookEvents lists "<event> <source or reason>" for each hook input logged.
func hookEvents(t *testing.T, log string) []string {
	t.Helper()
	data, _ := os.ReadFile(log)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var in map[string]any
		if err := json.Unmarshal([]byte(line), &in); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		what, _ := in["source"].(string)
		if in["hook_event_name"] == "SessionEnd" {
			what, _ = in["reason"].(string)
		}
		out = append(out, in["hook_event_name"].(string)+" "+what)
	}
	return out
}

// Every path of the lifecycle from the shell: new, fork, compact, clear,
// stop and end, each running the hooks Claude Code would run.
func TestLifecycleCommands(t *testing.T) {
	c := newCLI(t)
	log := filepath.Join(c.dir, "hooks.log")
	flags := []string{"--agent", "ide", "--settings", lifecycleSettings(t, c, log), "--no-default-settings"}
	with := func(args ...string) []string { return append(args, flags...) }

	first := strings.SplitN(c.ok(with("new", "--id", "first", "--cwd", c.dir)...), "\n", 2)
	if first[0] != "first" || !strings.Contains(first[1], "agent ide: new restore (none) -> first") {
		t.Fatalf("new --agent printed %q", first)
	}
	c.ok("append", "first", "--role", "user", "hello")
	c.ok("append", "first", "--role", "assistant", "hi")

	var fork restoreJSON
	c.okJSON(&fork, with("fork", "first")...)
	if fork.Source != "fork" || fork.From != "first" || fork.To == "first" || fork.SessionEnd.Reason != "resume" {
		t.Fatalf("fork = %+v", fork)
	}
	out := c.ok(with("compact", "we said hello")...)
	if !strings.Contains(out, "compact restore") {
		t.Fatalf("compact printed %s", out)
	}
	claude := c.ok("replay", "--format", "claude", fork.To)
	if !strings.Contains(claude, `"subtype":"compact_boundary"`) || !strings.Contains(claude, `"isCompactSummary":true`) {
		t.Fatalf("replay of the compacted fork:\n%s", claude)
	}
	var cleared restoreJSON
	c.okJSON(&cleared, with("clear")...)
	if cleared.Source != "clear" || cleared.From != fork.To || cleared.SessionEnd.Reason != "clear" {
		t.Fatalf("clear = %+v", cleared)
	}
	if out := c.ok(with("stop")...); !strings.HasPrefix(out, "Stop hooks of agent ide:\n  block ") || !strings.HasSuffix(out, "\nblocked: tests are still red\n") {
		t.Fatalf("stop printed %s", out)
	}
	c.fails(2, with("end")...)                      // --reason is required
	c.fails(2, with("end", "--reason", "bored")...) // a reason end does not know is a usage error
	out = c.ok(with("end", "--reason", "user_exit")...)
	if !strings.Contains(out, "the agent has no current session now") {
		t.Fatalf("end printed %s", out)
	}
	c.fails(1, with("clear")...) // no current session any more

	// Command hooks get Claude Code's words: a new session starts with
	// "startup", and user_exit ends one with "prompt_input_exit".
	want := []string{
		"SessionStart startup",
		"SessionEnd resume", "SessionStart fork",
		"SessionStart compact",
		"SessionEnd clear", "SessionStart clear",
		"SessionEnd prompt_input_exit",
	}
	if got := hookEvents(t, log); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("hooks ran for %q\nwant %q", got, want)
	}
	if out := c.ok("audit"); !strings.HasPrefix(out, "ok:") {
		t.Fatalf("audit after every path: %s", out)
	}
}
