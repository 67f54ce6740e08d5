package openai_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/openai/openai-go/v3"
	repriseopenai "github.com/reprise-dev/reprise/adapters/openai"
	"github.com/reprise-dev/reprise/schema"
)

func raw(s string) schema.Block {
	var b struct {
		Type string `json:"type"`
	}
	_ = jsonUnmarshal(s, &b)
	return schema.Block{Type: b.Type, Raw: []byte(s)}
}

// lossyConversation holds one of each block that does not map, or maps in
// part, next to blocks that do.
var lossyConversation = []schema.Message{
	{UUID: "u0", Role: "user", Content: []schema.Block{
		raw(`{"type":"tool_result","tool_use_id":"toolu_9","is_error":true,"content":[{"type":"text","text":"exit 1"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}`),
		raw(`{"type":"image","source":{"type":"file","file_id":"file_011"}}`),
		raw(`{"type":"document","title":"spec.pdf","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}}`),
		raw(`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain"}}`),
		raw(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"retry"}}`),
		{Type: "text", Text: "See the spec."},
	}},
	{UUID: "a1", Role: "assistant", Content: []schema.Block{
		raw(`{"type":"redacted_thinking","data":"EmwKAhgB"}`),
		raw(`{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}`),
		{Type: "text", Text: "First part."},
		{Type: "text", Text: "Second part."},
	}},
	{UUID: "a2", Role: "assistant", Content: []schema.Block{
		raw(`{"type":"thinking","thinking":"hmm","signature":"c2ln"}`),
	}},
	{UUID: "u3", Role: "user", Content: []schema.Block{{Type: "image", Raw: []byte(`{"type":"image",`)}}},
	{UUID: "s4", Role: "system", Content: []schema.Block{{Type: "text", Text: "not a conversation role"}}},
}

const lossyRequest = `[
  {"role": "tool", "tool_call_id": "toolu_9", "content": [{"type": "text", "text": "exit 1"}]},
  {"role": "user", "content": [
    {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "spec.pdf"}},
    {"type": "text", "text": "See the spec."}
  ]},
  {"role": "assistant", "content": [{"type": "text", "text": "First part."}, {"type": "text", "text": "Second part."}]}
]`

// TestToMessagesReportsLosses checks what is sent of blocks that map in
// part, and that every block that does not is reported, in order.
func TestToMessagesReportsLosses(t *testing.T) {
	msgs, losses, err := repriseopenai.ToMessages(lossyConversation, repriseopenai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want any
	if err := jsonUnmarshal(lossyRequest, &want); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, "messages", toJSON(t, msgs), want)

	type at struct {
		msg, blk int
		typ      string
	}
	wantAt := []at{
		{0, 0, "tool_result"}, // is_error
		{0, 0, "tool_result"}, // the image inside it
		{0, 1, "image"},       // a file source
		{0, 3, "document"},    // a text source
		{0, 4, "server_tool_use"},
		{1, 0, "redacted_thinking"},
		{1, 1, "image"}, // in an assistant message
		{2, 0, "thinking"},
		{2, -1, "assistant"}, // nothing left of message 2
		{3, 0, "image"},      // unreadable JSON
		{3, -1, "user"},
		{4, -1, "system"},
	}
	var got []at
	for _, l := range losses {
		got = append(got, at{l.Message, l.Block, l.Type})
		if l.Reason == "" || l.UUID != lossyConversation[l.Message].UUID {
			t.Errorf("loss %v: no reason or wrong uuid", l)
		}
	}
	if !reflect.DeepEqual(got, wantAt) {
		t.Errorf("losses at %v\nwant %v\n(%v)", got, wantAt, losses)
	}
}

// TestToMessagesStrict checks that strict mode refuses a conversation that
// does not map losslessly, and accepts one that does.
func TestToMessagesStrict(t *testing.T) {
	msgs, losses, err := repriseopenai.ToMessages(lossyConversation, repriseopenai.Options{Strict: true})
	var le *repriseopenai.LossError
	if !errors.Is(err, repriseopenai.ErrLoss) || !errors.As(err, &le) || msgs != nil {
		t.Fatalf("strict ToMessages = %d messages, %v; want ErrLoss", len(msgs), err)
	}
	if len(le.Losses) != 12 || !reflect.DeepEqual(le.Losses, losses) {
		t.Errorf("LossError lists %d losses, returned %d; want 12 both", len(le.Losses), len(losses))
	}
	ok := []schema.Message{
		{Role: "user", Content: []schema.Block{{Type: "text", Text: "hi"}}},
		{Role: "assistant", Content: []schema.Block{
			{Type: "text", Text: "calling"},
			raw(`{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}`),
		}},
		{Role: "user", Content: []schema.Block{raw(`{"type":"tool_result","tool_use_id":"toolu_1","content":"a b"}`)}},
	}
	msgs, losses, err = repriseopenai.ToMessages(ok, repriseopenai.Options{Strict: true})
	if err != nil || len(losses) != 0 || len(msgs) != 3 {
		t.Errorf("strict ToMessages of a lossless conversation = %d messages, %v, %v", len(msgs), losses, err)
	}
}

// TestFromCompletionEdges decodes a response with every field that does
// not map, checks they are reported, and that the refusal and tool call
// arguments that are not a compact object come back exactly.
func TestFromCompletionEdges(t *testing.T) {
	var resp openai.ChatCompletion
	decodeFile(t, "response_edge.json", &resp)
	m, losses, err := repriseopenai.FromCompletion(&resp)
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, l := range losses {
		fields = append(fields, l.Type)
	}
	wantFields := []string{"choices", "tool_calls", "audio", "annotations", "logprobs", "function_call"}
	if !reflect.DeepEqual(fields, wantFields) {
		t.Errorf("losses %v, want fields %v", losses, wantFields)
	}
	wantBlocks := []schema.Block{
		{Type: repriseopenai.RefusalBlockType, Raw: []byte(`{"type":"openai_refusal","refusal":"I can't help with that part."}`)},
		{Type: "tool_use", Raw: []byte(`{"type":"tool_use","id":"call_bad","name":"lookup","input":{},"openai_arguments":"not json"}`)},
		{Type: "tool_use", Raw: []byte(`{"type":"tool_use","id":"call_spaced","name":"lookup","input":{"a":1},"openai_arguments":"  {\"a\": 1}"}`)},
	}
	if len(m.Content) != 4 || !reflect.DeepEqual(m.Content[:3], wantBlocks) {
		t.Errorf("content %q\nwant %q and the response block", m.Content, wantBlocks)
	}
	info, ok, err := repriseopenai.Response(m)
	if err != nil || !ok || info.ID != "chatcmpl-EDGE" || info.FinishReason != "tool_calls" || info.Usage != nil {
		t.Errorf("Response = %+v, %v, %v", info, ok, err)
	}
	if _, ok, err := info.CompletionUsage(); ok || err != nil {
		t.Errorf("CompletionUsage of a response without usage = %v, %v", ok, err)
	}

	msgs, lost, err := repriseopenai.ToMessages([]schema.Message{m}, repriseopenai.Options{Strict: true})
	if err != nil {
		t.Fatalf("ToMessages: %v (%v)", err, lost)
	}
	var want any
	if err := jsonUnmarshal(`[{"role": "assistant", "refusal": "I can't help with that part.", "tool_calls": [
		{"id": "call_bad", "type": "function", "function": {"name": "lookup", "arguments": "not json"}},
		{"id": "call_spaced", "type": "function", "function": {"name": "lookup", "arguments": "  {\"a\": 1}"}}
	]}]`, &want); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, "sent back", toJSON(t, msgs), want)

	if _, _, err := repriseopenai.FromCompletion(&openai.ChatCompletion{ID: "empty"}); !errors.Is(err, repriseopenai.ErrNoChoice) {
		t.Errorf("FromCompletion without choices: %v, want ErrNoChoice", err)
	}
	if _, _, err := repriseopenai.FromCompletion(nil); !errors.Is(err, repriseopenai.ErrNoChoice) {
		t.Errorf("FromCompletion(nil): %v, want ErrNoChoice", err)
	}
}

// TestEmptyAnswer checks that an answer with no content and no tool call
// is kept and sent back as an empty assistant message, so the turns still
// alternate.
func TestEmptyAnswer(t *testing.T) {
	var resp openai.ChatCompletion
	if err := jsonUnmarshal(`{"id":"chatcmpl-E","object":"chat.completion","created":1,"model":"m",
		"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null},"logprobs":null,"finish_reason":"length"}],
		"usage":{"prompt_tokens":5,"completion_tokens":0,"total_tokens":5}}`, &resp); err != nil {
		t.Fatal(err)
	}
	m, losses, err := repriseopenai.FromCompletion(&resp)
	if err != nil || len(losses) != 0 || len(m.Content) != 1 || m.Content[0].Type != repriseopenai.ResponseBlockType {
		t.Fatalf("FromCompletion = %+v, %v, %v", m, losses, err)
	}
	msgs, losses, err := repriseopenai.ToMessages([]schema.Message{m}, repriseopenai.Options{Strict: true})
	if err != nil {
		t.Fatal(err, losses)
	}
	var want any
	if err := jsonUnmarshal(`[{"role":"assistant","content":""}]`, &want); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, "empty answer", toJSON(t, msgs), want)
}
