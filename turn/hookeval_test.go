package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/turn"
)

// hookModel is the model of a prompt or agent hook, played by script: its
// n-th request runs steps[n].check on what it was given and gets
// steps[n].answer. It keeps what Models was asked for.
type hookModel struct {
	t     *testing.T
	steps []hookStep

	mu           sync.Mutex
	requests     int
	name, system string
	tools        []turn.ToolSpec
}

// hookStep is one request of a hookModel's script.
type hookStep struct {
	check  func(t *testing.T, conv []reprise.Message)
	answer reprise.Message
	err    error
}

func (h *hookModel) models(name, system string, tools []turn.ToolSpec) turn.Model {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.name, h.system, h.tools = name, system, tools
	return h.model
}

func (h *hookModel) model(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
	h.mu.Lock()
	n := h.requests
	h.requests++
	h.mu.Unlock()
	if n >= len(h.steps) {
		return reprise.Message{}, fmt.Errorf("no step %d in the script", n)
	}
	s := h.steps[n]
	if s.check != nil {
		s.check(h.t, conv)
	}
	return s.answer, s.err
}

func (h *hookModel) asked() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests
}

// uses is an assistant answer with a tool_use per call, "id:name" and
// its input.
func uses(calls ...any) reprise.Message {
	m := reprise.Message{Role: "assistant"}
	for i := 0; i < len(calls); i += 2 {
		id, name, _ := strings.Cut(calls[i].(string), ":")
		input, _ := json.Marshal(calls[i+1])
		m.Content = append(m.Content, reprise.ToolUseBlock(id, name, input))
	}
	return m
}

// said is an assistant answer of text blocks.
func said(texts ...string) reprise.Message {
	m := reprise.Message{Role: "assistant"}
	for _, text := range texts {
		m.Content = append(m.Content, reprise.Block{Type: "text", Text: text})
	}
	return m
}

// result is a tool_result the model was given.
type result struct {
	text    string
	isError bool
}

// results reads the tool_results of conv's last message, by tool_use id.
func results(t *testing.T, conv []reprise.Message) map[string]result {
	t.Helper()
	out := map[string]result{}
	for i := len(conv) - 1; i >= 0 && conv[i].Role == "user"; i-- {
		for _, b := range conv[i].Content {
			if b.Type != "tool_result" {
				continue
			}
			var r struct {
				ID      string          `json:"tool_use_id"`
				Content json.RawMessage `json:"content"`
				IsError bool            `json:"is_error"`
			}
			if err := json.Unmarshal(b.Raw, &r); err != nil {
				t.Fatalf("tool_result %s: %v", b.Raw, err)
			}
			var text string
			if err := json.Unmarshal(r.Content, &text); err != nil {
				t.Fatalf("tool_result content %s is not a string: %v", r.Content, err)
			}
			out[r.ID] = result{text, r.IsError}
		}
	}
	return out
}

// transcript is a short conversation a Stop hook judges.
var transcript = []reprise.Message{reprise.Text("user", "fix the build"), reprise.Text("assistant", "fixed, tests pass")}

