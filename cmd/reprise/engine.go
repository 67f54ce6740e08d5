package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/eventlog/remote"
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

// lockTimeoutEnv names the environment variable that sets --lock-timeout
// when the flag is not given.
const lockTimeoutEnv = "REPRISE_LOCK_TIMEOUT"

// defaultLockTimeout is how long a command waits for a store file another
// process holds, unless --lock-timeout or $REPRISE_LOCK_TIMEOUT says
// otherwise.
const defaultLockTimeout = time.Second

// lockProbe is how long each attempt to open a held file waits for its
// lock; between attempts a reader tries the holder's socket, and every
// command checks whether it was interrupted.
const lockProbe = 100 * time.Millisecond

// lockTimeout returns how long to wait for a held store file: --lock-timeout,
// else $REPRISE_LOCK_TIMEOUT, else defaultLockTimeout.
func (a *app) lockTimeout() (time.Duration, error) {
	if a.lockFlag != nil && a.lockFlag.Changed {
		if a.lockWait < 0 {
			return 0, usagef("--lock-timeout must not be negative")
		}
		return a.lockWait, nil
	}
	v := os.Getenv(lockTimeoutEnv)
	if v == "" {
		return defaultLockTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, usagef("%s must be a duration such as 30s or 2m, not %q", lockTimeoutEnv, clip(v))
	}
	return d, nil
}

// openReadOnly opens the store for reading only. Several read-only opens
// may share a file. While another process holds it for writing, the
// command reads through that process's socket (remote.SocketPath) if it
// serves one, with the same results; otherwise it waits for the file up
// to the lock timeout, then fails naming the holder. A holder that goes
// away during the command is replaced by the file, or by the next
// holder's socket, within the lock timeout (heldStore).
func (a *app) openReadOnly(ctx context.Context, stderr io.Writer) (*reprise.Engine, error) {
	path, err := a.storePath()
	if err != nil {
		return nil, err
	}
	opts := reprise.Options{ReadOnly: true, Logger: warnLogger(stderr)}
	if pgstore.IsURL(path) {
		e, err := openDatabase(ctx, path, opts)
		if errors.Is(err, pgstore.ErrFormat) {
			return nil, noStore(path, err)
		}
		return e, openError(path, err)
	}
	wait, err := a.lockTimeout()
	if err != nil {
		return nil, err
	}
	var client *remote.Client
	e, err := openFile(ctx, path, opts, wait, func(locked *eventlog.LockedError) bool {
		client = a.dialHolder(ctx, path, stderr)
		if client != nil {
			a.heldBy = locked.Holder()
		}
		return client != nil
	})
	if client != nil {
		opts.TranscriptDir = reprise.DefaultTranscriptDir(path)
		held := &heldStore{cur: client, reopen: func(ctx context.Context) (eventlog.Store, error) {
			return a.reopenHeld(ctx, path, wait, stderr)
		}}
		return reprise.New(held, opts), nil
	}
	return e, openError(path, err)
}

// dialHolder connects to the read service of the process holding the
// store at path, or returns nil when none answers. A socket that is not
// the user's own is never used; it is reported once.
func (a *app) dialHolder(ctx context.Context, path string, stderr io.Writer) *remote.Client {
	client, err := remote.Dial(ctx, remote.SocketPath(path))
	if errors.Is(err, remote.ErrNotOwned) && !a.warnedSocket {
		a.warnedSocket = true
		warn(stderr, "not reading through %s: %v", remote.SocketPath(path), err)
	}
	if err != nil {
		return nil
	}
	return client
}

// addFunctionHooks, when set, is called with every Engine a command opens
// for writing, after it is opened and before any hook is loaded from the
// files. A CLI process has no Go function hooks of its own; the in-process
// tests register some through it, to see what the commands report of
// their answers.
var addFunctionHooks func(*reprise.Engine) error

