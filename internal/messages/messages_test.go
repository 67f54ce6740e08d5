package messages_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/messages"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/turn"
)

// fakeAPI is a stand-in for the Messages API: it keeps each request's
// path, headers and body, and answers with reply.
type fakeAPI struct {
	t     *testing.T
	url   string
	reply func(n int, body map[string]any, w http.ResponseWriter)

	mu   sync.Mutex
	reqs []fakeRequest
}

type fakeRequest struct {
	path   string
	header http.Header
	body   map[string]any
}

func newFakeAPI(t *testing.T, reply func(n int, body map[string]any, w http.ResponseWriter)) *fakeAPI {
	f := &fakeAPI{t: t, reply: reply}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		var body map[string]any
		if err == nil {
			err = json.Unmarshal(data, &body)
		}
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, fakeRequest{r.Method + " " + r.URL.Path, r.Header.Clone(), body})
		n := len(f.reqs)
		f.mu.Unlock()
		f.reply(n, body, w)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeAPI) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.reqs...)
}

// reply writes a response message with content blocks, given as JSON.
func reply(w http.ResponseWriter, stop string, content ...string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[`+
		strings.Join(content, ",")+`],"stop_reason":"`+stop+`","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":2}}`)
}

// js returns v as JSON, for comparing decoded bodies.
func js(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestModelSendsTheRequestAndReadsTheAnswer(t *testing.T) {
	api := newFakeAPI(t, func(n int, body map[string]any, w http.ResponseWriter) {
		w.Header().Set("request-id", "req_1")
		reply(w, "end_turn", `{"type":"text","text":"{\"ok\": true, \"reason\": \"fine\"}"}`)
	})
	c := messages.Client{BaseURL: api.url + "/gateway/", APIKey: "key-1", AuthToken: "token-1", DefaultModel: "small", MaxTokens: 321}
	tools := []turn.ToolSpec{
		{Name: "Read", Description: "reads a file", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}}}`)},
		{Name: "Done"},
	}
	model := c.Models()("big", "judge it", tools)
	conv := []reprise.Message{reprise.Text("user", "is it fine?"), reprise.Text("user", "really?")}
	got, err := model(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	if got.Role != "assistant" || len(got.Content) != 1 || got.Content[0].Type != "text" ||
		got.Content[0].Text != `{"ok": true, "reason": "fine"}` || got.Content[0].Raw != nil {
		t.Errorf("answer %+v", got)
	}
	reqs := api.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.path != "POST /gateway/v1/messages" {
		t.Errorf("request to %s", r.path)
	}
	for name, want := range map[string]string{"x-api-key": "key-1", "Authorization": "Bearer token-1",
		"anthropic-version": "2023-06-01", "Content-Type": "application/json"} {
		if got := r.header.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	if r.body["model"] != "big" || r.body["max_tokens"] != 321.0 || r.body["system"] != "judge it" {
		t.Errorf("model, max_tokens, system: %v %v %v", r.body["model"], r.body["max_tokens"], r.body["system"])
	}
	wantTools := `[{"description":"reads a file","input_schema":{"properties":{"file_path":{"type":"string"}},"type":"object"},"name":"Read"},` +
		`{"input_schema":{"type":"object"},"name":"Done"}]`
	if got := js(t, r.body["tools"]); got != wantTools {
		t.Errorf("tools %s\nwant %s", got, wantTools)
	}
	// Two user messages in a row are one turn.
	wantMsgs := `[{"content":[{"text":"is it fine?","type":"text"},{"text":"really?","type":"text"}],"role":"user"}]`
	if got := js(t, r.body["messages"]); got != wantMsgs {
		t.Errorf("messages %s\nwant %s", got, wantMsgs)
	}
}

func TestModelDefaultsAndEnvironment(t *testing.T) {
	api := newFakeAPI(t, func(n int, body map[string]any, w http.ResponseWriter) {
		reply(w, "end_turn", `{"type":"text","text":"hi"}`)
	})
	ask := func(c messages.Client) fakeRequest {
		t.Helper()
		before := len(api.requests())
		if _, err := c.Models()("", "", nil)(context.Background(), []reprise.Message{reprise.Text("user", "hello")}); err != nil {
			t.Fatal(err)
		}
		reqs := api.requests()
		if len(reqs) != before+1 {
			t.Fatalf("%d requests, want %d", len(reqs), before+1)
		}
		return reqs[before]
	}
	r := ask(messages.Client{BaseURL: api.url})
	_, hasSystem := r.body["system"]
	_, hasTools := r.body["tools"]
	if r.body["model"] != messages.DefaultModel || r.body["max_tokens"] != float64(messages.DefaultMaxTokens) || hasSystem || hasTools ||
		r.header.Get("x-api-key") != "" || r.header.Get("Authorization") != "" {
		t.Errorf("a zero Client sent %v, headers %v", r.body, r.header)
	}
	if messages.DefaultModel != "claude-haiku-4-5" {
		t.Errorf("DefaultModel = %q", messages.DefaultModel)
	}

	t.Setenv("ANTHROPIC_BASE_URL", api.url)
	t.Setenv("ANTHROPIC_API_KEY", "env-key")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	t.Setenv("ANTHROPIC_SMALL_FAST_MODEL", "env-model")
	r = ask(messages.FromEnv())
	if r.body["model"] != "env-model" || r.header.Get("x-api-key") != "env-key" || r.header.Get("Authorization") != "" {
		t.Errorf("FromEnv sent model %v, key %q, authorization %q", r.body["model"], r.header.Get("x-api-key"), r.header.Get("Authorization"))
	}
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "env-token")
	t.Setenv("ANTHROPIC_SMALL_FAST_MODEL", "")
	r = ask(messages.FromEnv())
	if r.body["model"] != messages.DefaultModel || r.header.Get("x-api-key") != "" || r.header.Get("Authorization") != "Bearer env-token" {
		t.Errorf("FromEnv with a token sent model %v, key %q, authorization %q", r.body["model"], r.header.Get("x-api-key"), r.header.Get("Authorization"))
	}
	t.Setenv("ANTHROPIC_BASE_URL", "")
	if c := messages.FromEnv(); c.BaseURL != "" {
		t.Errorf("FromEnv without ANTHROPIC_BASE_URL has BaseURL %q (the client's default is Anthropic's)", c.BaseURL)
	}
}

