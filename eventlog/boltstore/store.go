package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/reprise-dev/reprise/eventlog"
)

// DefaultTimeout is how long Open waits for the file lock when
// Options.Timeout is zero.
const DefaultTimeout = time.Second

// layoutVersion is the version of the layout described in the package
// documentation, stored under meta/format.
const layoutVersion = 1

// ctxCheckEvery is how many events a long read passes between checks of its
// context.
const ctxCheckEvery = 256

var (
	eventsBucket    = []byte("events")
	positionsBucket = []byte("positions")
	headsBucket     = []byte("heads")
	metaBucket      = []byte("meta")
	formatKey       = []byte("format")
)

// Options configures Open.
type Options struct {
	// Timeout is how long Open waits for the file lock while another process
	// (or another Open in this process) holds the store; then it fails with
	// an error matching eventlog.ErrLocked. Zero means DefaultTimeout, 1s.
	Timeout time.Duration

	// ReadOnly opens an existing store for reading only. Any number of
	// read-only opens may share a file; Append returns eventlog.ErrReadOnly.
	ReadOnly bool

	// NoSync skips the fsync that makes each append durable, so a crash can
	// lose or damage appends that were acknowledged. It is unsafe for real
	// stores and exists only for tests and benchmarks.
	NoSync bool
}

// Store is an eventlog.Store kept in one bbolt file. It is safe for
// concurrent use.
type Store struct {
	path     string
	readOnly bool

	mu sync.RWMutex // held shared by every call and exclusively by Close
	db *bolt.DB     // nil once closed
}

var _ eventlog.Store = (*Store)(nil)

// Open opens the store at path, creating it unless opts.ReadOnly is set.
// Besides I/O errors, it fails with an error matching eventlog.ErrLocked when
// another process holds the store for longer than opts.Timeout,
// eventlog.ErrCorrupt when the file is damaged or is not a bbolt database,
// ErrFormat when it is not a reprise store, and os.ErrNotExist when a store
// opened read-only does not exist.
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !opts.ReadOnly:
		// A new store.
	case err != nil:
		return nil, fmt.Errorf("boltstore: open: %w", err)
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("boltstore: open %s: not a regular file", path)
	case info.Size() == 0 && opts.ReadOnly:
		return nil, fmt.Errorf("%w: %s is empty; open it for writing once to create the store", ErrFormat, path)
	case info.Size() > 0 && !opts.ReadOnly:
		// Opening for writing reads bbolt's freelist, which in a truncated
		// file may lie past its end, or even past the memory mapping where a
		// read would not fault but return unrelated memory. Opening
		// read-only does not, so check the file's size that way first.
		probe, err := openBolt(path, opts, true)
		if err != nil {
			return nil, err
		}
		if err := probe.Close(); err != nil {
			return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
		}
	}
	db, err := openBolt(path, opts, opts.ReadOnly)
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, readOnly: opts.ReadOnly, db: db}
	if err := s.initLayout(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// openBolt opens the bbolt database at path, turning its errors and panics
// into eventlog's. A read-only open also checks that the file is as long as
// its meta pages say it is.
func openBolt(path string, opts Options, readOnly bool) (*bolt.DB, error) {
	var (
		db   *bolt.DB
		file *os.File
	)
	bopts := &bolt.Options{
		Timeout:  opts.Timeout,
		ReadOnly: readOnly,
		NoSync:   opts.NoSync,
		// Keep the file so that its lock can be released if bbolt panics
		// before it returns a DB.
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			file = f
			return f, err
		},
	}
	g := &guard{path: path}
	err := g.run(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, bopts)
		return err
	})
	if err != nil {
		if file != nil {
			// bbolt has closed the file already unless it panicked.
			unlock(file)
			_ = file.Close()
		}
		return nil, openError(path, opts.Timeout, err)
	}
	if readOnly {
		if err := g.run(func() error { return checkSize(path, db) }); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	return db, nil
}

// openError converts an error from bolt.Open.
func openError(path string, timeout time.Duration, err error) error {
	var (
		pathErr *fs.PathError
		errno   syscall.Errno
	)
	switch {
	case errors.Is(err, eventlog.ErrCorrupt):
		return err
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("boltstore: open %s: %w (waited %v)", path, eventlog.ErrLocked, timeout)
	case errors.As(err, &pathErr), errors.As(err, &errno):
		return fmt.Errorf("boltstore: open %s: %w", path, err)
	default:
		// bbolt rejected the file's contents: no valid meta page, a version
		// it does not know, a file too short for its own page size.
		return fmt.Errorf("%w: %s: %w", eventlog.ErrCorrupt, path, err)
	}
}

