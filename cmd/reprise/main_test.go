package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/internal/bench"
	"github.com/reprise-dev/reprise/internal/proctest"
	"github.com/reprise-dev/reprise/internal/testdirs"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/search"
)

// holdEnv, when set in the environment of the test binary, makes it hold
// the store at that path (read-only when holdReadOnlyEnv is set too,
// serving its reads when holdServeEnv is, and its searches too when
// holdSearchEnv is) until its stdin closes, instead of running the tests.
const (
	holdEnv         = "REPRISE_TEST_HOLD_STORE"
	holdReadOnlyEnv = "REPRISE_TEST_HOLD_READONLY"
	holdServeEnv    = "REPRISE_TEST_HOLD_SERVE"
	holdSearchEnv   = "REPRISE_TEST_HOLD_SEARCH"
)

// testEnv is the environment the test binary started with, before any test
// pointed HOME elsewhere: the build of the binary uses it, so that it finds
// the user's build cache.
var testEnv []string

func TestMain(m *testing.M) {
	bench.MaybeServeWriter() // bench's PostgreSQL writers are this binary
	if path := os.Getenv(holdEnv); path != "" {
		os.Exit(holdStore(path, os.Getenv(holdReadOnlyEnv) != "", os.Getenv(holdServeEnv) != "", os.Getenv(holdSearchEnv) != ""))
	}
	code := testdirs.Run(func() int {
		testEnv = os.Environ()
		return m.Run()
	})
	if binaryDir != "" {
		os.RemoveAll(binaryDir)
	}
	os.Exit(code)
}

// The reprise command built for the end-to-end tests, once, by the first
// test that needs it.
var (
	buildOnce sync.Once
	binaryDir string
	binaryErr error
)

// binary returns the path of the reprise command built from this package.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binaryDir, binaryErr = os.MkdirTemp("", "reprise-cli-test-"); binaryErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(binaryDir, "reprise"), ".")
		cmd.Env, cmd.Dir = testEnv, testkit.Abs(t, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return filepath.Join(binaryDir, "reprise")
}

