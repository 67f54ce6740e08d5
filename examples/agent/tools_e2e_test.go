package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/examples/agent/internal/fakeapi"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/turn"
)

// scriptedAPI is a fake Messages API on 127.0.0.1 that answers the N-th
// request with the N-th answer of its script, and keeps every request.
type scriptedAPI struct {
	fakeapi.Server
	url string
}

func newScriptedAPI(t *testing.T, script ...fakeapi.Answer) *scriptedAPI {
	f := &scriptedAPI{Server: fakeapi.Server{Answer: func(req *fakeapi.Request) (fakeapi.Answer, error) {
		if req.N > len(script) {
			t.Errorf("fake API: unexpected request %d: %s", req.N, req.Body)
			return fakeapi.Answer{}, fmt.Errorf("request %d: the script has %d answers", req.N, len(script))
		}
		return script[req.N-1], nil
	}}}
	f.url = serveFake(t, &f.Server)
	return f
}

// apiRequest is what the tests read of a request: whether it streams, the
// tools it offers, and its messages' blocks as generic JSON.
type apiRequest struct {
	Stream bool `json:"stream"`
	Tools  []struct {
		Name        string         `json:"name"`
		InputSchema map[string]any `json:"input_schema"`
	} `json:"tools"`
	Messages []struct {
		Role    string           `json:"role"`
		Content []map[string]any `json:"content"`
	} `json:"messages"`
}

func (f *scriptedAPI) requests(t *testing.T) []apiRequest {
	t.Helper()
	reqs := f.Requests()
	out := make([]apiRequest, len(reqs))
	for i, r := range reqs {
		if err := json.Unmarshal(r.Body, &out[i]); err != nil {
			t.Fatalf("request %d: %v: %s", r.N, err, r.Body)
		}
	}
	return out
}

// Hook and rule texts of the tool turn.
const (
	hookDenyReason = "no touching here"
	postContext    = "the echo worked"
	toolStopBlock  = "Say which tests ran."
)

// toolScript is the model's side of the tool turn: three calls that are
// each refused another way, then two that run, then an answer that a Stop
// hook sends back once, then the last answer.
var toolScript = []fakeapi.Answer{
	{StopReason: "tool_use", Content: []fakeapi.Block{
		fakeapi.Text("Let me look."),
		// Allowed by a settings rule, denied by a PreToolUse hook: the
		// hook's deny wins.
		fakeapi.ToolUse("toolu_01", "Bash", map[string]any{"command": "touch denied-ran"}),
		// Allowed by a PreToolUse hook, denied by a settings rule: the
		// rule's deny wins.
		fakeapi.ToolUse("toolu_02", "Read", map[string]any{"file_path": "secret.txt"}),
		// Decided by nobody: asked about, with no terminal to ask on.
		fakeapi.ToolUse("toolu_03", "Write", map[string]any{"file_path": "draft.txt", "content": "draft"}),
	}},
	{StopReason: "tool_use", Content: []fakeapi.Block{
		// Allowed by --allowed-tools; a PostToolUse hook adds context.
		fakeapi.ToolUse("toolu_04", "Bash", map[string]any{"command": "echo tool-ran"}),
		// Allowed by the project's Edit rule.
		fakeapi.ToolUse("toolu_05", "Write", map[string]any{"file_path": "notes/today.md", "content": "- ran the tools\n"}),
	}},
	{StopReason: "end_turn", Content: []fakeapi.Block{fakeapi.Text("All done.")}},
	{StopReason: "end_turn", Content: []fakeapi.Block{fakeapi.Text("Done: no tests ran.")}},
}

