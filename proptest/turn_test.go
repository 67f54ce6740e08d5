package proptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/turn"
)

// The tools of the turn model, by what their calls do.
var turnTools = []string{"Ok", "Fail", "Deny", "Ask", "Again"}

// turnScript is one turn as the model of a turn sees it: the model's
// answers in order (each a list of tool names; none ends the model's
// part), how many stops the Stop hook blocks, and whether the calls of an
// answer run at once.
type turnScript struct {
	answers  [][]string
	blocks   int
	parallel bool
}

// turnWorld is what outlives a process of the turn model: the store, and
// what the tools, the model and the hooks did, counted across crashes.
type turnWorld struct {
	store    *eventlog.MemoryStore
	sc       turnScript
	mu       sync.Mutex
	runs     map[string]int // tool runs by tool_use id
	requests map[int]int    // model requests by answer index
	stops    map[string]int // Stop hook runs by the answer they saw
	posts    map[string]int // PostToolUse hook runs by tool_use id
	batches  map[string]int // PostToolBatch hook runs by the tool_use ids of their answer
	// subStarts and subStops count SubagentStart hook runs by agent_id,
	// and SubagentStop's by agent_id and the answer they saw.
	subStarts map[string]int
	subStops  map[string]int
	stopRuns  int
	disorder  string // a request whose tool_results were not in the answer's order
}

func newTurnWorld(sc turnScript) *turnWorld {
	return &turnWorld{store: eventlog.NewMemoryStore(), sc: sc, runs: map[string]int{}, requests: map[int]int{},
		stops: map[string]int{}, posts: map[string]int{}, batches: map[string]int{}, subStarts: map[string]int{}, subStops: map[string]int{}}
}

// answer is the n-th answer of the script: its text, and a call of each
// of its tools.
func (w *turnWorld) answer(n int) reprise.Message {
	m := reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "text", Text: fmt.Sprintf("answer %d", n)}}}
	if n < len(w.sc.answers) {
		for j, name := range w.sc.answers[n] {
			id := fmt.Sprintf("t%d_%d", n, j)
			var input any = map[string]int{"n": n}
			if name == turn.AgentTool {
				input = map[string]string{"description": "a subagent", "prompt": "sub " + id}
			}
			raw, _ := json.Marshal(map[string]any{"type": "tool_use", "id": id, "name": name, "input": input})
			m.Content = append(m.Content, reprise.Block{Type: "tool_use", Raw: raw})
		}
	}
	return m
}

