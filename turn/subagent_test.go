package turn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/audit"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/turn"
)

// agentCall is an answer that hands each prompt to a subagent, as calls
// of the Agent tool with ids a1, a2, ...
func agentCall(prompts ...string) reprise.Message {
	m := reprise.Message{Role: "assistant"}
	for i, p := range prompts {
		raw, _ := json.Marshal(map[string]any{"type": "tool_use", "id": fmt.Sprintf("a%d", i+1), "name": "Agent",
			"input": map[string]string{"description": "task " + p, "prompt": p, "subagent_type": "general-purpose"}})
		m.Content = append(m.Content, reprise.Block{Type: "tool_use", Raw: raw})
	}
	return m
}

// treeModel answers the parent with script parent, and a subagent, whose
// conversation opens with its prompt P, first with a call of Echo (id
// e-P), then with "P done".
type treeModel struct {
	parent *script
	mu     sync.Mutex
	asked  map[string]int // requests by the conversation's first text
}

func (m *treeModel) model(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
	first := projection.FirstText(conv[0])
	if first == "go" {
		return m.parent.model(ctx, conv)
	}
	m.mu.Lock()
	m.asked[first]++
	m.mu.Unlock()
	for _, msg := range conv {
		if msg.Role == "assistant" {
			return answer(first + " done"), nil
		}
	}
	return answer("", "e-"+first+":Echo"), nil
}

