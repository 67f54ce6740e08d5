package reprise_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// fireEngine opens an Engine whose hooks are those of settings, with
// session s current on agent ide, and returns the agent.
func fireEngine(t *testing.T, dir, settings string) (*reprise.Engine, *reprise.Agent) {
	t.Helper()
	e := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	hooks, err := hookexec.LoadSettings(testkit.WriteFile(t, filepath.Join(dir, "settings.json"), settings))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Hooks().AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "s", dir, "hello")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	return e, a
}

// A host fires Notification: its matcher selects on notification_type,
// the command hook gets Claude Code's stdin, its additionalContext comes
// back, and the run is recorded once: fired again with the same id,
// nothing runs and the recorded result is returned.
func TestFireRunsAnEventsHooksOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	_, a := fireEngine(t, dir, `{"hooks": {"Notification": [
		{"matcher": "permission_prompt|idle_prompt", "hooks": [{"type": "command", "command": "cat >> '`+runs+`'; echo >> '`+runs+`'; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"Notification\", \"additionalContext\": \"told\"}}'"}]},
		{"matcher": "auth_success", "hooks": [{"type": "command", "command": "echo never >> '`+runs+`'"}]}]}}`)
	in := json.RawMessage(`{"message": "Claude needs your permission to use Bash", "notification_type": "permission_prompt"}`)
	f, err := a.Fire(ctx, schema.HookNotification, "n1", in)
	if err != nil {
		t.Fatal(err)
	}
	if f.AlreadyRecorded || f.Context != "told" || len(f.Outcomes) != 1 || f.Outcomes[0].Status != schema.HookOK {
		t.Fatalf("fire: %+v", f)
	}
	again, err := a.Fire(ctx, schema.HookNotification, "n1", in)
	if err != nil || !again.AlreadyRecorded || again.Context != "told" {
		t.Fatalf("fired again: %+v, %v", again, err)
	}
	data, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 1 {
		t.Fatalf("the hook ran %d times:\n%s", len(lines), data)
	}
	var stdin map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &stdin); err != nil {
		t.Fatal(err)
	}
	if stdin["hook_event_name"] != "Notification" || stdin["session_id"] != "s" || stdin["cwd"] != dir ||
		stdin["notification_type"] != "permission_prompt" || stdin["message"] != "Claude needs your permission to use Bash" {
		t.Fatalf("stdin: %s", lines[0])
	}
}

// Fire refuses, recording nothing, an event with steps of its own, an
// unknown one, input without a field the row requires or that is no
// object, an id that is not one, and an id that a fire of another event
// holds.
func TestFireRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	e, a := fireEngine(t, t.TempDir(), `{"hooks": {}}`)
	if _, err := a.Fire(ctx, schema.HookSetup, "setup-1", json.RawMessage(`{"trigger": "init"}`)); err != nil {
		t.Fatal(err)
	}
	before := len(testkit.Events(t, e.Store()))
	for _, c := range []struct {
		event  schema.HookEvent
		id     string
		fields string
		says   string
	}{
		{schema.HookPreToolUse, "f", `{}`, "steps of its own"},
		{"Sneeze", "f", `{}`, "none of Claude Code's hook events"},
		{schema.HookNotification, "f", `{"title": "no message"}`, `needs the field "message"`},
		{schema.HookNotification, "f", `["message"]`, "must be a JSON object"},
		{schema.HookNotification, "../f", `{"message": "m"}`, "fire id"},
		{schema.HookNotification, "setup-1", `{"message": "m"}`, "is a Setup, not a Notification"},
	} {
		_, err := a.Fire(ctx, c.event, c.id, json.RawMessage(c.fields))
		if !errors.Is(err, reprise.ErrBadFire) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Fire(%s, %s, %s) = %v; want ErrBadFire saying %q", c.event, c.id, c.fields, err, c.says)
		}
	}
	if after := len(testkit.Events(t, e.Store())); after != before {
		t.Fatalf("refused fires appended %d events", after-before)
	}
}

