//go:build unix

package private

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// NoFollow is the open flag that refuses a symbolic link at a path's last
// component.
const NoFollow = syscall.O_NOFOLLOW

// OwnedByUser reports whether info is of a file the running user owns.
func OwnedByUser(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// TrustedOwner reports whether info is of a file the running user or root
// owns: no other user could have written it.
func TrustedOwner(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && (int(st.Uid) == os.Getuid() || st.Uid == 0)
}

// OthersMayWrite reports whether info's mode lets its group or everyone
// write it.
func OthersMayWrite(info fs.FileInfo) bool { return info.Mode().Perm()&0o022 != 0 }

// CheckAncestors refuses a path whose parents another user could rename it
// out of, or swap for a directory of theirs: each directory above it,
// symbolic links resolved, must belong to the user or to root, and one
// that others may write (such as /tmp) must be sticky, so that only an
// entry's owner can rename it. A refusal wraps refused, the caller's
// sentinel; an error reading a parent is returned as it is. A relative
// path is taken against the working directory.
func CheckAncestors(path string, refused error) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return err
	}
	for p := parent; ; p = filepath.Dir(p) {
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		switch {
		case !ok:
		case int(st.Uid) != os.Getuid() && st.Uid != 0:
			return fmt.Errorf("%w: %s, above %s, belongs to another user, who could replace it", refused, p, path)
		case info.Mode().Perm()&0o022 != 0 && info.Mode()&fs.ModeSticky == 0:
			return fmt.Errorf("%w: %s, above %s, may be written by other users (mode %04o) and is not sticky, so they could replace it",
				refused, p, path, info.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