// openWritable opens the store for writing, creating it and its directory
// if needed, waiting up to the lock timeout for a file another process
// holds. It holds the store alone until Close, serving its reads to other
// commands meanwhile.
func (a *app) openWritable(ctx context.Context, stderr io.Writer) (*reprise.Engine, error) {
	return a.openWritableWith(ctx, stderr, nil)
}

// openHooked is openWritable for a command that runs hooks: unless hooks
// say --no-default-settings, every hook run reads the Claude Code
// settings of its own session's project (Options.ClaudeSettings), so that
// a session left for one in another project runs its own project's hooks,
// in its own directory; the settings and plugins hooks name are added to
// the Engine's registry.
func (a *app) openHooked(ctx context.Context, hooks hookOptions, stderr io.Writer) (*reprise.Engine, error) {
	e, err := a.openWritableWith(ctx, stderr, func(o *reprise.Options) { o.ClaudeSettings = !hooks.noDefault })
	if err != nil {
		return nil, err
	}
	hooks.loadExplicit(e, stderr)
	return e, nil
}

// openWritableWith is openWritable with the Engine's options changed by
// set, when given.
func (a *app) openWritableWith(ctx context.Context, stderr io.Writer, set func(*reprise.Options)) (*reprise.Engine, error) {
	path, err := a.storePath()
	if err != nil {
		return nil, err
	}
	opts := reprise.Options{Logger: a.engineLogger(stderr), ServeReads: true, Runner: hookRunnerFromEnv(), ServeSearch: a.serveSearch(path)}
	if !a.json {
		// --json keeps stderr for the error's JSON alone.
		opts.Observer = statusLines{w: stderr}
	}
	if set != nil {
		set(&opts)
	}
	var e *reprise.Engine
	if pgstore.IsURL(path) {
		e, err = openDatabase(ctx, path, opts)
	} else {
		wait, werr := a.lockTimeout()
		if werr != nil {
			return nil, werr
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("cannot create the store's directory: %w", err)
		}
		e, err = openFile(ctx, path, opts, wait, nil)
	}
	if err != nil {
		return nil, openError(path, err)
	}
	if addFunctionHooks != nil {
		if err := addFunctionHooks(e); err != nil {
			return nil, errors.Join(err, e.Close())
		}
	}
	return e, nil
}

// openFile opens the bbolt file at path, trying again while another
// process holds it, until wait has passed or ctx ends. Between tries it
// calls instead, if given, with the holder, and stops without an Engine
// when that reports true. A file still held at the end is an
// *eventlog.LockedError that says how long the command waited in all; an
// end of ctx meanwhile is an error that names the holder and still
// matches ctx.Err().
func openFile(ctx context.Context, path string, opts reprise.Options, wait time.Duration, instead func(*eventlog.LockedError) bool) (*reprise.Engine, error) {
	deadline := time.Now().Add(wait)
	// The first try does not wait, so that a reader of a held file gets
	// to the holder's socket at once.
	probe := time.Nanosecond
	var locked *eventlog.LockedError
	applied := false
	for {
		opts.LockTimeout = max(min(probe, time.Until(deadline)), time.Nanosecond)
		probe = lockProbe
		e, err := reprise.OpenContext(ctx, path, opts)
		if opts.ReadOnly && !applied && errors.Is(err, boltstore.ErrUnapplied) {
			applied = true
			if applyLog(path, opts.Logger) {
				probe = time.Nanosecond
				continue
			}
		}
		if err != nil && locked != nil && ctx.Err() != nil {
			return nil, interruptedWaiting(ctx, path, locked)
		}
		if !errors.As(err, &locked) {
			return e, err
		}
		if instead != nil && instead(locked) {
			return nil, nil
		}
		if time.Now().After(deadline) {
			locked.Waited = wait
			return nil, locked
		}
		select {
		case <-ctx.Done():
			return nil, interruptedWaiting(ctx, path, locked)
		case <-time.After(min(lockProbe, time.Until(deadline))):
		}
	}
}

