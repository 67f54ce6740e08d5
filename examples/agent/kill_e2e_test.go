package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/examples/agent/internal/fakeapi"
	"github.com/reprise-dev/reprise/turn"
)

var (
	killCount = flag.Int("kills", 30, "how many times TestKilledMidTurn kills the agent")
	killSeed  = flag.Uint64("kill-seed", 0, "the seed of TestKilledMidTurn's kill times (0: a new one)")
)

// turnAPI is a fake Messages API whose answer depends only on the request:
// the m-th answer of a conversation (m assistant messages before it) calls
// two Bash tools and Read when m%3 is 0, one Bash tool when it is 1, and
// says it is done when it is 2. Each Bash call appends its tool_use id to
// the effects file. It counts the requests for each m.
type turnAPI struct {
	fakeapi.Server
	effects string
	mu      sync.Mutex
	served  map[int]int
}

func (f *turnAPI) answer(req *fakeapi.Request) (fakeapi.Answer, error) {
	m := 0
	for _, msg := range req.Messages {
		if msg.Role == "assistant" {
			m++
		}
	}
	f.mu.Lock()
	f.served[m]++
	f.mu.Unlock()
	bash := func(j int) fakeapi.Block {
		id := fmt.Sprintf("toolu_%03d_%d", m, j)
		return fakeapi.ToolUse(id, "Bash", map[string]any{"command": "echo " + id + " >> '" + f.effects + "'"})
	}
	a := fakeapi.Answer{Content: []fakeapi.Block{fakeapi.Text(fmt.Sprintf("done %d", m))}, StopReason: "end_turn"}
	switch m % 3 {
	case 0:
		a = fakeapi.Answer{Content: []fakeapi.Block{bash(0), bash(1),
			fakeapi.ToolUse(fmt.Sprintf("toolu_%03d_2", m), "Read", map[string]any{"file_path": f.effects})}, StopReason: "tool_use"}
	case 1:
		a = fakeapi.Answer{Content: []fakeapi.Block{bash(0)}, StopReason: "tool_use"}
	}
	a.InputTokens, a.OutputTokens = 10, 5
	return a, nil
}

// turnEnv is setup's home and project, with the agent pointed at a
// turnAPI whose Bash calls write to an effects file beside them.
func turnEnv(t *testing.T) (*env, *turnAPI) {
	ev := setup(t)
	api := &turnAPI{effects: filepath.Join(filepath.Dir(ev.home), "effects"), served: map[int]int{}}
	api.Answer = api.answer
	ev.api.url = serveFake(t, &api.Server)
	return ev, api
}

