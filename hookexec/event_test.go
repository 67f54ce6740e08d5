package hookexec

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/schema"
)

// fire runs one command hook of event with fields, as a host's Fire does.
func fire(t *testing.T, event Event, line, fields string, env CommandEnv) EventResult {
	t.Helper()
	h := Hook{Event: event, Name: line, Body: Command{Line: line}}
	in := EventInput{SessionID: "s1", Cwd: env.ProjectDir, Fields: json.RawMessage(fields)}
	outcomes, r, err := RunEvent(context.Background(), []Hook{h}, event, in, env)
	if err != nil || len(outcomes) != 1 {
		t.Fatalf("%s: %v, %+v", event, err, outcomes)
	}
	return r
}

// Real command hooks on events that no runner of their own serves: exit 2
// means what the event's row says, plain stdout is context only where the
// event takes it, and the fields the event honours come back.
func TestEventsFollowTheirRows(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	task := `{"task_id": "1", "task_subject": "ship"}`
	if r := fire(t, "TaskCreated", "echo not now >&2; exit 2", task, env); !r.Blocked || r.Reason != "not now" {
		t.Errorf("TaskCreated exit 2: %+v, want blocked with stderr", r)
	}
	if r := fire(t, "TeammateIdle", "echo keep going >&2; exit 2", `{"teammate_name": "ann"}`, env); !r.Blocked || r.Reason != "keep going" {
		t.Errorf("TeammateIdle exit 2: %+v, want the teammate kept working", r)
	}
	if r := fire(t, "Notification", "echo x >&2; exit 2", `{"message": "hi"}`, env); r.Blocked {
		t.Errorf("Notification exit 2 blocked: %+v", r)
	}
	if r := fire(t, "PostToolBatch", `echo '{"decision": "block", "reason": "stop here"}'`, `{"tool_calls": []}`, env); !r.Blocked || r.Reason != "stop here" {
		t.Errorf("PostToolBatch block: %+v", r)
	}
	if r := fire(t, "Notification", `echo '{"decision": "block"}'`, `{"message": "hi"}`, env); r.Blocked {
		t.Errorf("Notification honours no decision: %+v", r)
	}
	model := `{"from_model": "a", "to_model": "b", "source": "command"}`
	if r := fire(t, "PostModelSwitch", "echo plain context", model, env); r.Context != "plain context" {
		t.Errorf("PostModelSwitch plain stdout: %+v, want context", r)
	}
	if r := fire(t, "Setup", "echo plain", `{"trigger": "init"}`, env); r.Context != "" {
		t.Errorf("Setup plain stdout became context: %+v", r)
	}
	if r := fire(t, "Setup", `echo '{"hookSpecificOutput": {"hookEventName": "Setup", "additionalContext": "from json"}}'`, `{"trigger": "init"}`, env); r.Context != "from json" {
		t.Errorf("Setup JSON context: %+v", r)
	}
	if r := fire(t, "CwdChanged", `echo '{"hookSpecificOutput": {"hookEventName": "CwdChanged", "watchPaths": ["a.env"]}, "continue": false, "stopReason": "moved"}'`,
		`{"old_cwd": "/a", "new_cwd": "/b"}`, env); string(r.Specific) != `{"watchPaths":["a.env"]}` || !r.Halt || r.StopReason != "moved" {
		t.Errorf("CwdChanged: %+v (%s)", r, r.Specific)
	}
	if r := fire(t, "WorktreeCreate", "echo /tmp/wt-1", `{"name": "feature"}`, env); string(r.Specific) != `{"worktreePath":"/tmp/wt-1"}` || r.Blocked {
		t.Errorf("WorktreeCreate path: %+v (%s)", r, r.Specific)
	}
	if r := fire(t, "WorktreeCreate", "exit 1", `{"name": "feature"}`, env); !r.Blocked {
		t.Errorf("WorktreeCreate failure did not fail the creation: %+v", r)
	}
}

// The hooks get Claude Code's stdin: the common fields and the event's
// own; a field the event requires that the input lacks is an error, and
// CLAUDE_ENV_FILE goes to the events that have one.
func TestEventStdinAndRequiredFields(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env.EnvFile = filepath.Join(t.TempDir(), "env")
	out := filepath.Join(t.TempDir(), "stdin")
	h := Hook{Event: "FileChanged", Name: "cat", Body: Command{Line: "cat > " + shellQuote(out) + "; echo \"file=${CLAUDE_ENV_FILE:-none}\" >> " + shellQuote(out)}}
	in := EventInput{SessionID: "s1", TranscriptPath: "/t.jsonl", Cwd: env.ProjectDir, Effort: "high",
		Fields: json.RawMessage(`{"file_path": "/src/.env", "event": "change"}`)}
	if _, _, err := RunEvent(context.Background(), []Hook{h}, "FileChanged", in, env); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	want := `{"cwd":"` + env.ProjectDir + `","effort":{"level":"high"},"event":"change","file_path":"/src/.env","hook_event_name":"FileChanged","session_id":"s1","transcript_path":"/t.jsonl"}` +
		"file=" + env.EnvFile + "\n"
	if string(data) != want {
		t.Fatalf("stdin and env file:\n%s\nwant\n%s", data, want)
	}
	in.Fields = json.RawMessage(`{"file_path": "/src/.env"}`)
	if _, _, err := RunEvent(context.Background(), []Hook{h}, "FileChanged", in, env); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), `"event"`) {
		t.Fatalf("a missing required field: %v", err)
	}
	if _, _, err := RunEvent(context.Background(), nil, "Bogus", in, env); !errors.Is(err, ErrBadInput) {
		t.Fatalf("an unknown event: %v", err)
	}
	// Bytes that are not text would reach the hook as JSON it cannot parse.
	in.Fields = json.RawMessage("{\"file_path\": \"/src/\xff\", \"event\": \"change\"}")
	if _, _, err := RunEvent(context.Background(), []Hook{h}, "FileChanged", in, env); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("fields that are not UTF-8: %v", err)
	}
}

