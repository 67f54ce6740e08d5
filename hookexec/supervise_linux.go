package hookexec

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
)

// parentDeathSignal is what Linux sends the supervisor when the process
// that started it dies.
const parentDeathSignal = syscall.SIGTERM

// shellSupervisor is the script of ShellSupervisor, run by the
// hook's own shell with the host's pid and the hook's command line as its
// arguments and the shell's path as $0: it starts the hook as its own
// "$0 -c LINE", with the supervisor's standard input, and waits for it.
// When the host dies, Linux sends the supervisor parentDeathSignal, and
// its trap kills the process group, the hook's children with it, once
// /proc says the parent is really gone (see supervise). It ends as the
// hook ended: with its exit status, or by the signal that killed it (a
// status above 128 is taken as one, as shells report them).
const shellSupervisor = `parent=$1 line=$2
shift 2
gone() {
	ppid=
	while read -r k v; do [ "$k" = PPid: ] && { ppid=$v; break; }; done < /proc/$$/status
	[ "$ppid" != "$parent" ]
}
trap 'gone && kill -KILL 0' TERM
if gone; then kill -KILL 0; fi
exec 3<&0
"$0" -c "$line" <&3 3<&- &
hook=$!
exec 3<&-
while :; do
	wait $hook
	st=$?
	kill -0 $hook 2>/dev/null || break
done
if [ $st -gt 128 ]; then
	trap - TERM
	kill -$((st - 128)) $$
fi
exit $st`

// superviseShell makes cmd, a hook's "SHELL -c LINE", start its shell as
// the hook's supervisor: the shell runs shellSupervisor, which runs LINE
// in a second shell of the same kind.
func superviseShell(cmd *exec.Cmd) {
	shell, line := cmd.Args[0], cmd.Args[2]
	cmd.Args = []string{shell, "-c", shellSupervisor, shell, strconv.Itoa(os.Getpid()), line}
	cmd.SysProcAttr.Pdeathsig = parentDeathSignal
}

// superviseCommand makes cmd start the supervisor, which runs cmd's own
// command line, with the pid of this process, which it watches.
func superviseCommand(cmd *exec.Cmd, supervisor string) {
	cmd.Args = append([]string{supervisor, SupervisorArg, strconv.Itoa(os.Getpid())}, cmd.Args...)
	cmd.Path = supervisor
	cmd.SysProcAttr.Pdeathsig = parentDeathSignal
}

// supervise is the supervisor: args are the pid of the process that
// started it, then the hook's command line. It returns the exit code to
// end with; a hook ended by a signal ends the supervisor by the same
// signal.
//
// Linux sends the parent-death signal when the thread that started the
// child ends, not only the process (a Go thread ends when a goroutine
// locked to it returns), so the signal is acted on only once the parent
// is really gone: the supervisor's parent pid is no longer the one given.
func supervise(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "hook supervisor: want the parent's pid and a command line")
		return 2
	}
	parent, err := strconv.Atoi(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "hook supervisor: parent pid: %v\n", err)
		return 2
	}
	// The group it may kill must be its own, never its starter's.
	if syscall.Getpgrp() != os.Getpid() {
		fmt.Fprintln(os.Stderr, "hook supervisor: not the leader of its process group")
		return 2
	}
	died := make(chan os.Signal, 1)
	signal.Notify(died, parentDeathSignal)
	// A parent that died before the signal was caught sent it too early:
	// its death shows in the parent pid.
	if os.Getppid() != parent {
		return killGroup()
	}
	hook := exec.Command(args[1])
	hook.Args = args[1:]
	hook.Stdin, hook.Stdout, hook.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := hook.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "hook supervisor: %v\n", err)
		return 127
	}
	done := make(chan struct{})
	go func() {
		_ = hook.Wait() // its status is in ProcessState
		close(done)
	}()
	for {
		select {
		case <-died:
			if os.Getppid() != parent {
				return killGroup()
			}
		case <-done:
			ws := hook.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				return endBy(ws.Signal())
			}
			return ws.ExitStatus()
		}
	}
}

// killGroup kills the supervisor's process group: the hook, its children
// and the supervisor itself. It returns the status of a process that
// SIGKILL ended, for the moment before the signal lands.
func killGroup() int {
	_ = syscall.Kill(0, syscall.SIGKILL)
	return 128 + int(syscall.SIGKILL)
}

// endBy ends the supervisor by sig, so that its parent sees the wait
// status the hook left: a Go program cannot take a signal's default
// action itself, so /bin/sh, which has it, replaces the supervisor and
// sends sig to itself. No core file is written. If that fails, it returns
// 128 plus the signal's number, as a shell reports such a death.
func endBy(sig syscall.Signal) int {
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	code := 128 + int(sig)
	script := fmt.Sprintf("kill -%d $$; exit %d", int(sig), code)
	_ = syscall.Exec("/bin/sh", []string{"sh", "-c", script}, nil)
	return code
}