// TestKilledMidTurn kills the agent with SIGKILL at random moments while
// it takes turns of tool calls against a fake Messages API, and resumes
// the session in a new process each time, as `agent --session ID` does,
// until it was killed -kills times; then a last process finishes the cut
// turn. Then: each Bash call's side effect happened at most once, and
// exactly once when its result is recorded as run; each answer was asked
// for again only for a kill (the extra requests are at most the kills);
// no PostToolUse or Stop hook ran twice for a call or an answer; every
// tool_use has exactly one tool_result, in the session and in its
// exported transcript; the audit finds nothing.
func TestKilledMidTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the agent many times")
	}
	seed := *killSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d (-kill-seed=%d repeats these kill times), %d kills", seed, seed, *killCount)

	ev, api := turnEnv(t)
	root := filepath.Dir(ev.home)
	posts, stops := filepath.Join(root, "post.jsonl"), filepath.Join(root, "stop.jsonl")
	writeSettings(t, filepath.Join(ev.home, ".claude", "settings.json"), map[string]any{
		"PostToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{command("cat >> '" + posts + "'; echo >> '" + posts + "'")}}},
		"Stop":        []any{map[string]any{"hooks": []any{command("cat >> '" + stops + "'; echo >> '" + stops + "'")}}},
	})
	writeSettings(t, filepath.Join(ev.project, ".claude", "settings.json"), map[string]any{})

	session := ""
	prompts := 0
	for kills := 0; kills < *killCount; {
		args := ev.args("--allowed-tools", "Bash,Read")
		if session != "" {
			args = append(args, "--session", session)
		}
		var in bytes.Buffer
		for i := 0; i < 5; i++ {
			prompts++
			fmt.Fprintf(&in, "prompt %d\n", prompts)
		}
		child := exec.Command(os.Args[0], args...)
		child.Env = append(os.Environ(), childEnv+"=1")
		child.Stdin = &in
		stderr, err := child.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 100)
		var said []string // what the process said on stderr
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		if session == "" {
			for line := range lines {
				if id, ok := strings.CutPrefix(line, "session "); ok {
					session, _, _ = strings.Cut(id, " ")
					break
				}
			}
			if session == "" {
				child.Wait()
				t.Fatal("the first process named no session")
			}
		}
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		child.Process.Signal(syscall.SIGKILL)
		for line := range lines {
			said = append(said, line)
		}
		err = child.Wait()
		for _, line := range said {
			if strings.HasPrefix(line, "agent:") {
				t.Errorf("the agent failed: %s", line)
			}
		}
		var exit *exec.ExitError
		switch {
		case err == nil:
			continue // done before the kill: not a kill
		case errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled():
			kills++
		default:
			t.Fatalf("the agent exited with %v:\n%s", err, strings.Join(said, "\n"))
		}
	}

	// The last process: no new prompt; it finishes what the last kill cut.
	child := exec.Command(os.Args[0], ev.args("--allowed-tools", "Bash,Read", "--session", session)...)
	child.Env = append(os.Environ(), childEnv+"=1")
	var stderr bytes.Buffer
	child.Stderr = &stderr
	if err := child.Run(); err != nil {
		t.Fatalf("last process: %v\n%s", err, stderr.String())
	}

	e, err := reprise.Open(ev.store, reprise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	conv, err := e.FullConversation(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	effects := countLines(t, api.effects, func(line string) string { return line })
	uses, results := map[string]string{}, map[string][]string{}
	answers := 0
	for _, m := range conv {
		if m.Role == "assistant" {
			answers++
		}
		for _, b := range m.Content {
			var f struct {
				ID      string          `json:"id"`
				Name    string          `json:"name"`
				UseID   string          `json:"tool_use_id"`
				Content json.RawMessage `json:"content"`
			}
			json.Unmarshal(b.Raw, &f)
			switch b.Type {
			case "tool_use":
				uses[f.ID] = f.Name
			case "tool_result":
				results[f.UseID] = append(results[f.UseID], string(f.Content))
			}
		}
	}
	interrupted := 0
	for id, name := range uses {
		if len(results[id]) != 1 {
			t.Errorf("tool_use %s has %d tool_results", id, len(results[id]))
			continue
		}
		if name != "Bash" {
			continue
		}
		switch {
		case strings.Contains(results[id][0], turn.Interrupted):
			interrupted++
			if effects[id] > 1 {
				t.Errorf("%s: interrupted, and its effect happened %d times", id, effects[id])
			}
		case effects[id] != 1:
			t.Errorf("%s: its result %s is recorded, and its effect happened %d times", id, results[id][0], effects[id])
		}
	}
	for id, n := range effects {
		if _, ok := uses[id]; !ok || n > 1 {
			t.Errorf("effect %s happened %d times (its call recorded: %v)", id, n, ok)
		}
	}
	extra := 0
	for m, n := range api.served {
		if n > 1 {
			extra += n - 1
		}
		if m >= answers {
			t.Errorf("answer %d was served %d times and is not recorded", m, n)
		}
	}
	if extra > *killCount {
		t.Errorf("%d answers asked for again, after %d kills", extra, *killCount)
	}
	for id, n := range countLines(t, posts, jsonField("tool_use_id")) {
		if n > 1 {
			t.Errorf("the PostToolUse hook of %s ran %d times", id, n)
		}
	}
	for answer, n := range countLines(t, stops, jsonField("last_assistant_message")) {
		if n > 1 {
			t.Errorf("the Stop hook ran %d times after %q", n, answer)
		}
	}
	checkExportPairs(t, e, session)
	report, err := reprise.Audit(ctx, e.Store())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range report.Violations {
		t.Errorf("audit: %+v", v)
	}
	t.Logf("%d kills, %d prompts sent, %d answers recorded (%d asked for again), %d tool calls (%d interrupted), %d effects",
		*killCount, prompts, answers, extra, len(uses), interrupted, len(effects))
}

// countLines counts the lines of file by key(line), empty lines left out.
func countLines(t *testing.T, file string, key func(string) string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	data, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			counts[key(line)]++
		}
	}
	return counts
}

