package hookexec

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/schema"
)

// toolHook is a command hook of event whose command is line.
func toolHook(event Event, line string) Hook {
	return Hook{Event: event, Name: line, Source: "test", Body: Command{Line: line}}
}

// bashCall is a Bash tool call, as tool hooks receive it.
func bashCall(t *testing.T) ToolInput {
	return ToolInput{SessionID: "s1", TranscriptPath: "/t/s1.jsonl", Cwd: "/src/app", PromptID: "p1",
		ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"rm -rf build"}`), ToolUseID: "toolu_1"}
}

// TestPreToolUseCommandDecisions checks each way a PreToolUse command hook
// decides, as Claude Code reads it: the hookSpecificOutput decision and
// its reason, the older top-level words, exit 2 with its stderr, an exit
// that is neither, and output that is not JSON.
func TestPreToolUseCommandDecisions(t *testing.T) {
	tests := []struct {
		name, line     string
		decision       string
		reason         string
		input, context string
		status         string
	}{
		{"json deny", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no rm"}}'`,
			Deny, "no rm", "", "", schema.HookOK},
		{"json allow with input and context", `echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls"},"additionalContext":"checked"}}'`,
			Allow, "", `{"command":"ls"}`, "checked", schema.HookOK},
		{"json ask", `echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"are you sure?"}}'`,
			Ask, "are you sure?", "", "", schema.HookOK},
		{"older block", `echo '{"decision":"block","reason":"old style"}'`, Deny, "old style", "", "", schema.HookOK},
		{"older approve", `echo '{"decision":"approve"}'`, Allow, "", "", "", schema.HookOK},
		{"deny without a reason", `echo '{"hookSpecificOutput":{"permissionDecision":"deny"}}'`, Deny, "Blocked by hook", "", "", schema.HookOK},
		{"exit 2", `echo 'rm is not allowed here' >&2; exit 2`, Deny, "rm is not allowed here", "", "", schema.HookOK},
		{"exit 1 decides nothing", `echo oops >&2; exit 1`, "", "", "", "", schema.HookFailed},
		{"plain stdout is no context", `echo just words`, "", "", "", "", schema.HookOK},
		{"an unknown decision is none", `echo '{"hookSpecificOutput":{"permissionDecision":"maybe"}}'`, "", "", "", "", schema.HookOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outcomes, d := RunPreToolUse(context.Background(), []Hook{toolHook(PreToolUse, tt.line)}, bashCall(t), testEnv(t))
			if len(outcomes) != 1 || outcomes[0].Status != tt.status {
				t.Fatalf("outcomes %+v, want status %s", outcomes, tt.status)
			}
			if d.Decision != tt.decision || d.Reason != tt.reason || string(d.UpdatedInput) != tt.input || d.Context != tt.context {
				t.Errorf("decision %+v, want %s %q input %s context %q", d, tt.decision, tt.reason, tt.input, tt.context)
			}
			if outcomes[0].Decision != tt.decision {
				t.Errorf("outcome records decision %q, want %q", outcomes[0].Decision, tt.decision)
			}
		})
	}
}

// TestPreToolUseDecisionsCombine checks that hooks run together decide the
// strictest way, deny over ask over allow, with the reasons of the hooks
// that made the decision, every hook's context, and no input replaced
// for a denied call.
func TestPreToolUseDecisionsCombine(t *testing.T) {
	allow := toolHook(PreToolUse, `echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls"},"additionalContext":"one"}}'`)
	ask := toolHook(PreToolUse, `echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check","additionalContext":"two"}}'`)
	deny := toolHook(PreToolUse, `echo 'not today' >&2; exit 2`)
	env := testEnv(t)
	_, d := RunPreToolUse(context.Background(), []Hook{allow, ask}, bashCall(t), env)
	if d.Decision != Ask || d.Reason != "check" || string(d.UpdatedInput) != `{"command":"ls"}` || d.Context != "one\ntwo" {
		t.Errorf("allow and ask: %+v", d)
	}
	_, d = RunPreToolUse(context.Background(), []Hook{allow, deny, ask}, bashCall(t), env)
	if d.Decision != Deny || d.Reason != "not today" || d.UpdatedInput != nil || d.Context != "one\ntwo" {
		t.Errorf("with a deny: %+v", d)
	}
	_, d = RunPreToolUse(context.Background(), nil, bashCall(t), env)
	if d.Decision != "" || d.Reason != "" {
		t.Errorf("no hooks: %+v", d)
	}
}

