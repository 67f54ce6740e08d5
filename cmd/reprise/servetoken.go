package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/internal/private"
)

// serveTokenSuffix names the file beside a bbolt store where serve keeps
// the token it made: STORE.serve-token.
const serveTokenSuffix = ".serve-token"

// errNotPrivate marks the refusals of a token file or socket path that
// another user could have made or could replace.
var errNotPrivate = errors.New("not private")

// serveTokenFile returns where serve keeps the token of the store at path:
// beside a bbolt file, or, for PostgreSQL, in the user's cache directory,
// named as the store's transcript directory is.
func serveTokenFile(path string) string {
	if !pgstore.IsURL(path) {
		return path + serveTokenSuffix
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "reprise", "serve-tokens", databaseDirName(path))
}

// keptToken returns the token kept in file, making it the first time: a
// random one, written to a file created exclusively (never through a
// link), mode 0600. A file there is read only if it is a regular file of
// the user's that no one else may read or write, under directories no one
// else can replace, and only if it holds a token serve would take.
func keptToken(file string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", fmt.Errorf("cannot keep the serve token: %w", err)
	}
	if err := private.CheckAncestors(file, errNotPrivate); err != nil {
		return "", userError{fmt.Sprintf("cannot keep the serve token in %s: %s; set $"+serveTokenEnv+" instead", file, err.Error()), err}
	}
	for range 3 {
		token, err := readToken(file)
		if !errors.Is(err, fs.ErrNotExist) {
			return token, err
		}
		token, err = writeToken(file)
		if !errors.Is(err, fs.ErrExist) {
			return token, err
		}
		// Another serve made it meanwhile: read that one.
	}
	return "", fmt.Errorf("cannot keep the serve token in %s: it keeps changing", file)
}

// readToken reads the token in file, which must be the user's alone.
func readToken(file string) (string, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|private.NoFollow|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return "", userError{fmt.Sprintf("the serve token file %s is a symbolic link, which is not followed; remove it, and serve makes a new token", file), errNotPrivate}
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("cannot read the serve token: %w", err)
	}
	if !info.Mode().IsRegular() || !private.OwnedByUser(info) || info.Mode().Perm()&0o077 != 0 {
		return "", userError{fmt.Sprintf("the serve token file %s is not a regular file that only you may read and write (mode %s); "+
			"remove it, and serve makes a new token", file, info.Mode()), errNotPrivate}
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("cannot read the serve token: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if checkToken(token, file) != nil {
		return "", userError{fmt.Sprintf("the serve token file %s holds no token serve takes; remove it, and serve makes a new one", file), nil}
	}
	return token, nil
}

// writeToken makes file, exclusively, holding a new random token.
func writeToken(file string) (string, error) {
	var random [16]byte
	if _, err := rand.Read(random[:]); err != nil {
		return "", err
	}
	token := hex.EncodeToString(random[:])
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL|private.NoFollow, 0o600)
	if err != nil {
		return "", err
	}
	_, err = io.WriteString(f, token+"\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(file)
		return "", fmt.Errorf("cannot keep the serve token: %w", err)
	}
	return token, nil
}

// listenSocket listens on a Unix socket at path that only the user can
// connect to. It is bound in a new directory only the user may enter, made
// 0600 there, and linked into place, which fails if anything is at path,
// so that it is never reachable with wider permissions nor put over a file.
// A socket of the user's at path on which nothing answers is a crashed
// serve's and is replaced. remove removes the socket, unless something
// else has taken its place.
func listenSocket(path string) (ln net.Listener, remove func(), err error) {
	fail := func(err error) (net.Listener, func(), error) {
		return nil, nil, userError{fmt.Sprintf("cannot serve on the socket %s: %s", path, err.Error()), err}
	}
	if err := private.CheckAncestors(path, errNotPrivate); err != nil {
		return fail(err)
	}
	if info, err := os.Lstat(path); err == nil {
		if info.Mode().Type() != fs.ModeSocket || !private.OwnedByUser(info) {
			return fail(fmt.Errorf("%s exists; remove it or choose another path", path))
		}
		if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
			conn.Close()
			return fail(errors.New("another process serves on it"))
		}
		if err := os.Remove(path); err != nil {
			return fail(err)
		}
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".rs-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return fail(err)
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	err = os.Chmod(tmp, 0o600)
	if err == nil {
		err = os.Link(tmp, path)
	}
	if err != nil {
		ul.Close()
		return fail(err)
	}
	info, err := os.Lstat(path)
	if err != nil {
		ul.Close()
		return fail(err)
	}
	return ul, func() {
		if now, err := os.Lstat(path); err == nil && os.SameFile(now, info) {
			_ = os.Remove(path)
		}
	}, nil
}