// applyLog opens the bbolt file at path for writing and closes it again,
// which applies the appends its write-ahead log holds and the file does
// not: the process that held it was killed before applying them. It
// reports whether that worked; a file the user may not write, or one
// another process now holds, stays as it was.
func applyLog(path string, logger *slog.Logger) bool {
	s, err := boltstore.Open(path, boltstore.Options{Timeout: time.Nanosecond, Logger: logger})
	return err == nil && s.Close() == nil
}

// interruptedWaiting is the error of an open that ctx ended while it
// waited for the store at path, which locked says who holds.
func interruptedWaiting(ctx context.Context, path string, locked *eventlog.LockedError) error {
	return userError{fmt.Sprintf("interrupted while waiting for the store %s, which %s holds; nothing was done",
		redact(path), locked.Holder()), ctx.Err()}
}

// openDatabase opens an Engine over the PostgreSQL store at url, with
// transcripts in the database's own directory under the user's cache
// directory.
func openDatabase(ctx context.Context, url string, opts reprise.Options) (*reprise.Engine, error) {
	store, err := pgstore.Open(ctx, url, pgstore.Options{ReadOnly: opts.ReadOnly})
	if err != nil {
		return nil, err
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	opts.TranscriptDir = filepath.Join(base, "reprise", "transcripts", databaseDirName(url))
	return reprise.New(store, opts), nil
}

// databaseDirName names the transcript directory of the PostgreSQL store
// at url after what makes it one store: its server's host and port, its
// database and its search_path, read as the store reads them (the
// environment fills what the URL leaves out), and never its user or
// password. The name is the database's, made safe for a file name, and a
// digest of the rest: different stores never share a directory, and one
// store keeps its directory from run to run.
func databaseDirName(url string) string {
	identity, db := url, "database"
	if cfg, err := pgconn.ParseConfig(url); err == nil {
		identity = fmt.Sprintf("%s\x00%d\x00%s\x00%s", cfg.Host, cfg.Port, cfg.Database, cfg.RuntimeParams["search_path"])
		db = cfg.Database
	}
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, db)
	if len(safe) > 64 {
		safe = safe[:64]
	}
	sum := sha256.Sum256([]byte(identity))
	return safe + "-" + hex.EncodeToString(sum[:8])
}

// openError says, in the user's terms, why the store at path could not be
// opened; it still matches what err matches. A nil err is nil.
func openError(path string, err error) error {
	var (
		locked  *eventlog.LockedError
		damaged *boltstore.DamagedMetaError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &locked):
		return userError{fmt.Sprintf("the store %s is in use by %s (waited %v); wait for it to finish, stop it, "+
			"or wait longer with --lock-timeout or %s", path, locked.Holder(), locked.Waited, lockTimeoutEnv), err}
	case errors.Is(err, fs.ErrNotExist):
		return noStore(path, err)
	case errors.As(err, &damaged):
		return userError{fmt.Sprintf("the store %s has a damaged meta page (page %d, %s): it opens at transaction %d, "+
			"and the next write would overwrite the page that may hold transaction %d, the last append, so nothing was written. "+
			"Run reprise audit to see the damage, reprise backup FILE to copy what is readable into a new store, "+
			"or set %s=1 to accept the loss and write on",
			path, damaged.Damaged.Page, damaged.Damaged.Damage, damaged.Used.Txid, damaged.Used.Txid+1, boltstore.AcceptDamagedMetaEnv), err}
	case errors.Is(err, boltstore.ErrFormat):
		detail := strings.TrimPrefix(err.Error(), boltstore.ErrFormat.Error()+": ")
		detail = strings.TrimPrefix(detail, path+": ")
		return userError{fmt.Sprintf("%s is not a reprise store (%s); give --store the path of a store, or of a file that does not exist yet to create one",
			redact(path), detail), err}
	case errors.Is(err, eventlog.ErrCorrupt):
		return userError{fmt.Sprintf("the store %s is damaged: %s", redact(path), err.Error()), err}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return userError{fmt.Sprintf("cannot open the store %s: %s", redact(path), err.Error()), err}
}

