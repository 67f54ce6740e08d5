package hookexec

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/internal/proctest"
	"github.com/reprise-dev/reprise/schema"
)

// The command tests, run again with every hook under each supervisor,
// give the same outcomes: exit codes, context from stdout and JSON, stdin,
// timeouts, cancellations, a death by a signal, output limits.
func TestSupervisedCommandsBehaveTheSame(t *testing.T) {
	if testSupervisor != "" {
		t.Skip("this run is a supervised one")
	}
	for _, supervisor := range []string{SelfExecutable, ShellSupervisor} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCommand", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), supervisedEnv+"="+supervisor)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the command tests under %s: %v\n%s", supervisor, err, out)
		}
		if n := bytes.Count(out, []byte("--- PASS: TestCommand")); n < 15 {
			t.Fatalf("only %d command tests passed under %s:\n%s", n, supervisor, out)
		}
	}
}

// Under ShellSupervisor, a hook's parent is its own shell, in the hook's
// process group, running the supervisor's script.
func TestShellSupervisorIsTheHooksShell(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env.supervisor = ShellSupervisor
	o, text := runTestHook(t, `tr '\0' ' ' < /proc/$PPID/cmdline; echo; ps -o pgid= -p $$ $PPID`, env)
	lines := strings.Split(text, "\n")
	if o.Status != schema.HookOK || len(lines) < 3 || !strings.HasPrefix(text, "/bin/sh -c "+shellSupervisor) {
		t.Fatalf("outcome %+v, context %q: want the shell supervisor's command line and two process groups", o, text)
	}
	if a, b := strings.TrimSpace(lines[len(lines)-2]), strings.TrimSpace(lines[len(lines)-1]); a != b {
		t.Fatalf("the hook is in process group %s, its supervisor in %s", a, b)
	}
}

// Under a supervisor, the hook's parent is the supervisor, started from
// the executable named, in the hook's process group.
func TestCommandRunsUnderTheSupervisor(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env.supervisor = SelfExecutable
	o, text := runTestHook(t, `tr '\0' ' ' < /proc/$PPID/cmdline; echo; ps -o pgid= -p $$ $PPID`, env)
	lines := strings.Split(text, "\n")
	if o.Status != schema.HookOK || len(lines) != 3 || !strings.Contains(lines[0], SupervisorArg) {
		t.Fatalf("outcome %+v, context %q: want the supervisor's command line and two process groups", o, text)
	}
	if a, b := strings.TrimSpace(lines[1]), strings.TrimSpace(lines[2]); a != b {
		t.Fatalf("the hook is in process group %s, its supervisor in %s", a, b)
	}
}

// When the host is killed with SIGKILL while a hook runs, the supervisor
// kills the hook's process group: the hook's shell and the child it
// started in the background are gone.
func TestSupervisorKillsTheHookWhenTheHostDies(t *testing.T) {
	t.Parallel()
	for _, supervisor := range []string{ShellSupervisor, SelfExecutable} {
		dir := t.TempDir()
		host := exec.Command(os.Args[0])
		host.Dir = dir
		host.Env = append(os.Environ(), hostEnv+"=sleep 300 & echo $! > grandchild; echo $$ > hook; wait",
			hostSupervisorEnv+"="+supervisor)
		if err := host.Start(); err != nil {
			t.Fatal(err)
		}
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
}

// Without a supervisor, a hook outlives a host that is killed, as the
// docs say: what a supervisor is for.
func TestWithoutASupervisorTheHookOutlivesTheHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	host := exec.Command(os.Args[0])
	host.Dir = dir
	host.Env = append(os.Environ(), hostEnv+"=echo $$ > hook; sleep 300", hostSupervisorEnv+"=")
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
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

// A parent-death signal that comes while the parent lives (Linux sends it
// when the thread that started the supervisor ends) changes nothing: the
// hook runs to its end and its answer counts.
func TestSupervisorIgnoresTheSignalWhileTheHostLives(t *testing.T) {
	t.Parallel()
	for _, supervisor := range []string{ShellSupervisor, SelfExecutable} {
		env := testEnv(t)
		env.supervisor = supervisor
		file := filepath.Join(env.ProjectDir, "supervisor")
		go func() {
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				data, _ := os.ReadFile(file)
				if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
					_ = syscall.Kill(pid, parentDeathSignal)
					return
				}
			}
		}()
		o, text := runTestHook(t, "echo $PPID > supervisor; sleep 1; echo still here", env)
		if o.Status != schema.HookOK || text != "still here" {
			t.Fatalf("supervisor %q: outcome %+v, context %q", supervisor, o, text)
		}
	}
}

// A supervisor whose parent is not the one it was given (the parent died
// before the supervisor could catch the signal) never starts the hook and
// kills its process group.
func TestSupervisorStartsNothingOnceItsParentIsGone(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command(os.Args[0], SupervisorArg, "1", "/bin/sh", "-c", "touch "+shellQuote(marker))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the group it kills is its own
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("supervisor with a wrong parent: %v; want it killed by SIGKILL", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the hook ran: %v", err)
	}
}

// A supervisor that does not lead a process group of its own refuses to
// run: the group it would kill is its starter's.
func TestSupervisorRefusesToShareItsStartersGroup(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command(os.Args[0], SupervisorArg, strconv.Itoa(os.Getpid()), "/bin/sh", "-c", "touch "+shellQuote(marker))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "process group") {
		t.Fatalf("supervisor in its starter's group: %v, stderr %q; want exit 2", err, stderr.String())
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the hook ran: %v", err)
	}
}

// BenchmarkCommandHook measures one command hook run, bare, under the
// shell supervisor and under the executable one; compare them in one run.
func BenchmarkCommandHook(b *testing.B) {
	for _, c := range []struct {
		name       string
		supervisor string
	}{{"bare", ""}, {"shell", ShellSupervisor}, {"executable", SelfExecutable}} {
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