// TestPromptEvaluatorAsksOnce checks that a prompt hook's model gets the
// named model, the system prompt, no tools, the transcript and then the
// prompt, and that its text blocks make the answer; its error is the
// evaluator's.
func TestPromptEvaluatorAsksOnce(t *testing.T) {
	m := &hookModel{t: t, steps: []hookStep{{
		check: func(t *testing.T, conv []reprise.Message) {
			if len(conv) != 3 || conv[0].Content[0].Text != "fix the build" || conv[1].Role != "assistant" ||
				conv[2].Role != "user" || conv[2].Content[0].Text != "Condition: the tests were run" {
				t.Errorf("conversation %+v: want the transcript, then the prompt", conv)
			}
		},
		answer: said(`{"ok": true,`, ` "reason": "they pass"}`),
	}}}
	eval := turn.PromptEvaluator(m.models)
	q := hookexec.Question{Event: hookexec.Stop, System: "judge it", Prompt: "Condition: the tests were run", Model: "small", Transcript: transcript}
	answer, err := eval(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if answer != `{"ok": true, "reason": "they pass"}` {
		t.Errorf("answer %q: want the text blocks joined", answer)
	}
	if m.name != "small" || m.system != "judge it" || m.tools != nil || m.asked() != 1 {
		t.Errorf("model %q, system %q, tools %v, %d requests; want small, the question's system, none, one", m.name, m.system, m.tools, m.asked())
	}

	overloaded := errors.New("overloaded")
	m = &hookModel{t: t, steps: []hookStep{{check: func(t *testing.T, conv []reprise.Message) {
		if len(conv) != 1 || conv[0].Content[0].Text != "Is it safe?" {
			t.Errorf("conversation %+v: want the prompt alone", conv)
		}
	}, err: overloaded}}}
	_, err = turn.PromptEvaluator(m.models)(context.Background(), hookexec.Question{Prompt: "Is it safe?"})
	if !errors.Is(err, overloaded) {
		t.Errorf("error %v: want the model's", err)
	}
}

// workDir is a directory for agent hooks to read: notes.txt of five
// lines, and Go files at three depths.
func workDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"notes.txt":        "first\nsecond\nthird\nfourth\nfifth\n",
		"src/a.go":         "package src\n\nfunc Alpha() {}\n",
		"src/b.go":         "package src\n\n// no functions here\n",
		"src/deep/c.go":    "package deep\n\nfunc Gamma() {}\n",
		"docs/readme.md":   "func Delta is not Go\n",
		".git/config.go":   "func Hidden() {}\n",
		"src/data.bin":     "func Binary\x00\x01\n",
		"src/deep/x.go.md": "func Epsilon() {}\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestAgentEvaluatorReadsTheDirectory plays an agent hook whose model
// reads part of a file, greps, globs and then answers: each tool answers
// from the question's directory, the model gets the transcript before
// the prompt, the system prompt asks for the verdict, and the last
// answer's text is the evaluator's.
func TestAgentEvaluatorReadsTheDirectory(t *testing.T) {
	dir := workDir(t)
	m := &hookModel{t: t}
	m.steps = []hookStep{
		{check: func(t *testing.T, conv []reprise.Message) {
			if len(conv) != 3 || conv[0].Content[0].Text != "fix the build" || conv[1].Content[0].Text != "fixed, tests pass" ||
				conv[2].Role != "user" || conv[2].Content[0].Text != "Were the tests run?" {
				t.Errorf("conversation %+v: want the transcript, then the prompt", conv)
			}
		}, answer: uses("r1:Read", map[string]any{"file_path": "notes.txt", "offset": 2, "limit": 2})},
		{check: func(t *testing.T, conv []reprise.Message) {
			got := results(t, conv)["r1"]
			want := "     2\tsecond\n     3\tthird\n(more lines follow: read on with offset 4)\n"
			if got.isError || got.text != want {
				t.Errorf("Read gave %q (error %v); want %q", got.text, got.isError, want)
			}
		}, answer: uses("g1:Grep", map[string]any{"pattern": `func \w+`, "glob": "*.go"})},
		{check: func(t *testing.T, conv []reprise.Message) {
			got := results(t, conv)["g1"]
			want := "src/a.go:3:func Alpha() {}\nsrc/deep/c.go:3:func Gamma() {}\n"
			if got.isError || got.text != want {
				t.Errorf("Grep gave %q (error %v); want %q", got.text, got.isError, want)
			}
		}, answer: uses("l1:Glob", map[string]any{"pattern": "**/*.go", "path": "src"}, "l2:Glob", map[string]any{"pattern": "*.{md,txt}"})},
		{check: func(t *testing.T, conv []reprise.Message) {
			got := results(t, conv)
			if want := "src/a.go\nsrc/b.go\nsrc/deep/c.go\n"; got["l1"].text != want {
				t.Errorf("Glob **/*.go gave %q; want %q", got["l1"].text, want)
			}
			if want := "notes.txt\n"; got["l2"].text != want {
				t.Errorf("Glob *.{md,txt} gave %q; want %q", got["l2"].text, want)
			}
		}, answer: said(`{"ok": false, "reason": "no test output"}`)},
	}
	q := hookexec.Question{Event: hookexec.Stop, System: "Judge the stop.", Prompt: "Were the tests run?", Model: "judge",
		Transcript: transcript, Dir: dir, MaxTurns: hookexec.AgentHookMaxTurns}
	answer, err := turn.AgentEvaluator(m.models)(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if answer != `{"ok": false, "reason": "no test output"}` || m.asked() != 4 {
		t.Errorf("answer %q after %d requests; want the last answer's text after 4", answer, m.asked())
	}
	if m.name != "judge" || !strings.HasPrefix(m.system, "Judge the stop.\n\n") || !strings.Contains(m.system, dir) ||
		!strings.Contains(m.system, "verdict") {
		t.Errorf("model %q, system %q: want the hook's model, its system prompt and the verdict line", m.name, m.system)
	}
	var names []string
	for _, spec := range m.tools {
		var schema struct {
			Type     string         `json:"type"`
			Props    map[string]any `json:"properties"`
			Required []string       `json:"required"`
		}
		if err := json.Unmarshal(spec.InputSchema, &schema); err != nil || schema.Type != "object" || len(schema.Required) != 1 || spec.Description == "" {
			t.Errorf("tool %s: schema %s (%v), description %q", spec.Name, spec.InputSchema, err, spec.Description)
		}
		for _, req := range schema.Required {
			if schema.Props[req] == nil {
				t.Errorf("tool %s requires %s, which its schema does not describe", spec.Name, req)
			}
		}
		names = append(names, spec.Name)
	}
	if fmt.Sprint(names) != "[Read Grep Glob]" {
		t.Errorf("tools %v; want Read, Grep and Glob", names)
	}
}

// TestAgentToolsStayInTheDirectory checks that the tools refuse every
// way out of the directory, "..", absolute paths and symlinks, and that
// what leads out is never read, while the same ways within it work.
func TestAgentToolsStayInTheDirectory(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOPSECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(outside, "work")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"out.txt": "../secret.txt", "outdir": "..", "abs.txt": filepath.Join(outside, "secret.txt"), "in.txt": "notes.txt"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Skipf("no symlinks here: %v", err)
		}
	}
	refused := map[string]any{
		"r1": map[string]any{"file_path": "../secret.txt"},
		"r2": map[string]any{"file_path": filepath.Join(outside, "secret.txt")},
		"r3": map[string]any{"file_path": "out.txt"},
		"r4": map[string]any{"file_path": "abs.txt"},
		"r5": map[string]any{"file_path": "outdir/secret.txt"},
		"r6": map[string]any{"file_path": "sub/../../secret.txt"},
		"g1": map[string]any{"pattern": "TOP", "path": "outdir"},
		"g2": map[string]any{"pattern": "TOP", "path": ".."},
		"g3": map[string]any{"pattern": "TOP", "path": "out.txt"},
		"l1": map[string]any{"pattern": "*", "path": "outdir"},
		"l2": map[string]any{"pattern": "*", "path": "../"},
		"l3": map[string]any{"pattern": filepath.Join(outside, "*.txt")},
	}
	allowed := map[string]any{
		"a1": map[string]any{"file_path": "in.txt"},
		"a2": map[string]any{"file_path": filepath.Join(dir, "notes.txt")},
		"a3": map[string]any{"file_path": "outdir/../notes.txt"}, // ".." is read by name: notes.txt
		"a4": map[string]any{"file_path": "x/../notes.txt"},
		"a5": map[string]any{"pattern": "TOP|inside"},
		"a6": map[string]any{"pattern": "**"},
	}
	tool := func(id string) string {
		switch id[0] {
		case 'r', 'a':
			if id == "a5" {
				return "Grep"
			}
			if id == "a6" {
				return "Glob"
			}
			return "Read"
		case 'g':
			return "Grep"
		}
		return "Glob"
	}
	var calls []any
	for _, set := range []map[string]any{refused, allowed} {
		for id, in := range set {
			calls = append(calls, id+":"+tool(id), in)
		}
	}
	m := &hookModel{t: t}
	m.steps = []hookStep{{answer: uses(calls...)}, {check: func(t *testing.T, conv []reprise.Message) {
		got := results(t, conv)
		for id := range refused {
			if r := got[id]; !r.isError || strings.Contains(r.text, "TOPSECRET") {
				t.Errorf("%s %v gave %q (error %v); want it refused", tool(id), refused[id], r.text, r.isError)
			}
		}
		for _, id := range []string{"a1", "a2", "a3", "a4"} {
			if r := got[id]; r.isError || r.text != "     1\tinside\n" {
				t.Errorf("Read %v gave %q (error %v); want the file", allowed[id], r.text, r.isError)
			}
		}
		if r := got["a5"]; r.isError || r.text != "in.txt:1:inside\nnotes.txt:1:inside\n" {
			t.Errorf("Grep over the directory gave %q (error %v); want notes.txt, and its link, but no link out", r.text, r.isError)
		}
		if r := got["a6"]; r.isError || strings.Contains(r.text, "secret") || !strings.Contains(r.text, "outdir\n") {
			t.Errorf("Glob ** gave %q (error %v); want the links listed, never walked", r.text, r.isError)
		}
	}, answer: said(`{"ok": true, "reason": "-"}`)}}
	if _, err := turn.AgentEvaluator(m.models)(context.Background(), hookexec.Question{Prompt: "look", Dir: dir, MaxTurns: 5}); err != nil {
		t.Fatal(err)
	}
	if m.asked() != 2 {
		t.Errorf("%d requests; want 2", m.asked())
	}
}