// The Runner turns the Agent calls of one answer into subagent turns,
// run at once: each subagent's SubagentStart and SubagentStop hooks run
// once, its own calls run through its own hooks, and its final answer is
// the parent call's tool_result; a second Resume starts nothing again.
func TestAgentCallsRunAsSubagentTurns(t *testing.T) {
	ctx := context.Background()
	tm := &treeModel{parent: &script{answers: []reprise.Message{agentCall("A", "B"), answer("both done")}}, asked: map[string]int{}}
	var r runs
	e, runner := newRunner(t, tm.parent, &r)
	runner.Model, runner.Parallel = tm.model, true
	runner.Subagents = map[string]turn.Subagent{"general-purpose": {Tools: []string{"Echo"}}}
	var mu sync.Mutex
	hooks := map[string]int{}
	count := func(event string) hookexec.EventFunc {
		return func(ctx context.Context, in hookexec.EventInput) (hookexec.EventOutput, error) {
			mu.Lock()
			defer mu.Unlock()
			hooks[event+" "+in.AgentType]++
			if in.SessionID != "s" || in.AgentID == "" {
				t.Errorf("%s told session %q, agent %q", event, in.SessionID, in.AgentID)
			}
			return hookexec.EventOutput{}, nil
		}
	}
	for _, ev := range []hookexec.Event{"SubagentStart", "SubagentStop"} {
		if err := e.Hooks().On(ev, "general-purpose", count(string(ev))); err != nil {
			t.Fatal(err)
		}
	}
	var events []string
	runner.OnEvent = func(ev turn.Event) {
		if ev.Kind == turn.Ran {
			events = append(events, ev.Subagent+"/"+ev.Call.Name)
		}
	}
	out, err := runner.Run(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	if out.Requests != 2 {
		t.Errorf("the parent made %d requests, want 2", out.Requests)
	}
	// Recorded as each subagent finished, in either order.
	want := `user "go"
assistant use:a1 use:a2
user result:a1="A done"
user result:a2="B done"
assistant "both done"`
	lines := strings.Split(shape(t, e, "s"), "\n")
	if len(lines) == 5 {
		slices.Sort(lines[2:4])
	}
	if got := strings.Join(lines, "\n"); got != want {
		t.Errorf("the parent:\n%s\nwant:\n%s", got, want)
	}
	idA := reprise.SubagentSession(reprise.SubagentID("s", "a1"))
	wantA := `user "A"
assistant use:e-A
user result:e-A="ran e-A"
assistant "A done"`
	if got := shape(t, e, idA); got != wantA {
		t.Errorf("subagent A:\n%s\nwant:\n%s", got, wantA)
	}
	if hooks["SubagentStart general-purpose"] != 2 || hooks["SubagentStop general-purpose"] != 2 || r.count("e-A") != 1 || r.count("e-B") != 1 {
		t.Errorf("hooks %v, runs %v; want each subagent started, stopped and its tool run once", hooks, r.n)
	}
	slices.Sort(events)
	if got := strings.Join(events, " "); !strings.HasPrefix(got, "/Agent /Agent a") || strings.Count(got, "/Echo") != 2 {
		t.Errorf("events: %s", got)
	}
	subs, err := e.Subagents(ctx, "s")
	if err != nil || len(subs) != 2 || subs[0].Session.ID != idA || subs[0].Session.Subagent.ToolUseID != "a1" ||
		subs[1].Session.Subagent.ToolUseID != "a2" || subs[0].Turn.Phase != reprise.TurnOver || !subs[0].Resulted || !subs[1].Resulted {
		t.Errorf("the tree: %+v, %v", subs, err)
	}
	again, err := runner.Resume(ctx)
	if err != nil || again.Resumed || again.Requests != 0 || hooks["SubagentStart general-purpose"] != 2 || tm.asked["A"] != 2 {
		t.Errorf("resumed again: %+v, %v, hooks %v, asked %v", again, err, hooks, tm.asked)
	}
}

// A process that dies while a subagent works leaves the parent's Agent
// call allowed without a result: Resume goes on with the subagent's turn
// where its log stands (its recorded answer not asked again, its tool not
// run again, SubagentStart not run again), then with the parent.
func TestResumeFinishesASubagentACrashCut(t *testing.T) {
	ctx := context.Background()
	tm := &treeModel{parent: &script{answers: []reprise.Message{agentCall("A"), answer("all done")}}, asked: map[string]int{}}
	var r runs
	e, runner := newRunner(t, tm.parent, &r)
	runner.Model = tm.model
	runner.Subagents = map[string]turn.Subagent{"general-purpose": {}}
	starts := 0
	if err := e.Hooks().On("SubagentStart", "", func(ctx context.Context, in hookexec.EventInput) (hookexec.EventOutput, error) {
		starts++
		return hookexec.EventOutput{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	// The dead process: the prompt, the answer, the Agent call allowed,
	// the subagent started, its answer recorded and its call's result.
	if _, err := runner.Agent.Prompt(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "s", agentCall("A")); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Agent.PreToolUse(ctx, reprise.ToolCall{ID: "a1", Name: "Agent", Permission: hookexec.Allow,
		Input: json.RawMessage(`{"description": "task A", "prompt": "A", "subagent_type": "general-purpose"}`)}); err != nil {
		t.Fatal(err)
	}
	child, err := runner.Agent.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: "a1", Prompt: "A"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, child.ID(), answer("", "e-A:Echo")); err != nil {
		t.Fatal(err)
	}
	if _, err := child.PreToolUse(ctx, reprise.ToolCall{ID: "e-A", Name: "Echo", Permission: hookexec.Allow}); err != nil {
		t.Fatal(err)
	}
	if _, err := child.PostToolUse(ctx, reprise.ToolResult{ID: "e-A", Output: json.RawMessage(`"ran e-A"`)}); err != nil {
		t.Fatal(err)
	}
	subs, err := e.Subagents(ctx, "s")
	if err != nil || len(subs) != 1 || subs[0].Session.ID != child.ID() || subs[0].Turn.Phase != reprise.TurnAsk || subs[0].Resulted {
		t.Fatalf("the tree the dead process left: %+v, %v; want one subagent waiting on its model", subs, err)
	}
	out, err := runner.Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Resumed || out.Requests != 1 || starts != 1 || r.count("e-A") != 0 || tm.asked["A"] != 1 {
		t.Errorf("outcome %+v, SubagentStart %d, e-A ran %d, subagent asked %d; want resumed with 1 request, 1, 0, 1",
			out, starts, r.count("e-A"), tm.asked["A"])
	}
	want := `user "go"
assistant use:a1
user result:a1="A done"
assistant "all done"`
	if got := shape(t, e, "s"); got != want {
		t.Errorf("the parent:\n%s\nwant:\n%s", got, want)
	}
}

// The audit counts subagents and names the two states a tree can be left
// in: a subagent that finished whose parent's call has no result yet (in
// progress: the parent's Resume records it), and a subagent session no
// Agent call started (a violation).
func TestTheAuditReadsTheTree(t *testing.T) {
	ctx := context.Background()
	tm := &treeModel{parent: &script{answers: []reprise.Message{agentCall("A"), answer("all done")}}, asked: map[string]int{}}
	var r runs
	e, runner := newRunner(t, tm.parent, &r)
	runner.Model = tm.model
	runner.Subagents = map[string]turn.Subagent{"general-purpose": {}}
	if _, err := runner.Agent.Prompt(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "s", agentCall("A")); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Agent.PreToolUse(ctx, reprise.ToolCall{ID: "a1", Name: "Agent", Permission: hookexec.Allow,
		Input: json.RawMessage(`{"prompt": "A"}`)}); err != nil {
		t.Fatal(err)
	}
	child, err := runner.Agent.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: "a1", Prompt: "A"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, child.ID(), answer("A done")); err != nil {
		t.Fatal(err)
	}
	if _, err := child.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Check(ctx, e.Store())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Subagents != 1 || len(rep.Violations) != 0 || len(rep.InProgress) != 1 || rep.InProgress[0].Lane != audit.LaneSubagent || rep.InProgress[0].ID != "a1" {
		t.Fatalf("a finished subagent without its result: %+v", rep)
	}
	if _, err := runner.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err = audit.Check(ctx, e.Store()); err != nil || len(rep.Violations) != 0 || len(rep.InProgress) != 0 {
		t.Fatalf("after Resume: %+v, %v", rep, err)
	}
	// A subagent session that names a call its parent does not hold.
	rec, err := schema.NewRecord(projection.SessionStream("agent-stray"), &schema.SessionCreated{ID: "agent-stray", Cwd: "/",
		Subagent: &schema.Subagent{Session: "s", ToolUseID: "a9", AgentID: "stray", Type: "general-purpose"}}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store().Append(ctx, []eventlog.Expect{{Stream: rec.Stream}}, []eventlog.Record{rec}); err != nil {
		t.Fatal(err)
	}
	rep, err = audit.Check(ctx, e.Store())
	if err != nil || len(rep.Violations) != 1 || rep.Violations[0].Kind != audit.OrphanSubagent {
		t.Fatalf("a subagent of no call: %+v, %v", rep, err)
	}
}

// Deleting a session deletes its subagents' sessions, and a vacuum then
// leaves none of their text in the store's file.
func TestDeletingASessionDeletesItsSubagents(t *testing.T) {
	ctx := context.Background()
	tm := &treeModel{parent: &script{answers: []reprise.Message{agentCall("the secret word is plover"), answer("all done")}}, asked: map[string]int{}}
	var r runs
	e, path := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
	testkit.Session(t, e, "s", t.TempDir())
	agent := testkit.Agent(t, e, "ide")
	if _, err := agent.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	runner := &turn.Runner{Engine: e, Agent: agent, Model: tm.model, Tools: map[string]turn.Tool{"Echo": r.tool(false, false)},
		Permission: func(turn.Call) string { return hookexec.Allow }, Subagents: map[string]turn.Subagent{"general-purpose": {}}}
	if _, err := runner.Run(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	child := reprise.SubagentSession(reprise.SubagentID("s", "a1"))
	if _, err := e.Session(ctx, child); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Session(ctx, child); !errors.Is(err, reprise.ErrSessionDeleted) {
		t.Fatalf("the subagent's session after its parent's deletion: %v; want ErrSessionDeleted", err)
	}
	if _, err := e.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("plover")) {
		t.Error("the subagent's prompt is still in the store's file after rm and vacuum")
	}
}
