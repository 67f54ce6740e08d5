package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
)

// binary is the reprise command built for the tests.
var binary string

// holdEnv, when set in the environment of the test binary, makes it hold
// the store at that path (read-only when holdReadOnlyEnv is set too) until
// its stdin closes, instead of running the tests.
const (
	holdEnv         = "REPRISE_TEST_HOLD_STORE"
	holdReadOnlyEnv = "REPRISE_TEST_HOLD_READONLY"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(holdEnv); path != "" {
		os.Exit(holdStore(path, os.Getenv(holdReadOnlyEnv) != ""))
	}
	dir, err := os.MkdirTemp("", "reprise-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "reprise")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// holdStore opens the store at path, says "ready" on stdout, and keeps the
// store open until stdin reaches end of file.
func holdStore(path string, readOnly bool) int {
	e, err := reprise.Open(path, reprise.Options{ReadOnly: readOnly})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := e.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// holder is another process holding a store open.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// hold starts a process that holds the store at path, for writing or
// read-only, and returns once the store is open. The process is released
// when the test ends, or earlier by release.
func hold(t *testing.T, path string, readOnly bool) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holdEnv+"="+path)
	if readOnly {
		cmd.Env = append(cmd.Env, holdReadOnlyEnv+"=1")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin}
	t.Cleanup(h.release)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		h.release()
		t.Fatalf("holder did not open %s: %q %v; stderr: %s", path, line, err, stderr.String())
	}
	return h
}

// release closes the holder's stdin and waits for it to close the store.
func (h *holder) release() {
	if h.stdin == nil {
		return
	}
	h.stdin.Close()
	h.stdin = nil
	_ = h.cmd.Wait()
}

// cli runs the reprise binary against a store of its own, with HOME and
// XDG_STATE_HOME in a temporary directory, which is also the process's
// working directory.
type cli struct {
	t     *testing.T
	dir   string
	home  string
	store string
	env   []string
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	dir := t.TempDir()
	c := &cli{t: t, dir: dir, home: filepath.Join(dir, "home"), store: filepath.Join(dir, "state", "reprise.db")}
	if err := os.MkdirAll(c.home, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "HOME", "XDG_STATE_HOME", storeEnv, holdEnv, holdReadOnlyEnv:
			continue
		}
		c.env = append(c.env, kv)
	}
	c.env = append(c.env, "HOME="+c.home, "XDG_STATE_HOME="+filepath.Join(dir, "xdg-state"), storeEnv+"="+c.store)
	return c
}

// result is what one run of the binary did.
type result struct {
	stdout, stderr string
	code           int
}

// command returns the exec.Cmd that runs reprise with args.
func (c *cli) command(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Dir = c.dir
	cmd.Env = c.env
	return cmd
}

// runIn runs reprise with args and stdin.
func (c *cli) runIn(stdin io.Reader, args ...string) result {
	c.t.Helper()
	cmd := c.command(args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		c.t.Fatalf("reprise %s: %v", strings.Join(args, " "), err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

func (c *cli) run(args ...string) result {
	c.t.Helper()
	return c.runIn(nil, args...)
}

// ok runs reprise with args, fails the test unless it exits with 0, and
// returns its stdout.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.code != exitOK {
		c.t.Fatalf("reprise %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails runs reprise with args and fails the test unless it exits with
// code and says why on stderr, prefixed "reprise:".
func (c *cli) fails(code int, args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	if r.code != code || !strings.HasPrefix(r.stderr, "reprise: ") {
		c.t.Fatalf("reprise %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// okJSON runs reprise --json with args and decodes its stdout into v.
func (c *cli) okJSON(v any, args ...string) {
	c.t.Helper()
	out := c.ok(append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("reprise --json %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// session creates a session with id and the given messages, alternating
// user and assistant.
func (c *cli) session(id string, texts ...string) {
	c.t.Helper()
	c.ok("new", "--id", id)
	for i, text := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		c.ok("append", id, "--role", role, text)
	}
}

// writeFile writes data to name under the cli's directory and returns its
// path.
func (c *cli) writeFile(name, data string) string {
	c.t.Helper()
	path := filepath.Join(c.dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return path
}
