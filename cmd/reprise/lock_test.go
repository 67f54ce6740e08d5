package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/eventlog/remote"
)

// readOnlyCommands are commands that only read the store, each with its
// arguments, on a store holding session s.
var readOnlyCommands = [][]string{
	{"sessions"},
	{"sessions", "--json"},
	{"log", "s"},
	{"log", "--json", "s"},
	{"log", "--agent", "ide"},
	{"replay", "s"},
	{"replay", "--json", "s"},
	{"audit"},
	{"audit", "--json"},
	{"export", "s"},
	{"hooks", "--session", "s"},
}

// While a host that serves its reads holds the store, every read command
// prints what it prints on the idle store.
func TestReadCommandsReadThroughTheHoldingProcess(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hello", "hi")
	c.ok("start", "--agent", "ide", "s")
	idle := map[string]result{}
	for _, args := range readOnlyCommands {
		idle[strings.Join(args, " ")] = c.run(args...)
	}
	h := holdServing(t, c.store)
	for _, args := range readOnlyCommands {
		key := strings.Join(args, " ")
		if idle[key].code != exitOK {
			t.Fatalf("reprise %s on the idle store: %+v", key, idle[key])
		}
		start := time.Now()
		if got := c.run(args...); got != idle[key] {
			t.Errorf("reprise %s while a host holds the store:\n%+v\nwant, as on the idle store:\n%+v", key, got, idle[key])
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("reprise %s took %v", key, d)
		}
	}
	// What the host appends meanwhile is read at once.
	h.append("s", "from the host")
	if out := c.ok("log", "s"); !strings.Contains(out, "from the host") {
		t.Errorf("log does not show the host's append:\n%s", out)
	}
	h.release()
	if out := c.ok("log", "s"); !strings.Contains(out, "from the host") {
		t.Errorf("log of the released store does not show the host's append:\n%s", out)
	}
}

// The binary, as a user runs it, against another process that holds the
// store and serves nothing: each command fails with exit 1 within the lock
// timeout, naming the holder and what to do.
func TestCommandsFailNamingTheHolderWhenItServesNothing(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("s", "hello")
	h := hold(t, c.store, false)
	want := fmt.Sprintf("is in use by process %d (", h.pid())
	var wg sync.WaitGroup
	for _, args := range append(readOnlyCommands, []string{"append", "s", "--role", "user", "x"}) {
		wg.Go(func() {
			start := time.Now()
			r := c.run(args...)
			if r.code != exitFailure || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "--lock-timeout") {
				t.Errorf("reprise %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
			}
			// The lock timeout is 1 second; allow for a slow machine.
			if d := time.Since(start); d < time.Second || d > 5*time.Second {
				t.Errorf("reprise %s gave up after %v, want about 1s", strings.Join(args, " "), d)
			}
		})
	}
	wg.Wait()
}

func TestLockTimeoutFlagAndEnvironment(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("s", "hello")
	h := holdServing(t, c.store)
	for _, tt := range []struct {
		name string
		env  string
		args []string
		wait time.Duration
	}{
		{"flag", "", []string{"--lock-timeout", "300ms"}, 300 * time.Millisecond},
		{"environment", "300ms", nil, 300 * time.Millisecond},
		{"flag over environment", "1m", []string{"--lock-timeout", "200ms"}, 200 * time.Millisecond},
		{"no wait", "", []string{"--lock-timeout", "0"}, 0},
	} {
		t.Setenv(lockTimeoutEnv, tt.env)
		start := time.Now()
		r := c.run(append(tt.args, "append", "s", "--role", "user", "x")...)
		d := time.Since(start)
		if r.code != exitFailure || !strings.Contains(r.stderr, fmt.Sprintf("process %d", h.pid())) ||
			!strings.Contains(r.stderr, fmt.Sprintf("(waited %v)", tt.wait)) {
			t.Errorf("%s: exit %d: %s", tt.name, r.code, r.stderr)
		}
		if d < tt.wait || d > tt.wait+3*time.Second {
			t.Errorf("%s: gave up after %v, want %v", tt.name, d, tt.wait)
		}
	}
	t.Setenv(lockTimeoutEnv, "soon")
	if r := c.run("append", "s", "--role", "user", "x"); r.code != exitUsage || !strings.Contains(r.stderr, lockTimeoutEnv) {
		t.Errorf("a bad %s: exit %d: %s", lockTimeoutEnv, r.code, r.stderr)
	}
	t.Setenv(lockTimeoutEnv, "")
	if r := c.run("--lock-timeout", "-1s", "append", "s", "--role", "user", "x"); r.code != exitUsage {
		t.Errorf("a negative --lock-timeout: exit %d: %s", r.code, r.stderr)
	}

	// A write that waits long enough gets the store once the host lets go.
	done := make(chan result)
	go func() { done <- c.run("--lock-timeout", "30s", "append", "s", "--role", "user", "late") }()
	time.Sleep(300 * time.Millisecond)
	h.release()
	if r := <-done; r.code != exitOK {
		t.Fatalf("append waiting for the host: exit %d: %s", r.code, r.stderr)
	}
	if out := c.ok("log", "s"); !strings.Contains(out, "late") {
		t.Errorf("the waiting append is not in the log:\n%s", out)
	}
}