// TestAgentEvaluatorTurnLimit checks that a model that keeps calling
// tools is stopped at the question's MaxTurns, with an error that says
// so.
func TestAgentEvaluatorTurnLimit(t *testing.T) {
	m := &hookModel{t: t}
	for i := range 10 {
		m.steps = append(m.steps, hookStep{answer: uses(fmt.Sprintf("l%d:Glob", i), map[string]any{"pattern": "*"})})
	}
	_, err := turn.AgentEvaluator(m.models)(context.Background(), hookexec.Question{Prompt: "look", Dir: t.TempDir(), MaxTurns: 3})
	if err == nil || !strings.Contains(err.Error(), "no verdict in 3 turns") {
		t.Errorf("error %v; want the turn limit", err)
	}
	if m.asked() != 3 {
		t.Errorf("%d requests; want 3", m.asked())
	}
}

// TestAgentEvaluatorStopsWithItsContext checks that a cancelled context
// stops an agent hook's turn while the model is asked, and that a model's
// error is the evaluator's.
func TestAgentEvaluatorStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &hookModel{t: t}
	m.steps = []hookStep{{answer: uses("l1:Glob", map[string]any{"pattern": "*"})}, {check: func(t *testing.T, conv []reprise.Message) {
		cancel()
	}}}
	// The second request waits for its context, as a real one does.
	models := func(name, system string, tools []turn.ToolSpec) turn.Model {
		inner := m.models(name, system, tools)
		return func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
			answer, err := inner(ctx, conv)
			if m.asked() < 2 {
				return answer, err
			}
			<-ctx.Done()
			return reprise.Message{}, ctx.Err()
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := turn.AgentEvaluator(models)(ctx, hookexec.Question{Prompt: "look", Dir: t.TempDir()})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v; want the context's", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the evaluator did not return after its context ended")
	}

	refused := errors.New("invalid key")
	m = &hookModel{t: t, steps: []hookStep{{err: refused}}}
	if _, err := turn.AgentEvaluator(m.models)(context.Background(), hookexec.Question{Prompt: "look", Dir: t.TempDir()}); !errors.Is(err, refused) {
		t.Errorf("error %v; want the model's", err)
	}
}

