package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/messages"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/turn"
)

// fakeMessagesAPI is a stand-in for the Messages API that answers every
// request with the text verdict, or with the blocks answer returns for
// its body when set, and keeps the requests' bodies.
type fakeMessagesAPI struct {
	verdict string
	answer  func(body map[string]any) []any
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
}

func (f *fakeMessagesAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	data, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(data, &body)
	}
	if err != nil || r.URL.Path != "/v1/messages" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.bodies, f.headers = append(f.bodies, body), append(f.headers, r.Header.Clone())
	f.mu.Unlock()
	content := []any{map[string]any{"type": "text", "text": f.verdict}}
	if f.answer != nil {
		content = f.answer(body)
	}
	answer, _ := json.Marshal(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
		"content": content, "stop_reason": "end_turn",
		"usage": map[string]int{"input_tokens": 1, "output_tokens": 1}})
	w.Header().Set("Content-Type", "application/json")
	w.Write(answer)
}

// promptHookCLI starts agent ide on a session whose settings have a
// prompt hook on Bash's PreToolUse, with the Messages API at baseURL, and
// records an answer that calls Bash; it returns the flags of the agent's
// commands.
func promptHookCLI(t *testing.T, c *cli, baseURL string) []string {
	t.Helper()
	return hookCLI(t, c, baseURL, `{"type": "prompt", "prompt": "Refuse deleting files: $ARGUMENTS", "model": "judge-model"}`)
}

// hookCLI is promptHookCLI with the hook given as JSON.
func hookCLI(t *testing.T, c *cli, baseURL, hook string) []string {
	t.Helper()
	// Never Anthropic's API, whatever the environment held.
	t.Setenv("ANTHROPIC_BASE_URL", baseURL)
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	t.Setenv("ANTHROPIC_SMALL_FAST_MODEL", "")
	settings := c.writeFile("hooks.json", `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [`+hook+`]}]}}`)
	c.session("a", "clean up")
	flags := []string{"--agent", "ide", "--settings", settings, "--no-default-settings"}
	c.ok(append([]string{"start", "a"}, flags...)...)
	c.ok("append", "a", "--role", "assistant", "--content", `[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"rm -rf build"}}]`)
	return flags
}

// TestPromptHookDeniesThroughTheMessagesAPI runs reprise tool with a
// prompt hook whose model says no: the call is denied with the model's
// reason, and the request carried the hook's prompt, its input, model and
// system prompt.
func TestPromptHookDeniesThroughTheMessagesAPI(t *testing.T) {
	api := &fakeMessagesAPI{verdict: `{"ok": false, "reason": "it deletes the build"}`}
	srv := httptest.NewServer(api)
	defer srv.Close()
	c := newCLI(t)
	flags := promptHookCLI(t, c, srv.URL)
	out := c.ok(append([]string{"tool", "--tool-use-id", "t1", "--name", "Bash", "--input", `{"command":"rm -rf build"}`, "--permission", "allow"}, flags...)...)
	if !strings.HasPrefix(out, "deny\n") || !strings.Contains(out, "reason: ") || !strings.Contains(out, "it deletes the build") {
		t.Errorf("tool printed:\n%s", out)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.bodies) != 1 {
		t.Fatalf("%d requests to the API, want 1", len(api.bodies))
	}
	body, header := api.bodies[0], api.headers[0]
	msgs, _ := json.Marshal(body["messages"])
	if body["model"] != "judge-model" || !strings.Contains(body["system"].(string), "evaluating a hook") ||
		!strings.Contains(string(msgs), "Refuse deleting files: {") || !strings.Contains(string(msgs), `rm -rf build`) ||
		header.Get("x-api-key") != "test-key" || header.Get("anthropic-version") == "" {
		t.Errorf("request: model %v, system %v, messages %s, headers %v", body["model"], body["system"], msgs, header)
	}
	// The decision is recorded: asked again, reprise does not ask the model.
	var d jsonview.ToolDecision
	c.okJSON(&d, append([]string{"tool", "--tool-use-id", "t1", "--name", "Bash", "--input", `{"command":"rm -rf build"}`}, flags...)...)
	if d.Decision != "deny" || !strings.Contains(d.Reason, "it deletes the build") || len(api.bodies) != 1 {
		t.Errorf("asked again: %+v after %d requests", d, len(api.bodies))
	}
}

// TestPromptHookAllows runs the same hook with a model that says yes: the
// call is allowed, the hook's outcome ok.
func TestPromptHookAllows(t *testing.T) {
	api := &fakeMessagesAPI{verdict: "```json\n{\"ok\": true, \"reason\": \"a build directory\"}\n```"}
	srv := httptest.NewServer(api)
	defer srv.Close()
	c := newCLI(t)
	flags := promptHookCLI(t, c, srv.URL)
	var d jsonview.ToolDecision
	c.okJSON(&d, append([]string{"tool", "--tool-use-id", "t1", "--name", "Bash", "--input", `{"command":"rm -rf build"}`, "--permission", "allow"}, flags...)...)
	if d.Decision != "allow" || d.Halted || len(api.bodies) != 1 {
		t.Errorf("tool: %+v after %d requests", d, len(api.bodies))
	}
}

