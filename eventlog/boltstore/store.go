package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/internal/group"
	"github.com/reprise-dev/reprise/internal/private"
)

// DefaultTimeout is how long Open waits for the file lock when
// Options.Timeout is zero.
const DefaultTimeout = time.Second

// layoutVersion is the version of the layout described in the package
// documentation, stored under meta/format. Stores of older layouts are
// read as they are; a write-open brings them to the current layout (adds
// the recent bucket, drops the heads bucket of layouts 1 and 2) and marks
// them with it, since builds that know only an older layout would misread
// what this one writes: batches, from layout 5 on, and from layout 6 a
// write-ahead log beside the file whose records the file may not hold
// yet, which an older build would not see.
const (
	layoutVersion = 6
	oldestLayout  = 1
)

// recentLimit is how many bytes of runs, each counted with the 16 bytes of
// its page element, the recent bucket holds before a commit moves them to
// the positions bucket. Below 1,008 bytes bbolt keeps the bucket inside
// its parent's page (a quarter of a 4 KiB page, less the page header),
// which every commit writes anyway.
const recentLimit = 768

// ctxCheckEvery is how many events a long read passes between checks of its
// context.
const ctxCheckEvery = 256

var (
	eventsBucket    = []byte("events")
	positionsBucket = []byte("positions")
	headsBucket     = []byte("heads") // layouts 1 and 2 only
	recentBucket    = []byte("recent")
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

	// AcceptDamagedMeta opens for writing a file whose newest meta page is
	// damaged, which Open otherwise refuses with a *DamagedMetaError: the
	// store opens at the transaction before, a warning naming it is
	// logged, and the next commit overwrites the damaged page, so the
	// commit it may have held is lost for good. Setting the environment
	// variable REPRISE_ACCEPT_DAMAGED_META to 1 (or true) does the same
	// for every store the process opens, which is how a program that
	// opens its store through package reprise accepts the loss.
	AcceptDamagedMeta bool

	// walWrap, when set, wraps each log segment file: tests inject
	// failed writes and syncs with it.
	walWrap func(walFile) walFile

	// Logger receives the warning of an accepted damaged meta page, and
	// the one of an index the store stops keeping because its fold failed. Nil
	// means slog.Default().
	Logger *slog.Logger
}

// AcceptDamagedMetaEnv names the environment variable that, set to 1 or
// true, makes every write-open accept a damaged meta page, as
// Options.AcceptDamagedMeta does.
const AcceptDamagedMetaEnv = "REPRISE_ACCEPT_DAMAGED_META"

// Store is an eventlog.Store kept in one bbolt file. It is safe for
// concurrent use.
type Store struct {
	// The file belongs to one process; within it, Engines sharing the
	// store take turns on an agent.
	eventlog.LocalLocks

	path     string
	readOnly bool
	timeout  time.Duration // waiting for the lock, also for a compaction's new file

	mu sync.RWMutex // held shared by every call and exclusively by Close
	db *bolt.DB     // nil once closed

	queue   *group.Queue[*appendReq] // the appends waiting to be logged
	w       *writer                  // the write-ahead log; nil when read-only
	commits atomic.Int64             // bbolt group commits attempted, for tests
	logs    atomic.Int64             // groups written to the log, for tests

	logSyncs, boltCommits atomic.Int64 // see Syncs

	// ixMu is held by Index, and by every write around its transaction,
	// so that no write commits between Index bringing the rows up to date
	// and ix being set.
	ixMu sync.Mutex
	ix   eventlog.Indexer // the index the store keeps; nil for none
	log  *slog.Logger     // Options.Logger, or slog.Default()
}

var _ eventlog.Store = (*Store)(nil)