// isNoStore reports whether err, from openReadOnly, says there is no
// store yet: a listing then lists nothing.
func isNoStore(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, pgstore.ErrFormat)
}

// noStore says that a command that only reads found no store at path.
func noStore(path string, err error) error {
	return userError{fmt.Sprintf("no store at %s (reprise new or reprise import creates one)", redact(path)), err}
}

// userError is an error with a message for the user, which still matches
// the error it explains.
type userError struct {
	msg string
	err error
}

func (e userError) Error() string { return e.msg }
func (e userError) Unwrap() error { return e.err }

// maxShown bounds how much of a user's input or a long message an error
// repeats.
const maxShown = 300

// clip cuts s to maxShown characters.
func clip(s string) string {
	if r := []rune(s); len(r) > maxShown {
		return string(r[:maxShown-1]) + "…"
	}
	return s
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

// engineLogger returns the logger of the Engine a command opens: warnLogger,
// without the warning of each failed hook when the command prints every
// hook's outcome itself (a.hooksReported), so that no failure is told twice.
func (a *app) engineLogger(w io.Writer) *slog.Logger {
	return slog.New(&warnHandler{mu: new(sync.Mutex), w: w, skipHooks: a.hooksReported})
}

// hookFailedMessage is the message of the Engine's warning about a hook
// that did not succeed.
const hookFailedMessage = "hook did not succeed"

// warnHandler writes each record of level Warn or above as one line a
// person reads: "reprise: warning: MESSAGE (key value, ...): ERROR", with
// "error" instead of "warning" from level Error; the warning about a hook
// that did not succeed reads "reprise: warning: EVENT hook NAME: STATUS, ERROR".
type warnHandler struct {
	mu        *sync.Mutex // shared by the handlers WithAttrs derives
	w         io.Writer
	attrs     []slog.Attr
	skipHooks bool // drop the warnings about hooks that did not succeed
}

// Enabled reports whether l is at least Warn.
func (h *warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

// Handle writes r as one line.
func (h *warnHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == hookFailedMessage && h.skipHooks {
		return nil
	}
	label := "warning"
	if r.Level >= slog.LevelError {
		label = "error"
	}
	values := map[string]string{}
	var keys []string
	add := func(a slog.Attr) bool {
		if _, dup := values[a.Key]; !dup {
			keys = append(keys, a.Key)
		}
		values[a.Key] = plainMessage(a.Value.String())
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	var line string
	if r.Message == hookFailedMessage {
		line = fmt.Sprintf("%s hook %q: %s", values["event"], values["hook"], values["status"])
		if e := values["error"]; e != "" {
			line += ", " + e
		}
	} else {
		line = plainMessage(r.Message)
		var about []string
		for _, k := range keys {
			if k != "error" && values[k] != "" {
				about = append(about, k+" "+values[k])
			}
		}
		if len(about) > 0 {
			line += " (" + strings.Join(about, ", ") + ")"
		}
		if e := values["error"]; e != "" {
			line += ": " + e
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, "reprise: "+label+": "+line+"\n")
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

// warn prints a warning line to w, worded as plainMessage does.
func warn(w io.Writer, format string, args ...any) {
	fmt.Fprintln(w, "reprise: warning: "+plainMessage(fmt.Sprintf(format, args...)))
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
// created, and false when the store has no such session. A deleted
// session is reprise.ErrSessionDeleted.
func sessionCwd(ctx context.Context, store eventlog.Store, id string) (string, bool, error) {
	var cwd string
	var found bool
	stream := projection.SessionStream(id)
	head, err := store.Head(ctx, stream)
	if err != nil {
		return "", false, err
	}
	err = store.ReadStream(ctx, stream, head, func(ev eventlog.Event) error {
		if ev.Type == schema.TypeSessionDeleted {
			return fmt.Errorf("%w: %s", reprise.ErrSessionDeleted, id)
		}
		return nil
	})
	if err != nil {
		return "", false, err
	}
	err = store.ReadStream(ctx, stream, 1, func(ev eventlog.Event) error {
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
