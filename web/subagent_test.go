package web_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/web"
)

// callTool records tool call id of agent a's current session as an answer
// of its own, lets its hooks decide, and records output as its result.
func callTool(t *testing.T, a *reprise.Agent, id, name, input, output string) {
	t.Helper()
	ctx := context.Background()
	d, err := a.PreToolUse(ctx, reprise.ToolCall{ID: id, Name: name, Input: json.RawMessage(input), AddToolUse: true})
	if err != nil || d.Decision != hookexec.Allow {
		t.Fatalf("%s: %+v, %v", id, d, err)
	}
	if output == "" {
		return
	}
	if _, err := a.PostToolUse(ctx, reprise.ToolResult{ID: id, Output: json.RawMessage(output)}); err != nil {
		t.Fatal(err)
	}
}

// An agent's page shows the tree of its subagents, nested ones included,
// and their runs on its own timeline in the order they began, each marked
// with the subagent it is of; the Agent call's row names the subagent it
// started, and the runs of a subagent's start and stop are named
// SubagentStart and SubagentStop, there and on the subagent's own page.
// The agents list marks a subagent's agent with the session of its call.
func TestAgentPageShowsItsSubagentsOnOneTimeline(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	allow := `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'`
	for _, h := range []hookexec.Hook{
		{Event: hookexec.PreToolUse, Body: hookexec.Command{Line: allow}},
		{Event: "SubagentStart", Body: hookexec.Command{Line: "echo started"}},
		{Event: "SubagentStop", Body: hookexec.Command{Line: "echo stopped"}},
	} {
		if err := e.Hooks().Add(h); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Session(t, e, "s", dir, "review the code")
	parent := testkit.Agent(t, e, "ide")
	if _, err := parent.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	callTool(t, parent, "toolu_agent1", "Agent", `{"description": "look", "prompt": "list the files", "subagent_type": "Explore"}`, "")
	child, err := parent.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: "toolu_agent1", Type: "Explore", Description: "look", Prompt: "list the files"})
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, child, "toolu_nested", "Task", `{"description": "deeper", "prompt": "read one"}`, "")
	grandchild, err := child.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: "toolu_nested", Description: "deeper", Prompt: "read one"})
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, grandchild, "toolu_read", "Read", `{"file_path": "/src/a.go"}`, `"package a"`)
	if _, err := e.Append(ctx, grandchild.Current(), reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "text", Text: "a.go"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := grandchild.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(web.New(e, web.Options{}))
	t.Cleanup(srv.Close)
	s := &served{srv: srv}
	var got struct {
		Subagents []struct {
			Agent, Session, Call, Type, Description string
			Depth                                   int
		} `json:"subagents"`
		Runs []struct {
			ID, Agent, Kind string
			Depth           int
			Hooks           []struct{ Event string }
		} `json:"runs"`
	}
	s.api(t, "/agents/ide", &got)
	if len(got.Subagents) != 2 {
		t.Fatalf("subagents %+v, want the child and its own", got.Subagents)
	}
	first, second := got.Subagents[0], got.Subagents[1]
	if first.Agent != child.ID() || first.Session != "s" || first.Call != "toolu_agent1" || first.Type != "Explore" || first.Description != "look" || first.Depth != 1 {
		t.Errorf("first subagent %+v", first)
	}
	if second.Agent != grandchild.ID() || second.Session != child.ID() || second.Call != "toolu_nested" || second.Type != reprise.DefaultSubagentType || second.Depth != 2 {
		t.Errorf("nested subagent %+v", second)
	}
	var order []string
	events := map[string][]string{}
	for _, r := range got.Runs {
		order = append(order, r.Agent+":"+r.ID)
		for _, h := range r.Hooks {
			events[r.Agent] = append(events[r.Agent], h.Event)
		}
		if want := map[string]int{"ide": 0, child.ID(): 1, grandchild.ID(): 2}[r.Agent]; r.Depth != want {
			t.Errorf("run %s of %s at depth %d, want %d", r.ID, r.Agent, r.Depth, want)
		}
	}
	at := func(run string) int {
		for i, o := range order {
			if strings.HasSuffix(o, ":"+run) {
				return i
			}
		}
		t.Fatalf("no run %s in %v", run, order)
		return -1
	}
	if !(at("toolu_agent1") < at("toolu_nested") && at("toolu_nested") < at("toolu_read")) {
		t.Errorf("runs out of the order they began: %v", order)
	}
	for agent, want := range map[string]string{
		"ide":           "SessionStart PreToolUse",
		child.ID():      "SubagentStart PreToolUse",
		grandchild.ID(): "SubagentStart PreToolUse SubagentStop",
	} {
		if got := strings.Join(events[agent], " "); got != want {
			t.Errorf("hook runs of %s: %s, want %s", agent, got, want)
		}
	}
	body := s.page(t, "/agents/ide")
	contains(t, "agent page", body, `href="/agents/`+child.ID()+`"`, `href="/agents/`+grandchild.ID()+`"`,
		`class="run sub depth-2"`, `started by call <a href="#run-toolu_agent1">toolu_agent1</a>`, `<p class="event">SubagentStop`)
	if strings.Contains(body, `<p class="event">Stop`) {
		t.Error("the agent page names a SubagentStop run Stop")
	}

	var agents struct{ Agents []jsonview.Agent }
	s.api(t, "/agents", &agents)
	of := map[string]string{}
	for _, a := range agents.Agents {
		of[a.ID] = a.SubagentOf
	}
	if of["ide"] != "" || of[child.ID()] != "s" || of[grandchild.ID()] != child.ID() {
		t.Errorf("agents' subagent_of: %v", of)
	}
	contains(t, "agents page", s.page(t, "/agents"), `subagent of <a href="/sessions/s">s</a>`)
}