// Open opens the store at path, creating it unless opts.ReadOnly is set.
// Besides I/O errors, it fails with an *eventlog.LockedError, which matches
// eventlog.ErrLocked and names the holding process where the system tells
// (Linux), when another process holds the store for longer than opts.Timeout,
// eventlog.ErrCorrupt when the file is damaged or is not a bbolt database,
// ErrFormat when it is not a reprise store, os.ErrNotExist when a store
// opened read-only does not exist, and a *DamagedMetaError, which matches
// ErrDamagedMeta, when a store opened for writing may have lost its last
// commit to a damaged meta page.
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if err := private.CheckAncestors(path, ErrNotPrivate); err != nil {
		if !errors.Is(err, ErrNotPrivate) {
			err = fmt.Errorf("boltstore: open %s: %w", path, err)
		}
		return nil, err
	}
	info, err := os.Lstat(path)
	created := errors.Is(err, fs.ErrNotExist)
	switch {
	case created && !opts.ReadOnly:
		// A new store.
	case err != nil:
		return nil, fmt.Errorf("boltstore: open: %w", err)
	case info.Mode().Type() == fs.ModeSymlink:
		return nil, fmt.Errorf("%w: %s is a symbolic link, which is not followed; give the path of the file itself", ErrNotPrivate, path)
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("boltstore: open %s: not a regular file", path)
	case !private.OwnedByUser(info):
		return nil, fmt.Errorf("%w: %s belongs to another user", ErrNotPrivate, path)
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
	if !opts.ReadOnly {
		// bbolt has written nothing yet, and the lock keeps commits of
		// other processes from writing a meta page meanwhile.
		if err := checkFallback(path, opts); err != nil {
			_ = db.Close()
			return nil, err
		}
	} else {
		// A reader is shown the older state: it says so, once.
		warnFallback(path, opts)
	}
	s := &Store{path: path, readOnly: opts.ReadOnly, timeout: opts.Timeout, db: db, log: opts.logger(),
		queue: group.New(func(r *appendReq) int { return len(r.recs) }, maxGroupRecords)}
	if err := s.initLayout(); err != nil {
		_ = db.Close()
		return nil, err
	}
	if opts.ReadOnly {
		err = s.checkLogApplied()
	} else {
		err = s.openLog(opts, created)
	}
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// openBolt opens the bbolt database at path, turning its errors and panics
// into eventlog's. A read-only open also checks that the file is as long as
// allocStep is how far beyond its last page the file grows at a time.
const allocStep = 1 << 20

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
		// bbolt maps the file afresh whenever it outgrows the mapping,
		// copying every node a write transaction has touched out of the
		// old one first: a save of 100,000 messages spent half its time
		// doing so. Address space is cheap; a gigabyte of it is reserved
		// up front, and only the file's pages are ever touched.
		InitialMmapSize: 1 << 30,
		// Keep the file so that its lock can be released if bbolt panics
		// before it returns a DB.
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := openOwnFile(name, flag, perm)
			file = f
			return f, err
		},
	}
	g := &guard{path: path, opening: true}
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
	g.opening = false
	// With the mapping larger than bbolt's allocation step, each growth
	// of the file adds the step beyond what the commit needs: keep that
	// margin small, so that a small store stays a small file.
	db.AllocSize = allocStep
	if replaced(path, file) {
		// A compaction renamed a new file over path while this open
		// waited for the old one's lock: open the new one.
		_ = db.Close()
		return openBolt(path, opts, readOnly)
	}
	if readOnly {
		if err := g.run(func() error { return checkSize(path, db) }); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	return db, nil
}

// openOwnFile opens the store's file for bbolt as os.OpenFile would, but
// never through a symbolic link, creating a new file only exclusively
// (O_EXCL), and only a regular file of the user's: a link or another
// user's file planted at the path, or put there between Open's checks and
// this open, is refused with ErrNotPrivate.
func openOwnFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	var (
		f   *os.File
		err error
	)
	for range 3 {
		f, err = os.OpenFile(name, flag&^os.O_CREATE|private.NoFollow, perm)
		if !errors.Is(err, fs.ErrNotExist) || flag&os.O_CREATE == 0 {
			break
		}
		f, err = os.OpenFile(name, flag|os.O_EXCL|private.NoFollow, perm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
		// Another process made the store meanwhile: open that one.
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%w: %s is a symbolic link, which is not followed; give the path of the file itself", ErrNotPrivate, name)
	}
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	switch {
	case err != nil:
		_ = f.Close()
		return nil, err
	case !info.Mode().IsRegular():
		_ = f.Close()
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrNotPrivate, name)
	case !private.OwnedByUser(info):
		_ = f.Close()
		return nil, fmt.Errorf("%w: %s belongs to another user", ErrNotPrivate, name)
	}
	return f, nil
}

