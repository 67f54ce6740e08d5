//go:build unix

package hookexec

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// commandPlatform returns nil: a Unix system runs command hooks.
func commandPlatform() error {
	return nil
}

// inOwnGroup makes cmd start in a process group of its own and, when its
// context is done, kill the whole group with SIGKILL, so that what the
// hook started dies with it. r records that the group was killed.
func inOwnGroup(cmd *exec.Cmd, r *commandRun) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		if err == nil {
			r.killed.Store(true)
		}
		return err
	}
}
