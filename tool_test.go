package reprise_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
)

// TestToolCallsOfOneAnswerRunTheirHooksAtOnce checks that the PreToolUse
// hooks of two calls run at the same time (each hook waits until the
// other has started), and that while they run no lifecycle action begins
// on the agent: it fails with ErrAgentBusy, recording nothing.
func TestToolCallsOfOneAnswerRunTheirHooksAtOnce(t *testing.T) {
	ctx := context.Background()
	e, agent := startedAgent(t)
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	release := make(chan struct{})
	err := e.Hooks().OnPreToolUse("meet", "Bash", func(ctx context.Context, in hookexec.ToolInput) (hookexec.PreToolUseOutput, error) {
		started.Done()
		select {
		case <-both:
		case <-ctx.Done():
			return hookexec.PreToolUseOutput{}, ctx.Err()
		}
		<-release
		return hookexec.PreToolUseOutput{PermissionDecision: hookexec.Allow, AdditionalContext: "checked " + in.ToolUseID}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	answer(t, e, "a", reprise.ToolUseBlock("t1", "Bash", json.RawMessage(`{"command":"ls"}`)),
		reprise.ToolUseBlock("t2", "Bash", json.RawMessage(`{"command":"ls"}`)))
	var wg sync.WaitGroup
	decisions := make([]*reprise.ToolDecision, 2)
	errs := make([]error, 2)
	for i, id := range []string{"t1", "t2"} {
		wg.Go(func() {
			decisions[i], errs[i] = agent.PreToolUse(ctx, reprise.ToolCall{ID: id, Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)})
		})
	}
	select {
	case <-both:
	case <-time.After(10 * time.Second):
		t.Fatal("the two calls' hooks did not run at the same time")
	}
	before := testkit.Events(t, e.Store())
	if _, err := agent.Compact(ctx, "summary"); !errors.Is(err, reprise.ErrAgentBusy) {
		t.Errorf("Compact while tool hooks run: %v; want ErrAgentBusy", err)
	}
	if after := testkit.Events(t, e.Store()); len(after) != len(before) {
		t.Errorf("the refused Compact appended %d events", len(after)-len(before))
	}
	close(release)
	wg.Wait()
	for i, d := range decisions {
		if errs[i] != nil || d.Decision != hookexec.Allow || d.Context != "checked t"+string(rune('1'+i)) {
			t.Errorf("call %d: %+v, %v", i+1, d, errs[i])
		}
	}
	if _, err := agent.Compact(ctx, "summary"); err != nil {
		t.Errorf("Compact once the hooks ran: %v", err)
	}
}

// TestToolHooksFromSettingsRunAsClaudeCodeRunsThem checks the tool steps
// with real command hooks from a settings file: a guard that denies a
// Bash command on its input, which the model is told as an error
// tool_result, and a PostToolUse hook whose context follows the result;
// the transcript then pairs each tool_use with one tool_result.
func TestToolHooksFromSettingsRunAsClaudeCodeRunsThem(t *testing.T) {
	ctx := context.Background()
	settings := writeSettings(t, "settings.json", `{"hooks": {
		"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
			"command": "if grep -q 'rm -rf'; then echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"no rm\"}}'; fi"}]}],
		"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
			"command": "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PostToolUse\",\"additionalContext\":\"lint is clean\"}}'"}]}]}}`)
	e := hookEngine(t, []string{settings}, nil)
	dir := t.TempDir()
	testkit.Session(t, e, "a", dir, "clean up")
	agent := testkit.Agent(t, e, "ide")
	if _, err := agent.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	d, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"rm -rf build"}`), Permission: hookexec.Allow, AddToolUse: true})
	if err != nil || d.Decision != hookexec.Deny || d.Reason != "PreToolUse:Bash hook error: no rm" {
		t.Fatalf("rm: %+v, %v", d, err)
	}
	d, err = agent.PreToolUse(ctx, reprise.ToolCall{ID: "t2", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`), Permission: hookexec.Allow, AddToolUse: true})
	if err != nil || d.Decision != hookexec.Allow {
		t.Fatalf("ls: %+v, %v", d, err)
	}
	f, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "t2", Output: json.RawMessage(`"go.mod main.go"`)})
	if err != nil || f.Context != "lint is clean" || f.Blocked {
		t.Fatalf("ls result: %+v, %v", f, err)
	}
	msgs, err := e.Conversation(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, m := range msgs {
		kind := m.Role
		if len(m.Content) > 0 && m.Content[0].Type != "text" {
			kind += ":" + m.Content[0].Type
		} else if m.IsMeta {
			kind += ":" + projection.FirstText(m)
		}
		kinds = append(kinds, kind)
	}
	want := "user assistant:tool_use user:tool_result assistant:tool_use user:tool_result user:PostToolUse:Bash hook additional context: lint is clean"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("conversation:\n got %s\nwant %s", got, want)
	}
	if denied := string(msgs[2].Content[0].Raw); !strings.Contains(denied, `"is_error":true`) || !strings.Contains(denied, `PreToolUse:Bash hook error: no rm`) {
		t.Errorf("the denial's tool_result: %s", denied)
	}
	data, err := os.ReadFile(filepath.Join(e.TranscriptPath("a")))
	if err != nil {
		t.Fatal(err)
	}
	if uses := strings.Count(string(data), `"type":"tool_use"`); uses != 2 || uses != strings.Count(string(data), `"type":"tool_result"`) {
		t.Errorf("the transcript does not pair each of the 2 tool_use with a tool_result:\n%s", data)
	}
}

