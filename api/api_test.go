package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/api"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/web"
)

// server is a write API over a bbolt store in a temporary directory,
// with the read view beside it, as serve --write mounts them.
type server struct {
	t   *testing.T
	doc *document
	e   *reprise.Engine
	srv *httptest.Server
	dir string
}

// newServer serves an Engine whose registry holds settings (a settings
// file's JSON, "" for none), with opts.
func newServer(t *testing.T, settings string, opts api.Options) *server {
	t.Helper()
	dir := t.TempDir()
	e := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	if settings != "" {
		hooks, err := hookexec.LoadSettings(testkit.WriteFile(t, filepath.Join(dir, "settings.json"), settings))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Hooks().AddAll(hooks); err != nil {
			t.Fatal(err)
		}
	}
	opts.Fallback = web.New(e, web.Options{})
	opts.Logger = testkit.Discard
	s := &server{t: t, doc: readDocument(t), e: e, srv: httptest.NewServer(api.New(e, opts)), dir: dir}
	t.Cleanup(s.srv.Close)
	return s
}

// call sends body (nil for none) to path and returns the status and the
// decoded answer, which it checks against the schema the document gives
// the operation's answer of that status.
func (s *server) call(ctx context.Context, method, path string, body any, header ...string) (int, map[string]any) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.srv.URL+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1] // net/http sends req.Host, not a Host header
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		s.t.Fatalf("%s %s answered %d, not a JSON object: %s", method, path, res.StatusCode, data)
	}
	s.check(method, path, res.StatusCode, out)
	return res.StatusCode, out
}

// check validates an answer against the document's schema for it.
func (s *server) check(method, path string, status int, out map[string]any) {
	s.t.Helper()
	op, found := s.doc.operation(method, path)
	if !found {
		s.t.Fatalf("%s %s is no operation of the document", method, path)
	}
	res, found := op.Responses[fmt.Sprint(status)]
	if !found {
		res, found = op.Responses["default"]
	}
	if !found {
		s.t.Fatalf("%s %s answered %d, which the document does not give", method, path, status)
	}
	schema := res.Content["application/json"].Schema
	if msg := s.doc.validate(schema, out, fmt.Sprintf("%s %s answer %d", method, path, status)); msg != "" {
		s.t.Error(msg)
	}
}