// replaced reports whether path no longer names the file f opened.
func replaced(path string, f *os.File) bool {
	opened, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(path)
	return err == nil && !os.SameFile(opened, now)
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
	case errors.Is(err, ErrNotPrivate):
		return err
	case errors.Is(err, berrors.ErrTimeout):
		pid, command := lockHolder(path)
		return &eventlog.LockedError{Path: path, Waited: timeout, PID: pid, Command: command}
	case errors.As(err, &pathErr), errors.As(err, &errno):
		return fmt.Errorf("boltstore: open %s: %w", path, err)
	case notBolt(path):
		return fmt.Errorf("%w: %s: not a bbolt file, as neither of its first pages holds bbolt's magic number", ErrFormat, path)
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
// creating the buckets in a new one and marking a store of an older layout
// with the current one when it is opened for writing.
func (s *Store) initLayout() error {
	var (
		empty   bool
		version byte
	)
	err := s.view(func(tx *bolt.Tx, _ *guard) error {
		var err error
		empty, version, err = s.checkLayout(tx)
		return err
	})
	switch {
	case err != nil:
		return err
	case empty && s.readOnly:
		return fmt.Errorf("%w: %s is an empty bbolt database", ErrFormat, s.path)
	case !empty && (version >= layoutVersion || s.readOnly):
		return nil
	}
	return s.update(func(tx *bolt.Tx) error {
		_, version, err := s.checkLayout(tx)
		if err != nil || version >= layoutVersion {
			return err
		}
		for _, name := range [][]byte{eventsBucket, positionsBucket, recentBucket, metaBucket} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("boltstore: create %s: %w", s.path, err)
			}
		}
		if version < 3 {
			// The last position moves to the recent bucket's sequence, and
			// the heads are the events' own keys.
			if err := tx.Bucket(recentBucket).SetSequence(tx.Bucket(positionsBucket).Sequence()); err != nil {
				return fmt.Errorf("boltstore: upgrade %s: %w", s.path, err)
			}
			if err := tx.DeleteBucket(headsBucket); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
				return fmt.Errorf("boltstore: upgrade %s: %w", s.path, err)
			}
		}
		return tx.Bucket(metaBucket).Put(formatKey, []byte{layoutVersion})
	})
}

// checkLayout reports whether tx sees an empty database or else which
// layout the reprise store it holds has, failing for one this build does
// not read.
func (s *Store) checkLayout(tx *bolt.Tx) (empty bool, version byte, err error) {
	meta := tx.Bucket(metaBucket)
	if meta == nil {
		if k, _ := tx.Cursor().First(); k != nil {
			return false, 0, fmt.Errorf("%w: %s holds other bbolt buckets", ErrFormat, s.path)
		}
		return true, 0, nil
	}
	v := meta.Get(formatKey)
	if len(v) != 1 {
		return false, 0, fmt.Errorf("%w: %s: layout version is %d bytes, want 1", eventlog.ErrCorrupt, s.path, len(v))
	}
	if v[0] < oldestLayout || v[0] > layoutVersion {
		return false, 0, fmt.Errorf("%w: %s has layout version %d; this build reads versions %d to %d", ErrFormat, s.path, v[0], oldestLayout, layoutVersion)
	}
	required := [][]byte{eventsBucket, positionsBucket}
	if v[0] >= 3 {
		required = append(required, recentBucket)
	}
	for _, name := range required {
		if tx.Bucket(name) == nil {
			return false, 0, fmt.Errorf("%w: %s: bucket %s is missing", eventlog.ErrCorrupt, s.path, name)
		}
	}
	return false, v[0], nil
}

// buckets are the buckets of the layout other than meta. recent is nil in
// a store of layout 1 or 2 opened read-only.
type buckets struct {
	events, positions, recent *bolt.Bucket
	gaps                      *bolt.Bucket // nil until a purge left gaps
}

func (s *Store) buckets(tx *bolt.Tx) (buckets, error) {
	b := buckets{tx.Bucket(eventsBucket), tx.Bucket(positionsBucket), tx.Bucket(recentBucket), tx.Bucket(gapsBucket)}
	if b.events == nil || b.positions == nil || b.recent == nil && !s.readOnly {
		return b, fmt.Errorf("%w: %s: a bucket is missing", eventlog.ErrCorrupt, s.path)
	}
	return b, nil
}

