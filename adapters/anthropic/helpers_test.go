package anthropic_test

import (
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

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// apiRequest is one request the fake Messages API received.
type apiRequest struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// fakeAPI is an httptest server on 127.0.0.1 that answers POST
// /v1/messages with the recorded responses of testdata, in order, and keeps
// every request.
type fakeAPI struct {
	t         *testing.T
	srv       *httptest.Server
	mu        sync.Mutex
	responses []string // testdata file names
	requests  []apiRequest
}

func newFakeAPI(t *testing.T, responses ...string) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, responses: responses}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake API: reading the request: %v", err)
	}
	f.mu.Lock()
	f.requests = append(f.requests, apiRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	n := len(f.requests)
	f.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		f.t.Errorf("fake API: unexpected %s %s", r.Method, r.URL.Path)
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`, http.StatusNotFound)
		return
	}
	if n > len(f.responses) {
		f.t.Errorf("fake API: request %d, but only %d responses are recorded", n, len(f.responses))
		http.Error(w, `{"type":"error","error":{"type":"api_error","message":"no response"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", fmt.Sprintf("req_test_%d", n))
	w.Write(readTestdata(f.t, f.responses[n-1]))
}

// request returns the i-th request received (from 0).
func (f *fakeAPI) request(i int) apiRequest {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.requests) {
		f.t.Fatalf("fake API received %d requests, want at least %d", len(f.requests), i+1)
	}
	return f.requests[i]
}

// client returns a real SDK client pointed at the fake API.
func (f *fakeAPI) client() anthropic.Client {
	return anthropic.NewClient(
		option.WithBaseURL(f.srv.URL),
		option.WithAPIKey("test"),
		option.WithMaxRetries(0),
	)
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// newEngine returns a real Engine over an in-memory store and files.
func newEngine(t *testing.T) *reprise.Engine {
	t.Helper()
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Files: reprise.NewMemoryFiles()})
	t.Cleanup(func() { e.Close() })
	return e
}

// Hook context and tool output the test session gets after its import.
const (
	hookContext = "branch main, CI green"
	readOutput  = "func retry(op func() error) error {\n\tdelay := 100 * time.Millisecond\n\tfor {\n\t\tdelay *= 2\n\t\ttime.Sleep(delay)\n\t}\n}"
)

// testSession builds the conversation of request1.json in e, as a host
// would: it imports testdata/transcript.jsonl (a Claude Code transcript with
// every block kind), starts an agent on it, whose SessionStart hook's
// context reprise injects as a <system-reminder> meta message, then
// appends the result of the pending tool_use. It returns the session's id
// and the agent.
func testSession(t *testing.T, e *reprise.Engine) (string, *reprise.Agent) {
	t.Helper()
	ctx := context.Background()
	rep, err := e.Import(ctx, bytes.NewReader(readTestdata(t, "transcript.jsonl")), reprise.ImportOptions{Cwd: t.TempDir(), Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Messages != 9 || rep.Records != 2 {
		t.Fatalf("import: %d messages and %d records, want 9 and 2", rep.Messages, rep.Records)
	}
	e.Hooks().OnSessionStart("context", "startup", func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		return hookexec.SessionStartOutput{AdditionalContext: hookContext}, nil
	})
	agent, err := e.Agent(ctx, "ide")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Start(ctx, rep.Session); err != nil {
		t.Fatal(err)
	}
	appendToolResult(t, e, rep.Session, "toolu_02Read", readOutput)
	return rep.Session, agent
}

// appendToolResult appends a user message holding the result of tool use
// id, as a host that ran the tool does.
func appendToolResult(t *testing.T, e *reprise.Engine, session, id, output string) schema.Message {
	t.Helper()
	raw, err := json.Marshal(map[string]string{"type": "tool_result", "tool_use_id": id, "content": output})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.Append(context.Background(), session, schema.Message{Role: "user", Content: []schema.Block{{Type: "tool_result", Raw: raw}}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// decode unmarshals JSON into generic values, numbers kept exact.
func decode(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return v
}

// diffJSON reports, field by field, where got differs from want (generic
// JSON values), each difference with its path.
func diffJSON(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %s, want an object", path, show(got))}
		}
		var out []string
		for _, k := range sortedKeys(w, g) {
			wv, inW := w[k]
			gv, inG := g[k]
			switch {
			case !inG:
				out = append(out, fmt.Sprintf("%s.%s: missing, want %s", path, k, show(wv)))
			case !inW:
				out = append(out, fmt.Sprintf("%s.%s: unexpected %s", path, k, show(gv)))
			default:
				out = append(out, diffJSON(path+"."+k, wv, gv)...)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %s, want an array", path, show(got))}
		}
		var out []string
		if len(g) != len(w) {
			out = append(out, fmt.Sprintf("%s: %d elements, want %d", path, len(g), len(w)))
		}
		for i := range min(len(w), len(g)) {
			out = append(out, diffJSON(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: got %s, want %s", path, show(got), show(want))}
		}
		return nil
	}
}

func sortedKeys(a, b map[string]any) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// checkJSON fails t with every field where got differs from want.
func checkJSON(t *testing.T, what string, want, got any) {
	t.Helper()
	if diffs := diffJSON(what, want, got); len(diffs) > 0 {
		t.Errorf("%d differences:\n%s", len(diffs), strings.Join(diffs, "\n"))
	}
}

// paramsJSON returns params as the generic JSON values the SDK sends.
func paramsJSON(t *testing.T, params []anthropic.MessageParam) any {
	t.Helper()
	data, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, data)
}

// dropNulls returns v without the object fields whose value is null.
func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if x != nil {
				out[k] = dropNulls(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = dropNulls(x)
		}
		return out
	}
	return v
}
