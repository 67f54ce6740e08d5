package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/examples/agent/internal/fakeapi"
	"github.com/reprise-dev/reprise/turn"
)

// fixtures is where Claude Code 2.1.328's recorded subagent runs are.
const fixtures = "../../testdata/claudecode/subagents"

// subagentAPI is a fake Messages API whose main model hands one task to a
// subagent for each of its tags (calls toolu_agent_TAG of the Agent tool,
// all in its first answer), then answers "done:" and the results it got.
// A request is a subagent's when its system prompt is the subagent
// type's; its first message is then "List the files (TAG)". A subagent
// first calls Bash (toolu_ls_TAG) with command(TAG), then answers
// "files: OUTPUT (TAG)" with what the command printed.
type subagentAPI struct {
	fakeapi.Server
	url     string
	tags    []string
	command func(tag string) string

	mu   sync.Mutex
	subs map[string][]subRequest // the subagents' requests, by tag
	main map[int]int             // the main agent's requests, by the answers they follow
}

// subRequest is what the tests check of a subagent's request: the tools
// it offers, and how many answers of the subagent it follows.
type subRequest struct {
	tools    []string
	answered int
}

func newSubagentAPI(t *testing.T, command func(tag string) string, tags ...string) *subagentAPI {
	f := &subagentAPI{tags: tags, command: command, subs: map[string][]subRequest{}, main: map[int]int{}}
	f.Answer = f.answer
	f.url = serveFake(t, &f.Server)
	return f
}

func (f *subagentAPI) answer(req *fakeapi.Request) (fakeapi.Answer, error) {
	var body struct {
		System []struct {
			Text string `json:"text"`
		} `json:"system"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return fakeapi.Answer{}, err
	}
	answered := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			answered++
		}
	}
	a := fakeapi.Answer{InputTokens: 10, OutputTokens: 5, StopReason: "end_turn"}
	if len(body.System) == 1 && body.System[0].Text == subagentTypes[reprise.DefaultSubagentType].system {
		first, _ := req.Messages[0].Content[0]["text"].(string)
		tag := strings.TrimSuffix(strings.TrimPrefix(first, "List the files ("), ")")
		var tools []string
		for _, tool := range body.Tools {
			tools = append(tools, tool.Name)
		}
		f.mu.Lock()
		f.subs[tag] = append(f.subs[tag], subRequest{tools: tools, answered: answered})
		f.mu.Unlock()
		if answered == 0 {
			a.StopReason = "tool_use"
			a.Content = []fakeapi.Block{fakeapi.ToolUse("toolu_ls_"+tag, "Bash", map[string]any{"command": f.command(tag), "description": "List files"})}
			return a, nil
		}
		a.Content = []fakeapi.Block{fakeapi.Text("files: " + strings.Join(lastResults(req), " ") + " (" + tag + ")")}
		return a, nil
	}
	f.mu.Lock()
	f.main[answered]++
	f.mu.Unlock()
	if answered == 0 {
		a.StopReason = "tool_use"
		for _, tag := range f.tags {
			a.Content = append(a.Content, fakeapi.ToolUse("toolu_agent_"+tag, "Agent", map[string]any{
				"description": "list files " + tag, "prompt": "List the files (" + tag + ")", "subagent_type": "general-purpose"}))
		}
		return a, nil
	}
	a.Content = []fakeapi.Block{fakeapi.Text("done: " + strings.Join(lastResults(req), "; "))}
	return a, nil
}

// lastResults returns the texts of the tool_results of a request's last
// message, its words joined by spaces.
func lastResults(req *fakeapi.Request) []string {
	var out []string
	for _, b := range req.Messages[len(req.Messages)-1].Content {
		if b["type"] != "tool_result" {
			continue
		}
		var text string
		switch c := b["content"].(type) {
		case string:
			text = c
		case []any:
			for _, part := range c {
				if p, ok := part.(map[string]any); ok {
					s, _ := p["text"].(string)
					text += s
				}
			}
		}
		out = append(out, strings.Join(strings.Fields(text), " "))
	}
	return out
}

// hookEvents are the events whose command hooks log their input in the
// subagent tests: all that Claude Code ran in the recorded runs.
var hookEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "SubagentStart", "SubagentStop", "Stop", "SessionEnd"}

// subagentEnv makes the home and project of a subagent turn: the home's
// settings give every event of hookEvents one command hook that appends
// its stdin, a line, to the log it returns; the project holds a.txt and
// b.txt and settings without hooks.
func subagentEnv(t *testing.T) (ev *env, log string) {
	ev = setup(t)
	log = filepath.Join(filepath.Dir(ev.home), "hooks.jsonl")
	hooks := map[string]any{}
	for _, event := range hookEvents {
		// One write a line, so that the hooks of subagents that run at
		// once do not mix their lines.
		hooks[event] = []any{map[string]any{"hooks": []any{command(`in=$(cat); printf '%s\n' "$in" >> '` + log + "'")}}}
	}
	writeSettings(t, filepath.Join(ev.home, ".claude", "settings.json"), hooks)
	writeSettings(t, filepath.Join(ev.project, ".claude", "settings.json"), map[string]any{})
	for _, name := range []string{"a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(ev.project, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ev, log
}

// hookRun is one hook's input.
type hookRun struct {
	event string
	input map[string]any
}

// readHookLog reads a log of hook inputs: the fixtures' lines of
// {"event", "input"}, or the tests' lines of bare inputs.
func readHookLog(t *testing.T, path string) []hookRun {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var runs []hookRun
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Text())
		}
		if in, ok := line["input"].(map[string]any); ok && line["event"] != nil {
			line = in
		}
		event, _ := line["hook_event_name"].(string)
		runs = append(runs, hookRun{event: event, input: line})
	}
	return runs
}

