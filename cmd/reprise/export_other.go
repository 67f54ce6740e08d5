//go:build !unix

package main

import (
	"fmt"
	"io/fs"
	"os"
)

// ownedByUser reports true: nothing here tells who owns a file, and
// replacing one the user may not write fails anyway.
func ownedByUser(fs.FileInfo) bool {
	return true
}

// exportToDescriptor refuses: the names of open descriptors (/dev/fd/N
// and the like) are a Unix system's.
func exportToDescriptor(_ exportFunc, path string, _ int) (int64, error) {
	return 0, fmt.Errorf("export: %s names an open descriptor, which only a Unix system can write to by name", path)
}

// blockingUnlessPolled leaves f as it is: O_NONBLOCK is a Unix system's,
// so here the open left f blocking.
func blockingUnlessPolled(*os.File) error {
	return nil
}