// TestToolHooksReadClaudeCodesInput checks what each tool event's command
// hook reads on stdin: the call's fields as Claude Code sends them, the
// default permission mode, no tool_use_id for PermissionRequest, the
// response and duration after a success, the error after a failure.
func TestToolHooksReadClaudeCodesInput(t *testing.T) {
	dir := t.TempDir()
	in := bashCall(t)
	in.Response = json.RawMessage(`{"stdout":"done","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}`)
	in.Error, in.Duration = "Exit code 1", 1500*time.Millisecond
	saved := func(event Event) map[string]any {
		t.Helper()
		path := filepath.Join(dir, string(event)+".json")
		hooks := []Hook{toolHook(event, "cat > "+shellQuote(path))}
		env := testEnv(t)
		switch event {
		case PreToolUse:
			RunPreToolUse(context.Background(), hooks, in, env)
		case PermissionRequest:
			RunPermissionRequest(context.Background(), hooks, in, env)
		case PostToolUse:
			RunPostToolUse(context.Background(), hooks, in, env)
		case PostToolUseFailure:
			RunPostToolUseFailure(context.Background(), hooks, in, env)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s stdin %s: %v", event, data, err)
		}
		return m
	}
	for _, event := range []Event{PreToolUse, PermissionRequest, PostToolUse, PostToolUseFailure} {
		m := saved(event)
		if m["hook_event_name"] != string(event) || m["session_id"] != "s1" || m["tool_name"] != "Bash" ||
			m["permission_mode"] != DefaultPermissionMode || m["prompt_id"] != "p1" || m["cwd"] != "/src/app" ||
			m["transcript_path"] != "/t/s1.jsonl" {
			t.Errorf("%s stdin: %v", event, m)
		}
		if input, _ := m["tool_input"].(map[string]any); input["command"] != "rm -rf build" {
			t.Errorf("%s tool_input: %v", event, m["tool_input"])
		}
		_, hasID := m["tool_use_id"]
		if hasID != (event != PermissionRequest) {
			t.Errorf("%s: tool_use_id present=%v", event, hasID)
		}
		_, hasResponse := m["tool_response"]
		_, hasError := m["error"]
		_, hasDuration := m["duration_ms"]
		if hasResponse != (event == PostToolUse) || hasError != (event == PostToolUseFailure) ||
			hasDuration != (event == PostToolUse || event == PostToolUseFailure) {
			t.Errorf("%s stdin: %v", event, m)
		}
	}
	if m := saved(PostToolUse); m["duration_ms"] != float64(1500) || m["tool_response"].(map[string]any)["stdout"] != "done" {
		t.Errorf("PostToolUse stdin: %v", m)
	}
	if m := saved(PostToolUseFailure); m["error"] != "Exit code 1" || m["is_interrupt"] != false {
		t.Errorf("PostToolUseFailure stdin: %v", m)
	}
}

// TestPermissionRequestDecisions checks the decision object of a
// PermissionRequest hook: an allow with new input, a deny with its
// message and interrupt, and exit 2, which Claude Code does not honour
// for this event.
func TestPermissionRequestDecisions(t *testing.T) {
	env := testEnv(t)
	_, d := RunPermissionRequest(context.Background(), []Hook{toolHook(PermissionRequest,
		`echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"command":"make"}}}}'`)}, bashCall(t), env)
	if d.Decision != Allow || string(d.UpdatedInput) != `{"command":"make"}` {
		t.Errorf("allow: %+v", d)
	}
	_, d = RunPermissionRequest(context.Background(), []Hook{toolHook(PermissionRequest,
		`echo '{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"not on main","interrupt":true}}}'`)}, bashCall(t), env)
	if d.Decision != Deny || d.Reason != "not on main" || !d.Interrupt {
		t.Errorf("deny: %+v", d)
	}
	outcomes, d := RunPermissionRequest(context.Background(), []Hook{toolHook(PermissionRequest, `echo no >&2; exit 2`)}, bashCall(t), env)
	if d.Decision != "" || outcomes[0].Status != schema.HookFailed {
		t.Errorf("exit 2: %+v, %+v", d, outcomes)
	}
}