// knownDifferences are how reprise's hook inputs differ from those of
// Claude Code 2.1.328's recorded runs, by event, the main agent's and a
// subagent's apart: "-key" for a key Claude Code sends and reprise does
// not, "+key" for one reprise sends and Claude Code does not. effort,
// background_tasks and session_crons stand for features of Claude Code's
// that reprise has no counterpart of. The comparison fails on any other
// difference, and says so of one of these that is gone.
var knownDifferences = map[string][]string{
	"main PreToolUse":       {"-effort"},
	"main PostToolUse":      {"-effort"},
	"main Stop":             {"-effort", "-background_tasks", "-session_crons"},
	"main SessionEnd":       {"-prompt_id", "+end_source"},
	"subagent PreToolUse":   {"-effort"},
	"subagent PostToolUse":  {"-effort"},
	"subagent SubagentStop": {"-effort", "-background_tasks", "-session_crons"},
}

// hookKeys is one hook of an agent: its event and its input's keys.
type hookKeys struct {
	event string
	keys  []string
}

// agentSequences returns, for each agent of runs ("" for the main agent,
// else its agent_id), its hooks in order.
func agentSequences(runs []hookRun) map[string][]hookKeys {
	seqs := map[string][]hookKeys{}
	for _, r := range runs {
		id, _ := r.input["agent_id"].(string)
		seqs[id] = append(seqs[id], hookKeys{r.event, slices.Sorted(maps.Keys(r.input))})
	}
	return seqs
}

// compareHooks compares the hooks got of one agent (who: main or
// subagent) with those Claude Code ran, want: the same events in the same
// order, and their keys the same but for knownDifferences. It returns
// what differs, and adds to seen the known differences found.
func compareHooks(who string, got, want []hookKeys, seen map[string]bool) []string {
	events := func(hs []hookKeys) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.event)
		}
		return out
	}
	if !slices.Equal(events(got), events(want)) {
		return []string{fmt.Sprintf("%s: hooks %v, Claude Code's %v", who, events(got), events(want))}
	}
	var diffs []string
	for i := range got {
		what := who + " " + got[i].event
		var found []string
		for _, k := range want[i].keys {
			if !slices.Contains(got[i].keys, k) {
				found = append(found, "-"+k)
			}
		}
		for _, k := range got[i].keys {
			if !slices.Contains(want[i].keys, k) {
				found = append(found, "+"+k)
			}
		}
		for _, d := range found {
			if slices.Contains(knownDifferences[what], d) {
				seen[what+" "+d] = true
			} else {
				diffs = append(diffs, fmt.Sprintf("%s (hook %d): %s", what, i+1, d))
			}
		}
	}
	return diffs
}

// checkAgainstFixture compares the hooks of runs with those Claude Code ran
// in fixture: the main agent's in the same order with the same keys, and
// each subagent's likewise, against any of the recorded subagents (they
// ran alike).
func checkAgainstFixture(t *testing.T, runs []hookRun, fixture string) {
	t.Helper()
	want := agentSequences(readHookLog(t, fixture))
	got := agentSequences(runs)
	if len(got) != len(want) {
		t.Fatalf("%d agents ran hooks, want %d as in %s", len(got), len(want), fixture)
	}
	var sub []hookKeys
	for id, seq := range want {
		if id != "" {
			sub = seq
		}
	}
	seen := map[string]bool{}
	diffs := compareHooks("main", got[""], want[""], seen)
	for id, seq := range got {
		if id != "" {
			diffs = append(diffs, compareHooks("subagent", seq, sub, seen)...)
		}
	}
	for _, d := range diffs {
		t.Errorf("against %s: %s", filepath.Base(fixture), d)
	}
	for what, ds := range knownDifferences {
		for _, d := range ds {
			if !seen[what+" "+d] {
				t.Logf("%s %s no longer differs from %s: take it out of knownDifferences", what, d, filepath.Base(fixture))
			}
		}
	}
}