func TestErrorAnswers(t *testing.T) {
	api := newFakeAPI(t, func(n int, body map[string]any, w http.ResponseWriter) {
		switch body["model"] {
		case "refused":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("request-id", "req_7")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		case "proxy":
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html>bad gateway</html>"+strings.Repeat("x", 1000))
		case "huge":
			reply(w, "end_turn", `{"type":"text","text":"`+strings.Repeat("a", messages.MaxResponse)+`"}`)
		case "notjson":
			io.WriteString(w, "hello")
		case "badblock":
			reply(w, "end_turn", `{"text":"no type"}`)
		}
	})
	ask := func(model string) error {
		_, err := messages.Client{BaseURL: api.url}.Models()(model, "", nil)(context.Background(), []reprise.Message{reprise.Text("user", "x")})
		return err
	}
	var apiErr *messages.APIError
	err := ask("refused")
	if !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Type != "authentication_error" || apiErr.Message != "invalid x-api-key" || apiErr.RequestID != "req_7" {
		t.Fatalf("401: %v (%#v)", err, apiErr)
	}
	if want := "messages API: 401 Unauthorized: authentication_error: invalid x-api-key (request req_7)"; err.Error() != want {
		t.Errorf("401 says %q, want %q", err, want)
	}
	err = ask("proxy")
	if !errors.As(err, &apiErr) || apiErr.Status != 502 || apiErr.Type != "" || !strings.HasPrefix(apiErr.Message, "<html>bad gateway</html>") || len(apiErr.Message) > 400 {
		t.Errorf("502: %v", err)
	}
	for _, model := range []string{"huge", "notjson", "badblock"} {
		if err := ask(model); err == nil || errors.As(err, &apiErr) {
			t.Errorf("%s: %v, want an error that is not the API's", model, err)
		}
	}
	if err := ask("huge"); !strings.Contains(err.Error(), "over") {
		t.Errorf("huge: %v", err)
	}
}