// maxGroupRecords bounds the records one group commit writes, so that one
// transaction stays a manageable size; requests beyond it wait for the next.
const maxGroupRecords = 1 << 16

// appendReq is one Append waiting for, or taking part in, a group commit.
type appendReq struct {
	ctx    context.Context
	expect []eventlog.Expect
	recs   []eventlog.Record

	evs []eventlog.Event
	err error
}

// Append implements eventlog.Store. Appends that arrive while another is
// being logged are logged together by one of them, in one record of the
// write-ahead log and so one fdatasync; each keeps its own atomicity and
// its own expectations (see the package documentation).
func (s *Store) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := eventlog.CheckAppend(expect, recs); err != nil {
		return nil, err
	}
	r := &appendReq{ctx: ctx, expect: expect, recs: recs}
	if s.w == nil {
		s.queue.Do(r, s.commitGroup) // read-only: it fails
	} else {
		s.queue.Do(r, s.logGroup)
	}
	return r.evs, r.err
}

// commitGroup writes the requests of group in one bbolt transaction, as
// the log's applier does, with those join returns once group's are written
// (join may be nil): the requests that queued up meanwhile. A request
// whose context ended or whose expectations do not hold against the heads
// as the requests before it left them fails alone and writes nothing. If
// the transaction as a whole fails, each request is tried again in a
// transaction of its own, so that one request's failure is never
// another's.
func (s *Store) commitGroup(group []*appendReq, join func(size int) []*appendReq) {
	s.commits.Add(1)
	s.ixMu.Lock()
	var k *keeper
	err := s.update(func(tx *bolt.Tx) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		k = s.keeper(tx)
		// Positions only ever grow, and a stream only at its end, so the
		// pages a split leaves behind take few or no more keys: filling
		// them, rather than leaving them half empty as bbolt does by
		// default, saves writing and later reading pages.
		b.positions.FillPercent = 1
		b.events.FillPercent = 1
		size := 0
		for i := 0; i < len(group); i++ {
			r := group[i]
			size += len(r.recs)
			if err := write(b, k, r); err != nil {
				return err
			}
			if i == len(group)-1 && join != nil {
				group = append(group, join(size)...)
			}
		}
		if recentSize(b.recent) <= recentLimit {
			return nil
		}
		return moveRecent(tx, b)
	})
	if err == nil {
		s.kept(k)
	}
	s.ixMu.Unlock()
	if err == nil {
		return
	}
	if len(group) == 1 {
		group[0].evs, group[0].err = nil, err
		return
	}
	for _, r := range group {
		s.commitGroup([]*appendReq{r}, nil)
	}
}

// write writes r into b, in a group's transaction, and folds its events
// with k when it succeeds, each request after the ones before it. It
// returns an error only when the transaction must be rolled back.
func write(b buckets, k *keeper, r *appendReq) error {
	if r.err = r.ctx.Err(); r.err != nil {
		return nil
	}
	prev := lastPosition(b)
	r.evs, r.err = appendTo(b, r.expect, r.recs)
	var partial *partialWrite
	if errors.As(r.err, &partial) {
		return partial.err
	}
	if r.err == nil {
		return k.fold(prev, r.evs)
	}
	return nil
}

// partialWrite is an error that struck after a request had written part of
// its records: the transaction holding them must be rolled back.
type partialWrite struct{ err error }

func (p *partialWrite) Error() string { return p.err.Error() }
func (p *partialWrite) Unwrap() error { return p.err }