// process opens an Engine over store (a process starting) and returns
// the Runner it drives the turn with.
func (w *turnWorld) process(t *rapid.T, store eventlog.Store) (*turn.Runner, error) {
	reg := hookexec.NewRegistry()
	must(t, reg.OnStop("block", func(ctx context.Context, in hookexec.StopInput) (hookexec.StopOutput, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.stops[in.LastAssistantMessage]++
		w.stopRuns++
		if w.stopRuns <= w.sc.blocks {
			return hookexec.StopOutput{Decision: "block", Reason: "go on"}, nil
		}
		return hookexec.StopOutput{}, nil
	}))
	must(t, reg.OnPostToolUse("seen", "", func(ctx context.Context, in hookexec.ToolInput) (hookexec.PostToolUseOutput, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.posts[in.ToolUseID]++
		return hookexec.PostToolUseOutput{AdditionalContext: "seen " + in.ToolUseID}, nil
	}))
	must(t, reg.On(schema.HookPostToolBatch, "", func(ctx context.Context, in hookexec.EventInput) (hookexec.EventOutput, error) {
		var batch struct {
			Calls []struct {
				ID string `json:"tool_use_id"`
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal(in.Fields, &batch); err != nil {
			return hookexec.EventOutput{}, err
		}
		var ids []string
		for _, c := range batch.Calls {
			ids = append(ids, c.ID)
		}
		key := strings.Join(ids, " ")
		w.mu.Lock()
		defer w.mu.Unlock()
		w.batches[key]++
		out, _ := json.Marshal(map[string]string{"hookEventName": string(schema.HookPostToolBatch), "additionalContext": "batch " + key})
		return hookexec.EventOutput{HookSpecificOutput: out}, nil
	}))
	must(t, reg.On(schema.HookSubagentStart, "", func(ctx context.Context, in hookexec.EventInput) (hookexec.EventOutput, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.subStarts[in.AgentID]++
		return hookexec.EventOutput{}, nil
	}))
	must(t, reg.On(schema.HookSubagentStop, "", func(ctx context.Context, in hookexec.EventInput) (hookexec.EventOutput, error) {
		var stop struct {
			Last string `json:"last_assistant_message"`
		}
		if err := json.Unmarshal(in.Fields, &stop); err != nil {
			return hookexec.EventOutput{}, err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.subStops[in.AgentID+" "+stop.Last]++
		return hookexec.EventOutput{}, nil
	}))
	e := reprise.New(store, reprise.Options{Hooks: reg, Logger: discard, Files: reprise.NewMemoryFiles()})
	agent, err := e.Agent(context.Background(), "ide")
	if err != nil {
		return nil, err
	}
	run := func(fail bool) turn.Tool {
		return turn.Tool{Run: func(ctx context.Context, c turn.Call) (reprise.ToolResult, error) {
			w.mu.Lock()
			w.runs[c.ID]++
			w.mu.Unlock()
			if fail {
				return reprise.ToolResult{}, errors.New("failed " + c.ID)
			}
			out, _ := json.Marshal("ran " + c.ID)
			return reprise.ToolResult{Output: out}, nil
		}}
	}
	tools := map[string]turn.Tool{"Ok": run(false), "Fail": run(true), "Deny": run(false), "Ask": run(false), "Again": run(false)}
	again := tools["Again"]
	again.Repeatable = true
	tools["Again"] = again
	return &turn.Runner{Engine: e, Agent: agent, Tools: tools, Parallel: w.sc.parallel,
		Subagents: map[string]turn.Subagent{reprise.DefaultSubagentType: {}},
		Model: func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
			if first := projection.FirstText(conv[0]); first != "go" {
				return subagentAnswer(first, conv), nil
			}
			n := 0
			for _, m := range conv {
				if m.Role == "assistant" {
					n++
				}
			}
			w.mu.Lock()
			w.requests[n]++
			for _, ids := range resultOrder(conv) {
				if !slices.IsSorted(ids) {
					w.disorder = fmt.Sprint(resultOrder(conv))
				}
			}
			w.mu.Unlock()
			return w.answer(n), nil
		},
		Permission: func(c turn.Call) string {
			switch c.Name {
			case "Deny":
				return hookexec.Deny
			case "Ask":
				return hookexec.Ask
			}
			return hookexec.Allow
		},
		Ask: func(ctx context.Context, c turn.Call, reason string) string {
			if strings.HasSuffix(c.ID, "0") {
				return ""
			}
			return "no, " + c.ID
		},
	}, nil
}

// subagentAnswer is what the model answers a subagent whose prompt is
// "sub ID" (ID its Agent call's): a call of Ok, c-ID, then "done ID".
func subagentAnswer(prompt string, conv []reprise.Message) reprise.Message {
	id := strings.TrimPrefix(prompt, "sub ")
	for _, m := range conv {
		if m.Role == "assistant" {
			return reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "text", Text: "done " + id}}}
		}
	}
	return reprise.ToolUseMessage("c-"+id, "Ok", json.RawMessage(`{}`))
}

func must(t *rapid.T, err error) {
	if err != nil {
		t.Fatal(err)
	}
}

// startTurn makes session s current for the agent, on a fresh store.
func (w *turnWorld) start(t *rapid.T) {
	e := reprise.New(w.store, reprise.Options{Logger: discard, Files: reprise.NewMemoryFiles()})
	if _, err := e.CreateSession(context.Background(), "s", "/"); err != nil {
		t.Fatal(err)
	}
	agent, err := e.Agent(context.Background(), "ide")
	must(t, err)
	_, err = agent.Start(context.Background(), "s")
	must(t, err)
}

// finish drives the turn to its end in a new process over the store, as
// a host that restarts does: Resume, then the prompt when the dead process
// did not get to keep it.
func (w *turnWorld) finish(t *rapid.T, store eventlog.Store) error {
	r, err := w.process(t, store)
	if err != nil {
		return err
	}
	if _, err := r.Resume(context.Background()); err != nil {
		return err
	}
	conv, err := r.Engine.Conversation(context.Background(), "s")
	if err != nil {
		return err
	}
	if len(conv) == 0 {
		_, err = r.Run(context.Background(), "go")
	}
	return err
}