// Each row's output rules, with real command hooks: exit 2 blocks
// TaskCreated with stderr as the reason; PermissionDenied's retry comes
// back and its "if" rule selects the call; Setup's hooks write
// CLAUDE_ENV_FILE, whose content is returned; WorktreeCreate's plain
// stdout is the worktree's path.
func TestFireReadsEachRowsOutput(t *testing.T) {
	ctx := context.Background()
	_, a := fireEngine(t, t.TempDir(), `{"hooks": {
		"TaskCreated": [{"hooks": [{"type": "command", "command": "echo 'no tasks today' >&2; exit 2"}]}],
		"PermissionDenied": [{"matcher": "Bash", "hooks": [
			{"type": "command", "if": "Bash(rm *)", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PermissionDenied\", \"retry\": true}}'"}]}],
		"Setup": [{"hooks": [{"type": "command", "command": "echo 'export PATH_ADDED=1' >> \"$CLAUDE_ENV_FILE\""}]}],
		"WorktreeCreate": [{"hooks": [{"type": "command", "command": "echo /tmp/wt-feature"}]}]}}`)
	task, err := a.Fire(ctx, schema.HookTaskCreated, "task-1", json.RawMessage(`{"task_id": "1", "task_subject": "ship"}`))
	if err != nil || !task.Blocked || task.Reason != "no tasks today" {
		t.Fatalf("TaskCreated: %+v, %v", task, err)
	}
	rm, err := a.Fire(ctx, schema.HookPermissionDenied, "toolu_1", json.RawMessage(
		`{"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}, "tool_use_id": "toolu_1", "reason": "auto mode"}`))
	if err != nil || string(rm.Specific) != `{"retry":true}` {
		t.Fatalf("PermissionDenied of rm: %+v, %v", rm, err)
	}
	ls, err := a.Fire(ctx, schema.HookPermissionDenied, "toolu_2", json.RawMessage(
		`{"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_2", "reason": "auto mode"}`))
	if err != nil || len(ls.Outcomes) != 0 || ls.Specific != nil {
		t.Fatalf("PermissionDenied of ls, which the hook's if does not meet: %+v, %v", ls, err)
	}
	setup, err := a.Fire(ctx, schema.HookSetup, "setup-1", json.RawMessage(`{"trigger": "init"}`))
	if err != nil || setup.Env != "export PATH_ADDED=1\n" {
		t.Fatalf("Setup: %+v, %v", setup, err)
	}
	wt, err := a.Fire(ctx, schema.HookWorktreeCreate, "wt-1", json.RawMessage(`{"name": "feature"}`))
	if err != nil || string(wt.Specific) != `{"worktreePath":"/tmp/wt-feature"}` {
		t.Fatalf("WorktreeCreate: %+v, %v", wt, err)
	}
}