// appendTo writes one request's records into b if its expectations hold.
// Every check comes before the first write, so a failed check writes
// nothing and leaves the transaction usable; an error after it is a
// *partialWrite.
func appendTo(b buckets, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	var small [4]uint64
	heads := small[:0]
	for _, e := range expect {
		head, err := readHead(b.events.Cursor(), e.Stream)
		if err != nil {
			return nil, err
		}
		if head != e.Seq {
			return nil, &eventlog.ConflictError{Stream: e.Stream, Expected: e.Seq, Actual: head}
		}
		heads = append(heads, head)
	}

	// Number the events, then lay out their keys, positions and envelopes
	// in one buffer: bbolt keeps what it is given until the commit, and the
	// events returned share their payloads with the envelopes written.
	evs := make([]eventlog.Event, len(recs))
	pos := lastPosition(b)
	size, last := len(expect)*8, 0
	for i, r := range recs {
		last = streamIndex(expect, r.Stream, last)
		heads[last]++
		pos++
		evs[i] = eventlog.Event{Stream: r.Stream, Seq: heads[last], Position: pos, Type: r.Type,
			Version: r.Version, Time: r.Time, RestoreID: r.RestoreID, Payload: r.Payload}
		n := EnvelopeSize(evs[i])
		if n > bolt.MaxValueSize {
			return nil, fmt.Errorf("boltstore: append to %s: a record of %d bytes is larger than the %d a value may hold", r.Stream, n, bolt.MaxValueSize)
		}
		size += 2*len(r.Stream) + 9 + 8 + 13 + binary.MaxVarintLen32 + batchHeader + n
	}
	buf := make([]byte, 0, size)
	for i := 0; i < len(evs); {
		// Events i to j-1 are a run of one stream: one positions entry.
		j := i + 1
		for j < len(evs) && evs[j].Stream == evs[i].Stream && j-i < math.MaxUint32 {
			j++
		}
		p := len(buf)
		buf = binary.BigEndian.AppendUint64(buf, evs[i].Position)
		buf = appendRun(buf, evs[i].Stream, evs[i].Seq, uint32(j-i))
		if err := b.recent.Put(buf[p:p+8:p+8], buf[p+8:len(buf):len(buf)]); err != nil {
			return nil, &partialWrite{fmt.Errorf("boltstore: append to %s: %w", evs[i].Stream, err)}
		}
		// Its events go to the events bucket in batches.
		var err error
		if buf, err = putEvents(b.events, buf, evs[i:j]); err != nil {
			return nil, &partialWrite{err}
		}
		i = j
	}
	if err := b.recent.SetSequence(pos); err != nil {
		return nil, &partialWrite{fmt.Errorf("boltstore: append: %w", err)}
	}
	return evs, nil
}

// lastPosition returns the last position given to an event. Layout 3 keeps
// it as the recent bucket's sequence, older layouts as the positions
// bucket's. Setting a bucket's sequence rewrites its root page, which for
// the small recent bucket is part of the page every commit writes.
func lastPosition(b buckets) uint64 {
	last := b.positions.Sequence()
	if b.recent != nil {
		last = max(last, b.recent.Sequence())
	}
	return last
}

// recentSize returns the bytes the runs in the recent bucket take in its
// page.
func recentSize(recent *bolt.Bucket) int {
	n := 0
	c := recent.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		n += 16 + len(k) + len(v)
	}
	return n
}

// moveRecent moves the runs of the recent bucket to the positions bucket
// and empties it. A commit that updates the big positions tree writes a
// leaf and the branches above it; gathering runs in the small recent
// bucket, which lives in the page every commit writes, does that once for
// many appends instead of once for each.
func moveRecent(tx *bolt.Tx, b buckets) error {
	c := b.recent.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		// Cloned: the bucket is deleted before the commit writes them.
		if err := b.positions.Put(bytes.Clone(k), bytes.Clone(v)); err != nil {
			return fmt.Errorf("boltstore: move recent positions: %w", err)
		}
	}
	last := b.recent.Sequence()
	if err := tx.DeleteBucket(recentBucket); err != nil {
		return fmt.Errorf("boltstore: move recent positions: %w", err)
	}
	recent, err := tx.CreateBucket(recentBucket)
	if err == nil {
		err = recent.SetSequence(last)
	}
	if err != nil {
		return fmt.Errorf("boltstore: move recent positions: %w", err)
	}
	return nil
}

// streamIndex returns the index of stream in expect, trying hint first:
// records usually come in runs of one stream. CheckAppend has made sure
// that stream is there.
func streamIndex(expect []eventlog.Expect, stream string, hint int) int {
	if expect[hint].Stream == stream {
		return hint
	}
	for i, e := range expect {
		if e.Stream == stream {
			return i
		}
	}
	panic("boltstore: record for a stream without an expectation")
}

