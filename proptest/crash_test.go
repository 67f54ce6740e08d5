package proptest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
)

// childTimeout bounds how long a crash child may take to reach its point.
const childTimeout = 2 * time.Minute

// TestCrashPoints kills a real process with SIGKILL at every crash point
// of a scenario, with function hooks and with command hooks, for each
// seed, then opens the store it left and checks that the interrupted
// restore was rolled forward, that no hook ran twice (hooks write every
// run to a side file), that every message the child acknowledged is
// there, that everything else is what the model says, and that the audit
// is clean.
func TestCrashPoints(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the crash test needs Linux: it reads /proc and kills process groups")
	}
	t.Parallel()
	def := defaultCrashSeeds
	if long() {
		def = longCrashSeeds
	}
	seeds, err := envInt(envCrashSeeds, def)
	if err != nil {
		t.Fatal(err)
	}
	points := crashPoints()
	var kills atomic.Int64
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		sc := newScenario(seed)
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			t.Parallel()
			t.Log(sc)
			for _, kind := range hookKinds {
				t.Run(kind, func(t *testing.T) {
					t.Parallel()
					for _, p := range points {
						t.Run(p.String(), func(t *testing.T) {
							t.Parallel()
							runCrash(t, sc, kind, p)
							kills.Add(1)
						})
					}
				})
			}
		})
	}
	t.Cleanup(func() {
		t.Logf("crash points: %d points x %d hook kinds x %d seeds = %d kills, %d passed",
			len(points), len(hookKinds), seeds, len(points)*len(hookKinds)*seeds, kills.Load())
	})
}

// runCrash runs one crash child of scenario sc until it reaches point p,
// kills it, and checks what it left.
func runCrash(t *testing.T, sc scenario, kind string, p point) {
	paths := crashPaths{dir: t.TempDir()}
	if err := os.Mkdir(paths.work(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(paths.fifo(), 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened for reading and writing, the FIFO neither blocks this open nor
	// reports end of file when the child dies.
	fifo, err := os.OpenFile(paths.fifo(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fifo.Close()
	lines := make(chan string, 256)
	go func() {
		scan := bufio.NewScanner(fifo)
		for scan.Scan() {
			lines <- scan.Text()
		}
		close(lines)
	}()

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+paths.dir, seedEnv+"="+strconv.FormatUint(sc.seed, 10),
		kindEnv+"="+kind, pointEnv+"="+p.String(), fifoEnv+"="+paths.fifo())
	var out testkit.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	kill := func(pid int) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Errorf("kill %d: %v", pid, err)
		}
	}
	fail := func(format string, args ...any) {
		kill(cmd.Process.Pid)
		<-exited
		t.Fatalf("%s\nchild output:\n%s", fmt.Sprintf(format, args...), out.String())
	}

	acks := map[string][]string{} // session -> uuids
	timeout := time.NewTimer(childTimeout)
	defer timeout.Stop()
	for reached := false; !reached; {
		select {
		case line := <-lines:
			f := strings.Fields(line)
			switch {
			case len(f) == 3 && f[0] == "ack":
				acks[f[1]] = append(acks[f[1]], f[2])
			case len(f) == 3 && f[0] == "at" && f[1] == p.String():
				kill(cmd.Process.Pid)
				if pgid, _ := strconv.Atoi(f[2]); pgid > 0 {
					kill(-pgid) // the blocked command hook
				}
				reached = true
			default:
				fail("child reported %q while running to %s", line, p)
			}
		case err := <-exited:
			exited <- err
			fail("child exited before reaching %s: %v", p, err)
		case <-timeout.C:
			fail("child did not reach %s within %s", p, childTimeout)
		}
	}
	err = <-exited
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want death by SIGKILL\n%s", err, out.String())
	}
	checkCrash(t, sc, kind, p, paths, acks)
}

// checkCrash opens the store a killed child left, which rolls its
// interrupted restore forward, and checks everything against the model.
func checkCrash(t *testing.T, sc scenario, kind string, p point, paths crashPaths, acks map[string][]string) {
	ctx := context.Background()
	side := newSideFile(paths.dir)
	reg, specs, err := sc.crashHooks(kind, hookScript(t), side, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, wantRuns := sc.expect(p, specs)
	open := func() (*reprise.Engine, *reprise.Agent) {
		e, err := reprise.Open(paths.store(), reprise.Options{Hooks: reg, Logger: discard, TranscriptDir: paths.transcripts()})
		if err != nil {
			t.Fatal(err)
		}
		a, err := e.Agent(ctx, "ide")
		if err != nil {
			e.Close()
			t.Fatalf("Agent on reopen: %v", err)
		}
		return e, a
	}
	e, a := open()
	defer func() { e.Close() }()

	runs, err := side.all()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r] {
			t.Errorf("a hook ran twice: %q (all runs: %q)", r, runs)
		}
		seen[r] = true
	}
	if got, want := slices.Sorted(slices.Values(runs)), slices.Sorted(slices.Values(wantRuns)); !slices.Equal(got, want) {
		t.Errorf("hook runs\n%q\nwant\n%q", got, want)
	}

	logged := projection.NewAgent("ide")
	if err := e.Store().ReadStream(ctx, projection.AgentStream("ide"), 1, logged.Apply); err != nil {
		t.Fatal(err)
	}
	if logged.Restore != nil {
		t.Fatalf("the interrupted restore %s was not rolled forward: the log ends in state %s after %v",
			logged.Restore.ID, logged.State, logged.Restore.Steps)
	}
	history := a.History()
	if len(history) != len(want.history["ide"]) {
		t.Fatalf("the agent has %d restores after reopening, want %d: %s", len(history), len(want.history["ide"]), summarize(history))
	}
	for i, r := range history {
		checkRestore(t, r, want.history["ide"][i])
	}
	if a.Current() != want.current["ide"] {
		t.Errorf("current session %q, want %q", a.Current(), want.current["ide"])
	}

	for session, ids := range acks {
		conv, err := e.Conversation(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if !slices.ContainsFunc(conv, func(m reprise.Message) bool { return m.UUID == id }) {
				t.Errorf("acknowledged message %s of %s is gone", id, session)
			}
		}
	}
	for _, id := range want.order {
		conv, err := e.Conversation(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		checkMessages(t, id, conv, want.sessions[id].saved)
	}
	checkAudit(t, e.Store(), want)

	// A second reopen finds nothing left to do.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, a = open()
	if again, _ := side.all(); len(again) != len(runs) {
		t.Errorf("the second reopen ran hooks: %q", again[len(runs):])
	}
	if !slices.EqualFunc(a.History(), history, func(x, y reprise.Transition) bool { return fmt.Sprint(x) == fmt.Sprint(y) }) {
		t.Errorf("the second reopen sees another history")
	}
}

// summarize describes restores in a line each.
func summarize(rs []reprise.Transition) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "\n  %s %s -> %s: %v", r.Source, r.From, r.To, r.Steps)
	}
	return b.String()
}