// A fire goes on beside a tool call whose hooks run, and a lifecycle
// action waits for neither: it fails with ErrAgentBusy while the fire's
// hooks run.
func TestFireRunsBesideToolCallsAndHoldsLifecycleActions(t *testing.T) {
	ctx := context.Background()
	e, agent := startedAgent(t)
	inFire, release := make(chan struct{}), make(chan struct{})
	if err := e.Hooks().On(schema.HookNotification, "", func(ctx context.Context, in hookexec.EventInput) (hookexec.EventOutput, error) {
		close(inFire)
		<-release
		return hookexec.EventOutput{SystemMessage: "seen"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := agent.Fire(ctx, schema.HookNotification, "n1", json.RawMessage(`{"message": "waiting"}`))
		if err == nil && f.SystemMessage != "seen" {
			err = errors.New("the Go hook's systemMessage is lost: " + f.SystemMessage)
		}
		done <- err
	}()
	<-inFire
	answer(t, e, "a", reprise.ToolUseBlock("toolu_1", "Bash", json.RawMessage(`{"command":"ls"}`)))
	if d, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_1", Name: "Bash", Permission: hookexec.Allow}); err != nil || d.Decision != hookexec.Allow {
		t.Fatalf("a tool call beside the fire: %+v, %v", d, err)
	}
	if _, err := agent.Compact(ctx, "summary"); !errors.Is(err, reprise.ErrAgentBusy) {
		t.Errorf("Compact while a fire's hooks run: %v; want ErrAgentBusy", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A process that dies while a fire's hooks run leaves the intent alone in
// the log; the next process to load the agent records the run as
// interrupted, and the hook never runs again.
func TestFireCutByACrashIsClosedAsInterrupted(t *testing.T) {
	evs := fullRun(t)
	var last eventlog.Event
	for _, ev := range evs {
		if ev.Stream == projection.AgentStream("ide") {
			last = ev
		}
	}
	rec, err := schema.NewRecord(last.Stream, &schema.HookEventStarted{Event: schema.HookNotification, Session: "b", ID: "n1",
		Fields: []byte(`{"message":"m"}`), Hooks: []string{"notify"}}, last.Time+1, "n1")
	if err != nil {
		t.Fatal(err)
	}
	intent := eventlog.Event{Stream: rec.Stream, Seq: last.Seq + 1, Type: rec.Type, Version: rec.Version, Time: rec.Time, RestoreID: rec.RestoreID, Payload: rec.Payload}
	e := testkit.OpenEngine(t, testkit.WriteStore(t, append(evs, intent)), reprise.Options{})
	var ran calls
	if err := e.Hooks().On(schema.HookNotification, "", func(context.Context, hookexec.EventInput) (hookexec.EventOutput, error) {
		ran.add("notify")
		return hookexec.EventOutput{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	a := testkit.Agent(t, e, "ide")
	f, err := a.Fire(context.Background(), schema.HookNotification, "n1", json.RawMessage(`{"message": "m"}`))
	if err != nil || !f.AlreadyRecorded || !f.Interrupted || len(f.Outcomes) != 1 || f.Outcomes[0].Status != schema.HookInterrupted {
		t.Fatalf("the cut fire: %+v, %v", f, err)
	}
	if len(ran.get()) != 0 {
		t.Fatal("an interrupted fire's hook ran again")
	}
	if steps := testkit.StreamTypes(t, e.Store(), projection.AgentStream("ide")); steps[len(steps)-1] != schema.TypeHookEventRan {
		t.Fatalf("agent stream ends %v", steps[len(steps)-2:])
	}
}

// PostToolBatch fires once, when the last call of an answer has its
// result: the first result of two fires nothing; the second gives the
// hooks every call's name, input, id and result, and their context
// reaches the model as a meta message after the results. Asked again
// about the last call, nothing runs twice.
func TestPostToolBatchFiresOnceAfterTheLastResult(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stdin := filepath.Join(dir, "stdin")
	e, a := fireEngine(t, dir, `{"hooks": {"PostToolBatch": [{"hooks": [{"type": "command",
		"command": "cat >> '`+stdin+`'; echo >> '`+stdin+`'; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolBatch\", \"additionalContext\": \"both ran\"}}'"}]}]}}`)
	answer(t, e, "s", reprise.ToolUseBlock("toolu_1", "Read", json.RawMessage(`{"file_path":"a"}`)),
		reprise.ToolUseBlock("toolu_2", "Bash", json.RawMessage(`{"command":"ls"}`)))
	for _, id := range []string{"toolu_1", "toolu_2"} {
		if _, err := a.PreToolUse(ctx, reprise.ToolCall{ID: id, Name: map[string]string{"toolu_1": "Read", "toolu_2": "Bash"}[id], Permission: hookexec.Allow}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := a.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_1", Output: json.RawMessage(`"a's text"`)})
	if err != nil || first.Batch != nil {
		t.Fatalf("the first result: %+v, %v", first, err)
	}
	last, err := a.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_2", Error: "exit status 1"})
	if err != nil || last.Batch == nil || last.Batch.Context != "both ran" || last.Halted {
		t.Fatalf("the last result: %+v, %v", last, err)
	}
	msgs, err := e.Conversation(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	end := msgs[len(msgs)-1]
	if !end.IsMeta || end.Content[0].Text != "<system-reminder>\nPostToolBatch hook additional context: both ran\n</system-reminder>" {
		t.Fatalf("the conversation ends with %+v", end)
	}
	again, err := a.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_2", Error: "exit status 1"})
	if err != nil || !again.AlreadyRecorded || again.Batch == nil || !again.Batch.AlreadyRecorded {
		t.Fatalf("asked again: %+v, %v", again, err)
	}
	data, err := os.ReadFile(stdin)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 1 {
		t.Fatalf("the hook ran %d times", len(lines))
	}
	var in struct {
		Event string `json:"hook_event_name"`
		Calls []struct {
			Name     string          `json:"tool_name"`
			Input    json.RawMessage `json:"tool_input"`
			ID       string          `json:"tool_use_id"`
			Response string          `json:"tool_response"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &in); err != nil {
		t.Fatal(err)
	}
	if in.Event != "PostToolBatch" || len(in.Calls) != 2 || in.Calls[0].Name != "Read" || in.Calls[0].ID != "toolu_1" ||
		in.Calls[0].Response != "a's text" || string(in.Calls[1].Input) != `{"command":"ls"}` || in.Calls[1].Response != "exit status 1" {
		t.Fatalf("stdin: %s", lines[0])
	}
}

// A PostToolBatch hook's exit 2 stops the agentic loop: the result that
// fired it halts, and the turn is over by the log, not asking the model.
func TestPostToolBatchBlockEndsTheTurn(t *testing.T) {
	ctx := context.Background()
	e, a := fireEngine(t, t.TempDir(), `{"hooks": {"PostToolBatch": [{"hooks": [{"type": "command", "command": "echo 'budget spent' >&2; exit 2"}]}]}}`)
	answer(t, e, "s", reprise.ToolUseBlock("toolu_1", "Bash", json.RawMessage(`{"command":"ls"}`)))
	if _, err := a.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_1", Name: "Bash", Permission: hookexec.Allow}); err != nil {
		t.Fatal(err)
	}
	fb, err := a.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_1", Output: json.RawMessage(`"a b"`)})
	if err != nil || !fb.Halted || fb.StopReason != "budget spent" || fb.Batch == nil || !fb.Batch.Blocked {
		t.Fatalf("the last result: %+v, %v", fb, err)
	}
	turn, err := a.Turn(ctx)
	if err != nil || turn.Phase != reprise.TurnOver {
		t.Fatalf("turn after the block: %+v, %v; want over", turn, err)
	}
}

// PostCompact fires once a compaction completes, with its trigger and
// summary; a compaction whose process died before its PostCompact ran has
// it fired by the next process that loads the agent, once.
func TestPostCompactFiresAfterACompactionAndIsRolledForward(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stdin := filepath.Join(dir, "stdin")
	settings := `{"hooks": {"PostCompact": [{"matcher": "auto", "hooks": [{"type": "command", "command": "cat >> '` + stdin + `'; echo >> '` + stdin + `'"}]}]}}`
	e, a := fireEngine(t, dir, settings)
	if _, err := a.Compact(ctx, "we fixed the parser", reprise.WithTrigger("auto")); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(stdin)
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatal(err)
	}
	if in["hook_event_name"] != "PostCompact" || in["trigger"] != "auto" || in["compact_summary"] != "we fixed the parser" {
		t.Fatalf("stdin: %s", data)
	}

	// The same log without the fire: a process that died after the
	// compaction. The next to load the agent fires it, and only once.
	var cut []eventlog.Event
	for _, ev := range testkit.Events(t, e.Store()) {
		if ev.Type != schema.TypeHookEventStarted && ev.Type != schema.TypeHookEventRan {
			cut = append(cut, ev)
		}
	}
	if len(cut) == len(testkit.Events(t, e.Store())) {
		t.Fatal("the compaction's PostCompact was not recorded")
	}
	if err := os.Remove(stdin); err != nil {
		t.Fatal(err)
	}
	path := testkit.WriteStore(t, cut)
	for range 2 {
		e2 := testkit.OpenEngine(t, path, reprise.Options{Logger: testkit.Discard})
		hooks, err := hookexec.LoadSettings(filepath.Join(dir, "settings.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := e2.Hooks().AddAll(hooks); err != nil {
			t.Fatal(err)
		}
		testkit.Agent(t, e2, "ide")
		if err := e2.Close(); err != nil {
			t.Fatal(err)
		}
	}
	data, err = os.ReadFile(stdin)
	if err != nil {
		t.Fatalf("the due PostCompact did not run: %v", err)
	}
	if n := strings.Count(strings.TrimSpace(string(data)), "\n") + 1; n != 1 {
		t.Fatalf("the due PostCompact ran %d times:\n%s", n, data)
	}
}

// CwdChanged moves the working directory that its own hooks and later
// hooks of the session run in and are told, as recorded by the fire;
// CLAUDE_PROJECT_DIR stays the session's.
func TestCwdChangedMovesWhereLaterHooksRun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sub := filepath.Join(dir, "app")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "where")
	record := `{"hooks": [{"type": "command", "command": "{ pwd -P; echo \"$CLAUDE_PROJECT_DIR\"; grep -o '\"cwd\":\"[^\"]*\"'; } >> '` + out + `'"}]}`
	e, a := fireEngine(t, dir, `{"hooks": {"Notification": [`+record+`], "CwdChanged": [`+record+`]}}`)
	if _, err := a.Fire(ctx, schema.HookNotification, "n1", json.RawMessage(`{"message": "before"}`)); err != nil {
		t.Fatal(err)
	}
	moved, _ := json.Marshal(map[string]string{"old_cwd": dir, "new_cwd": sub})
	if _, err := a.Fire(ctx, schema.HookCwdChanged, "cd-1", moved); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Fire(ctx, schema.HookNotification, "n2", json.RawMessage(`{"message": "after"}`)); err != nil {
		t.Fatal(err)
	}
	// A new process reads the move from the log.
	e.Close()
	e2 := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	hooks, err := hookexec.LoadSettings(filepath.Join(dir, "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e2.Hooks().AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	if _, err := testkit.Agent(t, e2, "ide").Fire(ctx, schema.HookNotification, "n3", json.RawMessage(`{"message": "later"}`)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	real := func(p string) string { r, _ := filepath.EvalSymlinks(p); return r }
	// Before; the CwdChanged hook itself, in the new directory as Claude
	// Code fires it; after; and in the next process.
	var want string
	for _, in := range []string{dir, sub, sub, sub} {
		want += real(in) + "\n" + dir + "\n" + `"cwd":"` + in + `"` + "\n"
	}
	if string(data) != want {
		t.Fatalf("the hooks ran in:\n%s\nwant\n%s", data, want)
	}
}