func TestContextEndsTheRequest(t *testing.T) {
	release := make(chan struct{})
	api := newFakeAPI(t, func(n int, body map[string]any, w http.ResponseWriter) {
		<-release
	})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := messages.Client{BaseURL: api.url}.Models()("", "", nil)(ctx, []reprise.Message{reprise.Text("user", "x")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the request took %v after its deadline", d)
	}
}

func TestUnsendableConversations(t *testing.T) {
	api := newFakeAPI(t, func(n int, body map[string]any, w http.ResponseWriter) { reply(w, "end_turn") })
	for name, conv := range map[string][]reprise.Message{
		"role":      {{Role: "system", Content: []schema.Block{{Type: "text", Text: "x"}}}},
		"no raw":    {{Role: "assistant", Content: []schema.Block{{Type: "tool_use"}}}},
		"not obj":   {{Role: "assistant", Content: []schema.Block{{Type: "tool_use", Raw: []byte(`[1]`)}}}},
		"type":      {{Role: "assistant", Content: []schema.Block{{Type: "tool_use", Raw: []byte(`{"type":"image"}`)}}}},
		"bad json":  {{Role: "user", Content: []schema.Block{{Type: "tool_result", Raw: []byte(`{"type":"tool_result",`)}}}},
		"text type": {{Role: "user", Content: []schema.Block{{Type: "text", Text: "t", Raw: []byte(`{"type":"image"}`)}}}},
	} {
		_, err := messages.Client{BaseURL: api.url}.Models()("", "", nil)(context.Background(), conv)
		if !errors.Is(err, messages.ErrUnsendable) {
			t.Errorf("%s: %v, want ErrUnsendable", name, err)
		}
	}
	if n := len(api.requests()); n != 0 {
		t.Errorf("%d requests sent for unsendable conversations", n)
	}
}

func TestConversationAsRequestMessages(t *testing.T) {
	api := newFakeAPI(t, func(n int, body map[string]any, w http.ResponseWriter) {
		reply(w, "end_turn", `{"type":"text","text":"ok"}`)
	})
	conv := []reprise.Message{
		reprise.Text("user", "look"),
		{Role: "assistant", Content: []schema.Block{
			{Type: "thinking", Raw: []byte(`{"type":"thinking","thinking":"hm","signature":"sig"}`)},
			{Type: "text", Text: "  "},
			{Type: "text", Text: "cited", Raw: []byte(`{"type":"text","text":"cited","citations":[{"type":"char_location"}]}`)},
			{Type: "tool_use", Raw: []byte(`{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"},"openai_arguments":"{ }"}`)},
			{Type: "tool_use", Raw: []byte("{\"type\": \"tool_use\",\n \"id\": \"t2\", \"name\": \"Read\", \"input\": {}}")},
			{Type: "openai_response", Raw: []byte(`{"type":"openai_response","usage":{}}`)},
		}},
		{Role: "user", IsMeta: true, Content: []schema.Block{{Type: "text", Text: "<system-reminder>hooks said</system-reminder>"}}},
		{Role: "user", Content: []schema.Block{{Type: "tool_result", Raw: []byte(`{"type":"tool_result","tool_use_id":"t1","content":{"stdout":"a b"}}`)}}},
		{Role: "user", Content: []schema.Block{{Type: "tool_result", Raw: []byte(`{"type":"tool_result","tool_use_id":"t2","content":"text","is_error":true}`)}}},
		{Role: "assistant", Content: []schema.Block{{Type: "thinking", Raw: []byte(`{"type":"thinking","thinking":"only"}`)}}},
		{Role: "user"},
		reprise.Text("user", "go on"),
	}
	if _, err := (messages.Client{BaseURL: api.url}).Models()("", "", nil)(context.Background(), conv); err != nil {
		t.Fatal(err)
	}
	got := js(t, api.requests()[0].body["messages"])
	want := `[{"content":[{"text":"look","type":"text"}],"role":"user"},` +
		`{"content":[{"citations":[{"type":"char_location"}],"text":"cited","type":"text"},` +
		`{"id":"t1","input":{"command":"ls"},"name":"Bash","type":"tool_use"},` +
		`{"id":"t2","input":{},"name":"Read","type":"tool_use"}],"role":"assistant"},` +
		`{"content":[{"content":"{\"stdout\":\"a b\"}","tool_use_id":"t1","type":"tool_result"},` +
		`{"content":"text","is_error":true,"tool_use_id":"t2","type":"tool_result"},` +
		`{"text":"\u003csystem-reminder\u003ehooks said\u003c/system-reminder\u003e","type":"text"},` +
		`{"text":"go on","type":"text"}],"role":"user"}]`
	if got != want {
		t.Errorf("messages\n%s\nwant\n%s", got, want)
	}
}

// TestToolUseRoundTrip drives a turn.Runner on a real Engine with the
// client's Model: the fake API's first answer calls a tool, which runs,
// and the second request carries the call and its result as the API
// wants them.
func TestToolUseRoundTrip(t *testing.T) {
	api := newFakeAPI(t, func(n int, body map[string]any, w http.ResponseWriter) {
		if n == 1 {
			reply(w, "tool_use", `{"type":"text","text":"Let me check."}`,
				`{"type":"tool_use","id":"toolu_01","name":"Lookup","input":{"key":"answer"}}`)
			return
		}
		reply(w, "end_turn", `{"type":"text","text":"It is 42."}`)
	})
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
	testkit.Session(t, e, "s", t.TempDir())
	agent := testkit.Agent(t, e, "ide")
	if _, err := agent.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	tools := []turn.ToolSpec{{Name: "Lookup", Description: "looks a key up", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	var inputs []string
	runner := &turn.Runner{Engine: e, Agent: agent, Model: messages.Client{BaseURL: api.url}.Models()("", "be brief", tools),
		Tools: map[string]turn.Tool{"Lookup": {Run: func(ctx context.Context, c turn.Call) (reprise.ToolResult, error) {
			inputs = append(inputs, string(c.Input))
			return reprise.ToolResult{Output: json.RawMessage(`{"value":42}`)}, nil
		}}},
		Permission: func(turn.Call) string { return hookexec.Allow }}
	out, err := runner.Run(ctx, "what is the answer?")
	if err != nil {
		t.Fatal(err)
	}
	if out.Requests != 2 || len(inputs) != 1 || inputs[0] != `{"key":"answer"}` {
		t.Fatalf("outcome %+v, tool inputs %q", out, inputs)
	}
	reqs := api.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	msgs, ok := reqs[1].body["messages"].([]any)
	if !ok || len(msgs) != 3 {
		t.Fatalf("second request's messages: %s", js(t, reqs[1].body["messages"]))
	}
	if got, want := js(t, msgs[1]), `{"content":[{"text":"Let me check.","type":"text"},`+
		`{"id":"toolu_01","input":{"key":"answer"},"name":"Lookup","type":"tool_use"}],"role":"assistant"}`; got != want {
		t.Errorf("the answer sent back\n%s\nwant\n%s", got, want)
	}
	user := msgs[2].(map[string]any)
	first := user["content"].([]any)[0].(map[string]any)
	if user["role"] != "user" || first["type"] != "tool_result" || first["tool_use_id"] != "toolu_01" || !strings.Contains(js(t, first["content"]), "42") {
		t.Errorf("the tool's result sent as %s", js(t, msgs[2]))
	}
	conv, err := e.Conversation(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	last := conv[len(conv)-1]
	if last.Role != "assistant" || len(last.Content) != 1 || last.Content[0].Text != "It is 42." {
		t.Errorf("the session ends with %+v", last)
	}
}
