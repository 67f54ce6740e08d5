package openai_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/reprise-dev/reprise"
	repriseopenai "github.com/reprise-dev/reprise/adapters/openai"
	"github.com/reprise-dev/reprise/eventlog"
)

// fakeAPI is an httptest server that speaks the chat completions endpoint:
// it records each request body and answers with the next response file.
type fakeAPI struct {
	t         *testing.T
	srv       *httptest.Server
	mu        sync.Mutex
	requests  [][]byte
	responses [][]byte
}

func newFakeAPI(t *testing.T, responses ...string) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t}
	for _, name := range responses {
		f.responses = append(f.responses, readFile(t, name))
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case r.Method != http.MethodPost || r.URL.Path != "/chat/completions":
		f.t.Errorf("request %s %s, want POST /chat/completions", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	case r.Header.Get("Authorization") != "Bearer test":
		f.t.Errorf("Authorization %q, want the test key", r.Header.Get("Authorization"))
	case len(f.responses) == 0:
		f.t.Error("more requests than responses")
		http.Error(w, "no response left", http.StatusInternalServerError)
		return
	}
	f.requests = append(f.requests, body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(f.responses[0])
	f.responses = f.responses[1:]
}

func (f *fakeAPI) client() openai.Client {
	return openai.NewClient(option.WithBaseURL(f.srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
}

// lastRequest returns the body of the last request as decoded JSON.
func (f *fakeAPI) lastRequest() map[string]any {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		f.t.Fatal("no request was sent")
	}
	var v map[string]any
	if err := json.Unmarshal(f.requests[len(f.requests)-1], &v); err != nil {
		f.t.Fatalf("request body: %v", err)
	}
	return v
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeFile(t *testing.T, name string, v any) {
	t.Helper()
	if err := json.Unmarshal(readFile(t, name), v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// toJSON marshals v and decodes it back into generic JSON values.
func toJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// diffJSON lists, field by field, where got differs from want.
func diffJSON(path string, got, want any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %s, want an object", path, show(got))}
		}
		var diffs []string
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, gok := g[k]
			wv, wok := w[k]
			switch {
			case !gok:
				diffs = append(diffs, fmt.Sprintf("%s.%s: missing, want %s", path, k, show(wv)))
			case !wok:
				diffs = append(diffs, fmt.Sprintf("%s.%s: unexpected %s", path, k, show(gv)))
			default:
				diffs = append(diffs, diffJSON(path+"."+k, gv, wv)...)
			}
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %s, want an array", path, show(got))}
		}
		var diffs []string
		if len(g) != len(w) {
			diffs = append(diffs, fmt.Sprintf("%s: %d elements, want %d", path, len(g), len(w)))
		}
		for i := range min(len(g), len(w)) {
			diffs = append(diffs, diffJSON(fmt.Sprintf("%s[%d]", path, i), g[i], w[i])...)
		}
		return diffs
	}
	if !reflect.DeepEqual(got, want) {
		return []string{fmt.Sprintf("%s: got %s, want %s", path, show(got), show(want))}
	}
	return nil
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func checkJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	for _, d := range diffJSON(what, got, want) {
		t.Error(d)
	}
}

// newEngine returns an Engine on an in-memory store, with the transcript
// of testdata/conversation.jsonl imported as session "s1".
func newEngine(t *testing.T) (*reprise.Engine, *eventlog.MemoryStore) {
	t.Helper()
	store := eventlog.NewMemoryStore()
	e := reprise.New(store, reprise.Options{Files: reprise.NewMemoryFiles()})
	t.Cleanup(func() { _ = e.Close() })
	if _, err := e.Import(context.Background(), bytes.NewReader(readFile(t, "conversation.jsonl")),
		reprise.ImportOptions{ID: "s1", Strict: true}); err != nil {
		t.Fatal(err)
	}
	return e, store
}

var readFileTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "read_file",
	Description: openai.String("Read a file of the project."),
	Parameters: shared.FunctionParameters{
		"type":       "object",
		"properties": map[string]any{"path": map[string]any{"type": "string"}},
		"required":   []string{"path"},
	},
})

