package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/audit"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/turn"
)

// script is a model whose answers are fixed by how many the session holds:
// the n-th request of a turn gets answers[n], whatever came before.
type script struct {
	mu       sync.Mutex
	answers  []reprise.Message
	requests []int // the answer index of each request made
}

func (s *script) model(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
	n := 0
	for _, m := range conv {
		if m.Role == "assistant" {
			n++
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, n)
	if n >= len(s.answers) {
		return reprise.Message{}, fmt.Errorf("no answer %d in the script", n)
	}
	return s.answers[n], nil
}

// answer is an assistant message with text and tool calls, each "id:name".
func answer(text string, calls ...string) reprise.Message {
	m := reprise.Message{Role: "assistant"}
	if text != "" {
		m.Content = append(m.Content, reprise.Block{Type: "text", Text: text})
	}
	for _, c := range calls {
		id, name, _ := strings.Cut(c, ":")
		raw, _ := json.Marshal(map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]string{"arg": id}})
		m.Content = append(m.Content, reprise.Block{Type: "tool_use", Raw: raw})
	}
	return m
}

// runs counts a tool's runs by tool_use id.
type runs struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *runs) tool(repeatable bool, fail bool) turn.Tool {
	return turn.Tool{Repeatable: repeatable, Run: func(ctx context.Context, c turn.Call) (reprise.ToolResult, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.n == nil {
			r.n = map[string]int{}
		}
		r.n[c.ID]++
		if fail {
			return reprise.ToolResult{}, errors.New("failed " + c.ID)
		}
		out, _ := json.Marshal("ran " + c.ID)
		return reprise.ToolResult{Output: out}, nil
	}}
}

func (r *runs) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[id]
}