// checkSize fails if the file at path is shorter than the pages its meta
// page claims, as a truncated copy is; reading those pages would fault.
func checkSize(path string, db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		info, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("boltstore: open: %w", err)
		}
		if info.Size() < tx.Size() {
			return fmt.Errorf("%w: %s is %d bytes but its pages reach byte %d; it was truncated",
				eventlog.ErrCorrupt, path, info.Size(), tx.Size())
		}
		return nil
	})
}

// initLayout checks that the database is a reprise store this build reads,
// creating the buckets in a new one.
func (s *Store) initLayout() error {
	var empty bool
	err := s.view(func(tx *bolt.Tx, _ *guard) error {
		var err error
		empty, err = s.checkLayout(tx)
		return err
	})
	if err != nil || !empty {
		return err
	}
	if s.readOnly {
		return fmt.Errorf("%w: %s is an empty bbolt database", ErrFormat, s.path)
	}
	return s.update(func(tx *bolt.Tx) error {
		if empty, err := s.checkLayout(tx); err != nil || !empty {
			return err
		}
		for _, name := range [][]byte{eventsBucket, positionsBucket, headsBucket, metaBucket} {
			if _, err := tx.CreateBucket(name); err != nil {
				return fmt.Errorf("boltstore: create %s: %w", s.path, err)
			}
		}
		return tx.Bucket(metaBucket).Put(formatKey, []byte{layoutVersion})
	})
}

// checkLayout reports whether tx sees an empty database or else whether it
// holds a reprise store in a layout this build reads.
func (s *Store) checkLayout(tx *bolt.Tx) (empty bool, err error) {
	meta := tx.Bucket(metaBucket)
	if meta == nil {
		if k, _ := tx.Cursor().First(); k != nil {
			return false, fmt.Errorf("%w: %s holds other bbolt buckets", ErrFormat, s.path)
		}
		return true, nil
	}
	v := meta.Get(formatKey)
	if len(v) != 1 {
		return false, fmt.Errorf("%w: %s: layout version is %d bytes, want 1", eventlog.ErrCorrupt, s.path, len(v))
	}
	if v[0] != layoutVersion {
		return false, fmt.Errorf("%w: %s has layout version %d; this build reads version %d", ErrFormat, s.path, v[0], layoutVersion)
	}
	_, err = s.buckets(tx)
	return false, err
}

// buckets are the buckets of the layout other than meta.
type buckets struct {
	events, positions, heads *bolt.Bucket
}

func (s *Store) buckets(tx *bolt.Tx) (buckets, error) {
	b := buckets{tx.Bucket(eventsBucket), tx.Bucket(positionsBucket), tx.Bucket(headsBucket)}
	if b.events == nil || b.positions == nil || b.heads == nil {
		return b, fmt.Errorf("%w: %s: a bucket is missing", eventlog.ErrCorrupt, s.path)
	}
	return b, nil
}

