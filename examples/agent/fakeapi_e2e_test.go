package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
)

var baseURLLine = regexp.MustCompile(`^ANTHROPIC_BASE_URL=http://127\.0\.0\.1:[0-9]+$`)

// TestWithoutAKey follows the README's run without a key: it builds the
// fakeapi program and starts it, then runs the agent (this test binary)
// with the ANTHROPIC_BASE_URL it printed, a dummy key and a prompt on
// stdin, in JSON and streamed, in a home without settings. The fake
// model's Bash call runs, and its last answer says what the command
// printed, which it read from the request's tool_result; the session's
// log holds that result.
func TestWithoutAKey(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build fakeapi: %v", err)
	}
	root := t.TempDir()
	bin := filepath.Join(root, "fakeapi")
	if out, err := exec.Command(goCmd, "build", "-o", bin, "./fakeapi").CombinedOutput(); err != nil {
		t.Fatalf("go build ./fakeapi: %v\n%s", err, out)
	}
	fake := exec.Command(bin)
	var fakeErr bytes.Buffer
	fake.Stderr = &fakeErr
	fakeOut, err := fake.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			fake.Process.Kill()
			fake.Wait()
		}
	})
	line, err := bufio.NewReader(fakeOut).ReadString('\n')
	line = strings.TrimSuffix(line, "\n")
	if err != nil || !baseURLLine.MatchString(line) {
		t.Fatalf("fakeapi's first line %q (%v), want ANTHROPIC_BASE_URL=http://127.0.0.1:PORT; stderr:\n%s", line, err, fakeErr.String())
	}

	home, project, state := filepath.Join(root, "home"), filepath.Join(root, "project"), filepath.Join(root, "state")
	for _, dir := range []string{home, project} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range []string{"json", "stream"} {
		args := []string{"--allowed-tools", "Bash(echo *)"}
		if mode == "stream" {
			args = append(args, "--stream")
		}
		agent := exec.Command(os.Args[0], args...)
		agent.Dir = project
		agent.Env = append(os.Environ(), childEnv+"=1", line, "ANTHROPIC_API_KEY=dummy", "ANTHROPIC_AUTH_TOKEN=",
			"ANTHROPIC_CUSTOM_HEADERS=", "HOME="+home, "XDG_STATE_HOME="+state, "XDG_CONFIG_HOME="+filepath.Join(root, "config"),
			"REPRISE_STORE=")
		agent.Stdin = strings.NewReader("Say hello.\n")
		var stdout, stderr bytes.Buffer
		agent.Stdout, agent.Stderr = &stdout, &stderr
		if err := agent.Run(); err != nil {
			t.Fatalf("%s: the agent: %v\nstdout:\n%s\nstderr:\n%s", mode, err, stdout.String(), stderr.String())
		}
		want := "I will run `echo hello` with the Bash tool.\nThe command printed: hello\n"
		if stdout.String() != want {
			t.Errorf("%s: stdout\n%q\nwant\n%q\nstderr:\n%s", mode, stdout.String(), want, stderr.String())
		}
		m := resumeLine.FindStringSubmatch(stderr.String())
		if m == nil {
			t.Fatalf("%s: no resume line:\n%s", mode, stderr.String())
		}
		if want := filepath.Join(state, "reprise", "reprise.db"); m[1] != want {
			t.Errorf("%s: store %s, want the default %s", mode, m[1], want)
		}
		checkHelloResult(t, m[1], m[2])
	}

	// An interrupt stops it.
	stopped = true
	if err := fake.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := fake.Wait(); err != nil {
		t.Errorf("fakeapi on an interrupt: %v\nstderr:\n%s", err, fakeErr.String())
	}
	if n := strings.Count(fakeErr.String(), "\n"); n != 4 {
		t.Errorf("fakeapi told %d requests, want 4:\n%s", n, fakeErr.String())
	}
}

// checkHelloResult checks that session id of store holds one tool_result,
// not an error, whose content is the output of `echo hello`.
func checkHelloResult(t *testing.T, store, id string) {
	t.Helper()
	e, err := reprise.Open(store, reprise.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	conv, err := e.FullConversation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, msg := range conv {
		for _, b := range msg.Content {
			if b.Type == "tool_result" {
				results = append(results, string(b.Raw))
			}
		}
	}
	if len(results) != 1 {
		t.Fatalf("session %s has %d tool results, want 1: %q", id, len(results), results)
	}
	var r struct {
		Content any  `json:"content"`
		IsError bool `json:"is_error"`
	}
	if err := json.Unmarshal([]byte(results[0]), &r); err != nil || r.Content != "hello" || r.IsError {
		t.Errorf("session %s's tool result %s (%v), want the content hello", id, results[0], err)
	}
}
