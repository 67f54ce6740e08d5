//go:build unix

package proctest

import "syscall"

// exists reports whether process pid exists, a zombie included.
func exists(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// kill sends process pid SIGKILL, if it still runs.
func kill(pid int) {
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