// toolEnv makes the home and project of the tool turn under t.TempDir:
//   - ~/.claude/settings.json: a PreToolUse hook that denies Bash
//     commands naming denied-ran, one that allows every Read, a
//     PostToolUse hook on Bash that keeps its input and adds context, a
//     Stop hook that blocks once; rules that allow Bash(touch *) and deny
//     Read(./secret.txt);
//   - <project>/.claude/settings.json: a rule that allows Edit(notes/**);
//   - <project>/secret.txt, which must never be read.
func toolEnv(t *testing.T) (ev *env, postInput string) {
	ev = setup(t)
	root := filepath.Dir(ev.home)
	postInput = filepath.Join(root, "post-tool-use.json")
	ev.stopCommand = toolStopCommand(filepath.Join(root, "tool-stop-blocked-once"))
	writeJSON(t, filepath.Join(ev.home, ".claude", "settings.json"), map[string]any{
		"hooks": map[string]any{
			"PreToolUse": []any{
				map[string]any{"matcher": "Bash", "hooks": []any{command(`if grep -q denied-ran; then echo '{"hookSpecificOutput": ` +
					`{"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "` + hookDenyReason + `"}}'; fi`)}},
				map[string]any{"matcher": "Read", "hooks": []any{command(`echo '{"hookSpecificOutput": ` +
					`{"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'`)}},
			},
			"PostToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{command("cat > '" + postInput + "'; " +
				`echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "` + postContext + `"}}'`)}}},
			"Stop": []any{map[string]any{"hooks": []any{command(ev.stopCommand)}}},
		},
		"permissions": map[string]any{"allow": []any{"Bash(touch *)"}, "deny": []any{"Read(./secret.txt)"}},
	})
	writeJSON(t, filepath.Join(ev.project, ".claude", "settings.json"), map[string]any{
		"permissions": map[string]any{"allow": []any{"Edit(notes/**)"}},
	})
	if err := os.WriteFile(filepath.Join(ev.project, "secret.txt"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	return ev, postInput
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
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

// TestToolTurn runs one prompt whose turn calls tools against the fake
// Messages API, answering in JSON and as a stream: a call a PreToolUse
// hook denies, one a settings rule denies, one nobody allows (and no
// terminal can), two that run, a PostToolUse hook's context, and a Stop
// hook's block. It checks what each request carried, what ran, and the
// session's and the agent's logs.
func TestToolTurn(t *testing.T) {
	for _, mode := range []string{"json", "stream"} {
		t.Run(mode, func(t *testing.T) {
			ev, postInput := toolEnv(t)
			api := newScriptedAPI(t, toolScript...)
			args := []string{"--store", ev.store, "--base-url", api.url, "--model", "claude-test",
				"--allowed-tools", "Bash(echo *)"}
			if mode == "stream" {
				args = append(args, "--stream")
			}
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, strings.NewReader("Tidy the notes.\n"), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			if strings.HasPrefix(stdout.String(), "> ") || strings.Contains(stdout.String(), "\n> ") {
				t.Errorf("stdout, from a stdin that is not a terminal, holds a prompt")
			}
			checkToolRequests(t, api.requests(t), mode == "stream", ev.stopCommand)
			checkToolEffects(t, ev, postInput)
			for _, s := range []string{
				"Let me look.\n",
				"[Bash denied: PreToolUse:Bash hook error: " + hookDenyReason + "]\n",
				"[Read denied: Permission to use Read was denied.]\n",
				"[Write not run: " + noTerminal("Write") + "]\n",
				"All done.\n[a Stop hook asks to continue: " + toolStopBlock + "]\nDone: no tests ran.\n",
			} {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q", s)
				}
			}
			m := resumeLine.FindStringSubmatch(stderr.String())
			if m == nil {
				t.Fatalf("no resume line:\n%s", stderr.String())
			}
			checkToolLogs(t, ev.store, m[2])
		})
	}
}

// checkToolRequests checks the four requests of the tool turn.
func checkToolRequests(t *testing.T, reqs []apiRequest, stream bool, stopCommand string) {
	t.Helper()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	for i, r := range reqs {
		var names []string
		for _, tool := range r.Tools {
			if tool.InputSchema["type"] != "object" || tool.InputSchema["properties"] == nil {
				t.Errorf("request %d: tool %s has input schema %v", i+1, tool.Name, tool.InputSchema)
			}
			names = append(names, tool.Name)
		}
		if !reflect.DeepEqual(names, []string{"Bash", "Read", "Write", "Agent"}) || r.Stream != stream {
			t.Errorf("request %d: tools %v, stream %v", i+1, names, r.Stream)
		}
	}
	// Each request ends with the user turn that answers the one before.
	last := func(r apiRequest) []map[string]any {
		m := r.Messages[len(r.Messages)-1]
		if m.Role != "user" {
			t.Errorf("a request ends with a %s message", m.Role)
		}
		return m.Content
	}
	result := func(id string, isError bool, content any) map[string]any {
		b := map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}
		if isError {
			b["is_error"] = true
		}
		return b
	}
	checkBlocks(t, "request 2's last message", last(reqs[1]), []map[string]any{
		result("toolu_01", true, "PreToolUse:Bash hook error: "+hookDenyReason),
		result("toolu_02", true, "Permission to use Read was denied."),
		result("toolu_03", true, noTerminal("Write")),
	})
	// Bash's output reaches the model as text; Write's result, which has no
	// text form, as the text of its JSON.
	checkBlocks(t, "request 3's last message", last(reqs[2]), []map[string]any{
		result("toolu_04", false, "tool-ran"),
		result("toolu_05", false, `{"type":"create","filePath":"PROJECT/notes/today.md","content":"- ran the tools\n"}`),
		fakeapi.Text("PostToolUse:Bash hook additional context: " + postContext),
	})
	checkBlocks(t, "request 4's last message", last(reqs[3]), []map[string]any{fakeapi.Text(stopFeedback(stopCommand, toolStopBlock))})
	if n := len(reqs[3].Messages); n < 2 || !reflect.DeepEqual(reqs[3].Messages[n-2].Content, []map[string]any{fakeapi.Text("All done.")}) {
		t.Errorf("request 4 does not send back the answer the Stop hook blocked: %v", reqs[3].Messages)
	}
	for i, r := range reqs {
		if js, _ := json.Marshal(r); bytes.Contains(js, []byte("s3cret")) {
			t.Errorf("request %d holds the secret file", i+1)
		}
	}
}

