//go:build unix

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// ownedByUser reports whether info is of a file the running user owns.
func ownedByUser(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// exportToDescriptor writes the transcript export makes to descriptor fd,
// which path names, at its position, as a shell redirection would.
func exportToDescriptor(export exportFunc, path string, fd int) (int64, error) {
	syscall.ForkLock.RLock()
	dup, err := syscall.Dup(fd)
	if err == nil {
		syscall.CloseOnExec(dup)
	}
	syscall.ForkLock.RUnlock()
	if errors.Is(err, syscall.EBADF) {
		return 0, fmt.Errorf("export: %s names descriptor %d, which is not open", path, fd)
	}
	if err != nil {
		return 0, fmt.Errorf("export: %s: %w", path, err)
	}
	f := os.NewFile(uintptr(dup), path)
	defer f.Close()
	w := &countingWriter{w: f}
	if err := export(w); err != nil {
		return w.n, err
	}
	return w.n, f.Close()
}

// blockingUnlessPolled makes the writes to f, opened non-blocking, wait
// in the write itself when f is a file the runtime does not poll (a
// FIFO on macOS, /dev/null).
func blockingUnlessPolled(f *os.File) error {
	if err := f.SetWriteDeadline(time.Time{}); !errors.Is(err, os.ErrNoDeadline) {
		return nil
	}
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if cerr := conn.Control(func(fd uintptr) { err = syscall.SetNonblock(int(fd), false) }); cerr != nil {
		return cerr
	}
	return err
}
