package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// import --subagents reads a Claude Code session with its subagents, as
// 2.1.328 wrote it, and export --tree writes it back in the same layout,
// the subagent's transcript byte for byte.
func TestImportAndExportASessionWithSubagents(t *testing.T) {
	project, err := filepath.Abs(filepath.Join("..", "..", "testdata", "claudecode", "subagents", "single-fg", "projects", "-PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	mains, _ := filepath.Glob(filepath.Join(project, "*.jsonl"))
	subs, _ := filepath.Glob(filepath.Join(project, "*", "subagents", "agent-*.jsonl"))
	if len(mains) != 1 || len(subs) != 1 {
		t.Fatalf("fixture: %v %v", mains, subs)
	}
	out := c.ok("import", mains[0], "--subagents", "--id", "main", "--cwd", t.TempDir())
	if strings.Count(out, "imported ") != 2 || !strings.Contains(out, "imported main:") || !strings.Contains(out, "imported agent-a") {
		t.Fatalf("import --subagents printed %q", out)
	}
	c.fails(exitUsage, "import", "-", "--subagents")
	if list := c.ok("sessions"); !strings.Contains(list, "(subagent of main)") {
		t.Errorf("sessions lists no subagent of main:\n%s", list)
	}
	var listed []struct {
		ID         string `json:"id"`
		SubagentOf string `json:"subagent_of"`
	}
	c.okJSON(&listed, "sessions")
	if len(listed) != 2 || listed[0].SubagentOf+listed[1].SubagentOf != "main" {
		t.Errorf("sessions --json: %+v", listed)
	}
	dir := t.TempDir()
	out = c.ok("export", "main", "--tree", dir)
	files := strings.Fields(out)
	if len(files) != 3 || files[0] != filepath.Join(dir, "main.jsonl") {
		t.Fatalf("export --tree printed %q", out)
	}
	var exported string
	for _, f := range files {
		if strings.HasSuffix(f, ".jsonl") && strings.Contains(f, string(filepath.Separator)+"subagents"+string(filepath.Separator)) {
			exported = f
		}
	}
	got, err := os.ReadFile(exported)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(subs[0])
	if string(got) != string(want) {
		t.Errorf("the subagent's transcript %s differs from the one imported", exported)
	}
	if r := c.fails(exitFailure, "export", "main", "--tree", dir); !strings.Contains(r.stderr, "exists") {
		t.Errorf("an export over the last one: %s", r.stderr)
	}
	c.fails(exitUsage, "export", "main", "--tree", dir, "-o", filepath.Join(dir, "x"))
}

// agents marks a subagent's agent with the session of the call that
// started it, and log names the hooks of a subagent's start and stop
// SubagentStart and SubagentStop.
func TestAgentsAndLogShowASubagent(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	if err := os.MkdirAll(filepath.Dir(c.store), 0o700); err != nil {
		t.Fatal(err)
	}
	e := testkit.OpenEngine(t, c.store, reprise.Options{TranscriptDir: reprise.DefaultTranscriptDir(c.store), Logger: testkit.Discard})
	allow := `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'`
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.PreToolUse, Body: hookexec.Command{Line: allow}}); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "main", c.mkdir("work"), "review it")
	parent := testkit.Agent(t, e, "ide")
	if _, err := parent.Start(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := parent.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_a", Name: "Agent", AddToolUse: true,
		Input: json.RawMessage(`{"description": "look", "prompt": "list the files"}`)}); err != nil {
		t.Fatal(err)
	}
	child, err := parent.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: "toolu_a", Prompt: "list the files"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, child.Current(), reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "text", Text: "two files"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := child.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	list := c.ok("agents")
	if !strings.Contains(list, child.ID()+" (subagent of main)") || strings.Contains(list, "ide (subagent") {
		t.Errorf("agents:\n%s", list)
	}
	var agents []struct {
		ID         string `json:"id"`
		SubagentOf string `json:"subagent_of"`
	}
	c.okJSON(&agents, "agents")
	if len(agents) != 2 || agents[0].ID != child.ID() || agents[0].SubagentOf != "main" || agents[1].SubagentOf != "" {
		t.Errorf("agents --json: %+v", agents)
	}
	log := c.ok("log", "--agent", child.ID())
	for _, want := range []string{"SessionStartHookStarted  session=" + child.ID() + " source=startup event=SubagentStart",
		"StopHookStarted  session=" + child.ID() + " event=SubagentStop active=false"} {
		if !strings.Contains(strings.Join(strings.Fields(log), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if parentLog := c.ok("log", "--agent", "ide"); strings.Contains(parentLog, "event=") {
		t.Errorf("the parent's own SessionStart is named an event:\n%s", parentLog)
	}
}
