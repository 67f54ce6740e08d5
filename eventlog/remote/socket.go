package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// maxSocketPath is the longest socket path every Unix takes: sun_path is
// 104 bytes on the BSDs and macOS (108 on Linux), NUL included.
const maxSocketPath = 103

// tempNameLen is the length of the name a socket is bound under before it
// is renamed into place: "." + 16 hex digits + ".sock".
const tempNameLen = 22

// ownUID returns the user's id; tests replace it to play another user.
var ownUID = os.Getuid

// SocketPath returns where the process holding the store at storePath
// serves its reads: storePath + ".sock" when that path, and the temporary
// name the socket is first bound under beside it, fit in a socket address;
// otherwise a socket named by a hash of the store's absolute path in a
// private directory of the user's, under $XDG_RUNTIME_DIR or else the
// system's temporary directory.
func SocketPath(storePath string) string {
	abs, err := filepath.Abs(storePath)
	if err != nil {
		abs = storePath
	}
	if p := abs + ".sock"; len(p) <= maxSocketPath && len(filepath.Dir(p))+1+tempNameLen <= maxSocketPath {
		return p
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(privateDir(), hex.EncodeToString(sum[:12])+".sock")
}

// privateDir returns the directory of the user's sockets whose path would
// not fit beside their store.
func privateDir() string {
	if dir := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "reprise")
	}
	return filepath.Join(os.TempDir(), "reprise-"+strconv.Itoa(ownUID()))
}

// makePrivateDir creates dir, mode 0700, if it does not exist, and checks
// that it is a directory (not a symbolic link) of the user's own that no
// one else may enter.
func makePrivateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return fmt.Errorf("create the socket directory: %w", err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	if !info.IsDir() || info.Mode().Perm()&0o077 != 0 || owner(info) != ownUID() {
		return fmt.Errorf("%w: %s must be a directory of the user's own with mode 0700", ErrNotOwned, dir)
	}
	return nil
}

// checkSocket fails unless path is a socket of the user's own: in a shared
// directory another user could have put one there.
func checkSocket(path string) error {
	info, err := os.Lstat(path)
	switch {
	case os.IsNotExist(err):
		return fmt.Errorf("%w: no socket at %s", ErrNotServing, path)
	case err != nil:
		return fmt.Errorf("%w: %w", ErrNotServing, err)
	case info.Mode().Type() != fs.ModeSocket:
		return fmt.Errorf("%w: %s is not a socket", ErrNotOwned, path)
	case owner(info) != ownUID():
		return fmt.Errorf("%w: %s belongs to user %d", ErrNotOwned, path, owner(info))
	}
	return nil
}