// TestSubagentHooks runs a turn whose model calls the Agent tool once, and
// one whose model calls it twice in one answer, with --parallel, each
// subagent's Bash call waiting until the other's has started. The hooks of
// every event log their input: each agent's run in the order, and with
// the keys, that Claude Code 2.1.328's recorded runs have
// (hooks-single-fg.jsonl, hooks-parallel-fg.jsonl); each subagent's hooks
// are told the parent's session and transcript, its agent_id (the one
// reprise gives the call) and type, and come between the PreToolUse and
// PostToolUse of its call. Each subagent asked with its own system prompt
// and tools; the parent's tool_result of each call holds its subagent's
// final answer, which the main model got.
func TestSubagentHooks(t *testing.T) {
	cases := []struct {
		name, fixture string
		tags          []string
		parallel      bool
	}{
		{"single", "hooks-single-fg.jsonl", []string{"A"}, false},
		{"parallel", "hooks-parallel-fg.jsonl", []string{"A", "B"}, true},
	}
	dir, err := filepath.Abs(fixtures) // before setup changes directory
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, log := subagentEnv(t)
			root := filepath.Dir(ev.home)
			command := func(tag string) string { return "ls" }
			if c.parallel {
				// Each waits (5s at most) for the other to start: run one
				// after the other, the first says "alone".
				command = func(tag string) string {
					other := "A"
					if tag == "A" {
						other = "B"
					}
					mark := func(tag string) string { return "'" + filepath.Join(root, "started-"+tag) + "'" }
					return "touch " + mark(tag) + "; i=0; while [ ! -e " + mark(other) + " ]; do " +
						"i=$((i+1)); if [ $i -gt 100 ]; then echo alone; break; fi; sleep 0.05; done; ls"
				}
			}
			api := newSubagentAPI(t, command, c.tags...)
			args := []string{"--store", ev.store, "--base-url", api.url, "--model", "claude-test", "--allowed-tools", "Bash"}
			if c.parallel {
				args = append(args, "--parallel")
			}
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, strings.NewReader("go\n"), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			m := resumeLine.FindStringSubmatch(stderr.String())
			if m == nil {
				t.Fatalf("no resume line:\n%s", stderr.String())
			}
			session := m[2]

			runs := readHookLog(t, log)
			checkAgainstFixture(t, runs, filepath.Join(dir, c.fixture))
			checkSubagentHookInputs(t, runs, ev.store, session, c.tags)

			var results []string
			for _, tag := range c.tags {
				results = append(results, "files: a.txt b.txt ("+tag+")")
				reqs := api.subs[tag]
				if len(reqs) != 2 {
					t.Errorf("subagent %s made %d requests, want 2", tag, len(reqs))
				}
				for _, r := range reqs {
					if !reflect.DeepEqual(r.tools, []string{"Bash", "Read", "Write", "Agent"}) {
						t.Errorf("subagent %s was offered %v, want Bash, Read, Write and Agent", tag, r.tools)
					}
				}
			}
			if want := "done: " + strings.Join(results, "; ") + "\n"; !strings.HasSuffix(stdout.String(), want) {
				t.Errorf("stdout does not end with the main model's %q", want)
			}
			checkAgentResults(t, ev.store, session, c.tags)
		})
	}
}