func newRunner(t *testing.T, s *script, r *runs) (*reprise.Engine, *turn.Runner) {
	t.Helper()
	e, _ := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
	testkit.Session(t, e, "s", t.TempDir())
	agent := testkit.Agent(t, e, "ide")
	if _, err := agent.Start(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	return e, &turn.Runner{Engine: e, Agent: agent, Model: s.model,
		Tools:      map[string]turn.Tool{"Echo": r.tool(false, false), "Fail": r.tool(false, true), "Read": r.tool(true, false)},
		Permission: func(turn.Call) string { return hookexec.Allow }}
}

// shape is a conversation in a line per message: its role and its blocks,
// each text, tool_use id or tool_result id with its content.
func shape(t *testing.T, e *reprise.Engine, id string) string {
	t.Helper()
	conv, err := e.Conversation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, m := range conv {
		line := m.Role
		if m.IsMeta {
			line += " meta"
		}
		for _, b := range m.Content {
			var f struct {
				ID      string          `json:"id"`
				UseID   string          `json:"tool_use_id"`
				Content json.RawMessage `json:"content"`
				IsError bool            `json:"is_error"`
			}
			json.Unmarshal(b.Raw, &f)
			switch b.Type {
			case "text":
				line += " " + fmt.Sprintf("%q", b.Text)
			case "tool_use":
				line += " use:" + f.ID
			case "tool_result":
				line += " result:" + f.UseID + "=" + string(f.Content)
				if f.IsError {
					line += "!"
				}
			}
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

func TestRunTakesATurnToItsEnd(t *testing.T) {
	s := &script{answers: []reprise.Message{
		answer("looking", "t1:Echo", "t2:Fail"),
		answer("done"),
		answer("really done"),
	}}
	var r runs
	e, runner := newRunner(t, s, &r)
	stops := 0
	if err := e.Hooks().OnStop("again", func(ctx context.Context, in hookexec.StopInput) (hookexec.StopOutput, error) {
		stops++
		if stops == 1 {
			return hookexec.StopOutput{Decision: "block", Reason: "check again"}, nil
		}
		return hookexec.StopOutput{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var kinds []turn.EventKind
	runner.OnEvent = func(ev turn.Event) { kinds = append(kinds, ev.Kind) }
	out, err := runner.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if out.Requests != 3 || out.Halted || out.Limited || out.Blocked {
		t.Errorf("outcome %+v, want 3 requests and a plain end", out)
	}
	want := `user "go"
assistant "looking" use:t1 use:t2
user result:t1="ran t1"
user result:t2="failed t2"!
assistant "done"
user meta "Stop hook blocking error from command: \"again\": check again"
assistant "really done"`
	if got := shape(t, e, "s"); got != want {
		t.Errorf("conversation:\n%s\nwant:\n%s", got, want)
	}
	if r.count("t1") != 1 || r.count("t2") != 1 || stops != 2 {
		t.Errorf("t1 ran %d times, t2 %d, Stop hooks %d; want 1, 1, 2", r.count("t1"), r.count("t2"), stops)
	}
	wantKinds := []turn.EventKind{turn.Prompted, turn.Answered, turn.Decided, turn.Ran, turn.Decided, turn.Ran,
		turn.Answered, turn.Stopped, turn.Answered, turn.Stopped}
	if fmt.Sprint(kinds) != fmt.Sprint(wantKinds) {
		t.Errorf("events %v, want %v", kinds, wantKinds)
	}
	// The turn is over: Resume has nothing to do.
	out, err = runner.Resume(context.Background())
	if err != nil || out.Resumed || out.Requests != 0 {
		t.Errorf("Resume of a finished turn: %+v, %v", out, err)
	}
}

// TestResumeAfterTheToolStarted plays a process that died after a call
// was allowed and before its result was recorded: the next process's
// Resume runs a Repeatable tool again, with Again set, and tells the model
// the other one was interrupted; neither decision is asked again.
func TestResumeAfterTheToolStarted(t *testing.T) {
	ctx := context.Background()
	s := &script{answers: []reprise.Message{answer("", "t1:Echo", "t2:Read"), answer("ok")}}
	var r runs
	e, runner := newRunner(t, s, &r)
	pre := 0
	if err := e.Hooks().OnPreToolUse("count", "", func(ctx context.Context, in hookexec.ToolInput) (hookexec.PreToolUseOutput, error) {
		pre++
		return hookexec.PreToolUseOutput{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	// The dead process: the prompt, the answer, both calls decided.
	if _, err := runner.Agent.Prompt(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "s", s.answers[0]); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"t1:Echo", "t2:Read"} {
		id, name, _ := strings.Cut(c, ":")
		if _, err := runner.Agent.PreToolUse(ctx, reprise.ToolCall{ID: id, Name: name, Input: json.RawMessage(`{}`), Permission: hookexec.Allow}); err != nil {
			t.Fatal(err)
		}
	}
	tn, err := runner.Agent.Turn(ctx)
	if err != nil || tn.Phase != reprise.TurnTools || len(tn.Calls) != 2 || !tn.Calls[0].Decided {
		t.Fatalf("turn %+v, %v; want its two decided calls left", tn, err)
	}
	if _, err := runner.Run(ctx, "next"); !errors.Is(err, turn.ErrUnfinished) {
		t.Errorf("Run on an unfinished turn: %v, want ErrUnfinished", err)
	}
	var again []string
	read := r.tool(true, false)
	runner.Tools["Read"] = turn.Tool{Repeatable: true, Run: func(ctx context.Context, c turn.Call) (reprise.ToolResult, error) {
		if c.Again {
			again = append(again, c.ID)
		}
		return read.Run(ctx, c)
	}}
	out, err := runner.Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Resumed || out.Requests != 1 {
		t.Errorf("outcome %+v, want a resumed turn with 1 request", out)
	}
	want := `user "go"
assistant use:t1 use:t2
user result:t1="The tool call was interrupted before its result was recorded: it may have run."!
user result:t2="ran t2"
assistant "ok"`
	if got := shape(t, e, "s"); got != want {
		t.Errorf("conversation:\n%s\nwant:\n%s", got, want)
	}
	if r.count("t1") != 0 || r.count("t2") != 1 || fmt.Sprint(again) != "[t2]" || pre != 2 {
		t.Errorf("t1 ran %d times, t2 %d (again %v), PreToolUse hooks %d; want 0, 1 ([t2]), 2", r.count("t1"), r.count("t2"), again, pre)
	}
}

// TestParallelCallsReachTheModelInOrder runs three calls of one answer at
// once, finishing in reverse order: each result is recorded as it comes,
// and the model gets them in the answer's order.
func TestParallelCallsReachTheModelInOrder(t *testing.T) {
	s := &script{answers: []reprise.Message{answer("", "t1:Slow", "t2:Slow", "t3:Slow"), answer("ok")}}
	var r runs
	e, runner := newRunner(t, s, &r)
	runner.Parallel = true
	var running sync.WaitGroup
	running.Add(3)
	order := make(chan string, 3)
	runner.Tools["Slow"] = turn.Tool{Run: func(ctx context.Context, c turn.Call) (reprise.ToolResult, error) {
		running.Done()
		running.Wait() // all three run at once
		time.Sleep(time.Duration(4-int(c.ID[1]-'0')) * 20 * time.Millisecond)
		order <- c.ID
		out, _ := json.Marshal(c.ID)
		return reprise.ToolResult{Output: out}, nil
	}}
	var sent []string
	runner.Model = func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
		sent = nil
		for _, m := range conv {
			for _, b := range m.Content {
				if b.Type == "tool_result" {
					sent = append(sent, string(b.Raw))
				}
			}
		}
		return s.model(ctx, conv)
	}
	if _, err := runner.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 3 || !strings.Contains(sent[0], `"t1"`) || !strings.Contains(sent[1], `"t2"`) || !strings.Contains(sent[2], `"t3"`) {
		t.Errorf("the model got the results %v, want t1, t2, t3", sent)
	}
	close(order)
	var finished []string
	for id := range order {
		finished = append(finished, id)
	}
	if fmt.Sprint(finished) != "[t3 t2 t1]" {
		t.Errorf("finished %v, want [t3 t2 t1]", finished)
	}
	want := `user "go"
assistant use:t1 use:t2 use:t3
user result:t3="t3"
user result:t2="t2"
user result:t1="t1"
assistant "ok"`
	if got := shape(t, e, "s"); got != want {
		t.Errorf("conversation:\n%s\nwant:\n%s", got, want)
	}
}

// TestHaltLeavesNoCallWithoutResult: a PostToolUse hook halts the turn
// after the first call; the others get an error result without running,
// no Stop hook runs, and the turn is over.
func TestHaltLeavesNoCallWithoutResult(t *testing.T) {
	s := &script{answers: []reprise.Message{answer("", "t1:Echo", "t2:Echo", "t3:Echo")}}
	var r runs
	e, runner := newRunner(t, s, &r)
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.PostToolUse, Name: "halt",
		Body: hookexec.Command{Line: `echo '{"continue": false, "stopReason": "enough"}'`}}); err != nil {
		t.Fatal(err)
	}
	stops := countStops(t, e)
	out, err := runner.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if !out.Halted || out.StopReason != "enough" || out.Requests != 1 {
		t.Errorf("outcome %+v, want halted with reason enough after 1 request", out)
	}
	want := `user "go"
assistant use:t1 use:t2 use:t3
user result:t1="ran t1"
user result:t2="Not run: a hook stopped the turn."! result:t3="Not run: a hook stopped the turn."!`
	if got := shape(t, e, "s"); got != want {
		t.Errorf("conversation:\n%s\nwant:\n%s", got, want)
	}
	if r.count("t2")+r.count("t3") != 0 || *stops != 0 {
		t.Errorf("t2 and t3 ran %d times, Stop hooks %d; want none", r.count("t2")+r.count("t3"), *stops)
	}
	tn, err := runner.Agent.Turn(context.Background())
	if err != nil || tn.Phase != reprise.TurnOver {
		t.Errorf("turn after a halt: %+v, %v; want over", tn, err)
	}
}

// TestOneRunnerPerAgent: while a Runner drives the agent's turn, a second
// one gets ErrAgentBusy.
func TestOneRunnerPerAgent(t *testing.T) {
	s := &script{answers: []reprise.Message{answer("", "t1:Wait"), answer("ok")}}
	var r runs
	_, runner := newRunner(t, s, &r)
	entered, leave := make(chan struct{}), make(chan struct{})
	runner.Tools["Wait"] = turn.Tool{Run: func(ctx context.Context, c turn.Call) (reprise.ToolResult, error) {
		close(entered)
		<-leave
		return reprise.ToolResult{}, nil
	}}
	done := make(chan error, 1)
	go func() {
		_, err := runner.Run(context.Background(), "go")
		done <- err
	}()
	<-entered
	second := &turn.Runner{Engine: runner.Engine, Agent: runner.Agent, Model: s.model}
	if _, err := second.Resume(context.Background()); !errors.Is(err, reprise.ErrAgentBusy) {
		t.Errorf("a second Runner: %v, want ErrAgentBusy", err)
	}
	close(leave)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := second.Resume(context.Background()); err != nil {
		t.Errorf("after the first Runner returned: %v", err)
	}
}

// TestTurnOfPhases walks TurnOf through a turn's records.
func TestTurnOfPhases(t *testing.T) {
	a := projection.NewAgent("ide")
	use := answer("", "t1:Echo")
	use.UUID = "a1"
	prompt := reprise.Text("user", "go")
	result := reprise.Message{UUID: "r1", Role: "user", Content: []reprise.Block{{Type: "tool_result", Raw: []byte(`{"type":"tool_result","tool_use_id":"t1","content":"x"}`)}}}
	final := reprise.Text("assistant", "done")
	final.UUID = "a2"
	for _, c := range []struct {
		msgs []reprise.Message
		want reprise.TurnPhase
	}{
		{nil, reprise.TurnOver},
		{[]reprise.Message{prompt}, reprise.TurnAsk},
		{[]reprise.Message{prompt, use}, reprise.TurnTools},
		{[]reprise.Message{prompt, use, result}, reprise.TurnAsk},
		{[]reprise.Message{prompt, use, result, final}, reprise.TurnStop},
	} {
		if got := projection.TurnOf("s", c.msgs, a); got.Phase != c.want {
			t.Errorf("after %d messages: %s, want %s", len(c.msgs), got.Phase, c.want)
		}
	}
	a.LastStops = map[string]*projection.Stop{"s": {Session: "s", Answer: "a2"}}
	if got := projection.TurnOf("s", []reprise.Message{prompt, use, result, final}, a); got.Phase != reprise.TurnOver {
		t.Errorf("after its Stop: %s, want over", got.Phase)
	}
	a.LastStops["s"].Blocked = true
	if got := projection.TurnOf("s", []reprise.Message{prompt, use, result, final}, a); got.Phase != reprise.TurnAsk {
		t.Errorf("after a blocked Stop: %s, want ask", got.Phase)
	}
	a.LastStops = map[string]*projection.Stop{"other": {Session: "other", Answer: "a2"}}
	if got := projection.TurnOf("s", []reprise.Message{prompt, use, result, final}, a); got.Phase != reprise.TurnStop {
		t.Errorf("after another session's Stop: %s, want stop", got.Phase)
	}
}

// countingStore counts appends.
type countingStore struct {
	eventlog.Store
	appends int
}

func (c *countingStore) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	c.appends++
	return c.Store.Append(ctx, expect, recs)
}

// TestAToolStepIsTwoAppends: without hooks, a call's decision (its start)
// is one durable append and its result another.
func TestAToolStepIsTwoAppends(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{Store: eventlog.NewMemoryStore()}
	e := reprise.New(store, reprise.Options{Logger: testkit.Discard, TranscriptDir: t.TempDir()})
	testkit.Session(t, e, "s", t.TempDir(), "go")
	agent := testkit.Agent(t, e, "ide")
	if _, err := agent.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "s", answer("", "t1:Echo")); err != nil {
		t.Fatal(err)
	}
	var r runs
	runner := &turn.Runner{Engine: e, Agent: agent, Model: (&script{}).model, Tools: map[string]turn.Tool{"Echo": r.tool(false, false)},
		Permission: func(turn.Call) string { return hookexec.Allow }, MaxRequests: 1}
	runner.Model = func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
		return reprise.Message{}, errors.New("asked")
	}
	before := store.appends
	if _, err := runner.Resume(ctx); err == nil || !strings.Contains(err.Error(), "asked") {
		t.Fatalf("Resume: %v, want the model asked after the call", err)
	}
	if n := store.appends - before; n != 2 || r.count("t1") != 1 {
		t.Errorf("the call took %d appends and ran %d times; want 2 and 1", n, r.count("t1"))
	}
}

// TestATurnOnAnotherSessionLeavesThisOneOver: a turn ends on session s,
// the agent goes to session b for a turn, and back to s: the turn on s is
// still over, and its Stop hooks do not run again.
func TestATurnOnAnotherSessionLeavesThisOneOver(t *testing.T) {
	ctx := context.Background()
	s := &script{answers: []reprise.Message{answer("done on s")}}
	var r runs
	e, runner := newRunner(t, s, &r)
	stops := countStops(t, e)
	if _, err := runner.Run(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "b", t.TempDir())
	if _, err := runner.Agent.Restore(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Run(ctx, "go on b"); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Agent.Restore(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	tn, err := runner.Agent.Turn(ctx)
	if err != nil || tn.Phase != reprise.TurnOver {
		t.Fatalf("back on s: %+v, %v; want the turn over", tn, err)
	}
	out, err := runner.Resume(ctx)
	if err != nil || out.Resumed || *stops != 2 {
		t.Errorf("Resume back on s: %+v, %v, Stop hooks ran %d times; want nothing done and 2 runs", out, err, *stops)
	}
}

// TestUnusableIDsGetAnErrorResult: an answer whose calls name an id that
// is not an id, an id twice, and an id an earlier answer used, is recorded;
// those calls get an error result without running, the others run, and the
// turn goes on.
func TestUnusableIDsGetAnErrorResult(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprintf("parallel=%v", parallel), func(t *testing.T) {
			s := &script{answers: []reprise.Message{
				answer("", "t1:Echo"),
				answer("", "bad/id:Echo", "t2:Echo", "t2:Echo", "t1:Echo", "t3:Echo"),
				answer("done"),
			}}
			var r runs
			e, runner := newRunner(t, s, &r)
			runner.Parallel = parallel
			if _, err := runner.Run(context.Background(), "go"); err != nil {
				t.Fatal(err)
			}
			conv, err := e.Conversation(context.Background(), "s")
			if err != nil {
				t.Fatal(err)
			}
			results := map[string][]string{}
			for _, m := range conv {
				for _, b := range m.Content {
					var f struct {
						ID      string `json:"tool_use_id"`
						Content string `json:"content"`
					}
					if b.Type == "tool_result" && json.Unmarshal(b.Raw, &f) == nil {
						results[f.ID] = append(results[f.ID], f.Content)
					}
				}
			}
			// A call whose id the session holds already gets a new id, so
			// that the session stays one the Messages API takes.
			for id, want := range map[string]string{"bad/id": "cannot be used", "t1": `"t1" was used by an earlier call`, "t2": `"t2" is used twice`} {
				found := false
				for _, contents := range results {
					found = found || slices.ContainsFunc(contents, func(c string) bool { return strings.Contains(c, want) })
				}
				if !found {
					t.Errorf("the results %q hold none for %s saying %q", results, id, want)
				}
			}
			for id, contents := range results {
				if len(contents) != 1 {
					t.Errorf("call %s has %d results: %q", id, len(contents), contents)
				}
			}
			if r.count("t1") != 1 || r.count("t2") != 1 || r.count("t3") != 1 || r.count("bad/id") != 0 {
				t.Errorf("runs %v, want t1, t2 and t3 once each", r.n)
			}
			if last := conv[len(conv)-1]; last.Role != "assistant" || projection.FirstText(last) != "done" {
				t.Errorf("the turn ended with %+v, want the last answer", last)
			}
		})
	}
}

// TestCancelledToolIsRecorded: a tool that stops when the turn's context
// is cancelled has its result recorded as interrupted, not left to look
// as if a dead process may have run it.
func TestCancelledToolIsRecorded(t *testing.T) {
	s := &script{answers: []reprise.Message{answer("", "t1:Wait")}}
	var r runs
	e, runner := newRunner(t, s, &r)
	ctx, cancel := context.WithCancel(context.Background())
	runner.Tools["Wait"] = turn.Tool{Run: func(ctx context.Context, c turn.Call) (reprise.ToolResult, error) {
		cancel()
		<-ctx.Done()
		return reprise.ToolResult{}, ctx.Err()
	}}
	if _, err := runner.Run(ctx, "go"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	want := `user "go"
assistant use:t1
user result:t1="context canceled"!`
	if got := shape(t, e, "s"); got != want {
		t.Errorf("conversation:\n%s\nwant:\n%s", got, want)
	}
	tn, err := runner.Agent.Turn(context.Background())
	if err != nil || tn.Phase != reprise.TurnAsk {
		t.Errorf("after the cancel: %+v, %v; want the turn waiting for an answer", tn, err)
	}
}

// TestRunRefusesATurnBeforeItsStop: an answer recorded without its Stop
// hooks, as a killed host leaves it, is finished by Resume, not skipped by
// the next prompt.
func TestRunRefusesATurnBeforeItsStop(t *testing.T) {
	ctx := context.Background()
	s := &script{}
	var r runs
	e, runner := newRunner(t, s, &r)
	if _, err := runner.Agent.Prompt(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "s", answer("done")); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Run(ctx, "next"); !errors.Is(err, turn.ErrUnfinished) {
		t.Errorf("Run: %v, want ErrUnfinished", err)
	}
	var stopped bool
	runner.OnEvent = func(ev turn.Event) { stopped = stopped || ev.Kind == turn.Stopped }
	if out, err := runner.Resume(ctx); err != nil || !out.Resumed || !stopped {
		t.Errorf("Resume: %+v, %v, stopped %v; want the Stop hooks run", out, err, stopped)
	}
}

// TestEveryRequestHasResultsInAnswerOrder: with calls run at once, every
// request the model gets, not only the next, has each answer's results in
// its order, so that the requests share their prefix.
func TestEveryRequestHasResultsInAnswerOrder(t *testing.T) {
	s := &script{answers: []reprise.Message{answer("", "t1:Slow", "t2:Slow"), answer("", "t3:Slow", "t4:Slow"), answer("ok")}}
	var r runs
	_, runner := newRunner(t, s, &r)
	runner.Parallel = true
	runner.Tools["Slow"] = turn.Tool{Run: func(ctx context.Context, c turn.Call) (reprise.ToolResult, error) {
		if c.ID == "t1" || c.ID == "t3" {
			time.Sleep(30 * time.Millisecond) // the first call of each answer finishes last
		}
		return reprise.ToolResult{Output: json.RawMessage(`"ok"`)}, nil
	}}
	var orders []string
	runner.Model = func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
		var ids []string
		for _, m := range conv {
			for _, b := range m.Content {
				var f struct {
					ID string `json:"tool_use_id"`
				}
				if b.Type == "tool_result" && json.Unmarshal(b.Raw, &f) == nil {
					ids = append(ids, f.ID)
				}
			}
		}
		orders = append(orders, strings.Join(ids, " "))
		return s.model(ctx, conv)
	}
	if _, err := runner.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"", "t1 t2", "t1 t2 t3 t4"}; !slices.Equal(orders, want) {
		t.Errorf("the requests' results: %q, want %q", orders, want)
	}
}

// countStops adds to e a Stop hook that lets the agent stop and counts
// its runs.
func countStops(t *testing.T, e *reprise.Engine) *int {
	t.Helper()
	stops := new(int)
	if err := e.Hooks().OnStop("count", func(ctx context.Context, in hookexec.StopInput) (hookexec.StopOutput, error) {
		*stops++
		return hookexec.StopOutput{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return stops
}

// TestAnAnswerThatReusesADeniedCallsIDGoesOn: an answer that reuses the
// tool_use id of a call denied earlier, in this session or in another one
// of the agent, or that has a tool_use without an id, is recorded with
// those calls given an error result, none of them runs, and the turn goes
// on to its end.
func TestAnAnswerThatReusesADeniedCallsIDGoesOn(t *testing.T) {
	ctx := context.Background()
	noID := answer("")
	noID.Content = append(noID.Content, reprise.Block{Type: "tool_use", Raw: json.RawMessage(`{"type":"tool_use","id":"","name":"Echo","input":{}}`)})
	s := &script{answers: []reprise.Message{
		answer("", "t1:Echo"), answer("", "t1:Echo"), noID, answer("done"),
	}}
	var r runs
	e, runner := newRunner(t, s, &r)
	runner.Permission = func(c turn.Call) string { return hookexec.Deny }
	if _, err := runner.Run(ctx, "go"); err != nil {
		t.Fatalf("a turn whose answer reuses a denied call's id: %v", err)
	}
	if conv, err := e.Conversation(ctx, "s"); err != nil || projection.FirstText(conv[len(conv)-1]) != "done" {
		t.Fatalf("the turn did not reach its last answer: %v", err)
	}
	// The same id in another session of the agent (the script answers it
	// the same way again).
	testkit.Session(t, e, "s2", t.TempDir())
	if _, err := runner.Agent.Restore(ctx, "s2"); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Run(ctx, "go on"); err != nil {
		t.Fatalf("an answer that reuses a call's id of another session: %v", err)
	}
	conv, err := e.Conversation(ctx, "s2")
	if err != nil || projection.FirstText(conv[len(conv)-1]) != "done" || !strings.Contains(shape(t, e, "s2"), `result:t1="The tool_use id \"t1\" was used by an earlier call."`) {
		t.Fatalf("the second turn did not reach its last answer: %v\n%s", err, shape(t, e, "s2"))
	}
	if len(r.n) != 0 {
		t.Errorf("runs %v, want none", r.n)
	}
	if rep, err := audit.Check(ctx, e.Store()); err != nil || len(rep.Violations) != 0 {
		t.Errorf("audit: %+v, %v", rep, err)
	}
}

// TestToolsRunInTheirSessionsDirectory checks that a call carries the
// working directory of its session, not the host's.
func TestToolsRunInTheirSessionsDirectory(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		s := &script{answers: []reprise.Message{answer("", "t1:Where", "t2:Where"), answer("done")}}
		var r runs
		e, runner := newRunner(t, s, &r)
		runner.Parallel = parallel
		info, err := e.Session(context.Background(), "s")
		if err != nil || info.Cwd == "" {
			t.Fatalf("session s: %+v, %v", info, err)
		}
		var mu sync.Mutex
		var dirs []string
		runner.Tools["Where"] = turn.Tool{Run: func(_ context.Context, c turn.Call) (reprise.ToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			dirs = append(dirs, c.Cwd)
			return reprise.ToolResult{Output: json.RawMessage(`"here"`)}, nil
		}}
		if _, err := runner.Run(context.Background(), "where are you"); err != nil {
			t.Fatal(err)
		}
		if len(dirs) != 2 || dirs[0] != info.Cwd || dirs[1] != info.Cwd {
			t.Errorf("parallel=%v: the calls ran in %q, want %q", parallel, dirs, info.Cwd)
		}
	}
}

// TestTheModelGetsAHooksUpdatedToolOutput checks, with a real command
// hook, that a PostToolUse hook's updatedToolOutput is what the model gets
// in place of the tool's result, while the session keeps what the tool
// gave.
func TestTheModelGetsAHooksUpdatedToolOutput(t *testing.T) {
	s := &script{answers: []reprise.Message{answer("", "t1:Echo"), answer("done")}}
	var seen [][]reprise.Message
	model := s.model
	var r runs
	e, runner := newRunner(t, s, &r)
	runner.Model = func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
		seen = append(seen, conv)
		return model(ctx, conv)
	}
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.PostToolUse, Name: "redact",
		Body: hookexec.Command{Line: `echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": "[redacted]"}}'`}}); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("%d requests, want 2", len(seen))
	}
	last := seen[1][len(seen[1])-1]
	if got := string(last.Content[0].Raw); !strings.Contains(got, `"content":"[redacted]"`) || !strings.Contains(got, `"tool_use_id":"t1"`) {
		t.Errorf("the model got %s, want the hook's output", got)
	}
	if kept := shape(t, e, "s"); strings.Contains(kept, "[redacted]") {
		t.Errorf("the session lost what the tool gave:\n%s", kept)
	}

	// ReadModelView reads, in place, what ModelView copies: the hook's
	// output too. read's error is its error.
	ctx := context.Background()
	view, err := runner.Agent.ModelView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var read []reprise.Message
	stop := errors.New("stop")
	if err := runner.Agent.ReadModelView(ctx, func(conv []reprise.Message) error {
		read = projection.CloneMessages(conv)
		return stop
	}); err != stop {
		t.Errorf("ReadModelView returned %v, want read's error", err)
	}
	if !reflect.DeepEqual(read, view) || !reflect.DeepEqual(view[:len(seen[1])], seen[1]) {
		t.Errorf("ReadModelView read %d messages, ModelView gave %d; the model was given %d of them", len(read), len(view), len(seen[1]))
	}
}