// A Go hook of any event, registered with On, answers in Claude Code's
// shape; its matcher follows the event's rule.
func TestGoHooksOfAnyEvent(t *testing.T) {
	reg := NewRegistry()
	err := reg.On("Elicitation", "github, linear", func(_ context.Context, in EventInput) (EventOutput, error) {
		return EventOutput{HookSpecificOutput: json.RawMessage(`{"hookEventName": "Elicitation", "action": "decline", "content": {}}`),
			SystemMessage: "declined for " + in.SessionID}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Match("Elicitation", "slack"); len(got) != 0 {
		t.Fatalf("matched slack: %+v", got)
	}
	hooks := reg.Match("Elicitation", "linear")
	_, r, err := RunEvent(context.Background(), hooks, "Elicitation", EventInput{SessionID: "s1",
		Fields: json.RawMessage(`{"mcp_server_name": "linear", "message": "token?"}`)}, testEnv(t))
	if err != nil || string(r.Specific) != `{"action":"decline","content":{}}` || r.SystemMessage != "declined for s1" {
		t.Fatalf("result %+v (%s), %v", r, r.Specific, err)
	}
	if err := reg.On("NoSuchEvent", "", func(context.Context, EventInput) (EventOutput, error) { return EventOutput{}, nil }); !errors.Is(err, ErrBadHook) {
		t.Fatalf("an unknown event: %v", err)
	}
}

// A command hook is told the pid of the process running it, as Claude
// Code gives its own, and the effort level when the input has one.
func TestEventHooksGetThePidAndTheEffort(t *testing.T) {
	env := testEnv(t)
	hook := Hook{Event: Stop, Name: "env", Body: Command{Line: `printf '{"systemMessage":"pid=%s effort=%s"}' "$CLAUDE_PID" "${CLAUDE_EFFORT-unset}"`}}
	in := EventInput{SessionID: "s1", Cwd: env.ProjectDir, Fields: json.RawMessage(`{"stop_hook_active":false}`)}
	for effort, want := range map[string]string{"high": "effort=high", "": "effort=unset"} {
		in.Effort = effort
		_, res, err := RunEvent(context.Background(), []Hook{hook}, Stop, in, env)
		if err != nil {
			t.Fatal(err)
		}
		if wantPid := "pid=" + strconv.Itoa(os.Getpid()) + " "; !strings.HasPrefix(res.SystemMessage, wantPid) || !strings.HasSuffix(res.SystemMessage, want) {
			t.Errorf("effort %q: the hook saw %q, want %q...%q", effort, res.SystemMessage, wantPid, want)
		}
	}
}

// Every fired event's row decides what a real command hook's exit 2 and
// "decision": "block" mean: an exit 2 blocks (or keeps the agent going)
// where the row says so, with stderr as the reason; reports stderr to the
// model after the fact where it gives feedback; and decides nothing
// elsewhere. A block decision blocks only where the row honours one.
func TestEveryFiredEventReadsExitTwoAndBlockAsItsRowSays(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	for _, spec := range schema.Events {
		if slices.Contains(schema.HookEvents, spec.Event) || !slices.Contains(spec.Types, schema.HookCommand) {
			continue
		}
		fields := map[string]string{}
		for _, f := range spec.Required {
			fields[f] = "x"
		}
		raw, _ := json.Marshal(fields)
		in := EventInput{SessionID: "s", TranscriptPath: "/t.jsonl", Cwd: env.ProjectDir, Fields: raw}
		exit2 := Hook{Event: spec.Event, Name: "exit2", Body: Command{Line: "echo 'not now' >&2; exit 2"}}
		_, res, err := RunEvent(context.Background(), []Hook{exit2}, spec.Event, in, env)
		if err != nil {
			t.Fatalf("%s: %v", spec.Event, err)
		}
		blocks := spec.ExitTwo == schema.ExitTwoBlocks || spec.ExitTwo == schema.ExitTwoBlocksUser || spec.ExitTwo == schema.ExitTwoContinues
		if res.Blocked != blocks || blocks && res.Reason != "not now" {
			t.Errorf("%s (exit 2: %s): blocked %v, reason %q; want blocked %v", spec.Event, spec.ExitTwo, res.Blocked, res.Reason, blocks)
		}
		if feedback := spec.ExitTwo == schema.ExitTwoFeedback; (res.Feedback == "not now") != feedback {
			t.Errorf("%s (exit 2: %s): feedback %q", spec.Event, spec.ExitTwo, res.Feedback)
		}
		block := Hook{Event: spec.Event, Name: "block", Body: Command{Line: `echo '{"decision": "block", "reason": "r"}'`}}
		if _, res, err = RunEvent(context.Background(), []Hook{block}, spec.Event, in, env); err != nil {
			t.Fatalf("%s: %v", spec.Event, err)
		}
		if res.Blocked != spec.Decision || spec.Decision && res.Reason != "r" {
			t.Errorf("%s (decision honoured: %v): a block decision gave blocked %v, reason %q", spec.Event, spec.Decision, res.Blocked, res.Reason)
		}
	}
}