// Append implements eventlog.Store in one write transaction.
func (s *Store) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := eventlog.CheckAppend(expect, recs); err != nil {
		return nil, err
	}
	evs := make([]eventlog.Event, len(recs))
	err := s.update(func(tx *bolt.Tx) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		heads := make(map[string]uint64, len(expect))
		for _, e := range expect {
			head, err := readHead(b.heads, e.Stream)
			if err != nil {
				return err
			}
			if head != e.Seq {
				return &eventlog.ConflictError{Stream: e.Stream, Expected: e.Seq, Actual: head}
			}
			heads[e.Stream] = head
		}
		// Positions only ever grow, so their pages can be filled completely.
		b.positions.FillPercent = 1
		for i, r := range recs {
			pos, err := b.positions.NextSequence()
			if err != nil {
				return fmt.Errorf("boltstore: append: %w", err)
			}
			heads[r.Stream]++
			ev := eventlog.Event{Stream: r.Stream, Seq: heads[r.Stream], Position: pos, Type: r.Type,
				Version: r.Version, Time: r.Time, RestoreID: r.RestoreID, Payload: r.Payload}
			key := eventKey(r.Stream, ev.Seq)
			if err := b.events.Put(key, eventlog.MarshalEnvelope(ev)); err != nil {
				return fmt.Errorf("boltstore: append to %s: %w", r.Stream, err)
			}
			if err := b.positions.Put(be64(pos), key); err != nil {
				return fmt.Errorf("boltstore: append to %s: %w", r.Stream, err)
			}
			ev.Payload = bytes.Clone(r.Payload)
			evs[i] = ev
		}
		for _, e := range expect {
			if head := heads[e.Stream]; head != e.Seq {
				if err := b.heads.Put([]byte(e.Stream), be64(head)); err != nil {
					return fmt.Errorf("boltstore: append to %s: %w", e.Stream, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// Head implements eventlog.Store.
func (s *Store) Head(ctx context.Context, stream string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := eventlog.ValidateStream(stream); err != nil {
		return 0, err
	}
	var head uint64
	err := s.view(func(tx *bolt.Tx, _ *guard) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		head, err = readHead(b.heads, stream)
		return err
	})
	return head, err
}

// ReadStream implements eventlog.Store. Each event's Payload points into the
// memory-mapped file and is valid only until fn returns.
func (s *Store) ReadStream(ctx context.Context, stream string, from uint64, fn func(eventlog.Event) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := eventlog.ValidateStream(stream); err != nil {
		return err
	}
	from = max(from, 1)
	return s.view(func(tx *bolt.Tx, g *guard) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		head, err := readHead(b.heads, stream)
		if err != nil || from > head {
			return err
		}
		prefix := []byte(stream + "\x00")
		want, lastPos := from, uint64(0)
		c := b.events.Cursor()
		for k, v := c.Seek(eventKey(stream, from)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if err := checkCtx(ctx, want-from); err != nil {
				return err
			}
			if len(k) != len(prefix)+8 {
				return eventlog.Corruptf(stream, want, "malformed event key %x", k)
			}
			if seq := binary.BigEndian.Uint64(k[len(prefix):]); seq != want {
				return eventlog.Corruptf(stream, want, "event is missing; the next one stored is %d", seq)
			}
			if want > head {
				return eventlog.Corruptf(stream, want, "event lies beyond the stream's head %d", head)
			}
			ev, err := decodeEvent(stream, want, v)
			if err != nil {
				return err
			}
			if ev.Position <= lastPos {
				return eventlog.Corruptf(stream, want, "position %d does not follow the previous event's %d", ev.Position, lastPos)
			}
			lastPos = ev.Position
			if err := call(g, fn, ev); err != nil {
				return err
			}
			want++
		}
		if want <= head {
			return eventlog.Corruptf(stream, want, "event is missing; the stream's head is %d", head)
		}
		return nil
	})
}

// ReadAll implements eventlog.Store. Each event's Payload points into the
// memory-mapped file and is valid only until fn returns.
func (s *Store) ReadAll(ctx context.Context, from uint64, fn func(eventlog.Event) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	from = max(from, 1)
	return s.view(func(tx *bolt.Tx, g *guard) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		last := b.positions.Sequence()
		if from > last {
			return nil
		}
		want := from
		c := b.positions.Cursor()
		for k, key := c.Seek(be64(from)); k != nil; k, key = c.Next() {
			if err := checkCtx(ctx, want-from); err != nil {
				return err
			}
			if len(k) != 8 {
				return fmt.Errorf("%w: %s: malformed position key %x", eventlog.ErrCorrupt, s.path, k)
			}
			if pos := binary.BigEndian.Uint64(k); pos != want || pos > last {
				return fmt.Errorf("%w: %s: expected position %d of %d, found %d", eventlog.ErrCorrupt, s.path, want, last, pos)
			}
			stream, seq, ok := splitEventKey(key)
			if !ok {
				return fmt.Errorf("%w: %s: position %d holds a malformed event key %x", eventlog.ErrCorrupt, s.path, want, key)
			}
			v := b.events.Get(key)
			if v == nil {
				return eventlog.Corruptf(stream, seq, "event at position %d is missing", want)
			}
			ev, err := decodeEvent(stream, seq, v)
			if err != nil {
				return err
			}
			if ev.Position != want {
				return eventlog.Corruptf(stream, seq, "event at position %d says it is at %d", want, ev.Position)
			}
			if err := call(g, fn, ev); err != nil {
				return err
			}
			want++
		}
		if want <= last {
			return fmt.Errorf("%w: %s: position %d is missing; the last is %d", eventlog.ErrCorrupt, s.path, want, last)
		}
		return nil
	})
}

// Streams implements eventlog.Store.
func (s *Store) Streams(ctx context.Context, prefix string, fn func(eventlog.StreamInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.view(func(tx *bolt.Tx, g *guard) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		p := []byte(prefix)
		c := b.heads.Cursor()
		var n uint64
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			if err := checkCtx(ctx, n); err != nil {
				return err
			}
			if len(v) != 8 {
				return eventlog.Corruptf(string(k), 0, "head is %d bytes, want 8", len(v))
			}
			if err := call(g, fn, eventlog.StreamInfo{Name: string(k), Head: binary.BigEndian.Uint64(v)}); err != nil {
				return err
			}
			n++
		}
		return nil
	})
}

// Close implements eventlog.Store. It waits for calls in progress; a second
// Close returns eventlog.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return eventlog.ErrClosed
	}
	err := s.db.Close()
	s.db = nil
	if err != nil {
		return fmt.Errorf("boltstore: close %s: %w", s.path, err)
	}
	return nil
}