// checkSubagentHookInputs checks what the hooks inside each subagent of
// session (its Agent call toolu_agent_TAG) were told, and that they ran
// between the PreToolUse and the PostToolUse of its call.
func checkSubagentHookInputs(t *testing.T, runs []hookRun, store, session string, tags []string) {
	t.Helper()
	e, err := reprise.Open(store, reprise.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	transcript := e.TranscriptPath(session)
	for _, tag := range tags {
		call := "toolu_agent_" + tag
		agentID := reprise.SubagentID(session, call)
		pre, post, first, last := -1, -1, -1, -1
		for i, r := range runs {
			if r.input["tool_use_id"] == call {
				switch r.event {
				case "PreToolUse":
					pre = i
				case "PostToolUse":
					post = i
				}
			}
			if r.input["agent_id"] != agentID {
				continue
			}
			if first < 0 {
				first = i
			}
			last = i
			if r.input["session_id"] != session || r.input["transcript_path"] != transcript || r.input["agent_type"] != "general-purpose" {
				t.Errorf("subagent %s's %s hook was told %v; want the parent's session and transcript, agent_type general-purpose", tag, r.event, r.input)
			}
			switch r.event {
			case "SubagentStop":
				if r.input["last_assistant_message"] != "files: a.txt b.txt ("+tag+")" || r.input["stop_hook_active"] != false ||
					r.input["agent_transcript_path"] != e.TranscriptPath(reprise.SubagentSession(agentID)) {
					t.Errorf("subagent %s's SubagentStop: %v", tag, r.input)
				}
			case "PreToolUse", "PostToolUse":
				if r.input["tool_use_id"] != "toolu_ls_"+tag || r.input["tool_name"] != "Bash" {
					t.Errorf("subagent %s's %s: %v", tag, r.event, r.input)
				}
			}
		}
		if first < 0 || runs[first].event != "SubagentStart" || runs[last].event != "SubagentStop" {
			t.Errorf("subagent %s (agent_id %s): its hooks do not run from SubagentStart to SubagentStop", tag, agentID)
		}
		if !(pre >= 0 && pre < first && last < post) {
			t.Errorf("subagent %s's hooks (%d to %d) are not between its call's PreToolUse (%d) and PostToolUse (%d)", tag, first, last, pre, post)
		}
		if post >= 0 && runs[post].input["tool_name"] != "Agent" {
			t.Errorf("the PostToolUse of %s: %v", call, runs[post].input)
		}
	}
}

// checkAgentResults checks that each Agent call toolu_agent_TAG of session
// has one tool_result, not an error, holding its subagent's final answer.
func checkAgentResults(t *testing.T, store, session string, tags []string) {
	t.Helper()
	results := map[string][]string{}
	for id, rs := range toolResults(t, store, session) {
		for _, r := range rs {
			results[id] = append(results[id], fmt.Sprintf("%v error=%v", r.Content, r.IsError))
		}
	}
	for _, tag := range tags {
		want := []string{"files: a.txt b.txt (" + tag + ") error=false"}
		if got := results["toolu_agent_"+tag]; !reflect.DeepEqual(got, want) {
			t.Errorf("the tool_results of toolu_agent_%s: %q, want %q", tag, got, want)
		}
	}
}

// TestKilledInASubagent kills the agent with SIGKILL while its subagents'
// Bash calls run (the one subagent that has started, one after the other;
// both, with --parallel), then finishes the turn with `agent --session
// ID`. Then: each subagent's SubagentStart and SubagentStop hooks ran
// once, its Bash call ran once (its result, recorded after the kill, says
// it was interrupted, as the call may have run), no PostToolUse hook ran
// twice for a call, no answer was asked for twice, and each Agent call has
// one tool_result: its subagent's final answer.
func TestKilledInASubagent(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprintf("parallel=%v", parallel), func(t *testing.T) {
			ev, log := subagentEnv(t)
			effects := filepath.Join(filepath.Dir(ev.home), "effects")
			api := newSubagentAPI(t, func(tag string) string {
				return "echo toolu_ls_" + tag + " >> '" + effects + "'; sleep 1; ls"
			}, "A", "B")
			ev.api.url = api.url
			args := ev.args("--allowed-tools", "Bash")
			if parallel {
				args = append(args, "--parallel")
			}
			running := 1
			if parallel {
				running = 2
			}
			child := exec.Command(os.Args[0], args...)
			child.Env = append(os.Environ(), childEnv+"=1")
			child.Stdin = strings.NewReader("go\n")
			var said bytes.Buffer
			child.Stderr = &said
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(countLines(t, effects, func(s string) string { return s })) < running {
				if time.Now().After(deadline) {
					child.Process.Kill()
					child.Wait()
					t.Fatalf("no subagent's Bash call ran:\n%s", said.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			child.Process.Signal(syscall.SIGKILL)
			var exit *exec.ExitError
			if err := child.Wait(); !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() {
				t.Fatalf("the agent was not killed (%v):\n%s", err, said.String())
			}
			session := ""
			for _, line := range strings.Split(said.String(), "\n") {
				if id, ok := strings.CutPrefix(line, "session "); ok {
					session, _, _ = strings.Cut(id, " ")
					break
				}
			}
			if session == "" {
				t.Fatalf("the agent named no session:\n%s", said.String())
			}

			again := exec.Command(os.Args[0], append(args, "--session", session)...)
			again.Env = append(os.Environ(), childEnv+"=1")
			var stdout, stderr bytes.Buffer
			again.Stdout, again.Stderr = &stdout, &stderr
			if err := again.Run(); err != nil {
				t.Fatalf("agent --session: %v\n%s", err, stderr.String())
			}
			t.Logf("killed:\n%s\nresumed:\n%s%s", said.String(), stdout.String(), stderr.String())
			if want := "the last turn of session " + session + " was left unfinished (in the middle of its tool calls): finishing it"; !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr does not say %q", want)
			}

			runs := readHookLog(t, log)
			byEvent := map[string]map[string]int{}
			for _, r := range runs {
				key, _ := r.input["agent_id"].(string)
				if id, ok := r.input["tool_use_id"].(string); ok {
					key = id
				}
				if byEvent[r.event] == nil {
					byEvent[r.event] = map[string]int{}
				}
				byEvent[r.event][key]++
			}
			for _, tag := range []string{"A", "B"} {
				agentID := reprise.SubagentID(session, "toolu_agent_"+tag)
				if n, m := byEvent["SubagentStart"][agentID], byEvent["SubagentStop"][agentID]; n != 1 || m != 1 {
					t.Errorf("subagent %s: SubagentStart ran %d times, SubagentStop %d, want once each", tag, n, m)
				}
				for _, r := range api.subs[tag] {
					if r.answered > 1 {
						t.Errorf("subagent %s asked after %d answers", tag, r.answered)
					}
				}
				if n := len(api.subs[tag]); n != 2 {
					t.Errorf("subagent %s asked %d times, want 2: no answer asked for again", tag, n)
				}
			}
			for id, n := range byEvent["PostToolUse"] {
				if n > 1 {
					t.Errorf("the PostToolUse hook of %s ran %d times", id, n)
				}
			}
			if byEvent["SessionStart"][""] != 2 || len(api.main) != 2 || api.main[0] != 1 || api.main[1] != 1 {
				t.Errorf("SessionStart ran %d times (want 2: startup, resume), the main agent asked %v (want each answer once)",
					byEvent["SessionStart"][""], api.main)
			}
			for id, n := range countLines(t, effects, func(s string) string { return s }) {
				if n != 1 {
					t.Errorf("%s ran %d times", id, n)
				}
			}
			checkKilledResults(t, ev.store, session, parallel)
		})
	}
}

// checkKilledResults checks the Agent calls' results after the kill of
// TestKilledInASubagent: one each, its subagent's final answer, which
// says the subagent's Bash call was interrupted for a subagent whose call
// the kill cut (A, and B too with --parallel) and lists the files for B
// run after the kill, one after the other.
func checkKilledResults(t *testing.T, store, session string, parallel bool) {
	t.Helper()
	results := map[string][]string{}
	for id, rs := range toolResults(t, store, session) {
		for _, r := range rs {
			if text, ok := r.Content.(string); ok && !r.IsError {
				results[id] = append(results[id], text)
			}
		}
	}
	for _, tag := range []string{"A", "B"} {
		got := results["toolu_agent_"+tag]
		cut := tag == "A" || parallel
		switch {
		case len(got) != 1 || !strings.HasPrefix(got[0], "files: ") || !strings.HasSuffix(got[0], "("+tag+")"):
			t.Errorf("the results of toolu_agent_%s: %q, want its subagent's answer", tag, got)
		case cut && !strings.Contains(got[0], strings.Join(strings.Fields(turn.Interrupted), " ")):
			t.Errorf("toolu_agent_%s: %q does not say its Bash call was interrupted", tag, got[0])
		case !cut && got[0] != "files: a.txt b.txt (B)":
			t.Errorf("toolu_agent_%s: %q, want the files", tag, got[0])
		}
	}
}

// toolResult is a tool_result block as the Messages API has it.
type toolResult struct {
	UseID   string `json:"tool_use_id"`
	Content any    `json:"content"`
	IsError bool   `json:"is_error"`
}

// toolResults returns the tool_results of session in the store at path,
// by tool_use id, in the order of the conversation.
func toolResults(t *testing.T, store, session string) map[string][]toolResult {
	t.Helper()
	e, err := reprise.Open(store, reprise.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	conv, err := e.FullConversation(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]toolResult{}
	for _, msg := range conv {
		for _, b := range msg.Content {
			var r toolResult
			if b.Type != "tool_result" {
				continue
			}
			if err := json.Unmarshal(b.Raw, &r); err != nil {
				t.Fatalf("a tool_result of %s: %v", session, err)
			}
			out[r.UseID] = append(out[r.UseID], r)
		}
	}
	return out
}