// checkBlocks compares content blocks as JSON, with the project's path,
// which differs from run to run, written PROJECT.
func checkBlocks(t *testing.T, what string, got, want []map[string]any) {
	t.Helper()
	project, _ := os.Getwd()
	g, _ := json.Marshal(got)
	g = bytes.ReplaceAll(g, []byte(project), []byte("PROJECT"))
	w, _ := json.Marshal(want)
	var gv, wv any
	json.Unmarshal(g, &gv)
	json.Unmarshal(w, &wv)
	if !reflect.DeepEqual(gv, wv) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// checkToolEffects checks what the tools did to the project, and what the
// PostToolUse hook read.
func checkToolEffects(t *testing.T, ev *env, postInput string) {
	t.Helper()
	for _, name := range []string{"denied-ran", "draft.txt"} {
		if _, err := os.Stat(filepath.Join(ev.project, name)); err == nil {
			t.Errorf("%s exists: a refused call ran", name)
		}
	}
	if data, err := os.ReadFile(filepath.Join(ev.project, "notes", "today.md")); err != nil || string(data) != "- ran the tools\n" {
		t.Errorf("notes/today.md: %q, %v", data, err)
	}
	data, err := os.ReadFile(postInput)
	if err != nil {
		t.Fatalf("the PostToolUse hook did not run: %v", err)
	}
	var in struct {
		Event     string          `json:"hook_event_name"`
		Tool      string          `json:"tool_name"`
		ToolUseID string          `json:"tool_use_id"`
		Input     json.RawMessage `json:"tool_input"`
		Response  json.RawMessage `json:"tool_response"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatalf("PostToolUse input %s: %v", data, err)
	}
	if in.Event != "PostToolUse" || in.Tool != "Bash" || in.ToolUseID != "toolu_04" || string(in.Input) != `{"command":"echo tool-ran"}` ||
		string(in.Response) != `{"stdout":"tool-ran\n","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}` {
		t.Errorf("PostToolUse input: %s", data)
	}
}

// checkToolLogs checks the session's messages, as the log holds them, and
// the decision the agent's log holds for each call.
func checkToolLogs(t *testing.T, store, id string) {
	t.Helper()
	e, err := reprise.Open(store, reprise.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	conv, err := e.FullConversation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range conv {
		var kinds []string
		for _, b := range m.Content {
			kind := b.Type
			var tr struct {
				ID      string `json:"tool_use_id"`
				IsError bool   `json:"is_error"`
			}
			if b.Type == "tool_result" && json.Unmarshal(b.Raw, &tr) == nil {
				kind += " " + tr.ID
				if tr.IsError {
					kind += " error"
				}
			}
			kinds = append(kinds, kind)
		}
		role := m.Role
		if m.IsMeta {
			role += " (meta)"
		}
		got = append(got, role+": "+strings.Join(kinds, ", "))
	}
	want := []string{
		"user: text",
		"assistant: text, tool_use, tool_use, tool_use",
		"user: tool_result toolu_01 error",
		"user: tool_result toolu_02 error",
		"user: tool_result toolu_03 error",
		"assistant: tool_use, tool_use",
		"user: tool_result toolu_04",
		"user (meta): text",
		"user: tool_result toolu_05",
		"assistant: text",
		"user (meta): text", // the Stop hook's feedback
		"assistant: text",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("session log:\n got %q\nwant %q", got, want)
	}

	decisions := map[string]string{}
	results := map[string]bool{}
	err = e.Store().ReadStream(ctx, projection.AgentStream("example-agent"), 1, func(ev eventlog.Event) error {
		p, err := schema.Decode(ev)
		if err != nil {
			return err
		}
		switch p := p.(type) {
		case *schema.ToolDecided: // a call left to ask has two: the ask, then the user's answer
			kept := cmp.Or(decisions[p.ToolUseID], p.Tool)
			decisions[p.ToolUseID] = kept + " " + p.Decision
		case *schema.ToolResultRecorded:
			results[p.ToolUseID] = p.Failed
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// toolu_03 was left to ask, and refused: the refusal is its error
	// result, recorded with the answer.
	wantDecisions := map[string]string{"toolu_01": "Bash deny", "toolu_02": "Read deny", "toolu_03": "Write ask deny",
		"toolu_04": "Bash allow", "toolu_05": "Write allow"}
	wantResults := map[string]bool{"toolu_04": false, "toolu_05": false}
	if !reflect.DeepEqual(decisions, wantDecisions) || !reflect.DeepEqual(results, wantResults) {
		t.Errorf("agent log: decisions %v, results (failed) %v; want %v, %v", decisions, results, wantDecisions, wantResults)
	}
}

// toolStopCommand is the Stop hook of the tool turn, which blocks once, its
// marker recording that it did.
func toolStopCommand(marker string) string {
	return "if [ -e '" + marker + "' ]; then exit 0; fi; touch '" + marker + "'; " +
		`echo '{"decision": "block", "reason": "` + toolStopBlock + `"}'`
}

// TestHookHaltsTheTurn runs a turn whose first call a PreToolUse hook
// answers with "continue": false: neither call of the answer runs, each
// gets a result, the turn ends with the hook's stopReason shown to the
// user, the model is not asked again, and the systemMessage is shown.
func TestHookHaltsTheTurn(t *testing.T) {
	ev := setup(t)
	marker := filepath.Join(filepath.Dir(ev.home), "ran")
	writeJSON(t, filepath.Join(ev.home, ".claude", "settings.json"), map[string]any{
		"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{
			command(`echo '{"continue": false, "stopReason": "budget spent", "systemMessage": "mind the budget"}'`)}}}},
	})
	api := newScriptedAPI(t,
		fakeapi.Answer{StopReason: "tool_use", Content: []fakeapi.Block{
			fakeapi.ToolUse("toolu_01", "Bash", map[string]any{"command": "touch '" + marker + "'"}),
			fakeapi.ToolUse("toolu_02", "Write", map[string]any{"file_path": "x.txt", "content": "x"}),
		}},
		fakeapi.Answer{StopReason: "end_turn", Content: []fakeapi.Block{fakeapi.Text("never sent")}})
	var stdout, stderr bytes.Buffer
	args := []string{"--store", ev.store, "--base-url", api.url, "--model", "claude-test", "--allowed-tools", "Bash,Write"}
	if code := run(context.Background(), args, strings.NewReader("Spend it.\n"), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "[stopped by a hook: budget spent]\n") || !strings.Contains(stderr.String(), "mind the budget") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	if n := len(api.requests(t)); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	for _, p := range []string{marker, filepath.Join(ev.project, "x.txt")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: a halted turn ran a tool (%v)", p, err)
		}
	}
	m := resumeLine.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no resume line:\n%s", stderr.String())
	}
	e, err := reprise.Open(ev.store, reprise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	msgs, err := e.Conversation(context.Background(), m[2])
	if err != nil {
		t.Fatal(err)
	}
	results := 0
	for _, msg := range msgs {
		for _, b := range msg.Content {
			if b.Type == "tool_result" && strings.Contains(string(b.Raw), turn.NotRun) {
				results++
			}
		}
	}
	if results != 2 {
		t.Errorf("%d of the 2 calls have the halt's result", results)
	}
}