// view runs fn in a read transaction under a guard.
func (s *Store) view(fn func(*bolt.Tx, *guard) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return eventlog.ErrClosed
	}
	g := &guard{path: s.path}
	return g.run(func() error {
		return s.db.View(func(tx *bolt.Tx) error { return fn(tx, g) })
	})
}

// update runs fn in a write transaction under a guard and commits it if fn
// succeeds.
func (s *Store) update(fn func(*bolt.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return eventlog.ErrClosed
	}
	if s.readOnly {
		return eventlog.ErrReadOnly
	}
	g := &guard{path: s.path}
	return g.run(func() error {
		tx, err := s.db.Begin(true)
		if err != nil {
			return fmt.Errorf("boltstore: %s: %w", s.path, err)
		}
		defer func() { _ = tx.Rollback() }() // after a commit, a no-op
		if err := fn(tx); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("boltstore: commit to %s: %w", s.path, err)
		}
		return nil
	})
}

// guard turns a panic or memory fault inside bbolt into an error matching
// eventlog.ErrCorrupt: in a damaged file bbolt can index past a page or
// touch the mapping beyond the end of the file. A panic in a caller's
// callback is not bbolt's and is raised again.
type guard struct {
	path       string
	inCallback bool
}

func (g *guard) run(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if g.inCallback {
				panic(r)
			}
			err = fmt.Errorf("%w: %s: %v", eventlog.ErrCorrupt, g.path, r)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return f()
}

// call passes v to the caller's callback fn, marking the time spent in it.
func call[T any](g *guard, fn func(T) error, v T) error {
	g.inCallback = true
	err := fn(v)
	g.inCallback = false
	return err
}

// checkCtx checks ctx once every ctxCheckEvery events; n counts the events
// read so far.
func checkCtx(ctx context.Context, n uint64) error {
	if n == 0 || n%ctxCheckEvery != 0 {
		return nil
	}
	return ctx.Err()
}

// readHead returns the head of stream from the heads bucket.
func readHead(heads *bolt.Bucket, stream string) (uint64, error) {
	v := heads.Get([]byte(stream))
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, eventlog.Corruptf(stream, 0, "head is %d bytes, want 8", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// decodeEvent decodes the envelope stored under stream and seq and checks
// that it names them. The Payload aliases v.
func decodeEvent(stream string, seq uint64, v []byte) (eventlog.Event, error) {
	ev, err := eventlog.UnmarshalEnvelope(v)
	if err != nil {
		return ev, &eventlog.EventError{Stream: stream, Seq: seq, Err: err}
	}
	if ev.Stream != stream || ev.Seq != seq {
		return ev, eventlog.Corruptf(stream, seq, "the envelope stored here is %s#%d", ev.Stream, ev.Seq)
	}
	return ev, nil
}

// eventKey is the events bucket's key for a stream's event: the stream, a
// 0x00 and the sequence, big-endian.
func eventKey(stream string, seq uint64) []byte {
	k := make([]byte, len(stream)+9)
	copy(k, stream)
	binary.BigEndian.PutUint64(k[len(stream)+1:], seq)
	return k
}

// splitEventKey is the inverse of eventKey.
func splitEventKey(k []byte) (stream string, seq uint64, ok bool) {
	n := len(k) - 9
	if n < 1 || k[n] != 0 || bytes.IndexByte(k[:n], 0) >= 0 {
		return "", 0, false
	}
	return string(k[:n]), binary.BigEndian.Uint64(k[n+1:]), true
}

func be64(n uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, n)
}