// Head implements eventlog.Store.
func (s *Store) Head(ctx context.Context, stream string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := eventlog.ValidateStream(stream); err != nil {
		return 0, err
	}
	// The head of a stream with appends not yet applied is the last one's.
	if seq, ok, err := s.tailHead(stream); err != nil || ok {
		return seq, err
	}
	var head uint64
	err := s.view(func(tx *bolt.Tx, _ *guard) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		head, err = readHead(b.events.Cursor(), stream)
		return err
	})
	return head, err
}

// LastPosition implements eventlog.Positioner.
func (s *Store) LastPosition(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := s.caughtUp(ctx); err != nil {
		return 0, err
	}
	var last uint64
	err := s.view(func(tx *bolt.Tx, _ *guard) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		last = lastPosition(b)
		return nil
	})
	return last, err
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
	if err := s.streamCaughtUp(ctx, stream, from); err != nil {
		return err
	}
	return s.view(func(tx *bolt.Tx, g *guard) error {
		g.at(stream, from) // a fault finding the buckets is in this read too
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		want, lastPos := from, uint64(0)
		sc := streamCursor{c: b.events.Cursor()}
		sc.reset(stream)
		if err := sc.seek(from); err != nil {
			return err
		}
		for {
			seq, env, ok, err := sc.next()
			if err != nil || !ok {
				return err
			}
			if err := checkCtx(ctx, want-from); err != nil {
				return err
			}
			if seq != want {
				if end, ok := gapEnd(b.gaps, stream, want); seq < want || !ok || end+1 != seq {
					return eventlog.Corruptf(stream, want, "event is missing; the next one stored is %d", seq)
				}
				want = seq // a purge removed the events before it
				g.at(stream, want)
			}
			ev, err := decodeEvent(stream, want, env)
			if err != nil {
				return err
			}
			if ev.Position <= lastPos {
				return eventlog.Corruptf(stream, want, "position %d does not follow the previous event's %d", ev.Position, lastPos)
			}
			lastPos = ev.Position
			if err := fn(ev); err != nil {
				return err
			}
			want++
			g.at(stream, want)
		}
	})
}

// ReadAll implements eventlog.Store. Each event's Payload points into the
// memory-mapped file and is valid only until fn returns.
func (s *Store) ReadAll(ctx context.Context, from uint64, fn func(eventlog.Event) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.caughtUp(ctx); err != nil {
		return err
	}
	from = max(from, 1)
	return s.view(func(tx *bolt.Tx, g *guard) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		last := lastPosition(b)
		if from > last {
			return nil
		}
		// The runs are in the positions bucket, then, newer than all of
		// those, in the recent bucket.
		r := runReader{s: s, ctx: ctx, g: g, events: b.events.Cursor(), gaps: b.gaps, from: from, want: from, last: last, fn: fn}
		return r.readAll(b)
	})
}

// runReader reads the events of runs of positions in order, from position
// from to last, checking that they follow each other without a gap.
type runReader struct {
	s          *Store
	ctx        context.Context
	g          *guard
	events     *bolt.Cursor
	gaps       *bolt.Bucket // nil unless purges left gaps
	from, want uint64       // the first position to read, the next
	last       uint64
	sc         streamCursor // on the last run's stream
	fn         func(eventlog.Event) error
}

// readAll reads the runs of b's positions bucket, then of its recent
// bucket, up to r.last.
func (r *runReader) readAll(b buckets) error {
	for _, runs := range []*bolt.Bucket{b.positions, b.recent} {
		if runs == nil || r.want > r.last {
			continue
		}
		if err := r.read(runs.Cursor()); err != nil {
			return err
		}
	}
	if r.want <= r.last {
		return r.missing()
	}
	return nil
}

// missing reports that position r.want has no run.
func (r *runReader) missing() error {
	return fmt.Errorf("%w: %s: position %d is missing; the last is %d", eventlog.ErrCorrupt, r.s.path, r.want, r.last)
}

// purged reports whether purges removed every position from r.want up to
// start.
func (r *runReader) purged(start uint64) bool {
	end, ok := gapEnd(r.gaps, "", r.want)
	return ok && end+1 == start
}

