package hookexec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/schema"
)

// httpHook is an http hook of event that posts to url.
func httpHook(event Event, url string) Hook {
	h := Hook{Event: event, Source: "test", Body: HTTP{URL: url}}
	h.Name = h.defaultName()
	return h
}

// answering is a server that answers every POST with status and body,
// and keeps the last request's body and headers.
type answering struct {
	mu     sync.Mutex
	body   []byte
	header http.Header
	calls  int
}

func (a *answering) server(t *testing.T, status int, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.body, a.header, a.calls = b, r.Header.Clone(), a.calls+1
		a.mu.Unlock()
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHTTPHookDecidesAsItsBodySays checks that an http hook's 2xx JSON
// body is read as a command hook's stdout: a PreToolUse deny denies, a
// Stop block blocks, and the request is the event's JSON.
func TestHTTPHookDecidesAsItsBodySays(t *testing.T) {
	var a answering
	srv := a.server(t, http.StatusOK, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no rm over http"}}`)
	outcomes, d := RunPreToolUse(context.Background(), []Hook{httpHook(PreToolUse, srv.URL)}, bashCall(t), testEnv(t))
	if len(outcomes) != 1 || outcomes[0].Status != schema.HookOK || d.Decision != Deny || d.Reason != "no rm over http" {
		t.Fatalf("outcomes %+v, decision %+v; want a deny with its reason", outcomes, d)
	}
	if o := outcomes[0]; o.Type != "http" || !strings.Contains(o.Answer, "no rm over http") || o.Name != "http: "+srv.URL {
		t.Errorf("outcome %+v: want type http, the body as its answer, the URL in its name", o)
	}
	var in map[string]any
	if err := json.Unmarshal(a.body, &in); err != nil || in["tool_name"] != "Bash" || in["hook_event_name"] != "PreToolUse" {
		t.Errorf("the request's body %s (%v): want the event's JSON input", a.body, err)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}

	srv = a.server(t, http.StatusOK, `{"decision":"block","reason":"tests fail"}`)
	_, blocked, reason, _ := RunStop(context.Background(), []Hook{httpHook(Stop, srv.URL)}, StopInput{SessionID: "s1"}, testEnv(t))
	if !blocked || reason != "tests fail" {
		t.Errorf("Stop: blocked %v, reason %q; want the body's block", blocked, reason)
	}
}

// TestHTTPHookFailuresBlockNothing checks each way an http hook can fail:
// each is a failed outcome that says why, and the call goes ahead, as
// Claude Code has it; with onFailure block, the failure denies.
func TestHTTPHookFailuresBlockNothing(t *testing.T) {
	var a answering
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // then the server sees the client go
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range 50 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(huge.Close)
	redirect := httptest.NewServer(http.RedirectHandler("http://127.0.0.1:1/elsewhere", http.StatusFound))
	t.Cleanup(redirect.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // a port nothing listens on

	tests := []struct {
		name, url, status, err string
		timeout                time.Duration
	}{
		{"500", a.server(t, http.StatusInternalServerError, `{"decision":"block"}`).URL, schema.HookFailed, "500", 0},
		{"not JSON", a.server(t, http.StatusOK, "<html>deny</html>").URL, schema.HookFailed, "HTTP hook must return JSON", 0},
		{"50 MB", huge.URL, schema.HookFailed, "over", 0},
		{"redirect", redirect.URL, schema.HookFailed, "302", 0},
		{"refused", closed.URL, schema.HookFailed, "refused", 0},
		{"slow", slow.URL, schema.HookTimedOut, "timed out", 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := httpHook(PreToolUse, tt.url)
			h.Timeout = cmpDuration(tt.timeout, 10*time.Second)
			outcomes, d := RunPreToolUse(context.Background(), []Hook{h}, bashCall(t), testEnv(t))
			if len(outcomes) != 1 || outcomes[0].Status != tt.status || !strings.Contains(outcomes[0].Error, tt.err) {
				t.Fatalf("outcomes %+v; want status %s and an error saying %q", outcomes, tt.status, tt.err)
			}
			if d.Decision != "" {
				t.Errorf("decision %+v: a failed http hook decides nothing", d)
			}
			h.OnFailure = OnFailureBlock
			if _, d := RunPreToolUse(context.Background(), []Hook{h}, bashCall(t), testEnv(t)); d.Decision != Deny {
				t.Errorf("with onFailure block: decision %+v, want a deny", d)
			}
		})
	}
}

func cmpDuration(d, fallback time.Duration) time.Duration {
	if d == 0 {
		return fallback
	}
	return d
}

// TestHTTPHookEmptyBodyIsNoAnswer checks that a 2xx answer with no body
// is read as {}, as Claude Code reads it: the hook ran and decided
// nothing.
func TestHTTPHookEmptyBodyIsNoAnswer(t *testing.T) {
	var a answering
	srv := a.server(t, http.StatusNoContent, "")
	outcomes, d := RunPreToolUse(context.Background(), []Hook{httpHook(PreToolUse, srv.URL)}, bashCall(t), testEnv(t))
	if len(outcomes) != 1 || outcomes[0].Status != schema.HookOK || d.Decision != "" {
		t.Errorf("outcomes %+v, decision %+v; want ok and no decision", outcomes, d)
	}
}

// TestHTTPHookHeadersTakeOnlyAllowedVariables checks that a header's
// $VAR and ${VAR} are replaced from the environment only when
// allowedEnvVars lists them, and by nothing otherwise.
func TestHTTPHookHeadersTakeOnlyAllowedVariables(t *testing.T) {
	t.Setenv("HOOK_TOKEN", "secret-1")
	t.Setenv("OTHER_SECRET", "never-sent")
	var a answering
	srv := a.server(t, http.StatusOK, `{}`)
	h := httpHook(PreToolUse, srv.URL)
	h.Body = HTTP{URL: srv.URL, AllowedEnvVars: []string{"HOOK_TOKEN"}, Headers: map[string]string{
		"Authorization": "Bearer $HOOK_TOKEN", "X-Both": "${HOOK_TOKEN}/${OTHER_SECRET}", "X-Line": "a\r\nInjected: yes",
	}}
	if outcomes, _ := RunPreToolUse(context.Background(), []Hook{h}, bashCall(t), testEnv(t)); outcomes[0].Status != schema.HookOK {
		t.Fatalf("outcomes %+v", outcomes)
	}
	if got := a.header.Get("Authorization"); got != "Bearer secret-1" {
		t.Errorf("Authorization %q, want the allowed variable's value", got)
	}
	if got := a.header.Get("X-Both"); got != "secret-1/" {
		t.Errorf("X-Both %q, want the unlisted variable left empty", got)
	}
	if got := a.header.Get("X-Line"); got != "aInjected: yes" || a.header.Get("Injected") != "" {
		t.Errorf("X-Line %q: a value's line breaks must not add a header", got)
	}
}

// TestManagedHTTPAllowlists checks managed settings' allowedHttpHookUrls
// (a hook whose URL no pattern matches fails, saying so, and sends
// nothing) and httpHookAllowedEnvVars (a hook's allowedEnvVars keep only
// the names it lists).
func TestManagedHTTPAllowlists(t *testing.T) {
	managed := t.TempDir()
	t.Setenv(ManagedSettingsEnv, managed)
	t.Setenv("HOOK_TOKEN", "secret-1")
	t.Setenv("HOOK_USER", "ann")
	var a answering
	srv := a.server(t, http.StatusOK, `{}`)
	write := func(path, data string) {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(managed, "managed-settings.json"), `{"allowedHttpHookUrls": ["`+srv.URL+`/ok/*"], "httpHookAllowedEnvVars": ["HOOK_USER"]}`)
	user := filepath.Join(t.TempDir(), "settings.json")
	write(user, `{"hooks": {"PreToolUse": [{"hooks": [
  {"type": "http", "url": "`+srv.URL+`/ok/gate", "headers": {"X-User": "$HOOK_USER", "X-Token": "$HOOK_TOKEN"}, "allowedEnvVars": ["HOOK_USER", "HOOK_TOKEN"]},
  {"type": "http", "url": "`+srv.URL+`/other"}
]}]}}`)
	hooks, errs := LoadAll([]string{filepath.Join(managed, "managed-settings.json"), user}, nil)
	if len(errs) != 0 || len(hooks) != 2 {
		t.Fatalf("LoadAll = %d hooks, %v", len(hooks), errs)
	}
	outcomes, _ := RunPreToolUse(context.Background(), hooks[:1], bashCall(t), testEnv(t))
	if outcomes[0].Status != schema.HookOK || a.header.Get("X-User") != "ann" || a.header.Get("X-Token") != "" {
		t.Errorf("allowed hook: outcome %+v, headers %v; want X-User sent and X-Token empty", outcomes[0], a.header)
	}
	calls := a.calls
	outcomes, _ = RunPreToolUse(context.Background(), hooks[1:], bashCall(t), testEnv(t))
	if outcomes[0].Status != schema.HookFailed || !strings.Contains(outcomes[0].Error, "allowedHttpHookUrls") || a.calls != calls {
		t.Errorf("blocked hook: outcome %+v, %d calls after %d; want a failure naming the allowlist and no request", outcomes[0], a.calls, calls)
	}
}

// TestHTTPHooksRefusedWhereClaudeCodeRefusesThem checks that an http hook
// on SessionStart is a configuration error naming the file.
func TestHTTPHooksRefusedWhereClaudeCodeRefusesThem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(path, []byte(`{"hooks": {"SessionStart": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:9/"}]}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadSettings(path)
	if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "http hooks do not run on SessionStart") {
		t.Errorf("LoadSettings = %v; want ErrBadConfig naming the file and the refusal", err)
	}
}

// TestHTTPHookRefusesLinkLocalAddresses checks that no http hook reaches
// a link-local address, where the cloud metadata service answers.
func TestHTTPHookRefusesLinkLocalAddresses(t *testing.T) {
	h := httpHook(PreToolUse, "http://169.254.169.254/latest/meta-data/")
	h.Timeout = 5 * time.Second
	outcomes, _ := RunPreToolUse(context.Background(), []Hook{h}, bashCall(t), testEnv(t))
	if outcomes[0].Status != schema.HookFailed || !strings.Contains(outcomes[0].Error, "link-local") {
		t.Errorf("outcome %+v; want a failure saying the address is link-local", outcomes[0])
	}
}

// scripted is an Evaluator that answers with answer (or fails with err)
// and keeps the questions it was asked.
type scripted struct {
	mu     sync.Mutex
	answer string
	err    error
	asked  []Question
}

func (s *scripted) evaluate(ctx context.Context, q Question) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, q)
	return s.answer, s.err
}

// promptHook is a prompt hook of event with prompt text.
func promptHook(event Event, text string) Hook {
	h := Hook{Event: event, Source: "test", Body: Prompt{Text: text}}
	h.Name = h.defaultName()
	return h
}

// withEvaluator is testEnv with s as its prompt and agent evaluator.
func withEvaluator(t *testing.T, s *scripted) CommandEnv {
	env := testEnv(t)
	env.evaluator, env.agentEvaluator = s.evaluate, s.evaluate
	return env
}

// TestPromptHookOnAToolCall checks a prompt hook on PreToolUse: the
// prompt goes to the evaluator with $ARGUMENTS replaced by the input;
// ok: false denies with "[prompt]: reason" and ends the turn, unless
// continueOnBlock; ok: true decides nothing.
func TestPromptHookOnAToolCall(t *testing.T) {
	s := &scripted{answer: `{"ok": false, "reason": "deletes the build"}`}
	h := promptHook(PreToolUse, "Is this safe? $ARGUMENTS")
	outcomes, d := RunPreToolUse(context.Background(), []Hook{h}, bashCall(t), withEvaluator(t, s))
	want := "[Is this safe? $ARGUMENTS]: deletes the build"
	if d.Decision != Deny || d.Reason != want {
		t.Fatalf("decision %+v; want a deny with %q", d, want)
	}
	o := outcomes[0]
	if !o.Halt || o.StopReason != "deletes the build" || o.Type != "prompt" || !strings.Contains(o.Answer, "deletes the build") {
		t.Errorf("outcome %+v; want the turn ended with the reason, and the answer kept", o)
	}
	q := s.asked[0]
	if !strings.Contains(q.Prompt, `"tool_name":"Bash"`) || strings.Contains(q.Prompt, "$ARGUMENTS") || q.System != hookSystem || q.Transcript != nil {
		t.Errorf("question %+v; want the input in place of $ARGUMENTS, the hook system prompt, no transcript", q)
	}
	if !strings.Contains(o.Request, `"tool_name":"Bash"`) {
		t.Errorf("the outcome's request %q: want the prompt sent", o.Request)
	}

	h.Body = Prompt{Text: "Is this safe? $ARGUMENTS", ContinueOnBlock: true}
	outcomes, d = RunPreToolUse(context.Background(), []Hook{h}, bashCall(t), withEvaluator(t, s))
	if d.Decision != Deny || outcomes[0].Halt {
		t.Errorf("continueOnBlock: decision %+v, halt %v; want a deny and the turn going on", d, outcomes[0].Halt)
	}

	s.answer = "```json\n{\"ok\": true, \"reason\": \"only a build dir\"}\n```"
	outcomes, d = RunPreToolUse(context.Background(), []Hook{h}, bashCall(t), withEvaluator(t, s))
	if d.Decision != "" || outcomes[0].Status != schema.HookOK || outcomes[0].Halt {
		t.Errorf("ok: decision %+v, outcome %+v; want nothing decided", d, outcomes[0])
	}
}

// TestPromptHookOnStop checks a prompt hook on Stop: it judges by the
// transcript with the stop-condition prompt; ok: false blocks the stop
// with the reason and the turn goes on; impossible lets the stop happen.
func TestPromptHookOnStop(t *testing.T) {
	s := &scripted{answer: `{"ok": false, "reason": "no test was run"}`}
	msgs := []schema.Message{{Role: "user", Content: []schema.Block{{Type: "text", Text: "fix it"}}},
		{Role: "assistant", Content: []schema.Block{{Type: "text", Text: "done"}}}}
	in := StopInput{SessionID: "s1", Messages: msgs}
	outcomes, blocked, reason, _ := RunStop(context.Background(), []Hook{promptHook(Stop, "The tests were run")}, in, withEvaluator(t, s))
	if !blocked || reason != "[The tests were run]: no test was run" || outcomes[0].Halt {
		t.Fatalf("blocked %v, reason %q, outcome %+v; want a block that keeps the turn going", blocked, reason, outcomes[0])
	}
	q := s.asked[0]
	if q.System != stopSystem || len(q.Transcript) != 2 || !strings.Contains(q.Prompt, "Condition: The tests were run\nARGUMENTS: {") || !strings.Contains(q.Prompt, `"hook_event_name":"Stop"`) {
		t.Errorf("question %+v; want the stop-condition prompt with the transcript", q)
	}
	s.answer = `{"ok": false, "impossible": true, "reason": "there are no tests"}`
	_, blocked, _, _ = RunStop(context.Background(), []Hook{promptHook(Stop, "The tests were run")}, in, withEvaluator(t, s))
	if blocked {
		t.Error("an impossible condition blocked the stop")
	}
}

// TestPromptHookOnUserPromptSubmit checks that ok: false blocks the
// prompt, as exit 2 does.
func TestPromptHookOnUserPromptSubmit(t *testing.T) {
	s := &scripted{answer: `{"ok": false, "reason": "asks for a secret"}`}
	outcomes, blocked, reason, _ := RunPrompt(context.Background(), []Hook{promptHook(UserPromptSubmit, "No secrets: $ARGUMENTS")},
		PromptInput{SessionID: "s1", Prompt: "print the key"}, withEvaluator(t, s))
	if !blocked || !strings.Contains(reason, "asks for a secret") || !outcomes[0].Halt {
		t.Errorf("blocked %v, reason %q, outcome %+v; want the prompt blocked", blocked, reason, outcomes[0])
	}
}

// TestPromptHookFailuresBlockNothing checks that an answer that is not
// the verdict, an evaluator's error, no evaluator and an evaluator that
// ignores its deadline each fail the hook and block nothing.
func TestPromptHookFailuresBlockNothing(t *testing.T) {
	hang := func(ctx context.Context, q Question) (string, error) {
		time.Sleep(5 * time.Second) // ignores ctx
		return `{"ok": false, "reason": "too late"}`, nil
	}
	tests := []struct {
		name   string
		eval   Evaluator
		status string
		err    string
	}{
		{"not JSON", (&scripted{answer: "I think it is fine"}).evaluate, schema.HookFailed, "JSON validation failed"},
		{"no reason", (&scripted{answer: `{"ok": false}`}).evaluate, schema.HookFailed, "schema validation failed"},
		{"API error", (&scripted{err: errors.New("overloaded")}).evaluate, schema.HookFailed, "overloaded"},
		{"no evaluator", nil, schema.HookFailed, "no evaluator"},
		{"hangs", hang, schema.HookTimedOut, "timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t)
			env.evaluator = tt.eval
			h := promptHook(PreToolUse, "Is it safe?")
			h.Timeout = 200 * time.Millisecond
			began := time.Now()
			outcomes, d := RunPreToolUse(context.Background(), []Hook{h}, bashCall(t), env)
			if outcomes[0].Status != tt.status || !strings.Contains(outcomes[0].Error, tt.err) || d.Decision != "" {
				t.Errorf("outcome %+v, decision %+v; want %s saying %q and no decision", outcomes[0], d, tt.status, tt.err)
			}
			if time.Since(began) > 3*time.Second {
				t.Errorf("the run took %v: a hung evaluator must be left behind at the timeout", time.Since(began))
			}
		})
	}
}

// TestAgentHookUsesTheAgentEvaluator checks that an agent hook goes to
// the agent evaluator with the session's directory and Claude Code's
// turn limit, and reads its verdict as a prompt hook's.
func TestAgentHookUsesTheAgentEvaluator(t *testing.T) {
	prompt, agent := &scripted{answer: `{"ok": true, "reason": "-"}`}, &scripted{answer: `{"ok": false, "reason": "no changelog entry"}`}
	env := testEnv(t)
	env.evaluator, env.agentEvaluator = prompt.evaluate, agent.evaluate
	h := Hook{Event: PostToolUse, Source: "test", Body: Prompt{Text: "Check the changelog", Agent: true}}
	h.Name = h.defaultName()
	outcomes, fb := RunPostToolUse(context.Background(), []Hook{h}, bashCall(t), env)
	if len(prompt.asked) != 0 || len(agent.asked) != 1 {
		t.Fatalf("asked the prompt evaluator %d times and the agent one %d; want the agent one once", len(prompt.asked), len(agent.asked))
	}
	if q := agent.asked[0]; q.Dir != env.ProjectDir || q.MaxTurns != AgentHookMaxTurns {
		t.Errorf("question %+v; want the project directory and %d turns", q, AgentHookMaxTurns)
	}
	if !fb.Blocked || !strings.Contains(fb.Reason, "no changelog entry") || outcomes[0].Type != "agent" || outcomes[0].Name != "agent: Check the changelog" {
		t.Errorf("feedback %+v, outcome %+v; want a block with the reason", fb, outcomes[0])
	}
}

// TestMCPToolHook checks an mcp_tool hook: its input's ${path}s are
// filled from the hook's input, the tool's text is read as stdout, and a
// server that is not connected, or no caller at all, fails the hook and
// blocks nothing.
func TestMCPToolHook(t *testing.T) {
	var got struct {
		server, tool string
		input        json.RawMessage
	}
	caller := func(ctx context.Context, server, tool string, input json.RawMessage) (string, error) {
		if server != "policy" {
			return "", errors.New("wrapped: " + ErrMCPNotConnected.Error())
		}
		got.server, got.tool, got.input = server, tool, input
		return `{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"policy says no"}}`, nil
	}
	h := Hook{Event: PreToolUse, Source: "test", Body: MCPTool{Server: "policy", Tool: "check",
		Input: json.RawMessage(`{"cmd": "${tool_input.command}", "who": "${session_id}", "all": "${tool_input}", "gone": "${nope.x}", "n": 3}`)}}
	h.Name = h.defaultName()
	env := testEnv(t)
	env.mcp = caller
	outcomes, d := RunPreToolUse(context.Background(), []Hook{h}, bashCall(t), env)
	if d.Decision != Deny || d.Reason != "policy says no" || outcomes[0].Type != "mcp_tool" {
		t.Fatalf("decision %+v, outcome %+v; want the tool's deny", d, outcomes[0])
	}
	var in map[string]any
	if err := json.Unmarshal(got.input, &in); err != nil {
		t.Fatal(err)
	}
	if in["cmd"] != "rm -rf build" || in["who"] != "s1" || in["all"] != `{"command":"rm -rf build"}` || in["gone"] != "" || in["n"] != float64(3) {
		t.Errorf("the tool's input %s: placeholders not filled as the hook input says", got.input)
	}
	if got.tool != "check" || !strings.Contains(outcomes[0].Request, "rm -rf build") {
		t.Errorf("tool %q, request %q", got.tool, outcomes[0].Request)
	}

	env.mcp = func(ctx context.Context, server, tool string, input json.RawMessage) (string, error) {
		return "", errors.Join(ErrMCPNotConnected, errors.New("no session"))
	}
	outcomes, d = RunPreToolUse(context.Background(), []Hook{h}, bashCall(t), env)
	if outcomes[0].Status != schema.HookFailed || outcomes[0].Error != "MCP server 'policy' not connected" || d.Decision != "" {
		t.Errorf("not connected: outcome %+v, decision %+v", outcomes[0], d)
	}
	env.mcp = nil
	outcomes, _ = RunPreToolUse(context.Background(), []Hook{h}, bashCall(t), env)
	if outcomes[0].Status != schema.HookFailed || !strings.Contains(outcomes[0].Error, "not connected") {
		t.Errorf("no caller: outcome %+v", outcomes[0])
	}
}

// TestOtherTypesOnAFiredEvent checks that hooks of the other types run
// on an event of the table that this package reads generically.
func TestOtherTypesOnAFiredEvent(t *testing.T) {
	var a answering
	srv := a.server(t, http.StatusOK, `{"hookSpecificOutput":{"hookEventName":"PostCompact","additionalContext":"from http"}}`)
	outcomes, res, err := RunEvent(context.Background(), []Hook{httpHook(schema.HookPostCompact, srv.URL)}, schema.HookPostCompact,
		EventInput{SessionID: "s1", Fields: json.RawMessage(`{"trigger": "manual", "compact_summary": "sum"}`)}, testEnv(t))
	if err != nil || len(outcomes) != 1 || outcomes[0].Status != schema.HookOK {
		t.Fatalf("RunEvent = %+v, %+v, %v", outcomes, res, err)
	}
	if !bytes.Contains(a.body, []byte(`"compact_summary":"sum"`)) {
		t.Errorf("request %s: want the event's fields", a.body)
	}
}

// TestDedupeOtherTypes checks that the same http hook, prompt or tool
// configured twice runs once.
func TestDedupeOtherTypes(t *testing.T) {
	hooks := []Hook{httpHook(PreToolUse, "http://a/"), httpHook(PreToolUse, "http://a/"), httpHook(PreToolUse, "http://b/"),
		promptHook(PreToolUse, "p"), promptHook(PreToolUse, "p")}
	if got := Names(Dedupe(hooks)); len(got) != 3 {
		t.Errorf("Dedupe kept %q; want one of each", got)
	}
}

// runAny runs hooks on event through the runner this package has for it,
// and returns their outcomes and whether they blocked what the event
// guards.
func runAny(t *testing.T, event Event, hooks []Hook, env CommandEnv) ([]schema.HookOutcome, bool) {
	t.Helper()
	ctx := context.Background()
	switch event {
	case SessionStart:
		outcomes, _ := RunSessionStart(ctx, hooks, SessionStartInput{SessionID: "s1", Source: "startup"}, env)
		return outcomes, false
	case SessionEnd:
		return RunSessionEnd(ctx, hooks, SessionEndInput{SessionID: "s1", Reason: "other"}, env), false
	case Stop:
		outcomes, blocked, _, _ := RunStop(ctx, hooks, StopInput{SessionID: "s1"}, env)
		return outcomes, blocked
	case UserPromptSubmit:
		outcomes, blocked, _, _ := RunPrompt(ctx, hooks, PromptInput{SessionID: "s1", Prompt: "hi"}, env)
		return outcomes, blocked
	case PreCompact:
		outcomes, blocked, _, _ := RunPreCompact(ctx, hooks, PreCompactInput{SessionID: "s1", Trigger: "manual"}, env)
		return outcomes, blocked
	case PreToolUse:
		outcomes, d := RunPreToolUse(ctx, hooks, bashCall(t), env)
		return outcomes, d.Decision == Deny
	case PermissionRequest:
		outcomes, d := RunPermissionRequest(ctx, hooks, bashCall(t), env)
		return outcomes, d.Decision == Deny
	case PostToolUse:
		outcomes, fb := RunPostToolUse(ctx, hooks, bashCall(t), env)
		return outcomes, fb.Blocked
	case PostToolUseFailure:
		outcomes, fb := RunPostToolUseFailure(ctx, hooks, bashCall(t), env)
		return outcomes, fb.Blocked
	}
	spec, _ := schema.LookupEvent(event)
	fields := map[string]any{}
	for _, f := range spec.Required {
		fields[f] = "x"
	}
	raw, _ := json.Marshal(fields)
	outcomes, res, err := RunEvent(ctx, hooks, event, EventInput{SessionID: "s1", Fields: raw}, env)
	if err != nil {
		t.Fatalf("%s: %v", event, err)
	}
	return outcomes, res.Blocked
}

// TestEveryTypeOnEveryEventThatTakesIt runs an http, a prompt, an agent
// and an mcp_tool hook on each of the 33 events that accepts its type:
// each runs once with an outcome of its type; an answer of {} decides
// nothing; a prompt or agent hook's ok: false blocks exactly where exit 2
// blocks, and ends the turn everywhere but Stop and SubagentStop.
func TestEveryTypeOnEveryEventThatTakesIt(t *testing.T) {
	var a answering
	srv := a.server(t, http.StatusOK, `{}`)
	calls := 0
	env := testEnv(t)
	env.mcp = func(ctx context.Context, server, tool string, input json.RawMessage) (string, error) {
		calls++
		return `{}`, nil
	}
	verdict := `{"ok": true, "reason": "fine"}`
	env.evaluator = func(ctx context.Context, q Question) (string, error) { return verdict, nil }
	env.agentEvaluator = env.evaluator
	bodies := map[schema.HookType]Body{
		schema.HookHTTP:    HTTP{URL: srv.URL},
		schema.HookMCPTool: MCPTool{Server: "s", Tool: "t"},
		schema.HookPrompt:  Prompt{Text: "ok?"},
		schema.HookAgent:   Prompt{Text: "ok?", Agent: true},
	}
	ran := 0
	for _, spec := range schema.Events {
		for _, typ := range spec.Types {
			body, ok := bodies[typ]
			if !ok {
				continue
			}
			h := Hook{Event: spec.Event, Source: "test", Body: body}
			h.Name = h.defaultName()
			if err := NewRegistry().Add(h); err != nil {
				t.Errorf("%s %s: Registry.Add: %v", spec.Event, typ, err)
				continue
			}
			verdict = `{"ok": true, "reason": "fine"}`
			outcomes, blocked := runAny(t, spec.Event, []Hook{h}, env)
			if len(outcomes) != 1 || outcomes[0].Status != schema.HookOK || outcomes[0].Type != string(typ) || blocked {
				t.Errorf("%s %s: outcomes %+v, blocked %v; want one ok outcome of its type that decides nothing", spec.Event, typ, outcomes, blocked)
			}
			ran++
			if typ != schema.HookPrompt && typ != schema.HookAgent {
				continue
			}
			verdict = `{"ok": false, "reason": "no"}`
			outcomes, blocked = runAny(t, spec.Event, []Hook{h}, env)
			stop := spec.Event == Stop || spec.Event == schema.HookSubagentStop
			wantBlock := spec.ExitTwo == schema.ExitTwoBlocks || spec.ExitTwo == schema.ExitTwoBlocksUser || spec.ExitTwo == schema.ExitTwoContinues
			if spec.Event == PostToolUse || spec.Event == PostToolUseFailure {
				wantBlock = true // exit 2 there is a block whose reason reaches the model
			}
			if blocked != wantBlock || outcomes[0].ExitCode != 2 || outcomes[0].Halt == stop {
				t.Errorf("%s %s ok:false: blocked %v (want %v), outcome %+v; want exit 2, and the turn ended unless it is a stop", spec.Event, typ, blocked, wantBlock, outcomes[0])
			}
		}
	}
	t.Logf("%d (event, type) pairs, %d MCP calls", ran, calls)
	if ran < 60 || calls == 0 {
		t.Errorf("ran %d (event, type) pairs and %d MCP calls; the table should give over 60", ran, calls)
	}
}

// TestLongAnswersKeepTheirOpening checks that an outcome keeps the first
// 2,000 bytes of a long answer, on a whole character, marked as cut.
func TestLongAnswersKeepTheirOpening(t *testing.T) {
	long := `{"reason": "` + strings.Repeat("é", 3000) + `"}`
	var a answering
	srv := a.server(t, http.StatusOK, long)
	outcomes, _ := RunPreToolUse(context.Background(), []Hook{httpHook(PreToolUse, srv.URL)}, bashCall(t), testEnv(t))
	got := outcomes[0].Answer
	if len(got) > 2000 || !strings.HasPrefix(got, `{"reason": "éé`) || !strings.HasSuffix(got, "é…") {
		t.Errorf("answer of %d bytes kept as %d bytes: %q…", len(long), len(got), firstChars(got, 20))
	}
}
