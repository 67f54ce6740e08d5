//go:build !unix

package remote

import "io/fs"

// owner returns -1: without Unix file owners, no socket is the user's own.
func owner(fs.FileInfo) int { return -1 }
