//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// inOwnGroup runs cmd in a process group of its own, killed whole when
// cmd's context ends, so that a Bash command's children end with it.
func inOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