// jsonField is the key that reads field of a JSON line.
func jsonField(field string) func(string) string {
	return func(line string) string {
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) != nil {
			return "unreadable: " + line
		}
		return fmt.Sprint(v[field])
	}
}

// checkExportPairs exports session id as Claude Code's JSONL transcript and
// checks that each tool_use in it has exactly one tool_result after it.
func checkExportPairs(t *testing.T, e *reprise.Engine, id string) {
	t.Helper()
	var out bytes.Buffer
	if err := e.Export(context.Background(), id, &out); err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	results := map[string]int{}
	dec := json.NewDecoder(&out)
	for {
		var line struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if err := dec.Decode(&line); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		var blocks []struct {
			Type  string `json:"type"`
			ID    string `json:"id"`
			UseID string `json:"tool_use_id"`
		}
		json.Unmarshal(line.Message.Content, &blocks)
		for _, b := range blocks {
			switch b.Type {
			case "tool_use":
				open[b.ID] = true
			case "tool_result":
				if !open[b.UseID] {
					t.Errorf("export: a tool_result of %s before or without its tool_use", b.UseID)
				}
				results[b.UseID]++
			}
		}
	}
	for id := range open {
		if results[id] != 1 {
			t.Errorf("export: tool_use %s has %d tool_results", id, results[id])
		}
	}
}

// TestSessionFinishesACutTurn leaves in the store a turn cut off after the
// model's answer, as a killed agent leaves it, and checks that `agent
// --session ID` says so, runs the answer's call once, asks the model for
// the next answer only, and ends the turn, before it reads a prompt.
func TestSessionFinishesACutTurn(t *testing.T) {
	ev, api := turnEnv(t)
	writeSettings(t, filepath.Join(ev.project, ".claude", "settings.json"), map[string]any{}) // no Stop hook
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Dir(ev.store), 0o700); err != nil {
		t.Fatal(err)
	}
	e, err := reprise.Open(ev.store, reprise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := e.Agent(ctx, "example-agent")
	if err != nil {
		t.Fatal(err)
	}
	r, err := agent.New(ctx, "", ev.project)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Prompt(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	use, _ := json.Marshal(fakeapi.ToolUse("toolu_cut", "Bash", map[string]any{"command": "echo toolu_cut >> '" + api.effects + "'"}))
	if _, err := e.Append(ctx, r.To, reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "tool_use", Raw: use}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	child := exec.Command(os.Args[0], ev.args("--allowed-tools", "Bash", "--session", r.To)...)
	child.Env = append(os.Environ(), childEnv+"=1")
	var stdout, stderr bytes.Buffer
	child.Stdout, child.Stderr = &stdout, &stderr
	if err := child.Run(); err != nil {
		t.Fatalf("agent --session: %v\n%s", err, stderr.String())
	}
	want := "the last turn of session " + r.To + " was left unfinished (in the middle of its tool calls): finishing it"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
	}
	if got := countLines(t, api.effects, func(s string) string { return s }); len(got) != 2 || got["toolu_cut"] != 1 || got["toolu_001_0"] != 1 {
		t.Errorf("effects %v, want toolu_cut and the next answer's toolu_001_0 once each", got)
	}
	// The recorded answer (m=0) is not asked for again; the next one is.
	if len(api.served) != 2 || api.served[0] != 0 || api.served[1] != 1 || api.served[2] != 1 {
		t.Errorf("requests by answer: %v, want answers 1 and 2 once each", api.served)
	}
	if !strings.Contains(stdout.String(), "done 2") {
		t.Errorf("stdout lacks the last answer:\n%s", stdout.String())
	}
}