// TestPostToolBatchRunsBeforeTheNextRequest: the answer's PostToolBatch
// hook runs once its calls have results, its context is in the next
// request, and a batch that a dead process left unfired (its last result
// recorded, the hook not run) is fired by Resume before the model is asked.
func TestPostToolBatchRunsBeforeTheNextRequest(t *testing.T) {
	ctx := context.Background()
	s := &script{answers: []reprise.Message{answer("", "t1:Echo", "t2:Read"), answer("done")}}
	var r runs
	e, runner := newRunner(t, s, &r)
	var batches []string
	if err := e.Hooks().On(schema.HookPostToolBatch, "", func(_ context.Context, in hookexec.EventInput) (hookexec.EventOutput, error) {
		batches = append(batches, string(in.Fields))
		return hookexec.EventOutput{HookSpecificOutput: json.RawMessage(`{"hookEventName": "PostToolBatch", "additionalContext": "batch seen"}`)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var second []reprise.Message
	model := runner.Model
	runner.Model = func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
		if len(s.requests) == 1 {
			second = conv
		}
		return model(ctx, conv)
	}
	if _, err := runner.Run(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	if len(batches) != 1 || !strings.Contains(batches[0], `"tool_use_id":"t1"`) || !strings.Contains(batches[0], `"tool_response":"ran t2"`) {
		t.Fatalf("PostToolBatch ran with %q", batches)
	}
	if len(second) == 0 || !strings.Contains(second[len(second)-1].Content[0].Text, "PostToolBatch hook additional context: batch seen") {
		t.Fatalf("the second request ends %+v", second[len(second)-1:])
	}

	// A dead process's last result, with the batch not fired: the agent on
	// a second session, whose answer's results are all in, and no turn
	// fired them.
	testkit.Session(t, e, "b", t.TempDir())
	if _, err := runner.Agent.Restore(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "b", reprise.Message{Role: "user", Content: []reprise.Block{{Type: "text", Text: "go"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "b", answer("", "t9:Echo")); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"type": "tool_result", "tool_use_id": "t9", "content": "ran t9"})
	if _, err := e.Append(ctx, "b", reprise.Message{Role: "user", Content: []reprise.Block{{Type: "tool_result", Raw: raw}}}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.answers = []reprise.Message{{}, answer("done on b")} // b holds one answer: the next is the second
	s.mu.Unlock()
	if _, err := runner.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if len(batches) != 2 || !strings.Contains(batches[1], `"tool_use_id":"t9"`) {
		t.Fatalf("Resume fired the batches %q", batches)
	}
}

// TestModelFailuresEndTheTurnWithStopFailure: with ModelTries 2, a model
// that keeps failing is asked twice, then StopFailure's hooks run in place
// of Stop's, with Claude Code's input, and the log shows the turn over: a
// Resume asks the model nothing. A FinalError ends the turn at once, with
// its kind.
func TestModelFailuresEndTheTurnWithStopFailure(t *testing.T) {
	ctx := context.Background()
	var r runs
	e, runner := newRunner(t, &script{}, &r)
	var failures []map[string]any
	if err := e.Hooks().On(schema.HookStopFailure, "", func(_ context.Context, in hookexec.EventInput) (hookexec.EventOutput, error) {
		var f map[string]any
		if err := json.Unmarshal(in.Fields, &f); err != nil {
			return hookexec.EventOutput{}, err
		}
		failures = append(failures, f)
		return hookexec.EventOutput{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	stops := countStops(t, e)
	asked := 0
	runner.ModelTries = 2
	runner.Model = func(context.Context, []reprise.Message) (reprise.Message, error) {
		asked++
		return reprise.Message{}, errors.New("503 from the gateway")
	}
	out, err := runner.Run(ctx, "go")
	if err != nil || out.StopFailure != "unknown" || out.Failure == nil || asked != 2 {
		t.Fatalf("Run: %+v, %v; asked %d times", out, err, asked)
	}
	if len(failures) != 1 || failures[0]["error"] != "unknown" || failures[0]["error_details"] != "503 from the gateway" || *stops != 0 {
		t.Fatalf("StopFailure ran with %v; Stop hooks ran %d times", failures, *stops)
	}
	tn, err := runner.Agent.Turn(ctx)
	if err != nil || tn.Phase != reprise.TurnOver {
		t.Fatalf("turn after StopFailure: %+v, %v", tn, err)
	}
	if out, err := runner.Resume(ctx); err != nil || out.Resumed || asked != 2 {
		t.Fatalf("Resume after StopFailure: %+v, %v; asked %d times", out, err, asked)
	}

	runner.Model = func(context.Context, []reprise.Message) (reprise.Message, error) {
		asked++
		return reprise.Message{}, &turn.FinalError{Kind: "rate_limit", Err: errors.New("429")}
	}
	out, err = runner.Run(ctx, "again")
	if err != nil || out.StopFailure != "rate_limit" || asked != 3 || len(failures) != 2 || failures[1]["error"] != "rate_limit" {
		t.Fatalf("Run with a final error: %+v, %v; asked %d; failures %v", out, err, asked, failures)
	}
}

// TestNotificationsWhereTheRunnerWaitsOnTheUser: Notification's hooks run
// with permission_prompt before Ask, naming the tool, and with
// idle_prompt once a turn ends, once per answer.
func TestNotificationsWhereTheRunnerWaitsOnTheUser(t *testing.T) {
	ctx := context.Background()
	s := &script{answers: []reprise.Message{answer("", "t1:Echo"), answer("done")}}
	var r runs
	e, runner := newRunner(t, s, &r)
	var notes []string
	if err := e.Hooks().On(schema.HookNotification, "permission_prompt|idle_prompt", func(_ context.Context, in hookexec.EventInput) (hookexec.EventOutput, error) {
		var f struct{ Message, Type string }
		var raw map[string]string
		_ = json.Unmarshal(in.Fields, &raw)
		f.Message, f.Type = raw["message"], raw["notification_type"]
		notes = append(notes, f.Type+": "+f.Message)
		return hookexec.EventOutput{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	runner.Permission = func(turn.Call) string { return hookexec.Ask }
	runner.Ask = func(context.Context, turn.Call, string) string {
		notes = append(notes, "asked")
		return ""
	}
	if _, err := runner.Run(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	want := "permission_prompt: Claude needs your permission to use Echo | asked | idle_prompt: Claude is waiting for your input"
	if got := strings.Join(notes, " | "); got != want {
		t.Fatalf("notifications: %s\nwant %s", got, want)
	}
}