// operation finds the operation of method on path, matching the
// document's path templates.
func (d *document) operation(method, path string) (operation, bool) {
	path, _, _ = strings.Cut(path, "?")
	for tmpl, ops := range d.Paths {
		re := "^" + regexp.MustCompile(`\\\{[a-z]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), `[^/]+`) + "$"
		if regexp.MustCompile(re).MatchString(path) {
			op, found := ops[strings.ToLower(method)]
			return op, found
		}
	}
	return operation{}, false
}

// post is call with POST and a fresh context.
func (s *server) post(path string, body any) (int, map[string]any) {
	s.t.Helper()
	return s.call(context.Background(), "POST", path, body)
}

// want fails unless the answer has status and, for an error, code.
func want(t *testing.T, what string, status int, out map[string]any, wantStatus int, wantCode string) {
	t.Helper()
	if status != wantStatus || (wantCode != "" && out["code"] != wantCode) {
		t.Fatalf("%s: %d %v; want %d %s", what, status, out, wantStatus, wantCode)
	}
}

// contextHook is a SessionStart hook that gives context marker.
func contextHook(marker string) string {
	return `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"SessionStart\", \"additionalContext\": \"` + marker + `\"}}'"}]}]}}`
}

// A host's whole run over the API, every answer checked against the
// document: two sessions, a startup restore whose hook's context is
// injected, messages appended and buffered and saved, a runtime restore
// (SessionEnd, then SessionStart), a tool call decided and its result
// recorded once, a prompt, a stop, a fire, finish with nothing to do, the
// conversation read back through the read view, and a deletion.
func TestAHostsRunOverTheAPI(t *testing.T) {
	s := newServer(t, contextHook("ctx-marker"), api.Options{})
	status, out := s.post("/api/sessions", map[string]any{"id": "s1", "cwd": s.dir})
	want(t, "create s1", status, out, http.StatusCreated, "")
	if out["id"] != "s1" || out["cwd"] != s.dir {
		t.Errorf("created %v", out)
	}
	status, out = s.post("/api/sessions", map[string]any{"cwd": s.dir})
	want(t, "create a session with a new id", status, out, http.StatusCreated, "")
	second, _ := out["id"].(string)
	expect(t, "create s1 again", http.StatusConflict, "session_exists")(s.post("/api/sessions", map[string]any{"id": "s1", "cwd": s.dir}))

	status, out = s.post("/api/agents/ide/start", map[string]any{"session": "s1", "prompt": "fix it"})
	want(t, "start", status, out, http.StatusOK, "")
	if out["context"] != "ctx-marker" || out["to"] != "s1" || out["source"] != "startup" || out["initial_prompt"] != "fix it" {
		t.Errorf("start answered %v", out)
	}
	status, out = s.post("/api/sessions/s1/messages", map[string]any{"role": "user", "content": "hello"})
	want(t, "append", status, out, http.StatusOK, "")
	status, out = s.post("/api/sessions/s1/messages", map[string]any{"role": "assistant", "buffer": true,
		"content": []any{map[string]any{"type": "text", "text": "hi there"}}})
	want(t, "buffer", status, out, http.StatusOK, "")
	if out["buffered"] != true {
		t.Errorf("buffer answered %v", out)
	}
	status, out = s.post("/api/sessions/s1/save", nil)
	want(t, "save", status, out, http.StatusOK, "")
	if out["saved"] != 1.0 {
		t.Errorf("save answered %v, want one message saved", out)
	}
	expect(t, "a message of no role", http.StatusBadRequest, "bad_request")(s.post("/api/sessions/s1/messages", map[string]any{"role": "system", "content": "x"}))

	status, out = s.post("/api/agents/ide/resume", map[string]any{"session": second})
	want(t, "resume", status, out, http.StatusOK, "")
	if out["from"] != "s1" || out["to"] != second || out["session_end"] == nil || out["context"] != "ctx-marker" {
		t.Errorf("resume answered %v", out)
	}
	status, out = s.post("/api/agents/ide/resume", map[string]any{"session": second})
	want(t, "resume to the current session", status, out, http.StatusOK, "")
	if out["restored"] != false {
		t.Errorf("a resume to the current session answered %v, want restored false", out)
	}

	call := map[string]any{"tool_use_id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "ls"}, "add_tool_use": true, "permission": "allow"}
	status, out = s.post("/api/agents/ide/tool", call)
	want(t, "tool", status, out, http.StatusOK, "")
	if out["decision"] != "allow" {
		t.Errorf("tool answered %v", out)
	}
	expect(t, "a result without output or error", http.StatusBadRequest, "bad_request")(s.post("/api/agents/ide/tool-result", map[string]any{"tool_use_id": "toolu_1"}))
	status, out = s.post("/api/agents/ide/tool-result", map[string]any{"tool_use_id": "toolu_1", "output": "a.txt"})
	want(t, "tool-result", status, out, http.StatusOK, "")
	status, out = s.post("/api/agents/ide/tool-result", map[string]any{"tool_use_id": "toolu_1", "output": "b.txt"})
	want(t, "tool-result again", status, out, http.StatusOK, "")
	if out["already_recorded"] != true {
		t.Errorf("a second result answered %v, want already_recorded", out)
	}
	expect(t, "a result of a call never asked about", http.StatusConflict, "tool_not_decided")(s.post("/api/agents/ide/tool-result", map[string]any{"tool_use_id": "toolu_9", "output": "x"}))

	status, out = s.post("/api/agents/ide/prompt", map[string]any{"text": "and the docs"})
	want(t, "prompt", status, out, http.StatusOK, "")
	if out["blocked"] != false || out["session"] != second || out["message"] == nil {
		t.Errorf("prompt answered %v", out)
	}
	status, out = s.post("/api/agents/ide/stop", map[string]any{"reason": "end_turn"})
	want(t, "stop", status, out, http.StatusOK, "")
	if out["blocked"] != false || out["stop_reason"] != "end_turn" {
		t.Errorf("stop answered %v", out)
	}
	status, out = s.post("/api/agents/ide/fire", map[string]any{"event": "Notification", "id": "n1", "fields": map[string]any{"message": "waiting", "notification_type": "idle_prompt"}})
	want(t, "fire", status, out, http.StatusOK, "")
	expect(t, "a fire of an event with steps of its own", http.StatusBadRequest, "bad_fire")(s.post("/api/agents/ide/fire", map[string]any{"event": "SessionStart", "id": "n2"}))
	status, out = s.post("/api/agents/ide/finish", nil)
	want(t, "finish", status, out, http.StatusOK, "")
	if out["finished"] != false {
		t.Errorf("finish answered %v, want nothing finished", out)
	}
	expect(t, "finish of an agent the log lacks", http.StatusNotFound, "agent_not_found")(s.post("/api/agents/nobody/finish", nil))

	status, out = s.call(context.Background(), "GET", "/api/sessions/"+second, nil)
	want(t, "read the conversation", status, out, http.StatusOK, "")
	text, _ := json.Marshal(out["messages"])
	for _, w := range []string{"ctx-marker", `"type":"tool_use"`, `"tool_use_id":"toolu_1"`, "a.txt", "and the docs"} {
		if !strings.Contains(string(text), w) {
			t.Errorf("the conversation lacks %s: %s", w, text)
		}
	}
	if strings.Contains(string(text), "b.txt") {
		t.Error("the second result of toolu_1 was kept")
	}

	expect(t, "delete the current session", http.StatusOK, "")(s.call(context.Background(), "DELETE", "/api/sessions/s1", nil))
	expect(t, "delete it again", http.StatusConflict, "session_deleted")(s.call(context.Background(), "DELETE", "/api/sessions/s1", nil))
	expect(t, "a restore to a missing session", http.StatusNotFound, "session_not_found")(s.post("/api/agents/ide/resume", map[string]any{"session": "nope"}))
	expect(t, "a misspelt field", http.StatusBadRequest, "bad_request")(s.post("/api/agents/ide/resume", map[string]any{"sesion": "s1"}))
	expect(t, "a hostile agent name", http.StatusBadRequest, "invalid_id")(s.post("/api/agents/..%2f..%2fetc/start", map[string]any{"session": "s1"}))
}

// expect is want for a call's answer given whole: expect(t, what,
// status, code)(s.post(...)).
func expect(t *testing.T, what string, wantStatus int, wantCode string) func(int, map[string]any) {
	t.Helper()
	return func(status int, out map[string]any) {
		t.Helper()
		want(t, what, status, out, wantStatus, wantCode)
	}
}

// Hooks a client adds to a session, in a settings file's words, run on
// that session's next tool call and no other's, and stop once removed.
func TestSessionHooksAddedOverTheAPI(t *testing.T) {
	s := newServer(t, "", api.Options{})
	for _, id := range []string{"a", "b"} {
		expect(t, "create "+id, http.StatusCreated, "")(s.post("/api/sessions", map[string]any{"id": id, "cwd": s.dir}))
	}
	expect(t, "start", http.StatusOK, "")(s.post("/api/agents/ide/start", map[string]any{"session": "a"}))
	deny := `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no shell here"}}'`
	status, out := s.post("/api/sessions/a/hooks", map[string]any{"hooks": map[string]any{
		"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": deny}}}}}})
	want(t, "add hooks", status, out, http.StatusCreated, "")
	ids, _ := out["ids"].([]any)
	if len(ids) != 1 {
		t.Fatalf("add hooks answered %v", out)
	}
	expect(t, "hooks of a missing session", http.StatusNotFound, "session_not_found")(s.post("/api/sessions/zz/hooks", map[string]any{"hooks": map[string]any{}}))
	expect(t, "hooks that do not parse", http.StatusBadRequest, "bad_request")(s.post("/api/sessions/a/hooks", map[string]any{"hooks": map[string]any{"PreToolUse": "x"}}))

	decide := func(id string) string {
		status, out := s.post("/api/agents/ide/tool", map[string]any{"tool_use_id": id, "name": "Bash", "input": map[string]any{"command": "ls"},
			"add_tool_use": true, "permission": "allow"})
		want(t, "tool "+id, status, out, http.StatusOK, "")
		return fmt.Sprint(out["decision"], " ", out["reason"])
	}
	if got := decide("toolu_1"); !strings.HasPrefix(got, "deny ") || !strings.Contains(got, "no shell here") {
		t.Errorf("the call under the session's hook: %s", got)
	}
	path := fmt.Sprintf("/api/sessions/a/hooks/%s", ids[0])
	expect(t, "remove the hook", http.StatusOK, "")(s.call(context.Background(), "DELETE", path, nil))
	expect(t, "remove it again", http.StatusNotFound, "hook_not_found")(s.call(context.Background(), "DELETE", path, nil))
	if got := decide("toolu_2"); got != "allow " {
		t.Errorf("the call once the hook is removed: %s", got)
	}
}

