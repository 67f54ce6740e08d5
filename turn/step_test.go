package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/turn"
)

// stepEngine is an Engine on a bbolt file whose agent ide has session s
// current, with a Stop hook that appends to stops and a PreToolUse hook
// that appends to pres.
func stepEngine(t *testing.T) (e *reprise.Engine, a *reprise.Agent, pres, stops string) {
	t.Helper()
	dir := t.TempDir()
	pres, stops = filepath.Join(dir, "pres"), filepath.Join(dir, "stops")
	e = testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	for _, h := range []hookexec.Hook{
		{Event: hookexec.PreToolUse, Body: hookexec.Command{Line: "echo pre >> '" + pres + "'"}},
		{Event: hookexec.Stop, Body: hookexec.Command{Line: "echo stop >> '" + stops + "'"}},
	} {
		if err := e.Hooks().Add(h); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Session(t, e, "s", dir)
	a = testkit.Agent(t, e, "ide")
	if _, err := a.Start(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	return e, a, pres, stops
}

// lines counts the lines of the file at path.
func lines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// step takes a step and fails on an error.
func step(t *testing.T, e *reprise.Engine, a *reprise.Agent, in turn.StepInput) *turn.StepResult {
	t.Helper()
	res, err := turn.Step(context.Background(), e, a, in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A host that runs the model and the tools itself takes a whole turn a
// step at a time: the prompt gets an ask, the answer with two calls gets
// both to run (decided, their PreToolUse hooks run once), their results
// get an ask with them in the conversation, the final answer ends the
// turn through the Stop hooks. An answer given again for a conversation
// that moved on is not recorded twice.
func TestAHostTakesATurnAStepAtATime(t *testing.T) {
	e, a, pres, stops := stepEngine(t)
	res := step(t, e, a, turn.StepInput{Prompt: "list the files", Permission: hookexec.Allow})
	if res.Kind != turn.StepAsk || res.After == "" || len(res.Messages) == 0 {
		t.Fatalf("the prompt's step: %+v", res)
	}
	ans := answer("let me look", "toolu_a:Bash", "toolu_b:Read")
	res = step(t, e, a, turn.StepInput{Answer: &ans, After: res.After, Permission: hookexec.Allow})
	if res.Kind != turn.StepTools || len(res.Calls) != 2 || res.Calls[0].ID != "toolu_a" || res.Calls[1].ID != "toolu_b" || len(res.Asks) != 0 {
		t.Fatalf("the answer's step: %+v", res)
	}
	if n := lines(t, pres); n != 2 {
		t.Errorf("PreToolUse ran %d times, want 2", n)
	}
	stale := res
	res = step(t, e, a, turn.StepInput{Permission: hookexec.Allow, Results: []reprise.ToolResult{
		{ID: "toolu_a", Output: json.RawMessage(`"a.txt"`)}, {ID: "toolu_b", Output: json.RawMessage(`"contents"`)}}})
	if res.Kind != turn.StepAsk {
		t.Fatalf("the results' step: %+v", res)
	}
	if n := lines(t, pres); n != 2 {
		t.Errorf("PreToolUse ran %d times once the results were in, want 2", n)
	}
	again := answer("never", "toolu_c:Bash")
	res2 := step(t, e, a, turn.StepInput{Answer: &again, After: stale.After})
	if res2.Kind != turn.StepAsk || res2.After != res.After {
		t.Errorf("an answer for an older conversation: %+v; want the same ask again", res2)
	}
	final := answer("two files")
	res = step(t, e, a, turn.StepInput{Answer: &final, After: res.After})
	if res.Kind != turn.StepOver || res.Outcome == nil {
		t.Fatalf("the final answer's step: %+v", res)
	}
	if n := lines(t, stops); n != 1 {
		t.Errorf("Stop ran %d times, want once", n)
	}
	got := shape(t, e, "s")
	want := `user "list the files"
assistant "let me look" use:toolu_a use:toolu_b
user result:toolu_a="a.txt"
user result:toolu_b="contents"
assistant "two files"`
	if got != want {
		t.Errorf("the conversation:\n%s\nwant:\n%s", got, want)
	}
	if res := step(t, e, a, turn.StepInput{}); res.Kind != turn.StepOver {
		t.Errorf("a step of a turn that is over: %+v", res)
	}
}

// A host that keeps the conversation it was given is given only what is
// new: an ask since an earlier ask's last message holds the messages after
// it, which added to the earlier ones make the whole conversation; a
// message the conversation does not hold gets the whole of it.
func TestAnAskSinceAnEarlierOneGivesOnlyWhatIsNew(t *testing.T) {
	e, a, _, _ := stepEngine(t)
	first := step(t, e, a, turn.StepInput{Prompt: "list the files", Permission: hookexec.Allow, Since: "no-such-message"})
	if first.Kind != turn.StepAsk || first.Since != "" || len(first.Messages) == 0 {
		t.Fatalf("an ask since a message the conversation does not hold: %+v; want the whole conversation", first)
	}
	ans := answer("let me look", "toolu_a:Bash", "toolu_b:Read")
	step(t, e, a, turn.StepInput{Answer: &ans, After: first.After, Permission: hookexec.Allow})
	res := step(t, e, a, turn.StepInput{Since: first.After, Permission: hookexec.Allow, Results: []reprise.ToolResult{
		{ID: "toolu_a", Output: json.RawMessage(`"a.txt"`)}, {ID: "toolu_b", Output: json.RawMessage(`"contents"`)}}})
	if res.Kind != turn.StepAsk || res.Since != first.After || len(res.Messages) != 3 {
		t.Fatalf("the ask since the first: since %q, %d messages; want since %q and the answer and its two results", res.Since, len(res.Messages), first.After)
	}
	whole := step(t, e, a, turn.StepInput{})
	if whole.Since != "" || whole.After != res.After {
		t.Fatalf("the same ask asked for whole: since %q, after %q; want no since and after %q", whole.Since, whole.After, res.After)
	}
	kept := append(append([]reprise.Message{}, first.Messages...), res.Messages...)
	if len(kept) != len(whole.Messages) {
		t.Fatalf("the kept messages and the new ones are %d, the whole conversation %d", len(kept), len(whole.Messages))
	}
	for i := range kept {
		if kept[i].UUID != whole.Messages[i].UUID {
			t.Errorf("message %d: kept %s, the whole conversation has %s", i, kept[i].UUID, whole.Messages[i].UUID)
		}
	}
	if again := step(t, e, a, turn.StepInput{Since: res.After}); again.Since != res.After || len(again.Messages) != 0 {
		t.Errorf("an ask since its own last message: since %q, %d messages; want none new", again.Since, len(again.Messages))
	}
}

// A host that died after it was given calls to run comes back with no
// results: each call may have run, so it gets an interrupted result,
// unless its tool is repeatable, which it is given to run again; no hook
// runs twice. A call left to ask is asked about until the host answers.
func TestAHostThatDiedMidStepGoesOn(t *testing.T) {
	e, a, pres, _ := stepEngine(t)
	res := step(t, e, a, turn.StepInput{Prompt: "go"})
	ans := answer("", "toolu_a:Bash", "toolu_b:Read", "toolu_c:Write")
	res = step(t, e, a, turn.StepInput{Answer: &ans, After: res.After})
	if res.Kind != turn.StepTools || len(res.Calls) != 0 || len(res.Asks) != 3 {
		t.Fatalf("calls nothing allowed: %+v; want three to ask about", res)
	}
	res = step(t, e, a, turn.StepInput{Answers: []reprise.ToolAnswer{{ID: "toolu_a", Allow: true}, {ID: "toolu_b", Allow: true}}})
	if res.Kind != turn.StepTools || len(res.Calls) != 2 || len(res.Asks) != 1 || res.Asks[0].Call.ID != "toolu_c" {
		t.Fatalf("two answered: %+v; want two to run and one still to ask", res)
	}
	// The host dies here; back, it brings nothing of the two it ran.
	res = step(t, e, a, turn.StepInput{Repeatable: []string{"Read"},
		Answers: []reprise.ToolAnswer{{ID: "toolu_c", Refusal: "not now"}}})
	if res.Kind != turn.StepTools || len(res.Calls) != 1 || res.Calls[0].ID != "toolu_b" || !res.Calls[0].Again {
		t.Fatalf("after the host died: %+v; want the repeatable Read to run again", res)
	}
	res = step(t, e, a, turn.StepInput{Results: []reprise.ToolResult{{ID: "toolu_b", Output: json.RawMessage(`"contents"`)}}})
	if res.Kind != turn.StepAsk {
		t.Fatalf("the last result's step: %+v", res)
	}
	if n := lines(t, pres); n != 3 {
		t.Errorf("PreToolUse ran %d times, want once a call", n)
	}
	got := shape(t, e, "s")
	for _, w := range []string{`result:toolu_a="` + strings.Join(strings.Fields(turn.Interrupted), " "), `result:toolu_b="contents"`, `result:toolu_c="not now"!`} {
		if !strings.Contains(strings.Join(strings.Fields(got), " "), w) {
			t.Errorf("the conversation lacks %s:\n%s", w, got)
		}
	}
	if _, err := turn.Step(context.Background(), e, a, turn.StepInput{Prompt: "x", Answers: []reprise.ToolAnswer{{ID: "y"}}}); !errors.Is(err, turn.ErrBadStep) {
		t.Errorf("a prompt with answers: %v; want ErrBadStep", err)
	}
}

// Under Subagents, an Agent call starts its subagent, once, and is given
// to run with the subagent's agent; the host drives the subagent's turn a
// step at a time on that agent (its stop running SubagentStop), and its
// final answer, given as the call's result, goes to the parent.
func TestAHostDrivesASubagentAStepAtATime(t *testing.T) {
	ctx := context.Background()
	e, a, _, stops := stepEngine(t)
	subStops := filepath.Join(filepath.Dir(stops), "substops")
	if err := e.Hooks().Add(hookexec.Hook{Event: "SubagentStop", Body: hookexec.Command{Line: "echo substop >> '" + subStops + "'"}}); err != nil {
		t.Fatal(err)
	}
	in := turn.StepInput{Permission: hookexec.Allow, Subagents: true}
	res := step(t, e, a, turn.StepInput{Prompt: "review it", Permission: hookexec.Allow, Subagents: true})
	raw, _ := json.Marshal(map[string]any{"type": "tool_use", "id": "toolu_agent", "name": "Agent",
		"input": map[string]string{"description": "look", "prompt": "list the files"}})
	call := reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "tool_use", Raw: raw}}}
	in.Answer, in.After = &call, res.After
	res = step(t, e, a, in)
	if res.Kind != turn.StepTools || len(res.Calls) != 1 || res.Calls[0].Subagent == "" {
		t.Fatalf("the Agent call's step: %+v; want it given with its subagent", res)
	}
	child, err := e.Agent(ctx, res.Calls[0].Subagent)
	if err != nil {
		t.Fatal(err)
	}
	again := step(t, e, a, turn.StepInput{Permission: hookexec.Allow, Subagents: true})
	if again.Kind != turn.StepTools || len(again.Calls) != 1 || again.Calls[0].Subagent != child.ID() {
		t.Fatalf("the parent's step again, its host having died: %+v; want the same subagent", again)
	}
	sub := step(t, e, child, turn.StepInput{Permission: hookexec.Allow})
	if sub.Kind != turn.StepAsk || !strings.Contains(shape(t, e, child.Current()), "list the files") {
		t.Fatalf("the subagent's first step: %+v", sub)
	}
	final := answer("two files")
	sub = step(t, e, child, turn.StepInput{Answer: &final, After: sub.After})
	if sub.Kind != turn.StepOver || lines(t, subStops) != 1 || lines(t, stops) != 0 {
		t.Fatalf("the subagent's last step: %+v; SubagentStop %d, Stop %d; want SubagentStop once, Stop never", sub, lines(t, subStops), lines(t, stops))
	}
	res = step(t, e, a, turn.StepInput{Results: []reprise.ToolResult{{ID: "toolu_agent", Output: json.RawMessage(`"two files"`)}}})
	if res.Kind != turn.StepAsk {
		t.Fatalf("the parent's step with the subagent's answer: %+v", res)
	}
	subs, err := e.Subagents(ctx, "s")
	if err != nil || len(subs) != 1 || subs[0].Session.ID != child.ID() || !subs[0].Resulted {
		t.Errorf("the tree: %+v, %v; want one subagent whose call has its result", subs, err)
	}
}
