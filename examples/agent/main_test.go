package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	rpanthropic "github.com/reprise-dev/reprise/adapters/anthropic"
	"github.com/reprise-dev/reprise/examples/agent/internal/fakeapi"
	"github.com/reprise-dev/reprise/internal/testdirs"
)

// childEnv, set to 1, makes the test binary run the command instead of the
// tests: the second process of TestResumeInSecondProcess.
const childEnv = "REPRISE_EXAMPLE_AGENT_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	// The host serves its store's reads on a socket, under
	// $XDG_RUNTIME_DIR when the store's path is too long for one beside it.
	os.Exit(testdirs.Run(m.Run))
}

// fakeAPI is a fake Messages API on 127.0.0.1 that answers the N-th
// request with "answer N", and keeps every request.
type fakeAPI struct {
	fakeapi.Server
	url string
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{Server: fakeapi.Server{Answer: func(req *fakeapi.Request) (fakeapi.Answer, error) {
		return fakeapi.Answer{Content: []fakeapi.Block{fakeapi.Text(fmt.Sprintf("answer %d", req.N))},
			StopReason: "end_turn", InputTokens: 100 * req.N, OutputTokens: 5}, nil
	}}}
	f.url = serveFake(t, &f.Server)
	return f
}

// serveFake serves f on 127.0.0.1 until the test ends, and returns its
// base URL.
func serveFake(t *testing.T, f *fakeapi.Server) string {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL
}

