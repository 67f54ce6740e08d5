//go:build !unix

package files

import (
	"fmt"
	"io/fs"
	"runtime"
)

// safeOpenFlags are none: no file beside the store is opened here, as
// checkFilesPlatform refuses every directory first.
const safeOpenFlags = 0

// checkFilesPlatform refuses dir: owners and modes are a Unix system's, so
// here nothing tells whether a directory is the user's own.
func checkFilesPlatform(dir string) error {
	return fmt.Errorf("%w: %s: only a Unix system, such as Linux or macOS, tells whether a directory is the user's own, and this is %s",
		ErrNotPrivate, dir, runtime.GOOS)
}

// checkPrivate refuses dir, as checkFilesPlatform does.
func checkPrivate(dir string, _ fs.FileInfo) error {
	return checkFilesPlatform(dir)
}
