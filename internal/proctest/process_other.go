//go:build !unix

package proctest

import "os"

// exists reports whether process pid can still be found. On Windows
// finding a process opens it, which fails once it is gone.
func exists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}

// kill ends process pid, if it can still be found.
func kill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
