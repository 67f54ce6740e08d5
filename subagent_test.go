package reprise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
)

// hookLog is a command that appends EVENT and its stdin, one line each,
// to path.
func hookLog(path, event string) string {
	return `printf '` + event + ` ' >> '` + path + `'; cat >> '` + path + `'; echo >> '` + path + `'`
}

// readHookLog returns the lines hookLog wrote, each split into its event
// and its stdin.
func readHookLog(t *testing.T, path string) (events []string, inputs []map[string]any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		event, stdin, _ := strings.Cut(line, " ")
		var in map[string]any
		if err := json.Unmarshal([]byte(stdin), &in); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		events, inputs = append(events, event), append(inputs, in)
	}
	return events, inputs
}

// An Agent call starts one subagent: its session is linked to the call
// and holds the prompt, SubagentStart hooks run once (never
// SessionStart's) with the parent's session_id and transcript_path and
// the subagent's agent_id and agent_type, their context reaches the
// subagent, its tool hooks are told the parent's session and its
// agent_id, and its stop runs SubagentStop hooks (never Stop's), whose
// block sends the subagent back to work in Claude Code's words. Asked
// again, in a new process, StartSubagent starts nothing.
func TestAnAgentCallStartsOneSubagent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	runs, blocked := filepath.Join(dir, "runs"), filepath.Join(dir, "blocked")
	settings := `{"hooks": {
		"SessionStart": [{"hooks": [{"type": "command", "command": "` + hookLog(runs, "SessionStart") + `"}]}],
		"SubagentStart": [{"matcher": "general-purpose", "hooks": [{"type": "command", "command": "` + hookLog(runs, "SubagentStart") + `; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"SubagentStart\", \"additionalContext\": \"work in /src\"}}'"}]},
			{"matcher": "code-reviewer", "hooks": [{"type": "command", "command": "echo never >> '` + runs + `'"}]}],
		"PreToolUse": [{"hooks": [{"type": "command", "command": "` + hookLog(runs, "PreToolUse") + `; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\"}}'"}]}],
		"SubagentStop": [{"hooks": [{"type": "command", "command": "` + hookLog(runs, "SubagentStop") + `; if [ ! -e '` + blocked + `' ]; then touch '` + blocked + `'; echo 'say how many files' >&2; exit 2; fi"}]}],
		"Stop": [{"hooks": [{"type": "command", "command": "` + hookLog(runs, "Stop") + `"}]}]}}`
	e, parent := fireEngine(t, dir, settings)
	os.Remove(runs) // the parent's own SessionStart
	if _, err := e.Append(ctx, "s", reprise.ToolUseMessage("toolu_agent1", "Agent",
		json.RawMessage(`{"description": "list files", "prompt": "Run ls and report", "subagent_type": "general-purpose"}`))); err != nil {
		t.Fatal(err)
	}
	call := reprise.SubagentCall{ToolUseID: "toolu_agent1", Type: "general-purpose", Description: "list files", Prompt: "Run ls and report"}
	if _, err := parent.StartSubagent(ctx, call); !errors.Is(err, reprise.ErrBadSubagent) {
		t.Fatalf("a subagent of a call not allowed yet: %v; want ErrBadSubagent", err)
	}
	if d, err := parent.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_agent1", Name: "Agent"}); err != nil || d.Decision != hookexec.Allow {
		t.Fatalf("the Agent call: %+v, %v", d, err)
	}
	child, err := parent.StartSubagent(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	agentID := reprise.SubagentID("s", "toolu_agent1")
	if child.ID() != reprise.SubagentSession(agentID) || child.Current() != child.ID() {
		t.Fatalf("the subagent's agent %s is on %q", child.ID(), child.Current())
	}
	msgs, err := e.Conversation(ctx, child.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || projection.FirstText(msgs[0]) != "Run ls and report" || !msgs[1].IsMeta ||
		projection.FirstText(msgs[1]) != "<system-reminder>\nSubagentStart hook additional context: work in /src\n</system-reminder>" {
		t.Fatalf("the subagent's session: %+v", msgs)
	}

	// The subagent's own tool call, then its stop, blocked once.
	if _, err := e.Append(ctx, child.ID(), reprise.ToolUseMessage("toolu_ls", "Bash", json.RawMessage(`{"command": "ls"}`))); err != nil {
		t.Fatal(err)
	}
	if d, err := child.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_ls", Name: "Bash"}); err != nil || d.Decision != hookexec.Allow {
		t.Fatalf("the subagent's call: %+v, %v", d, err)
	}
	if _, err := child.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_ls", Output: json.RawMessage(`"a\nb"`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, child.ID(), reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "text", Text: "two files"}}}); err != nil {
		t.Fatal(err)
	}
	st, err := child.Stop(ctx)
	if err != nil || !st.Blocked {
		t.Fatalf("the subagent's first stop: %+v, %v; want it blocked", st, err)
	}
	msgs, _ = e.Conversation(ctx, child.ID())
	if last := projection.FirstText(msgs[len(msgs)-1]); !strings.HasPrefix(last, "SubagentStop hook blocking error from command: ") || !strings.HasSuffix(last, ": say how many files") {
		t.Errorf("the block's feedback: %q", last)
	}
	if _, err := e.Append(ctx, child.ID(), reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "text", Text: "2 files"}}}); err != nil {
		t.Fatal(err)
	}
	if st, err := child.Stop(ctx); err != nil || st.Blocked {
		t.Fatalf("the subagent's second stop: %+v, %v", st, err)
	}

	// The subagent's transcript is a sidechain of its parent's session, as
	// Claude Code writes it: live and exported alike.
	var exported bytes.Buffer
	if err := e.Export(ctx, child.ID(), &exported); err != nil {
		t.Fatal(err)
	}
	live, err := os.ReadFile(e.TranscriptPath(child.ID()))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"exported": exported.Bytes(), "live": live} {
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) < 5 {
			t.Fatalf("%s transcript: %s", name, data)
		}
		for _, line := range lines {
			var rec struct {
				Sidechain bool   `json:"isSidechain"`
				AgentID   string `json:"agentId"`
				Session   string `json:"sessionId"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil || !rec.Sidechain || rec.AgentID != agentID || rec.Session != "s" {
				t.Errorf("%s transcript line %s: %+v, %v; want a sidechain of s with agentId %s", name, line, rec, err, agentID)
			}
		}
	}

	// A new process: the same call starts nothing.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	hooks, err := hookexec.LoadSettings(filepath.Join(dir, "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e2.Hooks().AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	again, err := testkit.Agent(t, e2, "ide").StartSubagent(ctx, call)
	if err != nil || again.ID() != child.ID() {
		t.Fatalf("asked again: %v, %v", again, err)
	}

	events, inputs := readHookLog(t, runs)
	if strings.Join(events, " ") != "PreToolUse SubagentStart PreToolUse SubagentStop SubagentStop" {
		t.Fatalf("hooks ran: %v", events)
	}
	parentTranscript := e2.TranscriptPath("s")
	for i, in := range inputs {
		if in["session_id"] != "s" || in["transcript_path"] != parentTranscript || in["hook_event_name"] != events[i] || in["cwd"] != dir {
			t.Errorf("%s is told %v; want the parent's session and transcript", events[i], in)
		}
		// Every hook inside the subagent is told its agent_id and type,
		// as Claude Code 2.1.328 tells them (testdata/claudecode/subagents);
		// the parent's own call is not.
		_, hasID := in["agent_id"]
		if want := i > 0; hasID != want || want && in["agent_type"] != "general-purpose" {
			t.Errorf("%s: agent_id given %v, want %v: %v", events[i], hasID, want, in)
		}
	}
	if inputs[0]["tool_name"] != "Agent" || inputs[2]["tool_name"] != "Bash" {
		t.Errorf("the tool hooks: %v, %v", inputs[0], inputs[2])
	}
	if in := inputs[1]; in["agent_id"] != agentID || in["agent_type"] != "general-purpose" || in["permission_mode"] != nil {
		t.Errorf("SubagentStart: %v", in)
	}
	if inputs[3]["permission_mode"] != "default" {
		t.Errorf("SubagentStop: %v; want the permission_mode", inputs[3])
	}
	stop, second := inputs[3], inputs[4]
	if stop["agent_id"] != agentID || stop["agent_type"] != "general-purpose" || stop["stop_hook_active"] != false ||
		stop["last_assistant_message"] != "two files" || stop["agent_transcript_path"] != e2.TranscriptPath(child.ID()) {
		t.Errorf("SubagentStop: %v", stop)
	}
	if second["stop_hook_active"] != true || second["last_assistant_message"] != "2 files" {
		t.Errorf("the second SubagentStop: %v", second)
	}
}

// Subagents nest down to MaxSubagentDepth, as in Claude Code: each level
// is one deeper, and one at the limit starts none. Deleting the root
// session deletes the whole tree.
func TestSubagentsNestToTheLimit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard, MaxSubagentDepth: 2})
	testkit.Session(t, e, "s", dir, "hello")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	var tree []string
	for depth := 1; depth <= 3; depth++ {
		id := fmt.Sprintf("toolu_%d", depth)
		if _, err := e.Append(ctx, a.Current(), reprise.ToolUseMessage(id, "Agent", json.RawMessage(`{"prompt": "go on"}`))); err != nil {
			t.Fatal(err)
		}
		if _, err := a.PreToolUse(ctx, reprise.ToolCall{ID: id, Name: "Agent", Permission: hookexec.Allow}); err != nil {
			t.Fatal(err)
		}
		child, err := a.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: id, Prompt: "go on"})
		if depth == 3 {
			if !errors.Is(err, reprise.ErrNestedSubagent) || !strings.Contains(err.Error(), "depth 2 of 2") {
				t.Fatalf("a subagent at the limit: %v; want ErrNestedSubagent", err)
			}
			break
		}
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		info, err := e.Session(ctx, child.ID())
		if err != nil || info.Subagent.Depth != depth || info.Subagent.Session != a.Current() {
			t.Fatalf("depth %d: %+v, %v", depth, info.Subagent, err)
		}
		a = child
		tree = append(tree, child.ID())
	}
	// Deleting the session deletes its subagents, theirs too.
	if err := e.DeleteSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for _, id := range tree {
		if _, err := e.Session(ctx, id); !errors.Is(err, reprise.ErrSessionDeleted) {
			t.Errorf("subagent session %s after its root's deletion: %v; want ErrSessionDeleted", id, err)
		}
	}
}
