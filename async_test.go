package reprise_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// asyncEngine opens an Engine over path with the hooks of settings, and a
// channel told each async hook's end.
func asyncEngine(t *testing.T, path, settings string) (*reprise.Engine, chan reprise.AsyncHookEnded) {
	t.Helper()
	ended := make(chan reprise.AsyncHookEnded, 8)
	e := testkit.OpenEngine(t, path, reprise.Options{Logger: testkit.Discard,
		AsyncHookEnded: func(x reprise.AsyncHookEnded) { ended <- x }})
	hooks, err := hookexec.LoadSettings(settings)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Hooks().AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	return e, ended
}

func countType(t *testing.T, e *reprise.Engine, typ string) int {
	t.Helper()
	n := 0
	for _, ev := range testkit.Events(t, e.Store()) {
		if string(ev.Type) == typ {
			n++
		}
	}
	return n
}

// An async UserPromptSubmit hook does not hold the prompt; its end is
// recorded once when it ends, and what it printed reaches the model once,
// with the session's next prompt, as a meta message after it.
func TestAsyncHookContextReachesTheNextTurn(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	settings := testkit.WriteFile(t, filepath.Join(dir, "settings.json"), `{"hooks": {"UserPromptSubmit": [{"hooks": [
		{"type": "command", "async": true, "command": "cat >/dev/null; while [ ! -e '`+gate+`' ]; do sleep 0.05; done; echo 'the linter found 2 issues'"}]}]}}`)
	e, ended := asyncEngine(t, filepath.Join(dir, "reprise.db"), settings)
	testkit.Session(t, e, "s", "", "hello", "hi")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	first, err := a.Prompt(ctx, "fix the parser")
	if err != nil {
		t.Fatal(err)
	}
	if first.Message == nil || first.AsyncMessage != nil || len(first.Outcomes) != 1 || first.Outcomes[0].Status != schema.HookAsync {
		t.Fatalf("first prompt: %+v", first)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var end reprise.AsyncHookEnded
	select {
	case end = <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the async hook's end was never told")
	}
	if end.Agent != "ide" || end.Session != "s" || end.Event != hookexec.UserPromptSubmit ||
		end.Outcome.Status != schema.HookOK || end.Outcome.Async != first.Outcomes[0].Async || end.Context != "the linter found 2 issues" {
		t.Fatalf("end %+v", end)
	}
	if n := countType(t, e, "AsyncHookEnded"); n != 1 {
		t.Fatalf("%d AsyncHookEnded events, want 1", n)
	}

	second, err := a.Prompt(ctx, "and the lexer")
	if err != nil {
		t.Fatal(err)
	}
	want := "<system-reminder>\nUserPromptSubmit hook additional context: the linter found 2 issues\n</system-reminder>"
	if second.AsyncMessage == nil || !second.AsyncMessage.IsMeta || second.AsyncMessage.Content[0].Text != want ||
		second.AsyncMessage.ParentUUID != second.Message.UUID {
		t.Fatalf("second prompt's async message: %+v", second.AsyncMessage)
	}
	// The second prompt started the hook again; let it end before the
	// third, which gets that run's context and not the first one's.
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the second run's end was never told")
	}
	third, err := a.Prompt(ctx, "thanks")
	if err != nil {
		t.Fatal(err)
	}
	if third.AsyncMessage == nil || strings.Count(third.AsyncMessage.Content[0].Text, "linter") != 1 {
		t.Fatalf("third prompt's async message: %+v", third.AsyncMessage)
	}
	if n := countType(t, e, "AsyncContextInjected"); n != 2 {
		t.Fatalf("%d AsyncContextInjected events, want 2", n)
	}
	msgs, err := e.Conversation(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(texts(msgs), "the linter found 2 issues"); n != 2 {
		t.Fatalf("the context is in the conversation %d times, want 2 (one per run):\n%s", n, texts(msgs))
	}
}

// An async hook that ends while the model's calls run has its context
// handed on with the last result of the answer, before the next request,
// as Claude Code hands it on, not with the next prompt: the result of the
// first call, while the second lacks one, brings nothing, and the next
// prompt brings nothing more.
func TestAsyncHookContextComesWithTheLastResultOfAnAnswer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	settings := testkit.WriteFile(t, filepath.Join(dir, "settings.json"), `{"hooks": {
		"UserPromptSubmit": [{"hooks": [
			{"type": "command", "async": true, "command": "cat >/dev/null; while [ ! -e '`+gate+`' ]; do sleep 0.05; done; echo 'the linter found 2 issues'"}]}],
		"PostToolUse": [{"matcher": "Bash", "hooks": [
			{"type": "command", "command": "cat >/dev/null; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"additionalContext\": \"ran\"}}'"}]}]}}`)
	e, ended := asyncEngine(t, filepath.Join(dir, "reprise.db"), settings)
	testkit.Session(t, e, "s", dir, "hello", "hi")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prompt(ctx, "fix the parser"); err != nil {
		t.Fatal(err)
	}
	answer(t, e, "s", reprise.ToolUseBlock("toolu_1", "Read", json.RawMessage(`{"file_path":"a"}`)),
		reprise.ToolUseBlock("toolu_2", "Bash", json.RawMessage(`{"command":"ls"}`)))
	for _, c := range []reprise.ToolCall{{ID: "toolu_1", Name: "Read", Permission: hookexec.Allow},
		{ID: "toolu_2", Name: "Bash", Permission: hookexec.Allow}} {
		if _, err := a.PreToolUse(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the async hook's end was never told")
	}
	first, err := a.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_1", Output: json.RawMessage(`"a's text"`)})
	if err != nil {
		t.Fatal(err)
	}
	if first.AsyncMessage != nil {
		t.Fatalf("the first result, with toolu_2 open, brought %+v", first.AsyncMessage)
	}
	second, err := a.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_2", Output: json.RawMessage(`"a b"`)})
	if err != nil {
		t.Fatal(err)
	}
	want := "<system-reminder>\nUserPromptSubmit hook additional context: the linter found 2 issues\n</system-reminder>"
	if second.Context != "ran" || second.AsyncMessage == nil || !second.AsyncMessage.IsMeta || second.AsyncMessage.Content[0].Text != want {
		t.Fatalf("the last result: %+v, async message %+v", second, second.AsyncMessage)
	}
	msgs, err := e.Conversation(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	// The result, its hook's context, then the async context, chained.
	n := len(msgs)
	if n < 3 || msgs[n-1].UUID != second.AsyncMessage.UUID || msgs[n-1].ParentUUID != msgs[n-2].UUID ||
		!strings.Contains(msgs[n-2].Content[0].Text, "PostToolUse:Bash hook additional context: ran") ||
		len(projection.ToolResults(msgs[n-3])) != 1 || projection.ToolResults(msgs[n-3])[0] != "toolu_2" {
		t.Fatalf("the conversation ends:\n%s", texts(msgs[max(0, n-3):]))
	}
	next, err := a.Prompt(ctx, "thanks")
	if err != nil {
		t.Fatal(err)
	}
	if next.AsyncMessage != nil || countType(t, e, "AsyncContextInjected") != 1 {
		t.Fatalf("the next prompt brought the context again: %+v", next.AsyncMessage)
	}
	if n := strings.Count(texts(msgs), "the linter found 2 issues"); n != 1 {
		t.Fatalf("the context is in the conversation %d times, want 1", n)
	}
}

func texts(msgs []reprise.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		for _, c := range m.Content {
			b.WriteString(c.Text + "\n")
		}
	}
	return b.String()
}

// Close waits for the async hooks still running and records their ends,
// so a host that exits cleanly loses none.
func TestCloseWaitsForAsyncHooks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "reprise.db")
	settings := testkit.WriteFile(t, filepath.Join(dir, "settings.json"), `{"hooks": {"Stop": [{"hooks": [
		{"type": "command", "async": true, "command": "sleep 0.5; echo '{\"hookSpecificOutput\":{\"hookEventName\":\"Stop\",\"additionalContext\":\"x\"}}'"}]}]}}`)
	e, _ := asyncEngine(t, path, settings)
	testkit.Session(t, e, "s", "", "hello", "hi")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = testkit.OpenEngine(t, path, reprise.Options{Logger: testkit.Discard})
	if n := countType(t, e, "AsyncHookEnded"); n != 1 {
		t.Fatalf("%d AsyncHookEnded events after Close, want 1", n)
	}
}

