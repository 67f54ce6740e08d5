//go:build unix

package hookexec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/internal/proctest"
	"github.com/reprise-dev/reprise/schema"
)

// The command tests, run again with every hook bare (NoSupervisor), give
// the same outcomes as under the supervisor: exit codes, context from
// stdout and JSON, stdin, timeouts, cancellations, a death by a signal,
// output limits.
func TestUnsupervisedCommandsBehaveTheSame(t *testing.T) {
	if testSupervisor != "" {
		t.Skip("this run is an unsupervised one")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCommand", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), supervisedEnv+"="+NoSupervisor)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the command tests without a supervisor: %v\n%s", err, out)
	}
	if n := bytes.Count(out, []byte("--- PASS: TestCommand")); n < 15 {
		t.Fatalf("only %d command tests passed without a supervisor:\n%s", n, out)
	}
}

// A supervised hook is what a bare one is: its $$ leads its own process
// group, its $PPID is the host, and it holds the descriptors a bare one
// holds, the gate's closed.
func TestSupervisedHookIsTheHostsChild(t *testing.T) {
	t.Parallel()
	const line = `echo $$ $(ps -o pgid= -p $$) $PPID; ls /dev/fd/ | tr '\n' ' '`
	env := testEnv(t)
	env.supervisor = ""
	o, text := runTestHook(t, line, env)
	f := strings.Fields(text)
	want := []string{f[0], f[0], strconv.Itoa(os.Getpid())}
	if o.Status != schema.HookOK || len(f) < 3 || strings.Join(f[:3], " ") != strings.Join(want, " ") {
		t.Fatalf("outcome %+v, context %q: want $$, its group and $PPID to be %v", o, text, want)
	}
	env.supervisor = NoSupervisor
	_, bare := runTestHook(t, line, env)
	if fds, bareFDs := strings.Join(f[3:], " "), strings.Join(strings.Fields(bare)[3:], " "); fds != bareFDs {
		t.Fatalf("a supervised hook holds descriptors %s, a bare one %s", fds, bareFDs)
	}
}

// When the host is killed with SIGKILL while a hook runs, the supervisor
// kills the hook's process group: the hook's shell and the child it
// started in the background are gone.
func TestSupervisorKillsTheHookWhenTheHostDies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	host := startHost(t, dir, "sleep 300 & echo $! > grandchild; echo $$ > hook; wait", "")
	pids := map[string]int{
		"hook":       proctest.WaitPid(t, filepath.Join(dir, "hook"), nil),
		"grandchild": proctest.WaitPid(t, filepath.Join(dir, "grandchild"), nil),
	}
	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	proctest.AssertGone(t, pids)
}

// When a signal ends the host's whole process group, as a terminal's or a
// service manager's does, the supervisor, in a group of its own, outlives
// the host and kills the hook.
func TestSupervisorKillsTheHookWhenTheHostsGroupIsSignalled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	host := exec.Command(os.Args[0])
	host.Dir = dir
	host.Env = append(os.Environ(), hostEnv+"=trap '' TERM; echo $$ > hook; sleep 300 & wait", hostSupervisorEnv+"=")
	host.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	hook := proctest.WaitPid(t, filepath.Join(dir, "hook"), nil)
	if err := syscall.Kill(-host.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	proctest.AssertGone(t, map[string]int{"hook": hook})
}

// The supervisor holds none of the host's output, where a parent may
// wait for its end: its standard output and error are /dev/null.
func TestSupervisorHoldsNoneOfTheHostsOutput(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc to read a process's descriptors from")
	}
	if o, _ := runTestHook(t, "true", CommandEnv{ProjectDir: t.TempDir()}); o.Status != schema.HookOK {
		t.Fatalf("outcome %+v", o)
	}
	hooksWatcher.mu.Lock()
	pid := hooksWatcher.cmd.Process.Pid
	hooksWatcher.mu.Unlock()
	for _, fd := range []string{"1", "2"} {
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd)); err != nil || target != os.DevNull {
			t.Errorf("the supervisor's descriptor %s is %q (%v), want %s", fd, target, err, os.DevNull)
		}
	}
}