// TestPromptHookFailsOpenWhenTheAPIIsDown runs the hook with nothing
// listening at the API's address: the hook fails, which blocks nothing,
// and tool shows the failure.
func TestPromptHookFailsOpenWhenTheAPIIsDown(t *testing.T) {
	srv := httptest.NewServer(&fakeMessagesAPI{})
	url := srv.URL
	srv.Close()
	c := newCLI(t)
	flags := promptHookCLI(t, c, url)
	out := c.ok(append([]string{"tool", "--tool-use-id", "t1", "--name", "Bash", "--input", `{"command":"rm -rf build"}`, "--permission", "allow"}, flags...)...)
	if !strings.HasPrefix(out, "allow\n") || !strings.Contains(out, "failed") || !strings.Contains(out, "Hook evaluator API error") {
		t.Errorf("tool printed:\n%s", out)
	}
}

// TestPromptEvaluatorSendsTheTranscript asks a Stop-like question through
// the client: the transcript goes first, the hook's prompt last, as a
// user turn of its own after the assistant's.
func TestPromptEvaluatorSendsTheTranscript(t *testing.T) {
	api := &fakeMessagesAPI{verdict: `{"ok": true, "reason": "done"}`}
	srv := httptest.NewServer(api)
	defer srv.Close()
	eval := turn.PromptEvaluator(messages.Client{BaseURL: srv.URL}.Models())
	answer, err := eval(context.Background(), hookexec.Question{System: "sys", Prompt: "is it done?",
		Transcript: []reprise.Message{reprise.Text("user", "do it"), reprise.Text("assistant", "did it")}})
	if err != nil || answer != api.verdict {
		t.Fatalf("answer %q, %v", answer, err)
	}
	msgs, _ := json.Marshal(api.bodies[0]["messages"])
	want := `[{"content":[{"text":"do it","type":"text"}],"role":"user"},{"content":[{"text":"did it","type":"text"}],"role":"assistant"},` +
		`{"content":[{"text":"is it done?","type":"text"}],"role":"user"}]`
	if string(msgs) != want || api.bodies[0]["system"] != "sys" || api.bodies[0]["model"] != messages.DefaultModel {
		t.Errorf("request: %v\nmessages %s\nwant     %s", api.bodies[0], msgs, want)
	}
}

// TestAgentHookReadsTheProjectThroughTheMessagesAPI runs reprise tool
// with an agent hook: the fake model reads the project's policy file with
// the hook's Read tool, then denies the call by what it read, which tool
// prints.
func TestAgentHookReadsTheProjectThroughTheMessagesAPI(t *testing.T) {
	api := &fakeMessagesAPI{answer: func(body map[string]any) []any {
		data, _ := json.Marshal(body["messages"])
		if !strings.Contains(string(data), "tool_result") {
			return []any{map[string]any{"type": "tool_use", "id": "toolu_read", "name": "Read", "input": map[string]any{"file_path": "POLICY.txt"}}}
		}
		verdict := `{"ok": true, "reason": "no policy"}`
		if strings.Contains(string(data), "builds stay") {
			verdict = `{"ok": false, "reason": "the policy keeps builds"}`
		}
		return []any{map[string]any{"type": "text", "text": verdict}}
	}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	c := newCLI(t)
	c.writeFile("POLICY.txt", "builds stay\n")
	flags := hookCLI(t, c, srv.URL, `{"type": "agent", "prompt": "Check the project's policy: $ARGUMENTS"}`)
	out := c.ok(append([]string{"tool", "--tool-use-id", "t1", "--name", "Bash", "--input", `{"command":"rm -rf build"}`, "--permission", "allow"}, flags...)...)
	if !strings.HasPrefix(out, "deny\n") || !strings.Contains(out, "the policy keeps builds") {
		t.Errorf("tool printed:\n%s", out)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.bodies) != 2 {
		t.Fatalf("%d requests to the API, want 2", len(api.bodies))
	}
	tools, _ := json.Marshal(api.bodies[0]["tools"])
	if api.bodies[0]["model"] != messages.DefaultModel || !strings.Contains(string(tools), `"name":"Read"`) ||
		!strings.Contains(api.bodies[0]["system"].(string), "evaluating a hook") {
		t.Errorf("the first request: model %v, tools %s, system %v", api.bodies[0]["model"], tools, api.bodies[0]["system"])
	}
}
