package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
	r := c.fails(exitFailure, "--store", filepath.Join(c.dir, "none.db"), "sessions")
	if r.stdout != "" || !strings.Contains(r.stderr, "no store at") {
		t.Fatalf("sessions on a missing store: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	r = c.fails(exitUsage, "sesions")
	if r.stdout != "" || !strings.Contains(r.stderr, "did you mean sessions?") || !strings.Contains(r.stderr, "Run 'reprise --help' for usage.") {
		t.Fatalf("unknown command: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	c.fails(exitUsage, "append", "s", "--role", "system", "hi")
}

// Interrupting reprise cancels the running hooks; the restore still records
// its remaining steps, and the store stays consistent.
func TestBinaryInterruptCancelsRunningHooks(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("a")
	pidFile := filepath.Join(c.dir, "hook.pid")
	settings := c.writeFile("hooks.json", testkit.Settings(t, []string{"echo $$ > " + pidFile + "; exec sleep 30"}, nil))
	cmd := c.command("start", "--agent", "ide", "--settings", settings, "--no-default-settings", "a")
	var stderr testkit.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var hook int
	for deadline := time.Now().Add(30 * time.Second); hook == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the hook never started; stderr: %s", stderr.String())
		}
		data, _ := os.ReadFile(pidFile)
		hook, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("start after an interrupt: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("start did not exit within 10 s of an interrupt")
	}
	if err := syscall.Kill(hook, 0); err == nil {
		t.Errorf("the hook's process %d still runs", hook)
	}
	if !strings.Contains(stderr.String(), "status=cancelled") {
		t.Errorf("no warning about the cancelled hook: %s", stderr.String())
	}
	var evs []eventJSON
	for line := range strings.Lines(c.ok("--json", "log", "--agent", "ide")) {
		evs = append(evs, decodeEvent(t, line))
	}
	if len(evs) != 4 || evs[3].Type != "ContextInjected" {
		t.Fatalf("the agent's log after an interrupt: %+v", evs)
	}
	if out := c.ok("audit"); !strings.Contains(out, "1 cancelled") {
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