// TestPostToolUseFeedback checks what PostToolUse and PostToolUseFailure
// command hooks say after a call: context, a block with its reason (JSON
// or exit 2 with stderr), and a replacement of the tool's output.
func TestPostToolUseFeedback(t *testing.T) {
	env := testEnv(t)
	hooks := []Hook{
		toolHook(PostToolUse, `echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"lint is clean"}}'`),
		toolHook(PostToolUse, `echo '{"decision":"block","reason":"tests fail now","hookSpecificOutput":{"updatedToolOutput":{"stdout":"redacted"}}}'`),
		toolHook(PostToolUse, `echo 'coverage dropped' >&2; exit 2`),
	}
	outcomes, f := RunPostToolUse(context.Background(), hooks, bashCall(t), env)
	if f.Context != "lint is clean" || !f.Blocked || f.Reason != "tests fail now\ncoverage dropped" || string(f.UpdatedResult) != `{"stdout":"redacted"}` {
		t.Errorf("feedback %+v", f)
	}
	if outcomes[1].Decision != "block" || outcomes[2].ExitCode != 2 {
		t.Errorf("outcomes %+v", outcomes)
	}
	_, f = RunPostToolUseFailure(context.Background(), []Hook{toolHook(PostToolUseFailure,
		`echo '{"hookSpecificOutput":{"hookEventName":"PostToolUseFailure","additionalContext":"try make clean first"}}'`)}, bashCall(t), env)
	if f.Context != "try make clean first" || f.Blocked {
		t.Errorf("failure feedback %+v", f)
	}
}

// TestToolFunctionHooks checks Go hooks of the tool events in the Copilot
// SDK's shapes: a PreToolUse hook that denies or modifies the arguments, a
// PostToolUse hook that replaces the result, an onErrorOccurred hook that
// says how to go on; and a hook that hangs times out without deciding.
func TestToolFunctionHooks(t *testing.T) {
	var seen ToolInput
	guard := PreToolUseFunc(func(_ context.Context, in ToolInput) (PreToolUseOutput, error) {
		seen = in
		if strings.Contains(string(in.ToolInput), "rm -rf") {
			return PreToolUseOutput{PermissionDecision: Deny, PermissionDecisionReason: "destructive"}, nil
		}
		return PreToolUseOutput{PermissionDecision: Allow, UpdatedInput: json.RawMessage(`{"command":"ls -a"}`)}, nil
	})
	hook := Hook{Event: PreToolUse, Name: "guard", Source: "function", Body: guard}
	outcomes, d := RunPreToolUse(context.Background(), []Hook{hook}, bashCall(t), CommandEnv{})
	if d.Decision != Deny || d.Reason != "destructive" || outcomes[0].Decision != Deny || seen.ToolUseID != "toolu_1" {
		t.Errorf("deny: %+v %+v", d, outcomes)
	}
	call := bashCall(t)
	call.ToolInput = json.RawMessage(`{"command":"ls"}`)
	_, d = RunPreToolUse(context.Background(), []Hook{hook}, call, CommandEnv{})
	if d.Decision != Allow || string(d.UpdatedInput) != `{"command":"ls -a"}` {
		t.Errorf("allow: %+v", d)
	}
	post := Hook{Event: PostToolUse, Name: "redact", Source: "function", Body: PostToolUseFunc(func(context.Context, ToolInput) (PostToolUseOutput, error) {
		return PostToolUseOutput{UpdatedToolOutput: json.RawMessage(`{"stdout":"***"}`), AdditionalContext: "redacted a key"}, nil
	})}
	_, f := RunPostToolUse(context.Background(), []Hook{post}, bashCall(t), CommandEnv{})
	if string(f.UpdatedResult) != `{"stdout":"***"}` || f.Context != "redacted a key" {
		t.Errorf("post: %+v", f)
	}
	onError := Hook{Event: PostToolUseFailure, Name: "retry", Source: "function", Body: ErrorOccurredFunc(func(context.Context, ToolInput) (ErrorOccurredOutput, error) {
		return ErrorOccurredOutput{ErrorHandling: "retry", UserNotification: "retrying the build"}, nil
	})}
	_, f = RunPostToolUseFailure(context.Background(), []Hook{onError}, bashCall(t), CommandEnv{})
	if f.ErrorHandling != "retry" || f.Notification != "retrying the build" {
		t.Errorf("failure: %+v", f)
	}
	hang := Hook{Event: PreToolUse, Name: "hang", Source: "function", Timeout: 50 * time.Millisecond,
		Body: PreToolUseFunc(func(ctx context.Context, _ ToolInput) (PreToolUseOutput, error) {
			<-ctx.Done()
			return PreToolUseOutput{PermissionDecision: Deny}, ctx.Err()
		})}
	outcomes, d = RunPreToolUse(context.Background(), []Hook{hang}, bashCall(t), CommandEnv{})
	if d.Decision != "" || outcomes[0].Status != schema.HookTimedOut {
		t.Errorf("hang: %+v %+v", d, outcomes)
	}
}

