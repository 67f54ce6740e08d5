package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
)

// ShutdownTimeout bounds how long Server.Close waits for the requests in
// progress (a follower's wait among them) before it cuts them off.
const ShutdownTimeout = 2 * time.Second

// Server serves a store's reads on its Unix socket.
type Server struct {
	path   string
	socket fs.FileInfo // the socket as bound, so that Close removes only it
	http   *http.Server
	done   chan error

	closing sync.Once
	closed  error // what Close returned
}

// Serve serves the reads of store, the store at storePath, on the socket
// SocketPath(storePath) until Close. The socket is bound under a random
// name beside that path, made 0600, then renamed into place, so it is
// never reachable with wider permissions. A socket already there is
// replaced only if it is the user's own and nothing answers on it (a
// crashed server's); anything else there is an error, ErrNotOwned for a
// file that is not a socket of the user's. log, if not nil, receives the
// HTTP server's own errors. search, if not nil, answers at SearchPath
// beside the reads: the holder's searches of the store, which package
// search serves (search.Held); without it that path is 404.
func Serve(store eventlog.Store, storePath string, log *slog.Logger, search http.Handler) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	path := SocketPath(storePath)
	dir := filepath.Dir(path)
	if dir == privateDir() {
		if err := makePrivateDir(dir); err != nil {
			return nil, err
		}
	}
	if err := checkStale(path); err != nil {
		return nil, err
	}
	var random [8]byte
	_, _ = rand.Read(random[:])
	tmp := filepath.Join(dir, "."+hex.EncodeToString(random[:])+".sock")
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("serve reads: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := errors.Join(os.Chmod(tmp, 0o600), os.Rename(tmp, path)); err != nil {
		_ = ln.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("serve reads: %w", err)
	}
	info, err := os.Lstat(path)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("serve reads: %w", err)
	}
	// Stopping ends the requests' contexts, so that waiting followers
	// answer at once rather than hold Close up.
	base, stop := context.WithCancel(context.Background())
	h := Handler(store)
	if search != nil {
		mux := http.NewServeMux()
		mux.Handle("/", h)
		mux.Handle("GET "+SearchPath, search)
		h = mux
	}
	s := &Server{path: path, socket: info, done: make(chan error, 1), http: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}}
	s.http.RegisterOnShutdown(stop)
	go func() { s.done <- s.http.Serve(ln) }()
	return s, nil
}

// Path returns the socket's path.
func (s *Server) Path() string { return s.path }

// Close stops serving: it waits up to ShutdownTimeout for the requests in
// progress, cuts off those still running, and removes the socket unless
// another server has replaced it since. Calls after the first return what
// it returned.
func (s *Server) Close() error {
	s.closing.Do(func() { s.closed = s.close() })
	return s.closed
}

func (s *Server) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.http.Close()
	}
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if info, lerr := os.Lstat(s.path); lerr == nil && os.SameFile(info, s.socket) {
		err = errors.Join(err, os.Remove(s.path))
	}
	if err != nil {
		return fmt.Errorf("stop serving reads at %s: %w", s.path, err)
	}
	return nil
}

// checkStale fails unless path is free or holds a stale socket of the
// user's own, one on which nothing answers.
func checkStale(path string) error {
	err := checkSocket(path)
	if errors.Is(err, ErrNotServing) {
		return nil // nothing there
	}
	if err != nil {
		return fmt.Errorf("serve reads: %w; remove it if it is left over", err)
	}
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil // stale: rename replaces it
	}
	_ = conn.Close()
	return fmt.Errorf("serve reads: another process serves reads at %s", path)
}