// Two clients driving one agent at once: one restores, the other gets
// 409 agent_busy naming the restore, and the hook ran once.
func TestTwoClientsOnOneAgent(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	s := newServer(t, `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo run >> '`+runs+`'; sleep 1"}]}]}}`, api.Options{})
	for _, id := range []string{"a", "b"} {
		expect(t, "create "+id, http.StatusCreated, "")(s.post("/api/sessions", map[string]any{"id": id, "cwd": s.dir}))
	}
	type result struct {
		status int
		out    map[string]any
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i, session := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 1 {
				time.Sleep(300 * time.Millisecond) // the first is in its hook by then
			}
			status, out := s.post("/api/agents/ide/start", map[string]any{"session": session})
			results[i] = result{status, out}
		}()
	}
	wg.Wait()
	want(t, "the first start", results[0].status, results[0].out, http.StatusOK, "")
	want(t, "the second start", results[1].status, results[1].out, http.StatusConflict, "agent_busy")
	if results[1].out["busy"] != "start to a" {
		t.Errorf("the busy answer names %q, want the start to a", results[1].out["busy"])
	}
	if data, _ := os.ReadFile(runs); strings.Count(string(data), "run") != 1 {
		t.Errorf("the SessionStart hook ran %d times, want once", strings.Count(string(data), "run"))
	}
}

