//go:build unix

package reprise

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// safeOpenFlags are added to every open of a file beside the store: it
// never goes through a symbolic link, nor waits on a FIFO.
const safeOpenFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// checkFilesPlatform returns nil: a Unix system tells whether a directory
// is the user's own.
func checkFilesPlatform(string) error {
	return nil
}

// checkPrivate refuses a directory that another user could have planted
// files in, or could swap for one of theirs: see checkPrivateDir and
// checkAncestors. info is the directory's Lstat.
func checkPrivate(dir string, info fs.FileInfo) error {
	if err := checkPrivateDir(dir, info); err != nil {
		return err
	}
	return checkAncestors(dir)
}

// checkPrivateDir refuses a directory that another user could have
// planted files in: a symbolic link, one owned by someone else, or one that
// group or others may write. info is the directory's Lstat.
func checkPrivateDir(dir string, info fs.FileInfo) error {
	switch {
	case !info.IsDir():
		return fmt.Errorf("%w: %s is not a directory (a symbolic link is not followed)", ErrNotPrivate, dir)
	case !ownedByUser(info):
		return fmt.Errorf("%w: %s belongs to another user", ErrNotPrivate, dir)
	case info.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%w: %s may be written by other users (mode %04o); run chmod go-w on it", ErrNotPrivate, dir, info.Mode().Perm())
	}
	return nil
}

// checkAncestors refuses a directory whose parents another user could
// rename it out of, or swap for a directory of theirs: each directory above
// it, symbolic links resolved, must belong to the user or to root, and one
// that others may write (such as /tmp) must be sticky, so that only an
// entry's owner can rename it.
func checkAncestors(dir string) error {
	parent, err := filepath.EvalSymlinks(filepath.Dir(dir))
	if err != nil {
		return fmt.Errorf("reprise: %w", err)
	}
	for p := parent; ; p = filepath.Dir(p) {
		info, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("reprise: %w", err)
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		switch {
		case !ok:
		case int(st.Uid) != os.Getuid() && st.Uid != 0:
			return fmt.Errorf("%w: %s, above %s, belongs to another user, who could replace it", ErrNotPrivate, p, dir)
		case info.Mode().Perm()&0o022 != 0 && info.Mode()&fs.ModeSticky == 0:
			return fmt.Errorf("%w: %s, above %s, may be written by other users (mode %04o) and is not sticky, so they could replace it",
				ErrNotPrivate, p, dir, info.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// ownedByUser reports whether info is of a file the running user owns.
func ownedByUser(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
