//go:build unix

package files

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/reprise-dev/reprise/internal/private"
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
// private.CheckAncestors. info is the directory's Lstat.
func checkPrivate(dir string, info fs.FileInfo) error {
	if err := checkPrivateDir(dir, info); err != nil {
		return err
	}
	if err := private.CheckAncestors(dir, ErrNotPrivate); err != nil {
		if !errors.Is(err, ErrNotPrivate) {
			err = fmt.Errorf("reprise: %w", err)
		}
		return err
	}
	return nil
}

// checkPrivateDir refuses a directory that another user could have
// planted files in: a symbolic link, one owned by someone else, or one that
// group or others may write. info is the directory's Lstat.
func checkPrivateDir(dir string, info fs.FileInfo) error {
	switch {
	case !info.IsDir():
		return fmt.Errorf("%w: %s is not a directory (a symbolic link is not followed)", ErrNotPrivate, dir)
	case !private.OwnedByUser(info):
		return fmt.Errorf("%w: %s belongs to another user", ErrNotPrivate, dir)
	case info.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%w: %s may be written by other users (mode %04o); run chmod go-w on it", ErrNotPrivate, dir, info.Mode().Perm())
	}
	return nil
}