// A client that goes away during a restore stops it at the next step
// boundary, its running hook cancelled and recorded so; the next call on
// the agent finishes the restore, and the hook does not run again.
func TestAClientThatGoesAwayLeavesTheRestoreToTheNextCall(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	s := newServer(t, `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo run >> '`+runs+`'; sleep 5"}]}]}}`, api.Options{})
	expect(t, "create", http.StatusCreated, "")(s.post("/api/sessions", map[string]any{"id": "a", "cwd": s.dir}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		body := strings.NewReader(`{"session": "a"}`)
		req, _ := http.NewRequestWithContext(ctx, "POST", s.srv.URL+"/api/agents/ide/start", body)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if data, _ := os.ReadFile(runs); len(data) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hook never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's call: %v; want it cancelled", err)
	}
	// The server's action stops once its hook is killed; the next call
	// waits for that, then finishes what the log holds in flight.
	var status int
	var out map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if status, out = s.post("/api/agents/ide/finish", nil); status != http.StatusConflict {
			break
		}
	}
	want(t, "finish", status, out, http.StatusOK, "")
	restore, _ := out["restore"].(map[string]any)
	start, _ := restore["session_start"].(map[string]any)
	hooks, _ := start["hooks"].([]any)
	if out["finished"] != true || len(hooks) != 1 || hooks[0].(map[string]any)["status"] != "cancelled" {
		t.Errorf("finish answered %v; want the restore finished, its hook cancelled", out)
	}
	if data, _ := os.ReadFile(runs); strings.Count(string(data), "run") != 1 {
		t.Errorf("the SessionStart hook ran %d times, want once", strings.Count(string(data), "run"))
	}
}

// On TCP every write carries the token, in the Authorization header, and
// names a loopback Host; a body over the limit is refused whole.
func TestTheTokenTheHostAndTheBodyLimit(t *testing.T) {
	const token = "0123456789abcdef0123"
	s := newServer(t, "", api.Options{Token: token, LoopbackOnly: true, MaxBody: 1 << 10})
	body := map[string]any{"id": "a", "cwd": "/"}
	expect(t, "no token", http.StatusUnauthorized, "unauthorized")(s.call(context.Background(), "POST", "/api/sessions", body))
	expect(t, "a wrong token", http.StatusUnauthorized, "unauthorized")(s.call(context.Background(), "POST", "/api/sessions", body, "Authorization", "Bearer "+token+"x"))
	expect(t, "another Host", http.StatusForbidden, "forbidden")(s.call(context.Background(), "POST", "/api/sessions", body, "Authorization", "Bearer "+token, "Host", "evil.example:80"))
	expect(t, "the token", http.StatusCreated, "")(s.call(context.Background(), "POST", "/api/sessions", map[string]any{"id": "a", "cwd": s.dir}, "Authorization", "Bearer "+token))
	big := map[string]any{"role": "user", "content": strings.Repeat("x", 2<<10)}
	expect(t, "a body over the limit", http.StatusRequestEntityTooLarge, "too_large")(s.call(context.Background(), "POST", "/api/sessions/a/messages", big, "Authorization", "Bearer "+token))
	if info, err := s.e.Session(context.Background(), "a"); err != nil || info.Messages != 0 {
		t.Errorf("after the refused body the session holds %d messages (%v), want none", info.Messages, err)
	}
}

