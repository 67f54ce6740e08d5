package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeServer is a reprise serve --write process on a Unix socket.
type writeServer struct {
	cmd    *exec.Cmd
	client *http.Client
}

// startWriteServer starts the built binary serving c's store for writing
// on socket, with the hooks of settings, and waits until it listens.
func startWriteServer(t *testing.T, c *cli, socket, settings string) *writeServer {
	t.Helper()
	cmd := exec.Command(binary(t), "--store", c.store, "serve", "--write", "--socket", socket,
		"--settings", settings, "--no-default-settings", "--json")
	cmd.Env = append(os.Environ(), "HOME="+c.home)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var listening struct{ Socket string }
	if err != nil || json.Unmarshal([]byte(line), &listening) != nil || listening.Socket != socket {
		t.Fatalf("serve --write printed %q (%v); stderr: %s", line, err, stderr.String())
	}
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}
	return &writeServer{cmd: cmd, client: &http.Client{Transport: &http.Transport{DialContext: dial}}}
}

// post sends body to path and returns the status and the decoded answer.
func (s *writeServer) post(t *testing.T, path, body string) (int, map[string]any) {
	t.Helper()
	res, err := s.client.Post("http://localhost"+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("POST %s answered %d, not JSON: %v", path, res.StatusCode, err)
	}
	return res.StatusCode, out
}

// send posts body to path and drops the answer: a call the test cuts off
// by killing the server.
func (s *writeServer) send(path, body string) {
	if res, err := s.client.Post("http://localhost"+path, "application/json", strings.NewReader(body)); err == nil {
		res.Body.Close()
	}
}

// ok posts and fails unless the answer is 2xx.
func (s *writeServer) ok(t *testing.T, path, body string) map[string]any {
	t.Helper()
	status, out := s.post(t, path, body)
	if status/100 != 2 {
		t.Fatalf("POST %s %s: %d %v", path, body, status, out)
	}
	return out
}

// waitForLines waits until the file at path holds n lines.
func waitForLines(t *testing.T, path string, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if data, _ := os.ReadFile(path); strings.Count(string(data), "\n") >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %d lines", path, n)
		}
	}
}