// A real SessionStart command hook's initialUserMessage is appended as the
// user's message after its context, and its watchPaths and reloadSkills
// come back with the restore.
func TestSessionStartHookGivesTheFirstPromptAndWatchPaths(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	settings := testkit.WriteFile(t, filepath.Join(dir, "settings.json"), `{"hooks": {"SessionStart": [{"hooks": [
		{"type": "command", "command": "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"SessionStart\",\"additionalContext\":\"on main\",\"initialUserMessage\":\"run the tests\",\"watchPaths\":[\"go.mod\",\"go.sum\"],\"reloadSkills\":true}}'"}]}]}}`)
	e, _ := asyncEngine(t, filepath.Join(dir, "reprise.db"), settings)
	testkit.Session(t, e, "s", "", "hello", "hi")
	r, err := testkit.Agent(t, e, "ide").Start(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if r.InitialUserMessage != "run the tests" || strings.Join(r.WatchPaths, ",") != "go.mod,go.sum" || !r.ReloadSkills || r.InitialUUID == "" {
		t.Fatalf("restore %+v", r.StartOutput)
	}
	msgs, err := e.Conversation(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	last := msgs[len(msgs)-1]
	if last.UUID != r.InitialUUID || last.IsMeta || last.Role != "user" || last.Content[0].Text != "run the tests" ||
		!strings.Contains(msgs[len(msgs)-2].Content[0].Text, "on main") {
		t.Fatalf("conversation ends %+v after %+v", last, msgs[len(msgs)-2])
	}
}

// A hook's statusMessage is recorded with its intent, for a view to show
// while it runs.
func TestIntentRecordsTheHooksStatusMessages(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	settings := testkit.WriteFile(t, filepath.Join(dir, "settings.json"), `{"hooks": {"SessionStart": [{"hooks": [
		{"type": "command", "command": "echo on main", "statusMessage": "Loading the branch"},
		{"type": "command", "command": "true"}]}]}}`)
	e, _ := asyncEngine(t, filepath.Join(dir, "reprise.db"), settings)
	testkit.Session(t, e, "s", "", "hello")
	if _, err := testkit.Agent(t, e, "ide").Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for _, ev := range testkit.Events(t, e.Store()) {
		if ev.Type != schema.TypeSessionStartHookStarted {
			continue
		}
		p, err := schema.Decode(ev)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.(*schema.SessionStartHookStarted).Status; len(got) != 2 || got[0] != "Loading the branch" || got[1] != "" {
			t.Fatalf("the intent records status %q", got)
		}
		return
	}
	t.Fatal("no SessionStartHookStarted")
}