// A durable turn over the API, the host running the model and the tools:
// the prompt gets an ask, the model's answer with a call gets the call to
// run (its PreToolUse hook run once), the result gets an ask holding it,
// the final answer ends the turn through Stop. A host that died after it
// was given a call comes back with nothing: the call is interrupted, as
// in a Go host, and no hook runs twice.
func TestADurableTurnOverTheAPI(t *testing.T) {
	dir := t.TempDir()
	pres, stops := filepath.Join(dir, "pres"), filepath.Join(dir, "stops")
	s := newServer(t, `{"hooks": {
		"PreToolUse": [{"hooks": [{"type": "command", "command": "echo pre >> '`+pres+`'"}]}],
		"Stop": [{"hooks": [{"type": "command", "command": "echo stop >> '`+stops+`'"}]}]}}`, api.Options{})
	expect(t, "create", http.StatusCreated, "")(s.post("/api/sessions", map[string]any{"id": "s", "cwd": s.dir}))
	expect(t, "start", http.StatusOK, "")(s.post("/api/agents/ide/start", map[string]any{"session": "s"}))
	useAnswer := func(id string) map[string]any {
		return map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "looking"},
			map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "ls"}}}}
	}
	status, out := s.post("/api/agents/ide/turn", map[string]any{"prompt": "list the files", "permission": "allow"})
	want(t, "the prompt", status, out, http.StatusOK, "")
	if out["step"] != "ask" || out["after"] == nil {
		t.Fatalf("the prompt's step: %v", out)
	}
	firstAsk := out["after"]
	status, out = s.post("/api/agents/ide/turn", map[string]any{"answer": useAnswer("toolu_1"), "after": out["after"], "permission": "allow"})
	want(t, "the answer", status, out, http.StatusOK, "")
	calls, _ := out["calls"].([]any)
	if out["step"] != "tools" || len(calls) != 1 || calls[0].(map[string]any)["tool_use_id"] != "toolu_1" {
		t.Fatalf("the answer's step: %v", out)
	}
	expect(t, "a prompt while calls are open", http.StatusConflict, "turn_unfinished")(s.post("/api/agents/ide/turn", map[string]any{"prompt": "x"}))
	expect(t, "a prompt with results", http.StatusBadRequest, "bad_step")(s.post("/api/agents/ide/turn",
		map[string]any{"prompt": "x", "results": []any{map[string]any{"tool_use_id": "toolu_1", "output": "x"}}}))
	// A host that keeps the first ask's messages is given only what
	// came after them.
	status, out = s.post("/api/agents/ide/turn", map[string]any{"since": firstAsk, "results": []any{map[string]any{"tool_use_id": "toolu_1", "output": "a.txt b.txt"}}})
	want(t, "the result", status, out, http.StatusOK, "")
	msgs, _ := json.Marshal(out["messages"])
	if out["step"] != "ask" || !strings.Contains(string(msgs), "a.txt b.txt") {
		t.Fatalf("the result's step: %v", out)
	}
	if out["since"] != firstAsk || strings.Contains(string(msgs), "list the files") {
		t.Errorf("the ask since the first: since %v, messages %s; want since %v and only the messages after the prompt", out["since"], msgs, firstAsk)
	}
	status, out = s.post("/api/agents/ide/turn", map[string]any{"answer": useAnswer("toolu_2"), "after": out["after"], "permission": "allow"})
	want(t, "the second answer", status, out, http.StatusOK, "")
	// The host dies with toolu_2 given to run; back, it brings nothing.
	status, out = s.post("/api/agents/ide/turn", nil)
	want(t, "the step after the host died", status, out, http.StatusOK, "")
	msgs, _ = json.Marshal(out["messages"])
	if out["step"] != "ask" || !strings.Contains(string(msgs), "interrupted") {
		t.Fatalf("after the host died: %v; want an ask whose conversation says toolu_2 was interrupted", out)
	}
	status, out = s.post("/api/agents/ide/turn", map[string]any{"answer": map[string]any{"content": "two files"}, "after": out["after"]})
	want(t, "the final answer", status, out, http.StatusOK, "")
	outcome, _ := out["outcome"].(map[string]any)
	if out["step"] != "over" || outcome["blocked"] != false {
		t.Fatalf("the final answer's step: %v", out)
	}
	for path, n := range map[string]int{pres: 2, stops: 1} {
		if data, _ := os.ReadFile(path); strings.Count(string(data), "\n") != n {
			t.Errorf("%s: %q; want %d runs", filepath.Base(path), data, n)
		}
	}
}

