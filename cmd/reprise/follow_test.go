package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/internal/testkit"
)

// following is a log --follow running in process until stop.
type following struct {
	stdout, stderr *testkit.SyncBuffer
	cancel         context.CancelFunc
	code           chan int
}

func startFollow(args ...string) *following {
	ctx, cancel := context.WithCancel(context.Background())
	f := &following{stdout: &testkit.SyncBuffer{}, stderr: &testkit.SyncBuffer{}, cancel: cancel, code: make(chan int, 1)}
	go func() {
		f.code <- run(ctx, append([]string{"log", "--follow"}, args...), strings.NewReader(""), f.stdout, f.stderr)
	}()
	return f
}

// waitFor waits until the output holds n lines containing s.
func (f *following) waitFor(t *testing.T, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(f.stdout.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("log --follow never printed %q %d times:\n%s\nstderr: %s", s, n, f.stdout, f.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop interrupts the follower and checks that it stops cleanly.
func (f *following) stop(t *testing.T) {
	t.Helper()
	f.cancel()
	select {
	case code := <-f.code:
		if code != exitOK {
			t.Errorf("log --follow stopped with exit %d: %s", code, f.stderr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("log --follow did not stop within 5s of its interruption")
	}
}

// log --follow sees what another process appends, through its socket
// while it holds the store, then from the file once it has let go.
func TestFollowSeesAppendsOfOtherProcesses(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hello")
	c.session("other", "elsewhere")
	all := startFollow()
	one := startFollow("s")
	oneJSON := startFollow("--json", "s")
	all.waitFor(t, "elsewhere", 1)
	one.waitFor(t, "hello", 1)

	h := holdServing(t, c.store)
	h.append("s", "from the host")
	h.append("other", "to the other")
	all.waitFor(t, "to the other", 1)
	one.waitFor(t, "from the host", 1)
	oneJSON.waitFor(t, "from the host", 1)
	h.release()

	c.ok("append", "s", "--role", "user", "after the host")
	all.waitFor(t, "after the host", 1)
	one.waitFor(t, "after the host", 1)
	oneJSON.waitFor(t, "after the host", 1)
	for _, f := range []*following{all, one, oneJSON} {
		f.stop(t)
	}

	// The session's follower printed what log prints, and then only the
	// session's new events.
	if want := c.ok("log", "s"); one.stdout.String() != want {
		t.Errorf("log --follow s printed:\n%s\nwant what log s prints:\n%s", one.stdout, want)
	}
	if want := c.ok("log", "--json", "s"); oneJSON.stdout.String() != want {
		t.Errorf("log --follow --json s printed:\n%s\nwant:\n%s", oneJSON.stdout, want)
	}
	if strings.Contains(one.stdout.String(), "elsewhere") || !strings.Contains(all.stdout.String(), "session/other") {
		t.Errorf("the session filter does not hold:\n%s\nall:\n%s", one.stdout, all.stdout)
	}
	if n := strings.Count(all.stdout.String(), "\n"); n != len(logJSON(t, c, "s"))+len(logJSON(t, c, "other")) {
		t.Errorf("log --follow printed %d lines for the two sessions' events:\n%s", n, all.stdout)
	}
}

// Between reads of an idle store, log --follow holds no lock: a writer
// that waits a moment, much less than the follower's pause between reads,
// always gets the store.
func TestFollowKeepsNoWriterOut(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hello")
	f := startFollow("s")
	f.waitFor(t, "hello", 1)
	for i := range 5 {
		c.ok("--lock-timeout", "100ms", "append", "s", "--role", "user", "quick")
		f.waitFor(t, "quick", i+1)
	}
	f.stop(t)
}

func TestFollowStopsOnSIGINT(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("s", "hello")
	cmd := c.command("log", "--follow", "s")
	var stderr bytes.Buffer
	out := &testkit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "hello") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		t.Fatalf("log --follow did not stop on SIGINT; output:\n%s", out)
	}
	if code := cmd.ProcessState.ExitCode(); code != exitOK && code != 130 {
		t.Errorf("log --follow exited %d on SIGINT: %s", code, stderr.String())
	}
}
