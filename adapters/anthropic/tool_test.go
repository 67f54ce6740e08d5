package anthropic_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/reprise-dev/reprise"
	rpanthropic "github.com/reprise-dev/reprise/adapters/anthropic"
	"github.com/reprise-dev/reprise/hookexec"
)

// toolAnswer is a response asking for three Bash calls.
const toolAnswer = `{"id":"msg_tools","type":"message","role":"assistant","model":"claude-test",
"content":[{"type":"text","text":"Let me look."},
{"type":"tool_use","id":"toolu_rm","name":"Bash","input":{"command":"rm -rf build"}},
{"type":"tool_use","id":"toolu_ls","name":"Bash","input":{"command":"ls"}},
{"type":"tool_use","id":"toolu_cat","name":"Bash","input":{"command":"cat nope"}}],
"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":20}}`

// A tool turn both ways: the tool_use blocks of a response into the
// session, then the tool steps reprise records (a hook's denial, a result
// that is a JSON object, a failure, a hook's context) back into the next
// request, as the Messages API takes them.
func TestToolTurnBothWays(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
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
	var resp anthropic.Message
	if err := resp.UnmarshalJSON([]byte(toolAnswer)); err != nil {
		t.Fatal(err)
	}
	stored, err := rpanthropic.Append(ctx, e, r.To, &resp)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.Content) != 4 || stored.Content[1].Type != "tool_use" {
		t.Fatalf("stored answer: %+v", stored.Content)
	}
	checkJSON(t, "stored tool_use", decode(t, []byte(`{"type":"tool_use","id":"toolu_rm","name":"Bash","input":{"command":"rm -rf build"}}`)),
		decode(t, stored.Content[1].Raw))

	// The calls, as a host with an allow rule for Bash makes them.
	decisions := map[string]string{}
	for _, id := range []string{"toolu_rm", "toolu_ls", "toolu_cat"} {
		var use struct {
			Input json.RawMessage `json:"input"`
		}
		for _, b := range resp.Content {
			if b.ID == id {
				use.Input = b.Input
			}
		}
		d, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: id, Name: "Bash", Input: use.Input, Permission: hookexec.Allow})
		if err != nil {
			t.Fatal(err)
		}
		decisions[id] = d.Decision
	}
	if decisions["toolu_rm"] != hookexec.Deny || decisions["toolu_ls"] != hookexec.Allow || decisions["toolu_cat"] != hookexec.Allow {
		t.Fatalf("decisions %v", decisions)
	}
	out := `{"stdout":"a.txt\n","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}`
	if _, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_ls", Output: json.RawMessage(out)}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_cat", Error: "Exit code 1\ncat: nope: No such file or directory"}); err != nil {
		t.Fatal(err)
	}

	conv, err := e.Conversation(ctx, r.To)
	if err != nil {
		t.Fatal(err)
	}
	params, err := rpanthropic.MessageParams(conv)
	if err != nil {
		t.Fatal(err)
	}
	compact, err := json.Marshal(json.RawMessage(out))
	if err != nil {
		t.Fatal(err)
	}
	outText, _ := json.Marshal(string(compact))
	want := `[
{"role":"user","content":[{"type":"text","text":"What is here?"}]},
{"role":"assistant","content":[{"type":"text","text":"Let me look."},
  {"type":"tool_use","id":"toolu_rm","name":"Bash","input":{"command":"rm -rf build"}},
  {"type":"tool_use","id":"toolu_ls","name":"Bash","input":{"command":"ls"}},
  {"type":"tool_use","id":"toolu_cat","name":"Bash","input":{"command":"cat nope"}}]},
{"role":"user","content":[
  {"type":"tool_result","tool_use_id":"toolu_rm","is_error":true,"content":"PreToolUse:Bash hook error: no rm here"},
  {"type":"tool_result","tool_use_id":"toolu_ls","content":` + string(outText) + `},
  {"type":"tool_result","tool_use_id":"toolu_cat","is_error":true,"content":"Exit code 1\ncat: nope: No such file or directory"},
  {"type":"text","text":"PostToolUse:Bash hook additional context: listing is fresh"}]}]`
	checkJSON(t, "params", decode(t, []byte(want)), paramsJSON(t, params))
}

// A tool_result's content goes out as stored when the API takes it (a
// string, an array of blocks), and as the text of its JSON when not.
func TestToolResultContent(t *testing.T) {
	cases := []struct{ name, content, want string }{
		{"string", `"ok"`, `"ok"`},
		{"blocks", `[{"type":"text","text":"ok"}]`, `[{"type":"text","text":"ok"}]`},
		{"object", `{"a": 1, "b": [true]}`, `"{\"a\":1,\"b\":[true]}"`},
		{"number", `3`, `"3"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := raw("user", "tool_result", `{"type":"tool_result","tool_use_id":"t1","content":`+c.content+`}`)
			params, err := rpanthropic.MessageParams([]reprise.Message{m})
			if err != nil {
				t.Fatal(err)
			}
			want := `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":` + c.want + `}]}]`
			checkJSON(t, "params", decode(t, []byte(want)), paramsJSON(t, params))
		})
	}
}