func TestReadOnlyCommandsRunConcurrently(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hello", "hi")
	c.ok("start", "--agent", "ide", "s")
	// Another reader holds the store the whole time; readers share it.
	reader := hold(t, c.store, true)
	var wg sync.WaitGroup
	for range 3 {
		for _, args := range readOnlyCommands {
			wg.Go(func() {
				if r := c.run(args...); r.code != exitOK {
					t.Errorf("reprise %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
				}
			})
		}
	}
	wg.Wait()
	// A writer waits for readers, then gives up.
	r := c.fails(exitFailure, "append", "s", "--role", "user", "x")
	if !strings.Contains(r.stderr, fmt.Sprintf("is in use by process %d", reader.pid())) {
		t.Fatalf("append while a reader holds the store: %s", r.stderr)
	}
	reader.release()
	c.ok("append", "s", "--role", "user", "x")
}

// reprise's own writing commands serve their store's reads: while a
// restore's hook runs, log shows the restore in progress.
func TestReadsDuringARestoreOfTheBinary(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("s", "hello")
	marker := filepath.Join(c.dir, "hook-ran")
	settings := c.writeFile("settings.json", `{"hooks": {"SessionStart": [{"hooks": [{"type": "command",
		"command": "touch `+marker+`; sleep 3"}]}]}}`)
	restore := c.command("start", "--agent", "ide", "--settings", settings, "--no-default-settings", "s")
	var out bytes.Buffer
	restore.Stdout, restore.Stderr = &out, &out
	if err := restore.Start(); err != nil {
		t.Fatal(err)
	}
	defer restore.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hook never ran: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := c.run("log", "--agent", "ide")
	if r.code != exitOK || !strings.Contains(r.stdout, "SessionStartHookStarted") || strings.Contains(r.stdout, "SessionStartHookRan") {
		t.Errorf("log while the restore's hook runs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := restore.Wait(); err != nil {
		t.Fatalf("the restore: %v\n%s", err, out.String())
	}
	if _, err := os.Lstat(remote.SocketPath(c.store)); !os.IsNotExist(err) {
		t.Errorf("the restore left its socket: %v", err)
	}
}

// A file planted where the holder's socket would be is never read from:
// the command says so and waits for the store as if nothing served it.
func TestReadCommandsRefuseAPlantedSocket(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hello")
	h := hold(t, c.store, false)
	if err := os.WriteFile(remote.SocketPath(c.store), []byte("not a socket"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := c.fails(exitFailure, "--lock-timeout", "300ms", "log", "s")
	if strings.Count(r.stderr, "not reading through") != 1 || !strings.Contains(r.stderr, "is not a socket") ||
		!strings.Contains(r.stderr, fmt.Sprintf("is in use by process %d", h.pid())) {
		t.Errorf("log with a planted socket: %s", r.stderr)
	}
	// A host refuses to replace it, and works on without serving.
	h.release()
	holder := holdServing(t, c.store)
	r = c.fails(exitFailure, "--lock-timeout", "300ms", "log", "s")
	if !strings.Contains(r.stderr, fmt.Sprintf("is in use by process %d", holder.pid())) {
		t.Errorf("log while a host that could not serve holds the store: %s", r.stderr)
	}
	if !strings.Contains(holder.child.Stderr.String(), "not served") {
		t.Errorf("the host did not warn that it serves nothing: %s", holder.child.Stderr)
	}
}

// Ctrl-C while a write waits for the store another process holds exits
// 130 and says what was interrupted, naming the holder.
func TestInterruptWhileWaitingForTheStoreNamesTheHolder(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("a")
	pid, _ := c.hungStart("a")
	cmd, stderr, exited := c.startBinary("--lock-timeout", "30s", "append", "a", "--role", "user", "hi")
	time.Sleep(300 * time.Millisecond) // it waits for the store
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("append did not exit within 10 s of SIGINT")
	}
	want := fmt.Sprintf("reprise: interrupted while waiting for the store %s, which process %d (", c.store, pid)
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.HasPrefix(stderr.String(), want) || !strings.HasSuffix(stderr.String(), "holds; nothing was done\n") {
		t.Fatalf("exit %d, stderr %q; want 130 and %q", code, stderr.String(), want)
	}
}
