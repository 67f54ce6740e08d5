package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// storeEnv names the environment variable that chooses the store when
// --store is not given.
const storeEnv = "REPRISE_STORE"

// storePath returns the store file the command works on: --store, else
// $REPRISE_STORE, else reprise/reprise.db under the XDG state directory.
func (a *app) storePath() (string, error) {
	if a.store != "" {
		return a.store, nil
	}
	if p := os.Getenv(storeEnv); p != "" {
		return p, nil
	}
	// The XDG base directory specification says to ignore relative paths.
	if dir := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "reprise", "reprise.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no store: give --store or set %s: %w", storeEnv, err)
	}
	return filepath.Join(home, ".local", "state", "reprise", "reprise.db"), nil
}

// openReadOnly opens the store for reading only. Several read-only opens
// may share the store; one fails with eventlog.ErrLocked, after the lock
// timeout, while a writer holds it.
func (a *app) openReadOnly(ctx context.Context, stderr io.Writer) (*reprise.Engine, error) {
	path, err := a.storePath()
	if err != nil {
		return nil, err
	}
	e, err := openStore(ctx, path, reprise.Options{ReadOnly: true, Logger: warnLogger(stderr)})
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, pgstore.ErrFormat) {
		return nil, fmt.Errorf("no store at %s (reprise new or reprise import creates one): %w", redact(path), err)
	}
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	return e, nil
}

// addFunctionHooks, when set, is called with every Engine a command opens
// for writing, after it is opened and before any hook is loaded from the
// files. A CLI process has no Go function hooks of its own; the in-process
// tests register some through it, to see what the commands report of
// their answers.
var addFunctionHooks func(*reprise.Engine) error

// openWritable opens the store for writing, creating it and its directory
// if needed. It holds the store alone until Close.
func (a *app) openWritable(ctx context.Context, stderr io.Writer) (*reprise.Engine, error) {
	path, err := a.storePath()
	if err != nil {
		return nil, err
	}
	if !pgstore.IsURL(path) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("create the store's directory: %w", err)
		}
	}
	e, err := openStore(ctx, path, reprise.Options{Logger: warnLogger(stderr), Runner: hookRunner})
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if addFunctionHooks != nil {
		if err := addFunctionHooks(e); err != nil {
			return nil, errors.Join(err, e.Close())
		}
	}
	return e, nil
}

// openStore opens an Engine over the store at path: a PostgreSQL database
// for a postgres:// URL, with transcripts under the user's cache directory,
// otherwise a bbolt file.
func openStore(ctx context.Context, path string, opts reprise.Options) (*reprise.Engine, error) {
	if !pgstore.IsURL(path) {
		return reprise.OpenContext(ctx, path, opts)
	}
	store, err := pgstore.Open(ctx, path, pgstore.Options{ReadOnly: opts.ReadOnly})
	if err != nil {
		return nil, err
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	opts.TranscriptDir = filepath.Join(base, "reprise", "transcripts")
	return reprise.New(store, opts), nil
}

// redact hides the password of a database URL; file paths are returned as
// they are.
func redact(path string) string {
	if u, err := url.Parse(path); err == nil && pgstore.IsURL(path) {
		return u.Redacted()
	}
	return path
}

// closeEngine closes e and reports its error unless err is already set.
func closeEngine(e *reprise.Engine, err *error) {
	if cerr := e.Close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("close store: %w", cerr)
	}
}

// warnLogger returns a logger that writes warnings and errors to w.
func warnLogger(w io.Writer) *slog.Logger {
	return slog.New(&warnHandler{mu: new(sync.Mutex), w: w})
}

// warnHandler writes each record of level Warn or above as one line:
// "reprise: warning: MESSAGE key=value ...", "error" instead of "warning"
// from level Error.
type warnHandler struct {
	mu    *sync.Mutex // shared by the handlers WithAttrs derives
	w     io.Writer
	attrs []slog.Attr
}

// Enabled reports whether l is at least Warn.
func (h *warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

// Handle writes r as one line.
func (h *warnHandler) Handle(_ context.Context, r slog.Record) error {
	label := "warning"
	if r.Level >= slog.LevelError {
		label = "error"
	}
	var b strings.Builder
	b.WriteString("reprise: " + label + ": " + r.Message)
	add := func(a slog.Attr) bool {
		v := a.Value.String()
		if v == "" || strings.ContainsAny(v, " \t\n\"=") {
			v = strconv.Quote(v)
		}
		b.WriteString(" " + a.Key + "=" + v)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// WithAttrs returns a handler that adds attrs to every line.
func (h *warnHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clip(h.attrs), attrs...)
	return &c
}

// WithGroup returns h: the lines are flat.
func (h *warnHandler) WithGroup(string) slog.Handler { return h }

// warn prints a warning line to w.
func warn(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "reprise: warning: "+format+"\n", args...)
}

// validID checks a session or agent id given on the command line; an
// invalid one is a usage error.
func validID(what, id string) error {
	if err := reprise.ValidateID(id); err != nil {
		return usageError{fmt.Errorf("%s: %w", what, err)}
	}
	return nil
}

// errFound stops a read once it has what it wants.
var errFound = errors.New("found")

// sessionCwd returns the working directory recorded when session id was
// created, and false when the store has no such session.
func sessionCwd(ctx context.Context, store eventlog.Store, id string) (string, bool, error) {
	var cwd string
	var found bool
	err := store.ReadStream(ctx, projection.SessionStream(id), 1, func(ev eventlog.Event) error {
		p, err := schema.Decode(ev)
		if err != nil {
			return err
		}
		created, ok := p.(*schema.SessionCreated)
		if !ok {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "%s before SessionCreated", ev.Type)
		}
		cwd, found = created.Cwd, true
		return errFound
	})
	if err != nil && !errors.Is(err, errFound) {
		return "", false, fmt.Errorf("read session %s: %w", id, err)
	}
	return cwd, found, nil
}