// read reads the runs of one bucket, from the one holding r.want on.
func (r *runReader) read(c *bolt.Cursor) error {
	path := r.s.path
	// The run holding want is the last one starting at or before it.
	k, v := c.Seek(be64(r.want))
	if k == nil || binary.BigEndian.Uint64(k) != r.want {
		if k, v = c.Prev(); k == nil {
			k, v = c.First()
		}
	}
	// Only a read's first run may start before the position it reads.
	for first := true; k != nil && r.want <= r.last; k, v = c.Next() {
		if len(k) != 8 {
			return fmt.Errorf("%w: %s: malformed position key %x", eventlog.ErrCorrupt, path, k)
		}
		start := binary.BigEndian.Uint64(k)
		run, ok := splitRun(v, r.sc.stream)
		switch {
		case !ok:
			return fmt.Errorf("%w: %s: position %d holds a malformed event key %x", eventlog.ErrCorrupt, path, start, v)
		case start > r.want && !r.purged(start):
			return r.missing()
		case start < r.want && (!first || r.want != r.from):
			return fmt.Errorf("%w: %s: expected position %d of %d, found %d", eventlog.ErrCorrupt, path, r.want, r.last, start)
		case run.count > r.last-start+1:
			return fmt.Errorf("%w: %s: positions %d to %d lie beyond the last, %d", eventlog.ErrCorrupt, path, start, start+run.count-1, r.last)
		}
		first = false
		if start > r.want {
			r.want = start // a purge removed the positions before it
		}
		if r.sc.c == nil || r.sc.stream != run.stream {
			r.sc.c = r.events
			r.sc.reset(run.stream)
		}
		skip := r.want - start
		for i := skip; i < run.count; i++ {
			if err := checkCtx(r.ctx, r.want-r.from); err != nil {
				return err
			}
			seq := run.seq + i
			r.g.at(run.stream, seq)
			// A run that goes on where the last one stopped needs no seek.
			if i == skip && (!r.sc.on || r.sc.seq != seq) {
				if err := r.sc.seek(seq); err != nil {
					return err
				}
			}
			at, env, ok, err := r.sc.next()
			if err != nil {
				return err
			}
			if !ok || at != seq {
				return eventlog.Corruptf(run.stream, seq, "event at position %d is missing", r.want)
			}
			e, err := decodeEvent(run.stream, seq, env)
			if err != nil {
				return err
			}
			if e.Position != r.want {
				return eventlog.Corruptf(run.stream, seq, "event at position %d says it is at %d", r.want, e.Position)
			}
			if err := r.fn(e); err != nil {
				return err
			}
			r.want++
		}
	}
	return nil
}

