//go:build unix

package remote

import (
	"io/fs"
	"syscall"
)

// owner returns the user id owning the file info describes, or -1.
func owner(info fs.FileInfo) int {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