// TestStopHookReadsTheTurnThatJustEnded checks that a Stop command hook
// finds the turn's buffered answer in the transcript it is given, and
// reads last_assistant_message, permission_mode and the turn's prompt_id
// on stdin, as Claude Code gives them.
func TestStopHookReadsTheTurnThatJustEnded(t *testing.T) {
	ctx := context.Background()
	side := filepath.Join(t.TempDir(), "stop.json")
	settings := writeSettings(t, "settings.json", `{"hooks": {
		"Stop": [{"hooks": [{"type": "command", "command": "cat > `+side+`; grep -c 'All tests pass now' \"$(sed -n 's/.*\"transcript_path\":\"\\([^\"]*\\)\".*/\\1/p' `+side+`)\" >> `+side+`.count"}]}],
		"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "true"}]}]}}`)
	e := hookEngine(t, []string{settings}, nil)
	testkit.Session(t, e, "a", t.TempDir(), "hello")
	agent := testkit.Agent(t, e, "ide")
	if _, err := agent.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Prompt(ctx, "run the tests"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Buffer(ctx, "a", reprise.Text("assistant", "All tests pass now.")); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(side)
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatalf("Stop stdin %s: %v", data, err)
	}
	if in["last_assistant_message"] != "All tests pass now." || in["permission_mode"] != "default" || in["prompt_id"] == nil || in["prompt_id"] == "" {
		t.Errorf("Stop stdin: %v", in)
	}
	count, err := os.ReadFile(side + ".count")
	if err != nil || strings.TrimSpace(string(count)) != "1" {
		t.Errorf("the transcript the Stop hook read holds the answer %q times (%v); want once", count, err)
	}
}

