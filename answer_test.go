package reprise_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// results is a user message with an error tool_result for each of ids.
func results(ids ...string) reprise.Message {
	m := reprise.Message{Role: "user"}
	for _, id := range ids {
		raw, _ := json.Marshal(map[string]any{"type": "tool_result", "tool_use_id": id, "content": "interrupted", "is_error": true})
		m.Content = append(m.Content, reprise.Block{Type: "tool_result", Raw: raw})
	}
	return m
}

// bashCalls is an answer that calls Bash with each of ids.
func bashCalls(ids ...string) reprise.Message {
	m := reprise.Message{Role: "assistant"}
	for _, id := range ids {
		m.Content = append(m.Content, reprise.ToolUseBlock(id, "Bash", json.RawMessage(`{"command":"ls"}`)))
	}
	return m
}

// TestAnAnswerTheMessagesAPIWouldRefuseIsRefused checks that Append and
// Buffer refuse, recording nothing, an answer while calls of the one
// before have no result, an answer that reuses a tool_use id, and a
// tool_use without an id; and that the answer goes in once the earlier
// calls have their (interrupted) results.
func TestAnAnswerTheMessagesAPIWouldRefuseIsRefused(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	testkit.Session(t, e, "a", t.TempDir(), "hello")
	if _, err := e.Append(ctx, "a", bashCalls("a1", "b1")); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, m reprise.Message, want error) {
		t.Helper()
		before := testkit.Events(t, e.Store())
		if _, err := e.Append(ctx, "a", m); !errors.Is(err, want) || !errors.Is(err, reprise.ErrInvalidMessage) {
			t.Errorf("%s: Append: %v; want %v", what, err, want)
		}
		if after := testkit.Events(t, e.Store()); len(after) != len(before) {
			t.Errorf("%s: the refused answer appended %d events", what, len(after)-len(before))
		}
	}
	refused("an answer while a1 and b1 have no result", bashCalls("c1", "d1"), reprise.ErrToolCallsOpen)
	refused("a text answer while a1 and b1 have no result", reprise.Text("assistant", "done"), reprise.ErrToolCallsOpen)
	if _, err := e.Append(ctx, "a", results("a1")); err != nil {
		t.Fatal(err)
	}
	refused("an answer while b1 has no result", bashCalls("c1"), reprise.ErrToolCallsOpen)
	if _, err := e.Append(ctx, "a", results("b1")); err != nil {
		t.Fatal(err)
	}
	refused("an answer that reuses a1", bashCalls("c1", "a1"), reprise.ErrDuplicateToolUse)
	refused("an answer that calls c1 twice", bashCalls("c1", "c1"), reprise.ErrDuplicateToolUse)
	refused("a tool_use without an id", reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "tool_use", Raw: json.RawMessage(`{"type":"tool_use","id":"","name":"Bash","input":{}}`)}}}, reprise.ErrEmptyToolUseID)
	if _, err := e.Append(ctx, "a", bashCalls("c1")); err != nil {
		t.Fatalf("an answer once the calls before have results: %v", err)
	}

	// Buffered messages count as the session's.
	if _, err := e.Append(ctx, "a", results("c1")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Buffer(ctx, "a", bashCalls("e1")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Buffer(ctx, "a", bashCalls("f1")); !errors.Is(err, reprise.ErrToolCallsOpen) {
		t.Errorf("a buffered answer while e1, buffered, has no result: %v", err)
	}
	if _, err := e.Buffer(ctx, "a", results("e1")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "a", bashCalls("e1")); !errors.Is(err, reprise.ErrDuplicateToolUse) {
		t.Errorf("an answer that reuses e1, buffered: %v", err)
	}
}

// TestClaudeCodeRecordsOfOneAnswerAreOneAnswer checks that assistant
// messages that are records of one answer (the same Messages API id, as
// Claude Code writes a record per content block) are taken as one answer.
func TestClaudeCodeRecordsOfOneAnswerAreOneAnswer(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	testkit.Session(t, e, "a", t.TempDir(), "hello")
	for _, id := range []string{"a1", "b1"} {
		m := bashCalls(id)
		m.Record = json.RawMessage(`{"type":"assistant","message":{"id":"msg_1","role":"assistant"}}`)
		if _, err := e.Append(ctx, "a", m); err != nil {
			t.Fatalf("record of call %s: %v", id, err)
		}
	}
	m := bashCalls("c1")
	m.Record = json.RawMessage(`{"type":"assistant","message":{"id":"msg_2","role":"assistant"}}`)
	if _, err := e.Append(ctx, "a", m); !errors.Is(err, reprise.ErrToolCallsOpen) {
		t.Errorf("a record of another answer: %v; want ErrToolCallsOpen", err)
	}
}

// TestPreToolUseOfACallNoAnswerHolds checks that PreToolUse refuses a call
// whose tool_use the session does not hold, recording nothing, and adds
// it when asked to.
func TestPreToolUseOfACallNoAnswerHolds(t *testing.T) {
	ctx := context.Background()
	e, agent := startedAgent(t)
	before := testkit.Events(t, e.Store())
	call := reprise.ToolCall{ID: "toolu_9", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`), Permission: hookexec.Allow}
	if d, err := agent.PreToolUse(ctx, call); !errors.Is(err, reprise.ErrToolUseNotFound) {
		t.Fatalf("a call no answer holds: %+v, %v; want ErrToolUseNotFound", d, err)
	}
	if after := testkit.Events(t, e.Store()); len(after) != len(before) {
		t.Errorf("the refused call appended %d events", len(after)-len(before))
	}
	call.AddToolUse = true
	if d, err := agent.PreToolUse(ctx, call); err != nil || d.Decision != hookexec.Allow {
		t.Fatalf("with AddToolUse: %+v, %v", d, err)
	}
	msgs, err := e.Conversation(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if last := msgs[len(msgs)-1]; last.Role != "assistant" || string(last.Content[0].Raw) != string(reprise.ToolUseBlock("toolu_9", "Bash", call.Input).Raw) {
		t.Errorf("the added tool_use: %+v", last)
	}
	// A call of an answer the session holds needs no option.
	if _, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_9", Output: json.RawMessage(`"ok"`)}); err != nil {
		t.Fatal(err)
	}
	answer(t, e, "a", reprise.ToolUseBlock("toolu_10", "Bash", nil))
	if _, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_10", Name: "Bash", Permission: hookexec.Allow}); err != nil {
		t.Errorf("a call of a recorded answer: %v", err)
	}
}
