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

// asServer runs cmd, an MCP server, in a process group of its own, so
// that a Ctrl-C at the terminal, which the agent answers by ending the
// session (SessionEnd hooks may call the server), does not kill it
// first; and, where the system can (Linux), has it killed when the agent
// dies.
func asServer(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

// killServer kills the process group of cmd, a server started by
// asServer: what it started itself included.
func killServer(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