// TestToolResultsAsClaudeCodeRecordsThem checks what PostToolUse records
// and passes on: the hooks get the tool's response and duration, not the
// text the model reads; a call the user refused gets its error
// tool_result and runs no hook; the PreToolUse hooks' context follows the
// result for the model; the decision and the feedback carry the hooks'
// outcomes.
func TestToolResultsAsClaudeCodeRecordsThem(t *testing.T) {
	ctx := context.Background()
	e, agent := startedAgent(t)
	var seen hookexec.ToolInput
	failures := 0
	for _, err := range []error{
		e.Hooks().OnPreToolUse("note", "", func(context.Context, hookexec.ToolInput) (hookexec.PreToolUseOutput, error) {
			return hookexec.PreToolUseOutput{AdditionalContext: "checked"}, nil
		}),
		e.Hooks().OnPostToolUse("seen", "", func(_ context.Context, in hookexec.ToolInput) (hookexec.PostToolUseOutput, error) {
			seen = in
			return hookexec.PostToolUseOutput{}, nil
		}),
		e.Hooks().OnToolError("failures", "", func(context.Context, hookexec.ToolInput) (hookexec.ErrorOccurredOutput, error) {
			failures++
			return hookexec.ErrorOccurredOutput{}, nil
		}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	d, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"make"}`), AddToolUse: true})
	if err != nil || d.Decision != hookexec.Ask || d.Context != "checked" || len(d.Outcomes) != 1 || d.Outcomes[0].Name != "note" {
		t.Fatalf("undecided call: %+v, %v", d, err)
	}
	f, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "t1", Error: "The user refused this call.", Refused: true})
	if err != nil || len(f.Outcomes) != 0 || failures != 0 {
		t.Fatalf("refused call: %+v, %v; %d failure hooks ran", f, err, failures)
	}
	msgs, err := e.Conversation(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	n := len(msgs)
	if result := string(msgs[n-2].Content[0].Raw); !strings.Contains(result, `"is_error":true`) || !strings.Contains(result, "The user refused this call.") ||
		projection.FirstText(msgs[n-1]) != "PreToolUse:Bash hook additional context: checked" || !msgs[n-1].IsMeta {
		t.Fatalf("after the refusal: %s, then %+v", result, msgs[n-1])
	}
	if _, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "t2", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`), Permission: hookexec.Allow, AddToolUse: true}); err != nil {
		t.Fatal(err)
	}
	f, err = agent.PostToolUse(ctx, reprise.ToolResult{ID: "t2", Output: json.RawMessage(`"go.mod"`),
		Response: json.RawMessage(`{"stdout":"go.mod\n","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}`),
		Duration: 1500 * time.Millisecond})
	if err != nil || len(f.Outcomes) != 1 || f.Outcomes[0].Name != "seen" {
		t.Fatalf("ls result: %+v, %v", f, err)
	}
	if !strings.Contains(string(seen.Response), `"stdout":"go.mod\n"`) || seen.Duration != 1500*time.Millisecond {
		t.Errorf("PostToolUse hook got response %s, duration %v", seen.Response, seen.Duration)
	}
	msgs, _ = e.Conversation(ctx, "a")
	if result := string(msgs[len(msgs)-2].Content[0].Raw); !strings.Contains(result, `"content":"go.mod"`) {
		t.Errorf("the model's tool_result: %s", result)
	}
	// The transcript's record of the result carries the tool's response as
	// toolUseResult, as Claude Code writes it; the refusal's has none.
	data, err := os.ReadFile(e.TranscriptPath("a"))
	if err != nil {
		t.Fatal(err)
	}
	var withResult []string
	for line := range strings.Lines(string(data)) {
		var rec struct {
			ToolUseResult json.RawMessage `json:"toolUseResult"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("transcript line %q: %v", line, err)
		}
		if rec.ToolUseResult != nil {
			withResult = append(withResult, string(rec.ToolUseResult))
		}
	}
	want := `{"stdout":"go.mod\n","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}`
	if len(withResult) != 1 || withResult[0] != want {
		t.Errorf("toolUseResult in the transcript: %q; want only %s", withResult, want)
	}
}

// TestContinueFalseHaltsTheTurn checks that a command hook answering
// "continue": false, on a tool call, a prompt and a stop, halts the agent
// with its stopReason, whatever else it decided, and that a call asked
// about again still says so; systemMessage is kept for the user.
func TestContinueFalseHaltsTheTurn(t *testing.T) {
	ctx := context.Background()
	halt := `echo '{\"continue\":false,\"stopReason\":\"quota spent\",\"systemMessage\":\"watch the quota\"}'`
	settings := writeSettings(t, "settings.json", `{"hooks": {
		"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "`+halt+`"}]}],
		"PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "`+halt+`"}]}],
		"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "`+halt+`"}]}],
		"Stop": [{"hooks": [{"type": "command", "command": "echo '{\"decision\":\"block\",\"reason\":\"again\",\"continue\":false,\"stopReason\":\"enough\"}'"}]}]}}`)
	e := hookEngine(t, []string{settings}, nil)
	testkit.Session(t, e, "a", t.TempDir(), "hello")
	agent := testkit.Agent(t, e, "ide")
	if _, err := agent.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	want := reprise.Halt{Halted: true, StopReason: "quota spent"}
	answer(t, e, "a", reprise.ToolUseBlock("t1", "Bash", json.RawMessage(`{"command":"ls"}`)),
		reprise.ToolUseBlock("t2", "Read", json.RawMessage(`{"file_path":"go.mod"}`)))
	d, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`), Permission: hookexec.Allow})
	if err != nil || d.Halt != want || len(d.Outcomes) != 1 || d.Outcomes[0].SystemMessage != "watch the quota" {
		t.Fatalf("PreToolUse: %+v, %v", d, err)
	}
	d, err = agent.PreToolUse(ctx, reprise.ToolCall{ID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)})
	if err != nil || d.Halt != want {
		t.Fatalf("PreToolUse asked again: %+v, %v", d, err)
	}
	d, err = agent.PreToolUse(ctx, reprise.ToolCall{ID: "t2", Name: "Read", Input: json.RawMessage(`{"file_path":"go.mod"}`), Permission: hookexec.Allow})
	if err != nil || d.Halted {
		t.Fatalf("a call no hook halts: %+v, %v", d, err)
	}
	f, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "t2", Output: json.RawMessage(`"module x"`)})
	if err != nil || f.Halt != want {
		t.Fatalf("PostToolUse: %+v, %v", f, err)
	}
	p, err := agent.Prompt(ctx, "go on")
	if err != nil || p.Halt != want || p.Blocked {
		t.Fatalf("Prompt: %+v, %v", p, err)
	}
	s, err := agent.Stop(ctx)
	if err != nil || s.Halt != (reprise.Halt{Halted: true, StopReason: "enough"}) || !s.Blocked {
		t.Fatalf("Stop: %+v, %v", s, err)
	}
}

// TestToolHooksRunningInAnotherProcess has two Engines over one store, as
// two processes share a PostgreSQL one: while the first runs the
// PreToolUse hook of a call, which will deny it, the second, asked about
// the same call, is refused with ErrAgentBusy and writes nothing, instead
// of closing the hook as interrupted and letting the call past it; once
// the hook has answered, the second gets the recorded deny.
func TestToolHooksRunningInAnotherProcess(t *testing.T) {
	ctx := context.Background()
	store := eventlog.NewMemoryStore()
	first := reprise.New(store, reprise.Options{TranscriptDir: t.TempDir()})
	second := reprise.New(store, reprise.Options{TranscriptDir: t.TempDir()})
	testkit.Session(t, first, "a", t.TempDir(), "hello")
	started, release := make(chan struct{}), make(chan struct{})
	err := first.Hooks().OnPreToolUse("guard", "Bash", func(ctx context.Context, in hookexec.ToolInput) (hookexec.PreToolUseOutput, error) {
		close(started)
		<-release
		return hookexec.PreToolUseOutput{PermissionDecision: hookexec.Deny, PermissionDecisionReason: "no rm"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	one, two := testkit.Agent(t, first, "ide"), testkit.Agent(t, second, "ide")
	if _, err := one.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	call := reprise.ToolCall{ID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"rm -rf /"}`), Permission: hookexec.Allow, AddToolUse: true}
	done := make(chan *reprise.ToolDecision)
	go func() {
		d, err := one.PreToolUse(ctx, call)
		if err != nil {
			t.Error(err)
		}
		done <- d
	}()
	<-started
	before := testkit.Events(t, store)
	if d, err := two.PreToolUse(ctx, call); !errors.Is(err, reprise.ErrAgentBusy) {
		t.Errorf("the second process, while the first runs the hook: %+v, %v; want ErrAgentBusy", d, err)
	}
	if after := testkit.Events(t, store); len(after) != len(before) {
		t.Errorf("the refused call appended %d events", len(after)-len(before))
	}
	close(release)
	if d := <-done; d == nil || d.Decision != hookexec.Deny {
		t.Fatalf("the first process: %+v", d)
	}
	if d, err := two.PreToolUse(ctx, call); err != nil || d.Decision != hookexec.Deny || d.Reason != "PreToolUse:Bash hook error: no rm" {
		t.Errorf("the second process, after: %+v, %v", d, err)
	}
}

