//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/reprise-dev/reprise/internal/private"
)

// removeKilledBackups removes the temporary copies that backups to file
// killed before their rename left beside it (.FILE.NNN): full copies of
// the store, which may hold what rm and vacuum have removed since. A copy
// is removed only if it is a regular file of the user's that no process
// has locked: a backup running now holds its copy's lock.
func removeKilledBackups(file string) {
	dir, base := filepath.Dir(file), filepath.Base(file)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range entries {
		name := ent.Name()
		rest, ok := strings.CutPrefix(name, "."+base+".")
		if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		info, err := f.Stat()
		if err == nil && info.Mode().IsRegular() && private.OwnedByUser(info) &&
			syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.Remove(path)
		}
		f.Close()
	}
}