// holdStore opens the store at path, says "ready" on stdout, and keeps the
// store open until stdin reaches end of file. Each line "SESSION TEXT" it
// reads meanwhile appends TEXT to SESSION as a user message, and is
// answered "appended".
func holdStore(path string, readOnly, serve, searches bool) int {
	opts := reprise.Options{ReadOnly: readOnly, ServeReads: serve}
	if searches {
		opts.ServeSearch = search.Served(path)
	}
	e, err := reprise.Open(path, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		id, text, _ := strings.Cut(lines.Text(), " ")
		if _, err := e.Append(context.Background(), id, reprise.Text("user", text)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("appended")
	}
	if err := e.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// holder is another process holding a store open.
type holder struct {
	t     *testing.T
	child *testkit.Child
}

// hold starts a process that holds the store at path, for writing or
// read-only, and returns once the store is open. The process is released
// when the test ends, or earlier by release.
func hold(t *testing.T, path string, readOnly bool) *holder {
	t.Helper()
	env := []string{holdEnv + "=" + path}
	if readOnly {
		env = append(env, holdReadOnlyEnv+"=1")
	}
	return startHolder(t, path, env)
}

// holdServing is hold for writing, by a process that serves the store's
// reads on its socket, as reprise's own commands do.
func holdServing(t *testing.T, path string) *holder {
	t.Helper()
	return startHolder(t, path, []string{holdEnv + "=" + path, holdServeEnv + "=1"})
}

// holdSearching is holdServing by a host that serves searches too.
func holdSearching(t *testing.T, path string) *holder {
	t.Helper()
	return startHolder(t, path, []string{holdEnv + "=" + path, holdServeEnv + "=1", holdSearchEnv + "=1"})
}

// startHolder starts the holding process with env.
func startHolder(t *testing.T, path string, env []string) *holder {
	t.Helper()
	h := &holder{t: t, child: testkit.StartChild(t, env...)}
	if line := h.child.Line(t); line != "ready" {
		t.Fatalf("holder did not open %s: %q; stderr: %s", path, line, h.child.Stderr)
	}
	return h
}

// release closes the holder's stdin and waits for it to close the store.
func (h *holder) release() { h.child.Wait(h.t) }

// pid returns the holding process's id.
func (h *holder) pid() int { return h.child.Cmd.Process.Pid }

// append makes the holder append text to session id as a user message.
func (h *holder) append(id, text string) {
	h.t.Helper()
	if _, err := fmt.Fprintf(h.child.Stdin, "%s %s\n", id, text); err != nil {
		h.t.Fatal(err)
	}
	if line := h.child.Line(h.t); line != "appended" {
		h.t.Fatalf("the holder did not append: %q; stderr: %s", line, h.child.Stderr)
	}
}

// cli runs reprise commands against a store of its own, with HOME and the
// XDG directories in a temporary directory, which is also the working
// directory. Commands run in process through run, unless the cli is
// end-to-end (newBinaryCLI): then they run the built binary.
//
// The environment and working directory are the process's, so tests that
// use a cli cannot be parallel.
type cli struct {
	t      *testing.T
	dir    string
	home   string
	store  string
	binary string // "" to run in process
}

// newCLI returns a cli that runs commands in process.
func newCLI(t *testing.T) *cli {
	t.Helper()
	dir := t.TempDir()
	c := &cli{t: t, dir: dir, home: testkit.Home(t), store: filepath.Join(dir, "state", "reprise.db")}
	t.Setenv(storeEnv, c.store)
	for _, name := range []string{holdEnv, holdReadOnlyEnv, holdServeEnv, holdSearchEnv, lockTimeoutEnv, hookEnvEnv, benchPostgresEnv} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	t.Chdir(dir)
	return c
}

// newBinaryCLI returns a cli that runs the reprise binary.
func newBinaryCLI(t *testing.T) *cli {
	t.Helper()
	c := newCLI(t)
	c.binary = binary(t)
	return c
}

// result is what one run of a command did.
type result struct {
	stdout, stderr string
	code           int
}

// command returns the exec.Cmd that runs the reprise binary with args.
func (c *cli) command(args ...string) *exec.Cmd {
	cmd := exec.Command(c.binary, args...)
	cmd.Dir = c.dir
	return cmd
}

// runIn runs reprise with args and stdin (none when nil).
func (c *cli) runIn(stdin io.Reader, args ...string) result {
	c.t.Helper()
	var stdout, stderr bytes.Buffer
	if c.binary == "" {
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		code := run(context.Background(), args, stdin, &stdout, &stderr)
		return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
	}
	cmd := c.command(args...)
	cmd.Stdin = stdin
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
// code and says why on stderr: prefixed "reprise:", or with --json as
// {"error": ..., "code": code}.
func (c *cli) fails(code int, args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	said := strings.HasPrefix(r.stderr, "reprise: ")
	if wantsJSON(args) {
		var e struct {
			Error string
			Code  int
		}
		said = json.Unmarshal([]byte(r.stderr), &e) == nil && e.Error != "" && e.Code == code
	}
	if r.code != code || !said {
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
	return testkit.WriteFile(c.t, filepath.Join(c.dir, name), data)
}

// mkdir makes the directory name under the cli's directory and returns its
// path.
func (c *cli) mkdir(name string) string {
	c.t.Helper()
	path := filepath.Join(c.dir, name)
	if err := os.MkdirAll(path, 0o700); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// hungStart runs reprise start --agent ide SESSION through the binary with
// a SessionStart hook that appends its pid to runs and sleeps, and returns
// once the hook runs: the process holds the store, serving its reads, with
// the restore in flight. kill kills the process and waits for it; the hook
// is killed when the test ends.
func (c *cli) hungStart(session string) (pid int, kill func()) {
	c.t.Helper()
	runs := filepath.Join(c.dir, "runs")
	settings := c.writeFile("hooks.json", testkit.Settings(c.t, []string{"echo $$ >> " + runs + "; exec sleep 30"}, nil))
	cmd, stderr, exited := c.startBinary("start", "--agent", "ide", "--settings", settings, "--no-default-settings", session)
	hook := proctest.WaitPid(c.t, runs, stderr.String)
	c.t.Cleanup(func() { _ = syscall.Kill(hook, syscall.SIGKILL) })
	return cmd.Process.Pid, func() {
		_ = cmd.Process.Kill()
		<-exited
	}
}
