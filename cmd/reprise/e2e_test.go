package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/internal/proctest"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// The tests in this file run the built binary: what only a process shows,
// its exit code, its streams and how it takes a signal. The other
// end-to-end tests are the lock test against another process
// (lock_test.go) and the peak memory of a large import (bigimport_test.go).
// Every other test runs the commands in process, through run.

// The process exits with 0, 1 or 2, and says why on stderr only.
func TestBinaryExitCodes(t *testing.T) {
	c := newBinaryCLI(t)
	if r := c.run("new", "--id", "s"); r.code != exitOK || r.stdout != "s\n" || r.stderr != "" {
		t.Fatalf("new: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r := c.fails(exitFailure, "--store", filepath.Join(c.dir, "none.db"), "log", "s")
	if r.stdout != "" || !strings.Contains(r.stderr, "no store at") {
		t.Fatalf("log on a missing store: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	r = c.fails(exitUsage, "sesions")
	if r.stdout != "" || !strings.Contains(r.stderr, "did you mean sessions?") || !strings.Contains(r.stderr, "Run 'reprise --help' for usage.") {
		t.Fatalf("unknown command: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	c.fails(exitUsage, "append", "s", "--role", "system", "hi")
}

// startBinary starts reprise with args, its stderr in a buffer, and
// returns a channel that gets its exit once it has ended.
func (c *cli) startBinary(args ...string) (*exec.Cmd, *testkit.SyncBuffer, <-chan error) {
	c.t.Helper()
	cmd := c.command(args...)
	stderr := new(testkit.SyncBuffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	c.t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, stderr, exited
}

// SIGINT or SIGTERM during a restore stops it at the next step boundary:
// the SessionEnd hook that runs is killed and recorded as cancelled, no
// new step begins, and reprise exits with 130 or 143, naming the command
// that finishes the restore. That command finishes it without running the
// SessionEnd hook again, and the audit is clean.
func TestBinarySignalStopsTheRestoreAtAStepBoundary(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			cl := newBinaryCLI(t)
			cl.session("a", "hello")
			cl.session("b")
			runs, pidFile := filepath.Join(cl.dir, "runs"), filepath.Join(cl.dir, "hook.pid")
			settings := cl.writeFile("hooks.json", testkit.Settings(t,
				[]string{"echo start >> " + runs},
				[]string{"echo end >> " + runs + "; echo $$ > " + pidFile + "; exec sleep 30"}))
			hooks := []string{"--settings", settings, "--no-default-settings"}
			cl.ok(append([]string{"start", "--agent", "ide", "a"}, hooks...)...)

			cmd, stderr, exited := cl.startBinary(append([]string{"resume", "--agent", "ide", "b"}, hooks...)...)
			hook := proctest.WaitPid(t, pidFile, stderr.String)
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				t.Fatalf("resume did not exit within 10 s of %s", c.sig)
			}
			if code := cmd.ProcessState.ExitCode(); code != c.code {
				t.Fatalf("exit %d after %s, want %d; stderr: %s", code, c.sig, c.code, stderr.String())
			}
			want := "reprise: interrupted: the resume restore of agent ide to session b stopped at a step boundary; " +
				"the next command on agent ide finishes it (reprise finish --agent ide does only that)\n"
			if !strings.HasSuffix(stderr.String(), want) {
				t.Fatalf("stderr %q, want it to end with %q", stderr.String(), want)
			}
			proctest.AssertGone(t, map[string]int{"SessionEnd hook": hook})

			var evs []eventJSON
			for line := range strings.Lines(cl.ok("--json", "log", "--agent", "ide")) {
				evs = append(evs, decodeEvent(t, line))
			}
			if n := len(evs); n != 7 || evs[n-1].Type != "SessionEndHookRan" {
				t.Fatalf("the agent's log after %s: %+v", c.sig, evs)
			}

			out := cl.ok(append([]string{"resume", "--agent", "ide", "b"}, hooks...)...)
			if out != "agent ide is already on session b; nothing to do\n" {
				t.Fatalf("the finishing resume printed %q", out)
			}
			if data, _ := os.ReadFile(runs); string(data) != "start\nend\nstart\n" {
				t.Fatalf("hooks ran %q, want start, end, start: each once", data)
			}
			if out := cl.ok("audit"); !strings.HasPrefix(out, "ok: ") || !strings.Contains(out, "1 cancelled") {
				t.Fatalf("audit: %s", out)
			}
		})
	}
}

// Killed with SIGKILL while a hook runs, reprise takes the hook with it:
// the hook's shell and the child it started in the background are gone
// within seconds. The next command closes the hook's run as interrupted,
// never running it again.
func TestBinaryHooksDieWithReprise(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("a")
	grandchild, hookPid := filepath.Join(c.dir, "grandchild"), filepath.Join(c.dir, "hook.pid")
	settings := c.writeFile("hooks.json", testkit.Settings(t,
		[]string{"[ -e " + hookPid + " ] && exit 0; sleep 300 & echo $! > " + grandchild + "; echo $$ > " + hookPid + "; wait"}, nil))
	hooks := []string{"--settings", settings, "--no-default-settings"}
	cmd, stderr, exited := c.startBinary(append([]string{"start", "--agent", "ide", "a"}, hooks...)...)
	pids := map[string]int{"hook": proctest.WaitPid(t, hookPid, stderr.String), "grandchild": proctest.WaitPid(t, grandchild, stderr.String)}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	proctest.AssertGone(t, pids)

	c.ok(append([]string{"resume", "--agent", "ide", "a"}, hooks...)...)
	if out := c.ok("audit"); !strings.HasPrefix(out, "ok: ") || !strings.Contains(out, "1 interrupted") {
		t.Fatalf("audit: %s", out)
	}
}

// demo runs on a temporary store that it removes, or on --store, which it
// leaves behind for audit.
func TestBinaryDemo(t *testing.T) {
	c := newBinaryCLI(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out := c.ok("demo")
	for _, want := range []string{
		"startup restore of ", "runtime restore ", "saved 1 pending message(s), injected ",
		"fork of ", "clear: ", "event timeline (", "conversation of ", "rebuilt from the log",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("demo left %v in TMPDIR", entries)
	}
	store := filepath.Join(c.dir, "demo.db")
	c.ok("--store", store, "demo")
	if out := c.ok("--store", store, "audit"); !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("audit of the demo's store: %s", out)
	}
}
