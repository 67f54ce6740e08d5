//go:build linux || darwin

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal tells whether r is a terminal, where a prompt sign helps and
// a question can be answered: a file whose terminal attributes can be
// read, which neither a pipe nor /dev/null is.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), getTermios)
	return err == nil
}