// TestCheckHooksBlockWithTheirMessage checks a session function hook
// after Claude Code's: its callback over the conversation lets the action
// go on with true; with false it denies a tool call, or blocks a stop,
// with its message; an error fails it without blocking.
func TestCheckHooksBlockWithTheirMessage(t *testing.T) {
	confirmed := Check{ErrorMessage: "Ask the user to confirm first", Fn: func(_ context.Context, msgs []schema.Message) (bool, error) {
		for _, m := range msgs {
			if len(m.Content) > 0 && m.Content[0].Text == "go ahead" {
				return true, nil
			}
		}
		return false, nil
	}}
	call := bashCall(t)
	guard := Hook{Event: PreToolUse, Name: "confirm", Source: ScopedSource, Body: confirmed}
	outcomes, d := RunPreToolUse(context.Background(), []Hook{guard}, call, CommandEnv{})
	if d.Decision != Deny || d.Reason != "Ask the user to confirm first" || outcomes[0].Status != schema.HookOK {
		t.Errorf("before the confirmation: %+v %+v", d, outcomes)
	}
	call.Messages = []schema.Message{{Role: "user", Content: []schema.Block{{Type: "text", Text: "go ahead"}}}}
	if _, d = RunPreToolUse(context.Background(), []Hook{guard}, call, CommandEnv{}); d.Decision != "" {
		t.Errorf("after the confirmation: %+v", d)
	}
	stop := Hook{Event: Stop, Name: "confirm", Body: confirmed}
	if _, blocked, reason, _ := RunStop(context.Background(), []Hook{stop}, StopInput{}, CommandEnv{}); !blocked || reason != "Ask the user to confirm first" {
		t.Errorf("stop: blocked %v, reason %q", blocked, reason)
	}
	broken := Hook{Event: PreToolUse, Name: "broken", Body: Check{Fn: func(context.Context, []schema.Message) (bool, error) {
		return false, errors.New("no conversation")
	}}}
	outcomes, d = RunPreToolUse(context.Background(), []Hook{broken}, bashCall(t), CommandEnv{})
	if d.Decision != "" || outcomes[0].Status != schema.HookFailed {
		t.Errorf("a check that fails: %+v %+v", d, outcomes)
	}
}

// The Copilot SDK's names, ModifiedArgs and ModifiedResult, still work;
// where a hook sets both names, Claude Code's wins.
func TestDeprecatedToolOutputNames(t *testing.T) {
	old := Hook{Event: PreToolUse, Name: "old", Source: "function", Body: PreToolUseFunc(func(context.Context, ToolInput) (PreToolUseOutput, error) {
		return PreToolUseOutput{PermissionDecision: Allow, ModifiedArgs: json.RawMessage(`{"command":"old"}`)}, nil
	})}
	if _, d := RunPreToolUse(context.Background(), []Hook{old}, bashCall(t), CommandEnv{}); string(d.UpdatedInput) != `{"command":"old"}` {
		t.Errorf("ModifiedArgs: %+v", d)
	}
	both := Hook{Event: PostToolUse, Name: "both", Source: "function", Body: PostToolUseFunc(func(context.Context, ToolInput) (PostToolUseOutput, error) {
		return PostToolUseOutput{ModifiedResult: json.RawMessage(`"old"`), UpdatedToolOutput: json.RawMessage(`"new"`)}, nil
	})}
	if _, f := RunPostToolUse(context.Background(), []Hook{both}, bashCall(t), CommandEnv{}); string(f.UpdatedResult) != `"new"` {
		t.Errorf("both names: %+v", f)
	}
}