// TestAgentHookDeniesThroughHookexec runs an agent PreToolUse hook
// through hookexec.Exec with AgentEvaluator: its model reads the
// project's policy and answers ok: false, and the call is denied with
// its reason.
func TestAgentHookDeniesThroughHookexec(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "POLICY.md"), []byte("Never delete the build directory.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &hookModel{t: t}
	m.steps = []hookStep{
		{check: func(t *testing.T, conv []reprise.Message) {
			if last := conv[len(conv)-1]; !strings.Contains(last.Content[0].Text, `"command":"rm -rf build"`) {
				t.Errorf("prompt %q: want the call's input in place of $ARGUMENTS", last.Content[0].Text)
			}
		}, answer: uses("r1:Read", map[string]any{"file_path": "POLICY.md"})},
		{check: func(t *testing.T, conv []reprise.Message) {
			if r := results(t, conv)["r1"]; !strings.Contains(r.text, "Never delete the build directory.") {
				t.Errorf("Read gave %q; want the policy", r.text)
			}
		}, answer: said(`{"ok": false, "reason": "POLICY.md forbids deleting build"}`)},
	}
	text := "Does this call follow POLICY.md? $ARGUMENTS"
	h := hookexec.Hook{Event: hookexec.PreToolUse, Name: "agent: " + text, Source: "test", Body: hookexec.Prompt{Text: text, Agent: true}}
	x := hookexec.Exec{AgentEvaluator: turn.AgentEvaluator(m.models), Supervisor: hookexec.NoSupervisor}
	in := hookexec.ToolInput{SessionID: "s1", Cwd: dir, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"rm -rf build"}`), ToolUseID: "toolu_1"}
	outcomes, d := x.PreToolUse(context.Background(), []hookexec.Hook{h}, in, hookexec.CommandEnv{ProjectDir: dir})
	if d.Decision != hookexec.Deny || !strings.Contains(d.Reason, "POLICY.md forbids deleting build") {
		t.Fatalf("decision %+v, outcomes %+v; want a deny with the model's reason", d, outcomes)
	}
	if m.asked() != 2 || len(outcomes) != 1 || outcomes[0].Type != "agent" {
		t.Errorf("%d requests, outcomes %+v; want 2 and one agent outcome", m.asked(), outcomes)
	}
}

// callTool runs one call of tool with input through an agent hook on dir,
// and returns the result the model got.
func callTool(t *testing.T, dir, tool string, input any) result {
	t.Helper()
	var got result
	m := &hookModel{t: t}
	m.steps = []hookStep{{answer: uses("c1:"+tool, input)}, {check: func(t *testing.T, conv []reprise.Message) {
		got = results(t, conv)["c1"]
	}, answer: said(`{"ok": true, "reason": "-"}`)}}
	if _, err := turn.AgentEvaluator(m.models)(context.Background(), hookexec.Question{Prompt: "look", Dir: dir, MaxTurns: 2}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestAgentToolsBoundWhatTheyGive checks the tools' bounds: Read's
// default of 2000 lines, its cut of long lines and of long answers, and
// the files it refuses; Grep's 200 matches; Glob's 200 files.
func TestAgentToolsBoundWhatTheyGive(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var lines strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&lines, "line %d\n", i)
	}
	write("long.txt", lines.String())
	write("wide.txt", strings.Repeat("x", 5000)+"\nshort\n")
	write("huge.txt", strings.Repeat(strings.Repeat("y", 1000)+"\n", 200))
	write("bin.dat", "abc\x00def")
	write("empty.txt", "")
	if err := os.Mkdir(filepath.Join(dir, "many"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 250 {
		if err := os.WriteFile(filepath.Join(dir, "many", fmt.Sprintf("f%03d.txt", i)), []byte("match\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	r := callTool(t, dir, "Read", map[string]any{"file_path": "long.txt"})
	if n := strings.Count(r.text, "\tline "); n != 2000 || !strings.HasSuffix(r.text, "  2000\tline 2000\n(more lines follow: read on with offset 2001)\n") {
		t.Errorf("Read of 2500 lines gave %d of them, ending %q; want 2000 and where to go on", n, r.text[max(0, len(r.text)-80):])
	}
	r = callTool(t, dir, "Read", map[string]any{"file_path": "long.txt", "offset": 2499})
	if r.text != "  2499\tline 2499\n  2500\tline 2500\n" {
		t.Errorf("Read from 2499 gave %q", r.text)
	}
	r = callTool(t, dir, "Read", map[string]any{"file_path": "long.txt", "offset": 3000})
	if !strings.Contains(r.text, "has 2500 lines") {
		t.Errorf("Read past the end gave %q", r.text)
	}
	r = callTool(t, dir, "Read", map[string]any{"file_path": "wide.txt"})
	if want := "     1\t" + strings.Repeat("x", 2000) + " [line cut]\n     2\tshort\n"; r.text != want {
		t.Errorf("Read of a 5000-byte line gave %d bytes: %.60q...; want it cut at 2000", len(r.text), r.text)
	}
	r = callTool(t, dir, "Read", map[string]any{"file_path": "huge.txt"})
	if len(r.text) > 64<<10 || !strings.Contains(r.text, "(cut at 64 KiB: read on with offset ") {
		t.Errorf("Read of 200 KB gave %d bytes ending %q; want at most 64 KiB and where to go on", len(r.text), r.text[max(0, len(r.text)-60):])
	}
	for name, want := range map[string]string{"bin.dat": "binary", "many": "is a directory", "missing.txt": "does not exist"} {
		if r := callTool(t, dir, "Read", map[string]any{"file_path": name}); !r.isError || !strings.Contains(r.text, want) {
			t.Errorf("Read %s gave %q (error %v); want it refused: %s", name, r.text, r.isError, want)
		}
	}
	if r := callTool(t, dir, "Read", map[string]any{"file_path": "empty.txt"}); r.isError || r.text != "(the file is empty)" {
		t.Errorf("Read of an empty file gave %q", r.text)
	}

	r = callTool(t, dir, "Grep", map[string]any{"pattern": "^match$", "path": "many"})
	if n := strings.Count(r.text, ":1:match\n"); n != 200 || !strings.Contains(r.text, "(cut at 200 matches") {
		t.Errorf("Grep over 250 matches gave %d, ending %q; want 200 and a note", n, r.text[max(0, len(r.text)-80):])
	}
	if r := callTool(t, dir, "Grep", map[string]any{"pattern": "(unclosed"}); !r.isError {
		t.Errorf("Grep with a bad pattern gave %q; want an error", r.text)
	}
	if r := callTool(t, dir, "Grep", map[string]any{"pattern": "nowhere to be found"}); r.text != "No matches" {
		t.Errorf("Grep for nothing gave %q", r.text)
	}
	r = callTool(t, dir, "Glob", map[string]any{"pattern": "many/*.txt"})
	if n := strings.Count(r.text, ".txt\n"); n != 200 || !strings.HasPrefix(r.text, "many/f000.txt\n") || !strings.Contains(r.text, "(cut at 200 of 250 files") {
		t.Errorf("Glob of 250 files gave %d, ending %q; want the first 200 in order and a note", n, r.text[max(0, len(r.text)-80):])
	}
}

// TestAgentEvaluatorLeavesNothingBehind checks that an agent hook's turn
// writes no file: not in the directory it reads, not in the temporary
// directory.
func TestAgentEvaluatorLeavesNothingBehind(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := workDir(t)
	before := tree(t, dir)
	if r := callTool(t, dir, "Glob", map[string]any{"pattern": "**/*.go"}); r.isError || !strings.Contains(r.text, "src/a.go") {
		t.Fatalf("Glob gave %q (error %v)", r.text, r.isError)
	}
	if after := tree(t, dir); after != before {
		t.Errorf("the directory changed:\n%s\nwas:\n%s", after, before)
	}
	if left := tree(t, tmp); left != "" {
		t.Errorf("the temporary directory holds:\n%s", left)
	}
}

// tree lists the paths under dir, one a line.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if p != dir {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(paths, "\n")
}

// BenchmarkAgentEvaluator measures an agent hook of two requests, a Glob
// and the verdict, with a model that answers at once: what the turn of
// its own costs.
func BenchmarkAgentEvaluator(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	glob := uses("l1:Glob", map[string]any{"pattern": "*.go"})
	verdict := said(`{"ok": true, "reason": "-"}`)
	models := func(string, string, []turn.ToolSpec) turn.Model {
		return func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
			if len(conv) == 1 {
				return glob, nil
			}
			return verdict, nil
		}
	}
	eval := turn.AgentEvaluator(models)
	q := hookexec.Question{Prompt: "look", Dir: dir, MaxTurns: 5}
	for b.Loop() {
		if answer, err := eval(context.Background(), q); err != nil || answer != verdict.Content[0].Text {
			b.Fatalf("answer %q, %v", answer, err)
		}
	}
}
