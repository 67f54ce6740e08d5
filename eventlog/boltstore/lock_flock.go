//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package boltstore

import (
	"os"
	"syscall"
)

// unlock releases bbolt's flock on f. Closing f alone does not when bbolt
// panicked mid-open: its memory mapping of the file keeps the lock alive.
func unlock(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