// Streams implements eventlog.Store.
func (s *Store) Streams(ctx context.Context, prefix string, fn func(eventlog.StreamInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.caughtUp(ctx); err != nil {
		return err
	}
	return s.view(func(tx *bolt.Tx, g *guard) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		// One stream after another: its head is its last key, and the key
		// after that is the next stream's first.
		p := []byte(prefix)
		c := b.events.Cursor()
		var n uint64
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			if err := checkCtx(ctx, n); err != nil {
				return err
			}
			end := bytes.IndexByte(k, 0)
			if end < 1 {
				return fmt.Errorf("%w: %s: malformed event key %x", eventlog.ErrCorrupt, s.path, k)
			}
			stream := string(k[:end])
			head, err := readHead(c, stream)
			if err != nil {
				return err
			}
			if err := fn(eventlog.StreamInfo{Name: stream, Head: head}); err != nil {
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
	if s.w != nil {
		// No append is logged from now on; the log is applied first.
		s.w.logMu.Lock()
		defer s.w.logMu.Unlock()
		s.mu.RLock()
		closed := s.db == nil
		s.mu.RUnlock()
		if !closed {
			if err := s.closeLog(); err != nil {
				s.log.Warn("boltstore: a log segment is left for the next open, which finds it applied", "path", s.path, "error", err)
			}
		}
	}
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
		s.boltCommits.Add(1)
		return nil
	})
}

// guard turns a memory fault inside bbolt into an error matching
// eventlog.ErrCorrupt: in a damaged or truncated file bbolt can touch the
// mapping beyond the end of the file. Readers note the stream and sequence
// they are at, so the error names them. Any other panic, in bbolt, in this
// package or in a caller's callback, is a programmer error or a broken
// invariant, and is raised again: it is not disk damage. The one exception
// is opening: bolt.Open reads nothing but the file's meta and freelist
// pages, and panics when they are damaged, so while opening (opening set)
// any panic is reported as corruption.
type guard struct {
	path    string
	opening bool
	stream  string // where a read is, for the error
	seq     uint64
}

// at notes that the read is at seq of stream.
func (g *guard) at(stream string, seq uint64) { g.stream, g.seq = stream, seq }

func (g *guard) run(f func() error) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		fault, ok := r.(interface{ Addr() uintptr })
		if !ok && g.opening {
			err = fmt.Errorf("%w: %s: %v", eventlog.ErrCorrupt, g.path, r)
			return
		}
		if !ok {
			panic(r)
		}
		if g.stream != "" {
			err = eventlog.Corruptf(g.stream, g.seq, "memory fault at %#x reading %s", fault.Addr(), g.path)
		} else {
			err = fmt.Errorf("%w: %s: memory fault at %#x", eventlog.ErrCorrupt, g.path, fault.Addr())
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return f()
}

// checkCtx checks ctx once every ctxCheckEvery events; n counts the events
// read so far.
func checkCtx(ctx context.Context, n uint64) error {
	if n == 0 || n%ctxCheckEvery != 0 {
		return nil
	}
	return ctx.Err()
}

// readHead returns the head of stream, the seq of its last event, or 0 if
// it has none, leaving c on the value that holds that event: the stream's
// last key names the first event of that value, and a batch's header
// says how many it holds. The stream's keys end before
// stream + 0x01, as stream names hold no control characters.
func readHead(c *bolt.Cursor, stream string) (uint64, error) {
	var k, v []byte
	if k, _ = c.Seek(append([]byte(stream), 1)); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	prefix := len(stream) + 1
	if k == nil || len(k) < prefix || string(k[:prefix-1]) != stream || k[prefix-1] != 0 {
		return 0, nil
	}
	if len(k) != prefix+8 || binary.BigEndian.Uint64(k[prefix:]) == 0 {
		return 0, eventlog.Corruptf(stream, 0, "malformed event key %x", k)
	}
	return valueHead(stream, binary.BigEndian.Uint64(k[prefix:]), v)
}

// decodeEvent decodes the envelope stored under stream and seq and checks
// that it names them. The Payload aliases v.
func decodeEvent(stream string, seq uint64, v []byte) (eventlog.Event, error) {
	ev, err := unmarshalEnvelopeOn(v, stream)
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
	return appendEventKey(make([]byte, 0, len(stream)+9), stream, seq)
}

// appendEventKey appends eventKey(stream, seq) to dst.
func appendEventKey(dst []byte, stream string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append(append(dst, stream...), 0), seq)
}

// run is what the positions bucket holds for a run of positions: count
// consecutive events of one stream from seq on.
type run struct {
	stream string
	seq    uint64
	count  uint64
}

// appendRun appends the positions bucket's value for a run: the key of its
// first event, then its length as 4 big-endian bytes unless it is 1, which
// is layout 1's value for a single event.
func appendRun(dst []byte, stream string, seq uint64, count uint32) []byte {
	dst = appendEventKey(dst, stream, seq)
	if count == 1 {
		return dst
	}
	return binary.BigEndian.AppendUint32(dst, count)
}

// splitRun is the inverse of appendRun. The run's stream is prev when it
// is equal, saving a copy.
func splitRun(v []byte, prev string) (r run, ok bool) {
	n := bytes.IndexByte(v, 0)
	if n < 1 {
		return r, false
	}
	switch rest := v[n+1:]; len(rest) {
	case 8:
		r.count = 1
	case 12:
		r.count = uint64(binary.BigEndian.Uint32(rest[8:]))
		if r.count < 2 {
			return r, false
		}
	default:
		return r, false
	}
	r.seq = binary.BigEndian.Uint64(v[n+1:])
	if r.seq == 0 {
		return r, false
	}
	if string(v[:n]) == prev {
		r.stream = prev
	} else {
		r.stream = string(v[:n])
	}
	return r, true
}

func be64(n uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, n)
}