// An http hook added to a session over the API points back at the host:
// the session's next tool call POSTs Claude Code's input to it, and its
// answer decides the call.
func TestAnHTTPHookPointsBackAtTheHost(t *testing.T) {
	var got []map[string]any
	var mu sync.Mutex
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		json.NewDecoder(r.Body).Decode(&in)
		mu.Lock()
		got = append(got, in)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "the host says no"}}`)
	}))
	t.Cleanup(host.Close)
	s := newServer(t, "", api.Options{})
	expect(t, "create", http.StatusCreated, "")(s.post("/api/sessions", map[string]any{"id": "a", "cwd": s.dir}))
	expect(t, "start", http.StatusOK, "")(s.post("/api/agents/ide/start", map[string]any{"session": "a"}))
	expect(t, "add the http hook", http.StatusCreated, "")(s.post("/api/sessions/a/hooks", map[string]any{"hooks": map[string]any{
		"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{map[string]any{"type": "http", "url": host.URL + "/guard"}}}}}}))
	status, out := s.post("/api/agents/ide/tool", map[string]any{"tool_use_id": "toolu_1", "name": "Bash",
		"input": map[string]any{"command": "rm -rf /"}, "add_tool_use": true, "permission": "allow"})
	want(t, "the call", status, out, http.StatusOK, "")
	if out["decision"] != "deny" || !strings.Contains(fmt.Sprint(out["reason"]), "the host says no") {
		t.Errorf("the call under the host's hook: %v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0]["hook_event_name"] != "PreToolUse" || got[0]["tool_name"] != "Bash" || got[0]["session_id"] != "a" {
		t.Errorf("the host's hook was given %v; want one PreToolUse input of Bash on session a", got)
	}
}

// A page of a named origin may call the write API from a browser: its
// preflight and its requests get CORS headers. Any other origin is
// refused, and with none named no CORS header is sent.
func TestOriginsNamedMayCallFromABrowser(t *testing.T) {
	s := newServer(t, "", api.Options{Origins: []string{"http://localhost:5173"}})
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", s.srv.URL+"/api/sessions", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := preflight("http://localhost:5173"); res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
		!strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("the named origin's preflight: %d %v", res.StatusCode, res.Header)
	}
	if res := preflight("http://evil.example"); res.StatusCode != http.StatusForbidden || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin's preflight: %d %v", res.StatusCode, res.Header)
	}
	body := map[string]any{"id": "a", "cwd": s.dir}
	expect(t, "a write from another origin", http.StatusForbidden, "forbidden")(s.call(context.Background(), "POST", "/api/sessions", body, "Origin", "http://evil.example"))
	expect(t, "a write from the named origin", http.StatusCreated, "")(s.call(context.Background(), "POST", "/api/sessions", body, "Origin", "http://localhost:5173"))
	plain := newServer(t, "", api.Options{})
	if res := func() *http.Response {
		req, _ := http.NewRequest("OPTIONS", plain.srv.URL+"/api/sessions", nil)
		req.Header.Set("Origin", "http://localhost:5173")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}(); res.Header.Get("Access-Control-Allow-Origin") != "" || res.StatusCode != http.StatusForbidden {
		t.Errorf("a preflight with no origin named: %d %v", res.StatusCode, res.Header)
	}
}

// Two clients at once on an agent neither has loaded yet: the second
// never waits behind the first's restore, whichever loads the agent
// first; it is told agent_busy. Tried many times, as the two race.
func TestTwoFirstCallsOnOneAgentNeverQueue(t *testing.T) {
	s := newServer(t, `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "sleep 0.3"}]}]}}`, api.Options{})
	for _, id := range []string{"a", "b"} {
		expect(t, "create "+id, http.StatusCreated, "")(s.post("/api/sessions", map[string]any{"id": id, "cwd": s.dir}))
	}
	for i := range 8 {
		agent := fmt.Sprintf("/api/agents/fresh%d/start", i)
		statuses := make([]int, 2)
		var wg sync.WaitGroup
		for j, session := range []string{"a", "b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[j], _ = s.post(agent, map[string]any{"session": session})
			}()
		}
		wg.Wait()
		if statuses[0]+statuses[1] != http.StatusOK+http.StatusConflict {
			t.Fatalf("two first starts on agent fresh%d: %v; want one done and one agent_busy", i, statuses)
		}
	}
}