// A server killed with SIGKILL while a restore's SessionStart hook runs,
// and while a tool call's PreToolUse hook runs: the next server's next
// call on the agent rolls each forward, the hook closed as interrupted,
// never run again; the audit then finds nothing wrong.
func TestServeWriteKilledMidActionRollsForward(t *testing.T) {
	c := newCLI(t)
	dir := c.mkdir("work")
	runs, slow := filepath.Join(c.dir, "runs"), filepath.Join(c.dir, "slow")
	settings := c.writeFile("settings.json", fmt.Sprintf(`{"hooks": {
		"SessionStart": [{"hooks": [{"type": "command", "command": "echo start >> '%[1]s'; if [ -e '%[2]s' ]; then sleep 60; fi"}]}],
		"PreToolUse": [{"hooks": [{"type": "command", "command": "echo pre >> '%[1]s'; if [ -e '%[2]s' ]; then sleep 60; fi"}]}]}}`, runs, slow))
	socket := filepath.Join(c.dir, "w.sock")
	s := startWriteServer(t, c, socket, settings)
	for _, id := range []string{"a", "b"} {
		s.ok(t, "/api/sessions", `{"id": "`+id+`", "cwd": "`+dir+`"}`)
	}
	s.ok(t, "/api/agents/ide/start", `{"session": "a"}`)
	if err := os.WriteFile(slow, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	go s.send("/api/agents/ide/resume", `{"session": "b"}`)
	waitForLines(t, runs, 2)
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
	os.Remove(slow)

	s = startWriteServer(t, c, socket, settings)
	fin := s.ok(t, "/api/agents/ide/finish", "")
	restore, _ := fin["restore"].(map[string]any)
	if fin["finished"] != true || restore["to"] != "b" {
		t.Fatalf("finish after the kill answered %v; want the restore to b finished", fin)
	}
	start, _ := restore["session_start"].(map[string]any)
	if start["interrupted"] != true {
		t.Errorf("the restore's SessionStart run: %v; want it closed as interrupted", start)
	}

	if err := os.WriteFile(slow, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	call := `{"tool_use_id": "toolu_1", "name": "Bash", "input": {"command": "ls"}, "add_tool_use": true, "permission": "allow"}`
	go s.send("/api/agents/ide/tool", call)
	waitForLines(t, runs, 3)
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
	os.Remove(slow)

	s = startWriteServer(t, c, socket, settings)
	d := s.ok(t, "/api/agents/ide/tool", call)
	if d["decision"] == nil {
		t.Errorf("the call asked about again answered %v", d)
	}
	data, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(data)); strings.Join(got, " ") != "start start pre" {
		t.Errorf("the hooks ran %v; want each once: start start pre", got)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
	if out := c.ok("audit"); !strings.HasPrefix(out, "ok") {
		t.Errorf("audit after the kills:\n%s", out)
	}
}

// serve --write refuses what would let others write: --no-token, an
// address other machines reach; and serve refuses the flags of --write
// without it.
func TestServeWriteRefusesWhatLetsOthersIn(t *testing.T) {
	c := newCLI(t)
	c.ok("new", "--id", "a", "--cwd", c.dir)
	for _, args := range [][]string{
		{"serve", "--write", "--no-token"},
		{"serve", "--write", "--addr", "0.0.0.0:0"},
		{"serve", "--settings", c.writeFile("s.json", `{}`)},
		{"serve", "--origin", "http://localhost:5173"},
	} {
		r := c.fails(exitUsage, args...)
		if r.stderr == "" {
			t.Errorf("reprise %s refused without a word", strings.Join(args, " "))
		}
	}
}

// A server killed during a turn step, while the call's PreToolUse hook
// runs: the next server's next step goes on from the log, the hook not
// run again, and the turn ends with every call given a result.
func TestServeWriteKilledMidTurnGoesOn(t *testing.T) {
	c := newCLI(t)
	dir := c.mkdir("work")
	runs, slow := filepath.Join(c.dir, "runs"), filepath.Join(c.dir, "slow")
	settings := c.writeFile("settings.json", fmt.Sprintf(`{"hooks": {
		"PreToolUse": [{"hooks": [{"type": "command", "command": "echo pre >> '%[1]s'; if [ -e '%[2]s' ]; then sleep 60; fi"}]}]}}`, runs, slow))
	socket := filepath.Join(c.dir, "w.sock")
	s := startWriteServer(t, c, socket, settings)
	s.ok(t, "/api/sessions", `{"id": "a", "cwd": "`+dir+`"}`)
	s.ok(t, "/api/agents/ide/start", `{"session": "a"}`)
	ask := s.ok(t, "/api/agents/ide/turn", `{"prompt": "list the files", "permission": "allow"}`)
	if err := os.WriteFile(slow, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	answer := `{"permission": "allow", "after": "` + fmt.Sprint(ask["after"]) + `", "answer": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]}}`
	go s.send("/api/agents/ide/turn", answer)
	waitForLines(t, runs, 1)
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
	os.Remove(slow)

	s = startWriteServer(t, c, socket, settings)
	step := s.ok(t, "/api/agents/ide/turn", `{"permission": "allow"}`)
	for i := 0; step["step"] == "tools" && i < 3; i++ {
		var results []string
		calls, _ := step["calls"].([]any)
		for _, call := range calls {
			results = append(results, fmt.Sprintf(`{"tool_use_id": %q, "output": "a.txt"}`, call.(map[string]any)["tool_use_id"]))
		}
		step = s.ok(t, "/api/agents/ide/turn", `{"permission": "allow", "results": [`+strings.Join(results, ",")+`]}`)
	}
	if step["step"] != "ask" {
		t.Fatalf("after the kill the turn stands at %v; want the model asked again, the call resolved", step)
	}
	step = s.ok(t, "/api/agents/ide/turn", `{"after": "`+fmt.Sprint(step["after"])+`", "answer": {"content": "done"}}`)
	if step["step"] != "over" {
		t.Errorf("the final answer's step: %v", step)
	}
	if data, _ := os.ReadFile(runs); strings.Count(string(data), "pre") != 1 {
		t.Errorf("PreToolUse ran %d times, want once", strings.Count(string(data), "pre"))
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
	if out := c.ok("audit"); !strings.HasPrefix(out, "ok") {
		t.Errorf("audit after the kill:\n%s", out)
	}
}

// The web view that serve --write serves beside the write API shows a
// host's actions as they happen: its live endpoint sends each event an
// action appends.
func TestServeWriteLiveShowsActionsAsTheyHappen(t *testing.T) {
	c := newCLI(t)
	dir := c.mkdir("work")
	socket := filepath.Join(c.dir, "w.sock")
	s := startWriteServer(t, c, socket, c.writeFile("settings.json", `{}`))
	s.ok(t, "/api/sessions", `{"id": "first", "cwd": "`+dir+`"}`)
	res, err := s.client.Get("http://localhost/live")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /live: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	s.ok(t, "/api/sessions", `{"id": "second", "cwd": "`+dir+`"}`)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, open := <-lines:
			if !open {
				t.Fatal("the live stream ended before the action's event")
			}
			if strings.Contains(line, `"stream":"session/second"`) {
				return
			}
			if strings.Contains(line, `"stream":"session/first"`) {
				t.Fatalf("the live stream sent an event from before it was opened: %s", line)
			}
		case <-deadline:
			t.Fatal("the live stream never sent the action's event")
		}
	}
}