// sentRequest is the part of a Messages API request the tests check.
type sentRequest struct {
	APIKey    string `json:"-"`
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Messages  []struct {
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"messages"`
}

// sent returns the requests received so far.
func (f *fakeAPI) sent(t *testing.T) []sentRequest {
	t.Helper()
	var out []sentRequest
	for _, r := range f.Requests() {
		var req sentRequest
		if err := json.Unmarshal(r.Body, &req); err != nil {
			t.Fatalf("request %d: %v", r.N, err)
		}
		// The key, however this SDK version sends it.
		req.APIKey = r.Header.Get("X-Api-Key")
		if req.APIKey == "" {
			req.APIKey = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		out = append(out, req)
	}
	return out
}

// turns renders a request's messages one turn a line, "role: text | text",
// for comparison.
func turns(r sentRequest) []string {
	var out []string
	for _, m := range r.Messages {
		var texts []string
		for _, b := range m.Content {
			if b.Type != "text" {
				texts = append(texts, "<"+b.Type+">")
				continue
			}
			texts = append(texts, b.Text)
		}
		out = append(out, m.Role+": "+strings.Join(texts, " | "))
	}
	return out
}

// Hook contexts and reasons the settings of setupHome produce.
const (
	startContext  = "branch main, CI green"
	promptContext = "tests pass on main"
	promptBlock   = "no forbidden words here"
	stopBlock     = "Run the tests before you stop."
)

// reminder is the meta text reprise injects for a hook's context.
func reminder(event, context string) string {
	return "<system-reminder>\n" + event + " hook additional context: " + context + "\n</system-reminder>"
}

// env is the isolated world of one test: a home with Claude Code user
// settings, a project with its own settings, and the fake API.
type env struct {
	home, project, store, sessionEnd string
	resumed                          string // touched by a SessionStart hook of source resume
	stopCommand                      string // the project's Stop hook, which blocks once
	api                              *fakeAPI
}

// setup makes the test's home and project under t.TempDir and points the
// process's environment at them:
//   - ~/.claude/settings.json: a SessionStart hook and a UserPromptSubmit
//     hook that add context (the latter blocks prompts saying
//     "forbidden"), and a SessionEnd hook that keeps its input;
//   - <project>/.claude/settings.json: a Stop hook that blocks once, the
//     first time it runs, keeping a marker file.
func setup(t *testing.T) *env {
	root := t.TempDir()
	ev := &env{
		home:       filepath.Join(root, "home"),
		project:    filepath.Join(root, "project"),
		store:      filepath.Join(root, "state", "sessions.db"),
		sessionEnd: filepath.Join(root, "session-end.json"),
		resumed:    filepath.Join(root, "resumed"),
		api:        newFakeAPI(t),
	}
	marker := filepath.Join(root, "stop-blocked-once")
	writeSettings(t, filepath.Join(ev.home, ".claude", "settings.json"), map[string]any{
		"SessionStart": []any{map[string]any{"matcher": "startup|resume", "hooks": []any{
			command("echo '" + startContext + "'")}}, map[string]any{"matcher": "resume", "hooks": []any{
			command("touch '" + ev.resumed + "'")}}},
		"UserPromptSubmit": []any{map[string]any{"hooks": []any{
			command("if grep -q forbidden; then echo '" + promptBlock + "' >&2; exit 2; fi; echo '" + promptContext + "'")}}},
		"SessionEnd": []any{map[string]any{"hooks": []any{
			command("cat > '" + ev.sessionEnd + "'")}}},
	})
	ev.stopCommand = "if [ -e '" + marker + "' ]; then exit 0; fi; touch '" + marker + "'; " +
		`echo '{"decision": "block", "reason": "` + stopBlock + `"}'`
	writeSettings(t, filepath.Join(ev.project, ".claude", "settings.json"), map[string]any{
		"Stop": []any{map[string]any{"hooks": []any{command(ev.stopCommand)}}},
	})

	t.Setenv("HOME", ev.home)
	t.Setenv("XDG_STATE_HOME", filepath.Join(root, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "config"))
	t.Setenv("REPRISE_STORE", "")
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "")
	t.Setenv(childEnv, "")
	t.Chdir(ev.project)
	return ev
}

func command(cmd string) map[string]any {
	return map[string]any{"type": "command", "command": cmd, "timeout": 30}
}

func writeSettings(t *testing.T, path string, hooks map[string]any) {
	t.Helper()
	data, err := json.MarshalIndent(map[string]any{"hooks": hooks}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// args are the flags both processes get.
func (ev *env) args(extra ...string) []string {
	return append([]string{"--store", ev.store, "--base-url", ev.api.url, "--model", "claude-test", "--max-tokens", "512"}, extra...)
}

var resumeLine = regexp.MustCompile(`resume it with: agent --store (\S+) --session (\S+)`)

// TestLoopWithHooksAndResumeInSecondProcess runs the whole agent: a first
// run in this process, whose session gets the hooks' context, a blocked
// prompt and a Stop hook's block, then a second process that resumes the
// session by id and sends every earlier turn.
func TestLoopWithHooksAndResumeInSecondProcess(t *testing.T) {
	ev := setup(t)

	// The first process: a new session.
	var stdout, stderr bytes.Buffer
	in := "What does retry.go do?\n\nSay something forbidden.\nThanks.\n"
	if code := run(context.Background(), ev.args(), strings.NewReader(in), &stdout, &stderr); code != 0 {
		t.Fatalf("first run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("first run stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())

	ssReminder := reminder("SessionStart", startContext)
	upsReminder := reminder("UserPromptSubmit", promptContext)
	turn1 := "user: " + ssReminder + " | What does retry.go do? | " + upsReminder
	want := [][]string{
		{turn1},
		// The Stop hook blocked: its reason is the next user message.
		{turn1, "assistant: answer 1", "user: " + stopFeedback(ev.stopCommand, stopBlock)},
		// The forbidden prompt was blocked, so it is not sent.
		{turn1, "assistant: answer 1", "user: " + stopFeedback(ev.stopCommand, stopBlock), "assistant: answer 2",
			"user: Thanks. | " + upsReminder},
	}
	sent := ev.api.sent(t)
	if len(sent) != len(want) {
		t.Fatalf("first run sent %d requests, want %d", len(sent), len(want))
	}
	for i, r := range sent {
		if got := turns(r); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("request %d:\n got %q\nwant %q", i+1, got, want[i])
		}
		if r.Model != "claude-test" || r.MaxTokens != 512 || r.APIKey != "test-key" {
			t.Errorf("request %d: model %q, max_tokens %d, key %q", i+1, r.Model, r.MaxTokens, r.APIKey)
		}
	}
	for _, s := range []string{
		"answer 1\n[a Stop hook asks to continue: " + stopBlock + "]\nanswer 2\n",
		"[prompt blocked by a UserPromptSubmit hook: " + promptBlock + "]\n",
		"answer 3\n",
	} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("first run's stdout lacks %q:\n%s", s, stdout.String())
		}
	}
	m := resumeLine.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("first run does not say how to resume:\n%s", stderr.String())
	}
	if m[1] != ev.store {
		t.Errorf("resume line names store %s, want %s", m[1], ev.store)
	}
	id := m[2]

	// The SessionEnd hook of the user's settings ran at the end of input.
	var end struct {
		SessionID string `json:"session_id"`
		Reason    string `json:"reason"`
		Cwd       string `json:"cwd"`
	}
	if data, err := os.ReadFile(ev.sessionEnd); err != nil {
		t.Errorf("SessionEnd hook did not run: %v", err)
	} else if err := json.Unmarshal(data, &end); err != nil {
		t.Errorf("SessionEnd input %q: %v", data, err)
	} else if end.SessionID != id || end.Reason != "prompt_input_exit" || end.Cwd != ev.project {
		t.Errorf("SessionEnd input: %+v, want session %s, reason prompt_input_exit, cwd %s", end, id, ev.project)
	}
	os.Remove(ev.sessionEnd)
	if _, err := os.Stat(ev.resumed); err == nil {
		t.Errorf("the first process ran SessionStart hooks of source resume")
	}

	// The second process: resume the session by id, with source resume as
	// Claude Code's --resume gives it.
	child := exec.Command(os.Args[0], ev.args("--session", id)...)
	child.Dir = ev.project
	child.Env = append(os.Environ(), childEnv+"=1")
	child.Stdin = strings.NewReader("And the retry delay?\n")
	var cout, cerr bytes.Buffer
	child.Stdout, child.Stderr = &cout, &cerr
	if err := child.Run(); err != nil {
		t.Fatalf("second process: %v\nstdout:\n%s\nstderr:\n%s", err, cout.String(), cerr.String())
	}
	t.Logf("second process stdout:\n%s\nstderr:\n%s", cout.String(), cerr.String())

	sent = ev.api.sent(t)
	if len(sent) != 4 {
		t.Fatalf("second process sent %d requests, want 1", len(sent)-3)
	}
	// Its first request holds every earlier turn, then the startup
	// restore's context, the new prompt and its context.
	wantResume := append(append([]string(nil), want[2]...), "assistant: answer 3",
		"user: "+ssReminder+" | And the retry delay? | "+upsReminder)
	if got := turns(sent[3]); !reflect.DeepEqual(got, wantResume) {
		t.Errorf("second process's first request:\n got %q\nwant %q", got, wantResume)
	}
	if !strings.Contains(cout.String(), "answer 4\n") {
		t.Errorf("second process's stdout lacks the answer:\n%s", cout.String())
	}
	if !strings.Contains(cerr.String(), "resumed session "+id) || !strings.Contains(cerr.String(), "--session "+id) {
		t.Errorf("second process's stderr does not name session %s:\n%s", id, cerr.String())
	}
	if _, err := os.Stat(ev.sessionEnd); err != nil {
		t.Errorf("second process's SessionEnd hook did not run: %v", err)
	}
	if _, err := os.Stat(ev.resumed); err != nil {
		t.Errorf("--session did not run the SessionStart hooks of source resume: %v", err)
	}

	// The log holds each answer with its usage.
	e, err := reprise.Open(ev.store, reprise.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	conv, err := e.FullConversation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var answers []int64
	for _, msg := range conv {
		if msg.Role != "assistant" {
			continue
		}
		u, err := rpanthropic.Usage(msg)
		if err != nil {
			t.Fatalf("answer %s: %v", msg.UUID, err)
		}
		answers = append(answers, u.InputTokens)
	}
	if !reflect.DeepEqual(answers, []int64{100, 200, 300, 400}) {
		t.Errorf("stored answers have input tokens %v, want [100 200 300 400]", answers)
	}
}

// TestResumeUnknownSession fails without sending anything.
func TestResumeUnknownSession(t *testing.T) {
	ev := setup(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), ev.args("--session", "no-such-session"), strings.NewReader("hello\n"), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "no session no-such-session") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if n := len(ev.api.sent(t)); n != 0 {
		t.Errorf("sent %d requests", n)
	}
}

// TestEmptyInput starts no session.
func TestEmptyInput(t *testing.T) {
	ev := setup(t)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), ev.args(), strings.NewReader("\n  \n"), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	e, err := reprise.Open(ev.store, reprise.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if s, err := e.Sessions(context.Background()); err != nil || len(s) != 0 {
		t.Errorf("sessions %v, %v; want none", s, err)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--no-such-flag"}, {"a prompt"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// TestStorePath follows the reprise command: --store, else $REPRISE_STORE,
// else the XDG state directory, else ~/.local/state.
func TestStorePath(t *testing.T) {
	root := t.TempDir()
	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("REPRISE_STORE", "")
	t.Setenv("XDG_STATE_HOME", "")
	cases := []struct {
		flag, env, xdg, want string
	}{
		{flag: filepath.Join(root, "a.db"), env: filepath.Join(root, "b.db"), want: filepath.Join(root, "a.db")},
		{env: filepath.Join(root, "b.db"), xdg: filepath.Join(root, "xdg"), want: filepath.Join(root, "b.db")},
		{xdg: filepath.Join(root, "xdg"), want: filepath.Join(root, "xdg", "reprise", "reprise.db")},
		{xdg: "relative", want: filepath.Join(root, "home", ".local", "state", "reprise", "reprise.db")},
	}
	for _, c := range cases {
		t.Setenv("REPRISE_STORE", c.env)
		t.Setenv("XDG_STATE_HOME", c.xdg)
		if got, err := storePath(c.flag); err != nil || got != c.want {
			t.Errorf("%+v: %q, %v", c, got, err)
		}
	}
	t.Setenv("REPRISE_STORE", "postgres://127.0.0.1/x")
	if _, err := storePath(""); err == nil {
		t.Error("a postgres URL is accepted")
	}
}

// stopFeedback is the user message that tells the model a Stop hook with
// command blocked for reason, as Claude Code words it.
func stopFeedback(command, reason string) string {
	return "Stop hook blocking error from command: \"" + command + "\": " + reason
}