// send rebuilds the conversation of session id, sends it through the real
// client and returns what it answered and the losses of the rebuild.
func send(t *testing.T, ctx context.Context, e *reprise.Engine, api *fakeAPI, id string) (*openai.ChatCompletion, []repriseopenai.Loss) {
	t.Helper()
	conv, err := e.Conversation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	msgs, losses, err := repriseopenai.ToMessages(conv, repriseopenai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	client := api.client()
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a careful assistant.")}, msgs...),
		Tools:    []openai.ChatCompletionToolUnionParam{readFileTool},
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp, losses
}

// TestRequestFromImportedConversation checks, field by field, the request
// the SDK sends for a conversation imported from a Claude Code transcript:
// plain and meta user text, assistant text and tool_use, tool_result,
// base64 and URL images; the thinking block is the one loss.
func TestRequestFromImportedConversation(t *testing.T) {
	ctx := context.Background()
	e, _ := newEngine(t)
	api := newFakeAPI(t, "response1.json")
	_, losses := send(t, ctx, e, api, "s1")

	var want map[string]any
	decodeFile(t, "request1.json", &want)
	checkJSON(t, "request", api.lastRequest(), want)

	wantLosses := []repriseopenai.Loss{{Message: 2, UUID: "33333333-3333-4333-8333-333333333333", Block: 0, Type: "thinking",
		Reason: "chat completions take no reasoning back; dropped"}}
	if !reflect.DeepEqual(losses, wantLosses) {
		t.Errorf("losses %v, want %v", losses, wantLosses)
	}
}

// TestRoundTrip appends each answer of the API to a real Engine, with the
// host's tool results and prompts, rebuilds the conversation (also from
// the log alone, through a second Engine) and sends it again: every
// request is the previous one plus the new turns, each answer is sent back
// as the SDK itself would send it, and the usage is kept verbatim.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	e, store := newEngine(t)
	api := newFakeAPI(t, "response1.json", "response2.json", "response2.json")

	resp1, _ := send(t, ctx, e, api, "s1")
	req1 := api.lastRequest()
	answer1 := appendAnswer(t, ctx, e, "s1", resp1)
	toolResults := reprise.Message{Role: "user", Content: []reprise.Block{
		{Type: "tool_result", Raw: []byte(`{"type":"tool_result","tool_use_id":"call_diagram","content":[{"type":"text","text":"A box labelled retry, an arrow back to it."}]}`)},
		{Type: "tool_result", Raw: []byte(`{"type":"tool_result","tool_use_id":"call_config","content":"retries: 3\nbackoff: exponential"}`)},
		{Type: "text", Text: "Summarise both."},
	}}
	if _, err := e.Append(ctx, "s1", toolResults); err != nil {
		t.Fatal(err)
	}

	resp2, _ := send(t, ctx, e, api, "s1")
	req2 := api.lastRequest()
	checkGrowth(t, "request 2", req2, req1, "request2_tail.json")
	checkSentBack(t, req2, 7, resp1)

	answer2 := appendAnswer(t, ctx, e, "s1", resp2)
	if _, err := e.Append(ctx, "s1", reprise.Text("user", "Thanks.")); err != nil {
		t.Fatal(err)
	}
	// A second Engine rebuilds the session from the log alone.
	e2 := reprise.New(store, reprise.Options{Files: reprise.NewMemoryFiles()})
	send(t, ctx, e2, api, "s1")
	req3 := api.lastRequest()
	checkGrowth(t, "request 3", req3, req2, "request3_tail.json")
	checkSentBack(t, req3, 11, resp2)

	conv, err := e2.Conversation(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	checkUsage(t, conv, answer1.UUID, "response1.json", 256)
	checkUsage(t, conv, answer2.UUID, "response2.json", 384)
}

func appendAnswer(t *testing.T, ctx context.Context, e *reprise.Engine, id string, resp *openai.ChatCompletion) reprise.Message {
	t.Helper()
	m, losses, err := repriseopenai.FromCompletion(resp)
	if err != nil {
		t.Fatal(err)
	}
	if len(losses) > 0 {
		t.Errorf("FromCompletion(%s) lost %v", resp.ID, losses)
	}
	stored, err := e.Append(ctx, id, m)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

// checkGrowth checks that req holds prev's model, tools and messages, and
// after them the messages of the tail file.
func checkGrowth(t *testing.T, what string, req, prev map[string]any, tail string) {
	t.Helper()
	var want []any
	decodeFile(t, tail, &want)
	expected := map[string]any{}
	for k, v := range prev {
		expected[k] = v
	}
	expected["messages"] = append(append([]any(nil), prev["messages"].([]any)...), want...)
	checkJSON(t, what, req, expected)
}

// checkSentBack checks that message i of req is the assistant message of
// resp as the SDK's own ToParam sends it.
func checkSentBack(t *testing.T, req map[string]any, i int, resp *openai.ChatCompletion) {
	t.Helper()
	msgs := req["messages"].([]any)
	if i >= len(msgs) {
		t.Fatalf("request has %d messages, want message %d", len(msgs), i)
	}
	checkJSON(t, fmt.Sprintf("sent back %s", resp.ID), msgs[i], toJSON(t, resp.Choices[0].Message.ToParam()))
}

// checkUsage checks that message uuid of conv keeps the usage of the
// response file verbatim, and its other fields.
func checkUsage(t *testing.T, conv []reprise.Message, uuid, file string, cached int64) {
	t.Helper()
	var m reprise.Message
	for _, c := range conv {
		if c.UUID == uuid {
			m = c
		}
	}
	info, ok, err := repriseopenai.Response(m)
	if err != nil || !ok {
		t.Fatalf("message %s: response block ok=%v err=%v", uuid, ok, err)
	}
	var resp map[string]any
	decodeFile(t, file, &resp)
	var usage any
	if err := json.Unmarshal(info.Usage, &usage); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, file+" usage", usage, resp["usage"])
	choice := resp["choices"].([]any)[0].(map[string]any)
	got := map[string]any{"id": info.ID, "model": info.Model, "created": float64(info.Created),
		"finish_reason": info.FinishReason, "system_fingerprint": info.SystemFingerprint, "service_tier": info.ServiceTier}
	want := map[string]any{"id": resp["id"], "model": resp["model"], "created": resp["created"],
		"finish_reason": choice["finish_reason"], "system_fingerprint": resp["system_fingerprint"], "service_tier": resp["service_tier"]}
	checkJSON(t, file, got, want)
	u, ok, err := info.CompletionUsage()
	if err != nil || !ok || u.PromptTokensDetails.CachedTokens != cached {
		t.Errorf("%s: CompletionUsage = %+v, %v, %v; want %d cached tokens", file, u, ok, err, cached)
	}
}

// TestExportKeepsResponse exports a session holding an answer, imports the
// transcript into a new session, and checks that the usage block and the
// request rebuilt from the copy are the same.
func TestExportKeepsResponse(t *testing.T) {
	ctx := context.Background()
	e, _ := newEngine(t)
	var resp openai.ChatCompletion
	decodeFile(t, "response1.json", &resp)
	answer := appendAnswer(t, ctx, e, "s1", &resp)

	var out bytes.Buffer
	if err := e.Export(ctx, "s1", &out); err != nil {
		t.Fatal(err)
	}
	var found bool
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			UUID    string `json:"uuid"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		if line.UUID != answer.UUID {
			continue
		}
		found = true
		var content []map[string]any
		if err := json.Unmarshal(line.Message.Content, &content); err != nil || len(content) == 0 {
			t.Fatalf("exported answer content %s: %v", line.Message.Content, err)
		}
		last := content[len(content)-1]
		if last["type"] != repriseopenai.ResponseBlockType {
			t.Errorf("exported answer ends with %v, want the %s block", last, repriseopenai.ResponseBlockType)
		}
	}
	if !found {
		t.Fatalf("export has no line for %s:\n%s", answer.UUID, out.String())
	}

	if _, err := e.Import(ctx, bytes.NewReader(out.Bytes()), reprise.ImportOptions{ID: "copy", Strict: true}); err != nil {
		t.Fatal(err)
	}
	rebuild := func(id string) any {
		conv, err := e.Conversation(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		msgs, _, err := repriseopenai.ToMessages(conv, repriseopenai.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return toJSON(t, msgs)
	}
	checkJSON(t, "copy", rebuild("copy"), rebuild("s1"))
	conv, err := e.Conversation(ctx, "copy")
	if err != nil {
		t.Fatal(err)
	}
	checkUsage(t, conv, answer.UUID, "response1.json", 256)
	if !strings.Contains(out.String(), `"cached_tokens":256`) {
		t.Error("the exported transcript does not hold the usage")
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
