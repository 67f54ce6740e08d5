package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/reprise-dev/reprise"
	repriseopenai "github.com/reprise-dev/reprise/adapters/openai"
	"github.com/reprise-dev/reprise/hookexec"
)

// toolCompletion asks for two calls of a Bash function.
const toolCompletion = `{
  "id": "chatcmpl-tools", "object": "chat.completion", "created": 1767607205, "model": "gpt-4o",
  "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
    "role": "assistant", "content": null, "refusal": null,
    "tool_calls": [
      {"id": "call_rm", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"rm -rf build\"}"}},
      {"id": "call_ls", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}}]}}],
  "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}}`

// A tool turn both ways: the tool calls of a completion into the session
// as tool_use blocks, then the tool steps reprise records (a hook's
// denial, a result that is a JSON object, a hook's context) back out as
// tool messages and a user message.
func TestToolTurnBothWays(t *testing.T) {
	ctx := context.Background()
	e, _ := newEngine(t)
	e.Hooks().OnPreToolUse("guard", "Bash", func(_ context.Context, in hookexec.ToolInput) (hookexec.PreToolUseOutput, error) {
		if strings.Contains(string(in.ToolInput), "rm ") {
			return hookexec.PreToolUseOutput{PermissionDecision: "deny", PermissionDecisionReason: "no rm here"}, nil
		}
		return hookexec.PreToolUseOutput{}, nil
	})
	e.Hooks().OnPostToolUse("note", "Bash", func(context.Context, hookexec.ToolInput) (hookexec.PostToolUseOutput, error) {
		return hookexec.PostToolUseOutput{AdditionalContext: "listing is fresh"}, nil
	})
	agent, err := e.Agent(ctx, "host")
	if err != nil {
		t.Fatal(err)
	}
	r, err := agent.New(ctx, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, r.To, reprise.Text("user", "What is here?")); err != nil {
		t.Fatal(err)
	}
	var resp openai.ChatCompletion
	if err := json.Unmarshal([]byte(toolCompletion), &resp); err != nil {
		t.Fatal(err)
	}
	answer, losses, err := repriseopenai.FromCompletion(&resp)
	if err != nil || len(losses) > 0 {
		t.Fatalf("FromCompletion: %v, losses %v", err, losses)
	}
	if _, err := e.Append(ctx, r.To, answer); err != nil {
		t.Fatal(err)
	}
	for _, call := range resp.Choices[0].Message.ToolCalls {
		// Found in the session, the tool_use is not recorded again.
		d, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: call.ID, Name: call.Function.Name,
			Input: json.RawMessage(call.Function.Arguments), Permission: hookexec.Allow})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"call_rm": hookexec.Deny, "call_ls": hookexec.Allow}[call.ID]; d.Decision != want {
			t.Fatalf("%s: decision %s, want %s", call.ID, d.Decision, want)
		}
	}
	out := `{"stdout":"a.txt\n","stderr":"","interrupted":false}`
	if _, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "call_ls", Output: json.RawMessage(out)}); err != nil {
		t.Fatal(err)
	}

	conv, err := e.Conversation(ctx, r.To)
	if err != nil {
		t.Fatal(err)
	}
	msgs, losses, err := repriseopenai.ToMessages(conv, repriseopenai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(losses) != 1 || losses[0].Type != "tool_result" || !strings.Contains(losses[0].Reason, "is_error") {
		t.Errorf("losses %v, want the denial's is_error flag only", losses)
	}
	want := `[
  {"role": "user", "content": "What is here?"},
  {"role": "assistant", "tool_calls": [
    {"id": "call_rm", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"rm -rf build\"}"}},
    {"id": "call_ls", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}}]},
  {"role": "tool", "tool_call_id": "call_rm", "content": "PreToolUse:Bash hook error: no rm here"},
  {"role": "tool", "tool_call_id": "call_ls", "content": "{\"stdout\":\"a.txt\\n\",\"stderr\":\"\",\"interrupted\":false}"},
  {"role": "user", "content": "PostToolUse:Bash hook additional context: listing is fresh"}]`
	var wantJSON any
	if err := json.Unmarshal([]byte(want), &wantJSON); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, "messages", toJSON(t, msgs), wantJSON)
}