// lines is the session's conversation without its meta messages, a line
// per message: what the model is told, which a crash must not change.
func (w *turnWorld) lines(t *rapid.T) []string {
	e := reprise.New(w.store, reprise.Options{Logger: discard, Files: reprise.NewMemoryFiles()})
	conv, err := e.Conversation(context.Background(), "s")
	must(t, err)
	var out []string
	for _, m := range conv {
		if m.IsMeta {
			continue
		}
		line := m.Role
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				line += fmt.Sprintf(" %q", b.Text)
			default:
				var f struct {
					ID      string          `json:"id"`
					Result  string          `json:"tool_use_id"`
					Content json.RawMessage `json:"content"`
				}
				json.Unmarshal(b.Raw, &f)
				if b.Type == "tool_use" {
					line += " use:" + f.ID
				} else {
					line += " result:" + f.Result + "=" + string(f.Content)
				}
			}
		}
		out = append(out, line)
	}
	// Calls that ran at once are recorded as they finished.
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && strings.HasPrefix(out[j], "user result:") {
			j++
		}
		slices.Sort(out[i:j])
		i = max(j, i+1)
	}
	return out
}

// resultOrder is, for each answer in conv, the indexes in it of the calls
// whose tool_results follow it, in the order they follow, one answer
// after the other.
func resultOrder(conv []reprise.Message) [][]int {
	var orders [][]int
	var index map[string]int
	for _, m := range conv {
		if m.Role == "assistant" {
			index = map[string]int{}
			for i, u := range projection.ToolUses(m) {
				index[u.ID] = i
			}
			orders = append(orders, nil)
			continue
		}
		for _, id := range projection.ToolResults(m) {
			if len(orders) > 0 {
				orders[len(orders)-1] = append(orders[len(orders)-1], index[id])
			}
		}
	}
	return orders
}

// countingStore counts appends, to know a reference run's step boundaries.
type countingStore struct {
	eventlog.Store
	n atomic.Int64
}

func (c *countingStore) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	c.n.Add(1)
	return c.Store.Append(ctx, expect, recs)
}

// TestTurnSurvivesACrashAtEveryStep drives random turns (answers with 0
// to 4 tool calls; tools that succeed, fail, are denied, are left to ask,
// are safe to repeat; Stop hooks that block) with the process dying at a
// random append, before or after it is written, once or twice, each time
// resumed by a new process, and checks the log against a reference run
// that never crashes: the model is told the same, except that a call the
// crash cut after it started is reported interrupted (or, safe to repeat,
// run again), and a Stop hook run the crash cut does not block; no tool
// runs twice unless safe to repeat (then at most once more per crash); no
// answer is asked for again unless its request was in flight (at most
// once more per crash); no hook runs twice, PostToolBatch's (which runs
// once for every answer with calls in the reference) included; every tool_use has exactly one
// tool_result; the audit finds nothing.
func TestTurnSurvivesACrashAtEveryStep(t *testing.T) {
	t.Parallel()
	var st crashStats
	rapid.Check(t, func(rt *rapid.T) {
		sc := turnScript{
			answers: rapid.SliceOfN(rapid.SliceOfN(rapid.SampledFrom(turnTools), 0, 4), 0, 3).Draw(rt, "answers"),
			blocks:  rapid.IntRange(0, 2).Draw(rt, "blocks"),
		}
		sc.parallel = rapid.Bool().Draw(rt, "parallel")
		crashTurn(rt, sc, &st)
	})
	t.Logf("%s: %d cases, %d crashes, %d Stop hook runs cut, %d PostToolBatch runs in the references", rapidBudget(), st.cases.Load(), st.crashes.Load(), st.cut.Load(), st.batches.Load())
}

// TestSubagentTreeSurvivesACrashAtEveryStep is the same with answers
// that hand work to up to three subagents at once (calls of the Agent
// tool among others), each a turn of its own with a tool call, the
// process dying at any append of the parent's or a subagent's: besides
// the parent's guarantees, each subagent is started once for its call
// (its SubagentStart hooks run once), its SubagentStop hooks run at most
// once for each of its answers, and its tool runs at most once.
func TestSubagentTreeSurvivesACrashAtEveryStep(t *testing.T) {
	t.Parallel()
	var st crashStats
	rapid.Check(t, func(rt *rapid.T) {
		sc := turnScript{
			answers: rapid.SliceOfN(rapid.SliceOfN(rapid.SampledFrom([]string{turn.AgentTool, turn.AgentTool, "Ok", "Again"}), 0, 3), 1, 3).Draw(rt, "answers"),
			blocks:  rapid.IntRange(0, 1).Draw(rt, "blocks"),
		}
		sc.parallel = rapid.Bool().Draw(rt, "parallel")
		crashTurn(rt, sc, &st)
	})
	t.Logf("%s: %d cases, %d crashes, %d subagents started, %d subagent tool runs", rapidBudget(), st.cases.Load(), st.crashes.Load(), st.subagents.Load(), st.subTools.Load())
}