// TestToolCallIDsAreIDs checks that a tool_use id that could name a path
// or forge a printed line is refused, before anything is recorded.
func TestToolCallIDsAreIDs(t *testing.T) {
	ctx := context.Background()
	e, agent := startedAgent(t)
	before := testkit.Events(t, e.Store())
	for _, id := range []string{"", "../etc", "a\nToolDecided", "t 1", strings.Repeat("x", 200)} {
		if _, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: id, Name: "Bash"}); !errors.Is(err, reprise.ErrBadTool) {
			t.Errorf("PreToolUse with id %q: %v; want ErrBadTool", id, err)
		}
		if _, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: id, Output: json.RawMessage(`"x"`)}); !errors.Is(err, reprise.ErrBadTool) {
			t.Errorf("PostToolUse with id %q: %v; want ErrBadTool", id, err)
		}
	}
	if after := testkit.Events(t, e.Store()); len(after) != len(before) {
		t.Errorf("refused calls appended %d events", len(after)-len(before))
	}
	if _, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_01A09q90qw90lq917835lq9", Name: "Bash", AddToolUse: true}); err != nil {
		t.Errorf("a Messages API id: %v", err)
	}
}

// TestToolCallsOfBytesThatAreNotTextAreRefused checks that a Go host's
// call whose input, output or response is not JSON text in UTF-8 is
// refused before anything is recorded, where the hooks were given JSON
// they could not parse, or {} in place of an input that was no object.
func TestToolCallsOfBytesThatAreNotTextAreRefused(t *testing.T) {
	ctx := context.Background()
	e, agent := startedAgent(t)
	before := testkit.Events(t, e.Store())
	for _, in := range []string{"{\"command\":\"rm \xff\"}", `["ls"]`, `{"command":`} {
		if _, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "t1", Name: "Bash", Input: json.RawMessage(in), AddToolUse: true}); !errors.Is(err, reprise.ErrBadTool) {
			t.Errorf("PreToolUse with input %q: %v; want ErrBadTool", in, err)
		}
	}
	for _, out := range []string{"\"caf\xe9\"", `"open`} {
		if _, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "t1", Output: json.RawMessage(out)}); !errors.Is(err, reprise.ErrBadTool) {
			t.Errorf("PostToolUse with output %q: %v; want ErrBadTool", out, err)
		}
		if _, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "t1", Output: json.RawMessage(`"ok"`), Response: json.RawMessage(out)}); !errors.Is(err, reprise.ErrBadTool) {
			t.Errorf("PostToolUse with response %q: %v; want ErrBadTool", out, err)
		}
	}
	if after := testkit.Events(t, e.Store()); len(after) != len(before) {
		t.Errorf("refused calls appended %d events", len(after)-len(before))
	}
	if _, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"caf\u00e9"}`), AddToolUse: true}); err != nil {
		t.Errorf("an input of text: %v", err)
	}
}

// startedAgent is agent ide of a new Engine on a bbolt file, started on
// session a, which holds one message.
func startedAgent(t *testing.T) (*reprise.Engine, *reprise.Agent) {
	t.Helper()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	testkit.Session(t, e, "a", t.TempDir(), "hello")
	agent := testkit.Agent(t, e, "ide")
	if _, err := agent.Start(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	return e, agent
}

// answer records, in session id of e, the model's answer that makes the
// calls uses.
func answer(t *testing.T, e *reprise.Engine, id string, uses ...reprise.Block) reprise.Message {
	t.Helper()
	m, err := e.Append(context.Background(), id, reprise.Message{Role: "assistant", Content: uses})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPostToolUseSaysAResultWasNotKept checks that a result given for a
// call whose result is recorded, or for a denied call, is not kept and
// PostToolUse says so.
func TestPostToolUseSaysAResultWasNotKept(t *testing.T) {
	ctx := context.Background()
	e, agent := startedAgent(t)
	answer(t, e, "a", reprise.ToolUseBlock("t1", "Bash", nil), reprise.ToolUseBlock("t2", "Bash", nil))
	if _, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "t1", Name: "Bash", Permission: hookexec.Allow}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "t2", Name: "Bash", Permission: hookexec.Deny}); err != nil {
		t.Fatal(err)
	}
	f, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "t1", Output: json.RawMessage(`"first"`)})
	if err != nil || f.AlreadyRecorded {
		t.Fatalf("the first result: %+v, %v", f, err)
	}
	before := testkit.Events(t, e.Store())
	for _, id := range []string{"t1", "t2"} {
		f, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: id, Output: json.RawMessage(`"again"`)})
		if err != nil || !f.AlreadyRecorded {
			t.Errorf("a result for %s, whose result is recorded: %+v, %v; want AlreadyRecorded", id, f, err)
		}
	}
	if after := testkit.Events(t, e.Store()); len(after) != len(before) {
		t.Errorf("the results not kept appended %d events", len(after)-len(before))
	}
}

// TestTheUsersAnswerToAnAskIsRecordedOnce checks that a call left to ask
// is not taken for one that may have run, that its result is refused
// until the user's allow is recorded, that the allow and a refusal are
// each recorded once, and that a refusal is the call's error result.
func TestTheUsersAnswerToAnAskIsRecordedOnce(t *testing.T) {
	ctx := context.Background()
	e, agent := startedAgent(t)
	if err := e.Hooks().OnPreToolUse("note", "", func(context.Context, hookexec.ToolInput) (hookexec.PreToolUseOutput, error) {
		return hookexec.PreToolUseOutput{AdditionalContext: "checked"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	answer(t, e, "a", reprise.ToolUseBlock("t1", "Bash", json.RawMessage(`{"command":"make"}`)),
		reprise.ToolUseBlock("t2", "Bash", json.RawMessage(`{"command":"rm -rf /"}`)))
	for _, id := range []string{"t1", "t2"} {
		if d, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: id, Name: "Bash", Input: json.RawMessage(`{"command":"make"}`)}); err != nil || d.Decision != hookexec.Ask {
			t.Fatalf("%s: %+v, %v", id, d, err)
		}
	}
	if d, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "t1", Name: "Bash", Permission: hookexec.Allow}); err != nil || d.Decision != hookexec.Ask || d.Interrupted {
		t.Fatalf("asked again before the user answered: %+v, %v; want ask, not interrupted", d, err)
	}
	if _, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "t1", Output: json.RawMessage(`"built"`)}); !errors.Is(err, reprise.ErrToolNotAllowed) {
		t.Fatalf("the result of a call never allowed: %v; want ErrToolNotAllowed", err)
	}
	if _, err := agent.AnswerAsk(ctx, reprise.ToolAnswer{ID: "t9", Allow: true}); !errors.Is(err, reprise.ErrToolNotAsked) {
		t.Errorf("an answer for a call never asked: %v", err)
	}
	d, err := agent.AnswerAsk(ctx, reprise.ToolAnswer{ID: "t1", Allow: true})
	if err != nil || d.Decision != hookexec.Allow || string(d.Input) != `{"command":"make"}` {
		t.Fatalf("allow: %+v, %v", d, err)
	}
	d, err = agent.AnswerAsk(ctx, reprise.ToolAnswer{ID: "t2"})
	if err != nil || d.Decision != hookexec.Deny || d.Reason != reprise.UserRefused {
		t.Fatalf("refuse: %+v, %v", d, err)
	}
	before := testkit.Events(t, e.Store())
	if d, err := agent.AnswerAsk(ctx, reprise.ToolAnswer{ID: "t1"}); err != nil || d.Decision != hookexec.Allow {
		t.Errorf("t1 answered again: %+v, %v; want its recorded allow", d, err)
	}
	if d, err := agent.AnswerAsk(ctx, reprise.ToolAnswer{ID: "t2", Allow: true}); err != nil || d.Decision != hookexec.Deny {
		t.Errorf("t2 answered again: %+v, %v; want its recorded refusal", d, err)
	}
	if after := testkit.Events(t, e.Store()); len(after) != len(before) {
		t.Errorf("answering again appended %d events", len(after)-len(before))
	}
	if f, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "t1", Output: json.RawMessage(`"built"`)}); err != nil || f.AlreadyRecorded {
		t.Fatalf("the result of the allowed call: %+v, %v", f, err)
	}
	if f, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "t2", Output: json.RawMessage(`"ran"`)}); err != nil || !f.AlreadyRecorded {
		t.Errorf("a result for the refused call: %+v, %v; want it not kept", f, err)
	}
	msgs, err := e.Conversation(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, m := range msgs {
		for _, id := range projection.ToolResults(m) {
			results = append(results, id+" "+string(m.Content[0].Raw))
		}
	}
	if len(results) != 2 || !strings.Contains(results[0], `"t2"`) || !strings.Contains(results[0], reprise.UserRefused) ||
		!strings.Contains(results[0], `"is_error":true`) || !strings.Contains(results[1], "built") {
		t.Errorf("results: %q", results)
	}
	for i, m := range msgs {
		if ids := projection.ToolResults(m); len(ids) == 1 && ids[0] == "t2" {
			if i+1 == len(msgs) || !msgs[i+1].IsMeta || projection.FirstText(msgs[i+1]) != "PreToolUse:Bash hook additional context: checked" {
				t.Errorf("after the refusal: %+v; want the PreToolUse hooks' context", msgs[i+1:])
			}
		}
	}
	if rep, err := reprise.Audit(ctx, e.Store()); err != nil || len(rep.Violations)+len(rep.Unsendable) != 0 {
		t.Errorf("audit: %+v, %v", rep, err)
	}
}

// TestAHooksUpdatedInputMustBeAnObject checks, with a real command hook,
// that an updatedInput that is not a JSON object (a string, an array, a
// number) does not become the call's input: the call keeps its own.
func TestAHooksUpdatedInputMustBeAnObject(t *testing.T) {
	ctx := context.Background()
	for i, bad := range []string{`"rm -rf /"`, `["rm"]`, `7`} {
		settings := writeSettings(t, "settings.json", `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
			"command": "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\",\"updatedInput\":`+strings.ReplaceAll(bad, `"`, `\"`)+`}}'"}]}]}}`)
		e := hookEngine(t, []string{settings}, nil)
		testkit.Session(t, e, "a", t.TempDir(), "go")
		agent := testkit.Agent(t, e, "ide")
		if _, err := agent.Start(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		id := "t" + string(rune('1'+i))
		answer(t, e, "a", reprise.ToolUseBlock(id, "Bash", json.RawMessage(`{"command":"ls"}`)))
		d, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: id, Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)})
		if err != nil || d.Decision != hookexec.Allow || string(d.Input) != `{"command":"ls"}` {
			t.Errorf("updatedInput %s: %+v, %v; want allow with the call's own input", bad, d, err)
		}
	}
}

// A Go PermissionRequest hook answers for the user on a call left to ask:
// its allow, with the input it gives, is the call's decision; Registry.On
// refuses an event with steps of its own, naming the typed helper.
func TestGoPermissionRequestHookDecidesACallLeftToAsk(t *testing.T) {
	ctx := context.Background()
	e, agent := startedAgent(t)
	err := e.Hooks().OnPermissionRequest("auto", "Bash", func(_ context.Context, in hookexec.ToolInput) (hookexec.PermissionRequestOutput, error) {
		return hookexec.PermissionRequestOutput{Behavior: hookexec.Allow, UpdatedInput: json.RawMessage(`{"command":"ls -l"}`)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	answer(t, e, "a", reprise.ToolUseBlock("toolu_1", "Bash", json.RawMessage(`{"command":"ls"}`)))
	d, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`), Permission: hookexec.Ask})
	if err != nil || d.Decision != hookexec.Allow || string(d.Input) != `{"command":"ls -l"}` {
		t.Fatalf("decision: %+v, %v", d, err)
	}
	err = e.Hooks().On(hookexec.PreToolUse, "", func(context.Context, hookexec.EventInput) (hookexec.EventOutput, error) {
		return hookexec.EventOutput{}, nil
	})
	if !errors.Is(err, hookexec.ErrBadHook) || !strings.Contains(err.Error(), "OnPreToolUse") {
		t.Fatalf("On(PreToolUse) = %v", err)
	}
}

