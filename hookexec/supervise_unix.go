//go:build unix

package hookexec

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// watcherScript is the process's hook supervisor, one /bin/sh for the
// whole process: it reads "+ GROUP" from its standard input when a hook's
// process group starts and "- GROUP" when the hook has ended. Its input
// ends only when the last writer is gone, the host, however it ended:
// then it kills every group it still holds with SIGKILL, and exits. It
// leads a process group of its own, so the signals sent to the host's
// group do not reach it, and it ignores the usual signals anyway: its end
// is the end of its input.
const watcherScript = `trap '' HUP INT QUIT TERM USR1 USR2 ALRM
groups=' '
while read -r op group; do
	case $op$groups in
	+*) groups="$groups$group " ;;
	-*" $group "*) groups="${groups%% $group *} ${groups#* $group }" ;;
	esac
done
for group in $groups; do kill -s KILL -- "-$group"; done 2>/dev/null`

// watcher is the running process's supervisor of command hooks.
type watcher struct {
	mu     sync.Mutex
	in     *os.File     // the supervisor's standard input; nil when none runs
	cmd    *exec.Cmd    // the supervisor, reaped once its input breaks
	groups map[int]bool // the process groups of the hooks running now
}

// watcherShell is the shell that runs watcherScript.
var watcherShell = "/bin/sh"

// hooksWatcher is the process's one supervisor, started with the first
// supervised hook.
var hooksWatcher = watcher{groups: map[int]bool{}}

// add tells the supervisor that process group group has started.
func (w *watcher) add(group int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.groups[group] = true
	if err := w.tell("+ " + strconv.Itoa(group) + "\n"); err != nil {
		delete(w.groups, group)
		return err
	}
	return nil
}

// remove tells the supervisor that the hook of group has ended, so that
// it never kills a group that number names later.
func (w *watcher) remove(group int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.groups, group)
	if w.in != nil {
		_ = w.tell("- " + strconv.Itoa(group) + "\n") // a new one is told only the groups left
	}
}

// tell writes line to the supervisor. When none runs, or the one that ran
// is gone (its input is broken: something killed it), it starts one and
// tells it every group instead, line included.
func (w *watcher) tell(line string) error {
	if w.in != nil {
		if _, err := w.in.WriteString(line); err == nil {
			return nil
		}
		w.in.Close()
		w.in = nil
		_ = w.cmd.Process.Kill() // it is gone or going: no one reads its input
		_ = w.cmd.Wait()
	}
	return w.start()
}

// start starts a supervisor and tells it every group that runs.
//
// Its input is one end of a Unix socket pair, not a pipe: a hook runs as
// the same user as the supervisor, and could open a pipe of the
// supervisor's through /proc/PID/fd/0, to write "- GROUP" itself or to
// hold the input open past the host's end, and so outlive the host. A
// socket cannot be opened through /proc, so only the host writes to it.
func (w *watcher) start() error {
	r, in, err := socketPair()
	if err != nil {
		return fmt.Errorf("start the hook supervisor: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(watcherShell, "-c", watcherScript)
	cmd.Stdin = r
	cmd.Dir = "/"
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		in.Close()
		return fmt.Errorf("start the hook supervisor: %w", err)
	}
	var all []byte
	for group := range w.groups {
		all = append(strconv.AppendInt(append(all, '+', ' '), int64(group), 10), '\n')
	}
	if _, err := in.Write(all); err != nil {
		in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("hook supervisor: %w", err)
	}
	w.in, w.cmd = in, cmd
	return nil
}

// socketPair returns the two ends of a new Unix stream socket pair, each
// closed on exec. It holds syscall.ForkLock while it marks them, as os.Pipe
// does, so that no hook started meanwhile inherits an end.
func socketPair() (r, w *os.File, err error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	return os.NewFile(uintptr(fds[0]), "hook supervisor input"), os.NewFile(uintptr(fds[1]), "hook supervisor"), nil
}

// supervision is one command hook under the process's supervisor.
type supervision struct {
	gate, read *os.File // the two ends of the hook's gate
	group      int      // its process group, once the supervisor holds it
	err        error    // why the supervisor could not hold it
}

// supervise makes cmd, a hook's "SHELL -c LINE" that starts in a process
// group of its own, wait behind a gate for the supervisor, unless
// supervisor is NoSupervisor: then it returns nil, which runs cmd as it
// is.
func supervise(cmd *exec.Cmd, supervisor string) (*supervision, error) {
	if supervisor == NoSupervisor {
		return nil, nil
	}
	read, gate, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("supervise the hook: %w", err)
	}
	cmd.ExtraFiles = []*os.File{read}
	cmd.Args[2] = gateScript + cmd.Args[2]
	return &supervision{gate: gate, read: read}, nil
}

// start starts cmd, has the supervisor hold its process group and opens
// its gate. If the supervisor cannot hold it, the gate closes unopened,
// the hook's shell exits without running its line and ended returns why.
func (s *supervision) start(cmd *exec.Cmd) error {
	if s == nil {
		return cmd.Start()
	}
	defer s.gate.Close()
	err := cmd.Start()
	s.read.Close()
	if err != nil {
		return err
	}
	if s.err = hooksWatcher.add(cmd.Process.Pid); s.err != nil {
		return nil
	}
	s.group = cmd.Process.Pid
	// A shell that is gone already (its line did not parse) ran nothing
	// and ends as it would bare; the broken gate is no error of its own.
	_, _ = s.gate.Write([]byte{'\n'})
	return nil
}

// ended tells the supervisor that the hook has ended, and returns the
// error that kept the hook from running, if one did.
func (s *supervision) ended() error {
	if s == nil {
		return nil
	}
	if s.group != 0 {
		hooksWatcher.remove(s.group)
	}
	return s.err
}