// crashStats counts what the crash tests did, for their summary line.
type crashStats struct {
	cases, crashes, cut, batches, subagents, subTools atomic.Int64
}

// crashTurn runs turn sc with the process dying at a random append, before
// or after it is written, once or twice, each time resumed by a new
// process, and checks the log against a reference run that never crashes
// (TestTurnSurvivesACrashAtEveryStep says what is checked).
func crashTurn(rt *rapid.T, sc turnScript, st *crashStats) {
	// The reference: no crash.
	ref := newTurnWorld(sc)
	ref.start(rt)
	counting := &countingStore{Store: ref.store}
	r, err := ref.process(rt, counting)
	must(rt, err)
	if _, err := r.Run(context.Background(), "go"); err != nil {
		rt.Fatalf("reference run: %v", err)
	}
	want := ref.lines(rt)
	checkBatches(rt, ref, want)
	st.batches.Add(int64(len(ref.batches)))

	// The same turn, dying at the k-th append, then once more maybe.
	w := newTurnWorld(sc)
	w.start(rt)
	died := 0
	fs := &faultStore{Store: w.store}
	fs.arm(rapid.IntRange(1, int(counting.n.Load())).Draw(rt, "crash"), rapid.Bool().Draw(rt, "written"))
	r, err = w.process(rt, fs)
	must(rt, err)
	if _, err := r.Run(context.Background(), "go"); errors.Is(err, errCrashed) {
		died++
	} else if err != nil {
		rt.Fatalf("run: %v", err)
	}
	if rapid.Bool().Draw(rt, "crash again") {
		fs = &faultStore{Store: w.store}
		fs.arm(rapid.IntRange(1, 12).Draw(rt, "second crash"), rapid.Bool().Draw(rt, "second written"))
		if err := w.finish(rt, fs); errors.Is(err, errCrashed) {
			died++
		} else if err != nil {
			rt.Fatalf("resume: %v", err)
		}
	}
	if err := w.finish(rt, w.store); err != nil {
		rt.Fatalf("last resume: %v", err)
	}
	st.cases.Add(1)
	st.crashes.Add(int64(died))

	got := w.lines(rt)
	stopCut := stopInterrupted(rt, w.store)
	if stopCut {
		st.cut.Add(1)
	}
	interrupted := 0
	for i, line := range got {
		if i >= len(want) {
			rt.Fatalf("line %d %q is past the reference's end\ngot:\n%s\nwant:\n%s", i, line, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if line == want[i] {
			continue
		}
		if strings.Contains(line, turn.Interrupted) {
			interrupted++
			continue
		}
		rt.Fatalf("line %d: %q, want %q\ngot:\n%s\nwant:\n%s", i, line, want[i], strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(got) < len(want) && !stopCut {
		rt.Fatalf("the turn ended early, and no Stop hook run was cut\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A crash cuts the calls in flight: one, or an answer's when they
	// run at once.
	limit := died
	if sc.parallel {
		limit *= 4
	}
	if interrupted > limit {
		rt.Fatalf("%d calls reported interrupted after %d crashes", interrupted, died)
	}
	for id, n := range w.runs {
		limit := 1
		if toolOf(sc, id) == "Again" {
			limit += died
		}
		if n > limit {
			rt.Fatalf("tool call %s ran %d times after %d crashes", id, n, died)
		}
	}
	for n, count := range w.requests {
		if count > 1+died {
			rt.Fatalf("answer %d was asked for %d times after %d crashes", n, count, died)
		}
	}
	for key, n := range w.stops {
		if n > 1 {
			rt.Fatalf("the Stop hook ran %d times after %q", n, key)
		}
	}
	for id, n := range w.posts {
		if n > 1 {
			rt.Fatalf("the PostToolUse hook of %s ran %d times", id, n)
		}
	}
	for key, n := range w.batches {
		if n > 1 {
			rt.Fatalf("the PostToolBatch hook of the calls %s ran %d times", key, n)
		}
	}
	if w.disorder != "" || ref.disorder != "" {
		rt.Fatalf("the model got tool_results out of the answer's order: %s%s", w.disorder, ref.disorder)
	}
	checkPairs(rt, w)
	report, err := reprise.Audit(context.Background(), w.store)
	must(rt, err)
	if len(report.Violations) > 0 {
		rt.Fatalf("audit: %+v", report.Violations)
	}
	// Every Agent call the turn reached started one subagent: all the
	// reference's, unless a cut Stop hook run ended the turn early. (Its
	// SubagentStart hooks ran at most once: not at all when a crash cut
	// them.)
	subs, err := reprise.New(w.store, reprise.Options{Logger: discard, Files: reprise.NewMemoryFiles()}).Subagents(context.Background(), "s")
	must(rt, err)
	if len(subs) != len(ref.subStarts) && !(stopCut && len(subs) < len(ref.subStarts)) {
		rt.Fatalf("%d subagents started, %d in the reference", len(subs), len(ref.subStarts))
	}
	for _, sub := range subs {
		if !sub.Resulted || sub.Turn.Phase != reprise.TurnOver {
			rt.Fatalf("subagent %s: %+v; want it over and its answer the parent's", sub.Session.ID, sub)
		}
	}
	st.subagents.Add(int64(len(subs)))
	for id, n := range w.subStarts {
		if n > 1 {
			rt.Fatalf("the SubagentStart hook of %s ran %d times", id, n)
		}
	}
	for key, n := range w.subStops {
		if n > 1 {
			rt.Fatalf("the SubagentStop hook of %q ran %d times", key, n)
		}
	}
	for id, n := range w.runs {
		if strings.HasPrefix(id, "c-") {
			st.subTools.Add(int64(n))
		}
	}
}

// toolOf is the tool of call id ("t<answer>_<call>") in sc; a
// subagent's call (c-...) is of Ok.
func toolOf(sc turnScript, id string) string {
	if strings.HasPrefix(id, "c-") {
		return "Ok"
	}
	var n, j int
	fmt.Sscanf(id, "t%d_%d", &n, &j)
	return sc.answers[n][j]
}

// stopInterrupted reports whether the log holds a Stop hook run that a
// crash cut.
func stopInterrupted(t *rapid.T, store eventlog.Store) bool {
	cut := false
	err := store.ReadStream(context.Background(), projection.AgentStream("ide"), 1, func(ev eventlog.Event) error {
		p, err := schema.Decode(ev)
		if ran, ok := p.(*schema.StopHookRan); ok && ran.Interrupted {
			cut = true
		}
		return err
	})
	must(t, err)
	return cut
}

// checkPairs fails unless every tool_use of the session has exactly one
// tool_result after it.
func checkPairs(t *rapid.T, w *turnWorld) {
	uses, results := map[string]int{}, map[string]int{}
	for _, line := range w.lines(t) {
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "use:"); ok {
				uses[id]++
			}
			if r, ok := strings.CutPrefix(f, "result:"); ok {
				id, _, _ := strings.Cut(r, "=")
				results[id]++
			}
		}
	}
	for id := range uses {
		if results[id] != 1 {
			t.Fatalf("tool_use %s has %d tool_results", id, results[id])
		}
	}
	if len(results) != len(uses) {
		t.Fatalf("%d tool_results for %d tool_uses", len(results), len(uses))
	}
}

// checkBatches fails unless, in a run without crashes, the PostToolBatch
// hook ran once for each answer of lines that calls tools, and for no
// other calls.
func checkBatches(t *rapid.T, w *turnWorld, lines []string) {
	want := 0
	for _, line := range lines {
		if strings.HasPrefix(line, "assistant ") && strings.Contains(line, " use:") {
			want++
		}
	}
	parent := 0
	for key, n := range w.batches {
		if n != 1 {
			t.Fatalf("the PostToolBatch hook of the calls %s ran %d times", key, n)
		}
		if !strings.HasPrefix(key, "c-") { // a subagent's answers have theirs too
			parent++
		}
	}
	if parent != want {
		t.Fatalf("the PostToolBatch hook ran for %d answers, want %d: %v", len(w.batches), want, w.batches)
	}
}