// With NoSupervisor, a hook outlives a host that is killed, as the docs
// say: what the supervisor is for.
func TestWithoutASupervisorTheHookOutlivesTheHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	host := startHost(t, dir, "echo $$ > hook; sleep 300", NoSupervisor)
	hook := proctest.WaitPid(t, filepath.Join(dir, "hook"), nil)
	t.Cleanup(func() { _ = syscall.Kill(-hook, syscall.SIGKILL) })
	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	time.Sleep(200 * time.Millisecond)
	if err := syscall.Kill(hook, 0); err != nil {
		t.Fatalf("the hook is gone without a supervisor: %v", err)
	}
}

// startHost starts the test binary as a host that runs the hook line in
// dir under supervisor.
func startHost(t *testing.T, dir, line, supervisor string) *exec.Cmd {
	t.Helper()
	host := exec.Command(os.Args[0])
	host.Dir = dir
	host.Env = append(os.Environ(), hostEnv+"="+line, hostSupervisorEnv+"="+supervisor)
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	return host
}

// The supervisor forgets the hooks that ended, whichever order they end
// in, and holds those that run: when its input ends (as when the host
// dies), the running hook is killed, and the background children that
// finished hooks left behind are left alone, as bare hooks' are. A
// supervisor killed meanwhile is replaced by one that holds every hook
// still running.
func TestSupervisorHoldsTheRunningHooksOnly(t *testing.T) {
	// Not parallel: it ends the process's supervisor.
	dir := t.TempDir()
	env := CommandEnv{ProjectDir: dir}
	var wg sync.WaitGroup
	run := func(line string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runTestHook(t, line, env)
		}()
	}
	// Three hooks leave a child behind and end, the second first.
	for i, wait := range []string{"0.3", "0.1", "0.5"} {
		run(fmt.Sprintf("sleep 300 </dev/null >/dev/null 2>&1 & echo $! > left%d; sleep %s", i, wait))
	}
	run("echo $$ > running1; sleep 300")
	left := map[string]int{}
	for i := range 3 {
		left[fmt.Sprint("left", i)] = proctest.WaitPid(t, filepath.Join(dir, fmt.Sprint("left", i)), nil)
	}
	t.Cleanup(func() {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	running := map[string]int{"running1": proctest.WaitPid(t, filepath.Join(dir, "running1"), nil)}

	// Kill the supervisor; the next hook starts another.
	hooksWatcher.mu.Lock()
	old := hooksWatcher.cmd.Process.Pid
	hooksWatcher.mu.Unlock()
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Without /proc a zombie counts as alive: wait no longer than it
	// takes a SIGKILL to land.
	for deadline := time.Now().Add(2 * time.Second); proctest.Alive(old) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	run("echo $$ > running2; sleep 300")
	running["running2"] = proctest.WaitPid(t, filepath.Join(dir, "running2"), nil)
	hooksWatcher.mu.Lock()
	if hooksWatcher.cmd.Process.Pid == old {
		t.Errorf("the killed supervisor %d was not replaced", old)
	}
	hooksWatcher.mu.Unlock()
	time.Sleep(600 * time.Millisecond) // the three short hooks end

	endSupervisor()
	proctest.AssertGone(t, running)
	wg.Wait()
	for name, pid := range left {
		if !proctest.Alive(pid) {
			t.Errorf("%s, the child of a hook that had ended, was killed", name)
		}
	}
}

// endSupervisor closes the process supervisor's input, as the host's death
// would: it kills the hooks it holds and exits. The next hook starts a
// new one.
func endSupervisor() {
	hooksWatcher.mu.Lock()
	defer hooksWatcher.mu.Unlock()
	if hooksWatcher.in != nil {
		hooksWatcher.in.Close()
		hooksWatcher.in = nil
		_ = hooksWatcher.cmd.Wait()
	}
}

// A hook that the supervisor cannot hold (none could be started) fails
// with the reason, without running its line.
func TestAHookNoSupervisorHoldsDoesNotRun(t *testing.T) {
	// Not parallel: it ends the process's supervisor.
	endSupervisor()
	watcherShell = filepath.Join(t.TempDir(), "no-shell")
	defer func() { watcherShell = "/bin/sh" }()
	env := testEnv(t)
	env.supervisor = ""
	o, _ := runTestHook(t, "touch ran", env)
	if o.Status != schema.HookFailed || !strings.Contains(o.Error, "start the hook supervisor") {
		t.Fatalf("outcome %+v: want it failed, as no supervisor could start", o)
	}
	if _, err := os.Stat(filepath.Join(env.ProjectDir, "ran")); !os.IsNotExist(err) {
		t.Fatalf("the line ran: %v", err)
	}
}

// A line the shell cannot parse ends as it does bare: exit 2 and the
// shell's message, not an error of the gate it never read.
func TestUnparsableLineEndsAsBare(t *testing.T) {
	t.Parallel()
	var got [2]schema.HookOutcome
	for i, supervisor := range []string{NoSupervisor, ""} {
		env := testEnv(t)
		env.supervisor = supervisor
		got[i], _ = runTestHook(t, `echo "unterminated`, env)
	}
	bare, supervised := got[0], got[1]
	if supervised.Status != schema.HookFailed || supervised.ExitCode != 2 || supervised.Stderr != bare.Stderr || bare.Stderr == "" {
		t.Fatalf("supervised %+v, bare %+v: want both failed with exit 2 and the shell's message", supervised, bare)
	}
}

// A hook whose gate closes unopened (its host died, or could not tell the
// supervisor) exits without running its line.
func TestAClosedGateRunsNothing(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command("/bin/sh", "-c", "touch "+shellQuote(marker))
	s, err := supervise(cmd, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.read.Close()
	s.gate.Close()
	err = cmd.Wait()
	if cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("the shell behind a closed gate: %v, want exit 1", err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the line ran: %v", err)
	}
}

// BenchmarkCommandHook measures one command hook run, bare and under the
// process's supervisor; compare them in one run.
func BenchmarkCommandHook(b *testing.B) {
	for _, c := range []struct {
		name       string
		supervisor string
	}{{"bare", NoSupervisor}, {"supervised", ""}} {
		b.Run(c.name, func(b *testing.B) {
			env := CommandEnv{ProjectDir: b.TempDir(), supervisor: c.supervisor}
			h := Hook{Event: SessionStart, Name: "echo", Body: Command{Line: "echo ok"}}
			for b.Loop() {
				if o, text := runText(context.Background(), h, nil, env, time.Minute); o.Status != schema.HookOK || text != "ok" {
					b.Fatalf("outcome %+v, context %q", o, text)
				}
			}
		})
	}
}

// A hook cannot reach the supervisor's input: it runs as the same user,
// but the input is a socket, which /proc/PID/fd/0 does not open, so the
// hook can neither tell the supervisor to forget its group nor hold the
// input open past the host's end. When the host is killed, the hook that
// tried dies with it.
func TestAHookCannotWriteToOrHoldTheSupervisorsInput(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc to reach another process's descriptors through")
	}
	dir := t.TempDir()
	// The hook finds its host's supervisor: the sibling whose command line
	// is the supervisor's script.
	line := `for p in /proc/[0-9]*; do
  [ "$(awk '{print $4}' $p/stat 2>/dev/null)" = "$PPID" ] && grep -q 'groups=' $p/cmdline 2>/dev/null && sup=${p#/proc/}
done
if [ -z "$sup" ]; then echo "no supervisor" > result
elif (exec 9>/proc/$sup/fd/0) 2>/dev/null; then exec 9>/proc/$sup/fd/0; echo "- $$" >&9; echo forged > result
else echo refused > result; fi
echo $$ > hook; sleep 300`
	host := startHost(t, dir, line, "")
	hook := proctest.WaitPid(t, filepath.Join(dir, "hook"), nil)
	t.Cleanup(func() { _ = syscall.Kill(-hook, syscall.SIGKILL) })
	if result, _ := os.ReadFile(filepath.Join(dir, "result")); string(result) != "refused\n" {
		t.Errorf("the hook reaching for the supervisor's input: %q, want refused", result)
	}
	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	proctest.AssertGone(t, map[string]int{"hook": hook})
}
