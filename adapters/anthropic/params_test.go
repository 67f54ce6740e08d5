package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/schema"
)

// TestMessageParamsLeaveOutTheOpenAIAdaptersBookkeeping checks that a
// conversation answered through the OpenAI adapter can be sent here: its
// openai_response block and openai_arguments field are not sent, and the
// rest of the tool_use is, as stored.
func TestMessageParamsLeaveOutTheOpenAIAdaptersBookkeeping(t *testing.T) {
	conv := []schema.Message{
		{UUID: "u1", Role: "user", Content: []schema.Block{{Type: "text", Text: "list the files"}}},
		{UUID: "a1", Role: "assistant", Content: []schema.Block{
			{Type: "tool_use", Raw: []byte(`{"type":"tool_use","id":"call_1","name":"ls","input":{"dir":"."},"openai_arguments":"{ \"dir\": \".\" }"}`)},
			{Type: "openai_response", Raw: []byte(`{"type":"openai_response","usage":{"total_tokens":12}}`)},
		}},
	}
	params, err := MessageParams(conv)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "openai_") {
		t.Fatalf("the request carries the OpenAI adapter's bookkeeping: %s", body)
	}
	for _, want := range []string{`"id":"call_1"`, `"name":"ls"`, `"input":{"dir":"."}`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("the tool_use lost %s: %s", want, body)
		}
	}
	if len(params) != 2 || len(params[1].OfAssistant.Content) != 1 {
		t.Fatalf("params %s, want the user turn and an assistant turn of one tool_use", body)
	}
}
