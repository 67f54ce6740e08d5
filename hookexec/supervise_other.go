//go:build !linux

package hookexec

import (
	"fmt"
	"os"
	"os/exec"
)

// superviseCommand leaves cmd as it is: supervision needs Linux's
// parent-death signal.
func superviseCommand(*exec.Cmd, string) {}

// superviseShell leaves cmd as it is, as superviseCommand does.
func superviseShell(*exec.Cmd) {}

// supervise refuses to run: Exec never starts a supervisor here.
func supervise([]string) int {
	fmt.Fprintln(os.Stderr, "hook supervisor: supported on Linux only")
	return 2
}