// A Go hook of the turn's events stops the agent with Claude Code's
// "continue": false: a PreToolUse hook's Halt, its stop reason and its
// warning for the user are in the decision's outcome and halt.
func TestGoToolHookHaltsTheTurn(t *testing.T) {
	ctx := context.Background()
	e, agent := startedAgent(t)
	if err := e.Hooks().OnPreToolUse("budget", "Bash", func(context.Context, hookexec.ToolInput) (hookexec.PreToolUseOutput, error) {
		return hookexec.PreToolUseOutput{PermissionDecision: hookexec.Allow,
			Control: hookexec.Control{Halt: true, StopReason: "budget spent", SystemMessage: "3 of 3 calls used"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	answer(t, e, "a", reprise.ToolUseBlock("toolu_1", "Bash", json.RawMessage(`{"command":"ls"}`)))
	d, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_1", Name: "Bash", Permission: hookexec.Allow})
	if err != nil || !d.Halted || d.StopReason != "budget spent" || len(d.Outcomes) != 1 || d.Outcomes[0].SystemMessage != "3 of 3 calls used" {
		t.Fatalf("decision: %+v, %v", d, err)
	}
}

// Tool hooks are told the turn's prompt_id, as Claude Code tells them,
// before and after the tool.
func TestToolHooksGetTheTurnsPromptID(t *testing.T) {
	ctx := context.Background()
	e, agent := startedAgent(t)
	var ids []string
	seen := func(_ context.Context, in hookexec.ToolInput) { ids = append(ids, in.PromptID) }
	if err := e.Hooks().OnPreToolUse("pre", "", func(ctx context.Context, in hookexec.ToolInput) (hookexec.PreToolUseOutput, error) {
		seen(ctx, in)
		return hookexec.PreToolUseOutput{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.Hooks().OnPostToolUse("post", "", func(ctx context.Context, in hookexec.ToolInput) (hookexec.PostToolUseOutput, error) {
		seen(ctx, in)
		return hookexec.PostToolUseOutput{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var prompt string
	if err := e.Hooks().OnUserPromptSubmit("p", func(_ context.Context, in hookexec.PromptInput) (hookexec.PromptOutput, error) {
		prompt = in.PromptID
		return hookexec.PromptOutput{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Prompt(ctx, "list the files"); err != nil {
		t.Fatal(err)
	}
	answer(t, e, "a", reprise.ToolUseBlock("toolu_1", "Bash", json.RawMessage(`{"command":"ls"}`)))
	if _, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_1", Name: "Bash", Permission: hookexec.Allow}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_1", Output: json.RawMessage(`"a"`)}); err != nil {
		t.Fatal(err)
	}
	if prompt == "" || len(ids) != 2 || ids[0] != prompt || ids[1] != prompt {
		t.Fatalf("tool hooks got prompt ids %q, the prompt's was %q", ids, prompt)
	}
}
