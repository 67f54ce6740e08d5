//go:build !linux && !darwin

package main

import (
	"io"
	"os"
)

// isTerminal tells whether r is a character device, where a prompt sign
// helps and a question can be answered: a terminal, most likely, though
// /dev/null is one as well.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
