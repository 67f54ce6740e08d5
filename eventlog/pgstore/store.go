package pgstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/internal/group"
)

// DefaultMaxLocks is how many stream locks a store holds at once when
// Options.MaxLocks is zero.
const DefaultMaxLocks = 16

// maxAttempts bounds how often Append runs its transaction when the
// database reports a serialization failure or a deadlock. PostgreSQL at READ
// COMMITTED reports neither for an append, but databases that run every
// transaction SERIALIZABLE do, and expect the client to retry.
const maxAttempts = 4

// ctxCheckEvery is how many events a long read passes between checks of its
// context.
const ctxCheckEvery = 256

// Options configures Open.
type Options struct {
	// ReadOnly opens an existing store for reading only: Open neither
	// creates nor upgrades the schema, and Append returns
	// eventlog.ErrReadOnly.
	ReadOnly bool

	// MaxLocks bounds how many stream locks the store holds at once; each
	// held lock keeps one database connection. TryLock waits for a lock
	// to be released while MaxLocks are held. Zero means DefaultMaxLocks.
	MaxLocks int32
}

// Store is an eventlog.Store in a PostgreSQL schema, shared by any number of
// processes. It implements eventlog.StreamLocker. It is safe for concurrent
// use.
type Store struct {
	pool     *pgxpool.Pool // appends and reads
	locks    *pgxpool.Pool // one connection for each held stream lock
	schema   string
	readOnly bool

	mu     sync.RWMutex // held shared by every call and exclusively by Close
	closed bool

	heldMu sync.Mutex
	held   map[*lock]struct{}

	kept atomic.Pointer[keptIndex] // the index writes fold their events into; nil for none

	queue  *group.Queue[*appendReq] // the appends waiting to be committed
	groups atomic.Int64             // group commits attempted, for tests
}

var (
	_ eventlog.Store        = (*Store)(nil)
	_ eventlog.StreamLocker = (*Store)(nil)
)

// IsURL reports whether s names a PostgreSQL store rather than a file: a
// postgres:// or postgresql:// URL.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Open connects to the database at url, a postgres:// URL or a key=value
// connection string, and returns the store in the first existing schema of
// its search_path, creating or upgrading the store's tables there unless
// opts.ReadOnly is set. Besides connection errors, which match
// ErrConnection, it fails with an error matching ErrFormat when the schema
// holds a store this build does not read.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	lockCfg := cfg.Copy()
	lockCfg.MinConns = 0
	lockCfg.MaxConns = opts.MaxLocks
	if lockCfg.MaxConns <= 0 {
		lockCfg.MaxConns = DefaultMaxLocks
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	locks, err := pgxpool.NewWithConfig(ctx, lockCfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	s := &Store{pool: pool, locks: locks, readOnly: opts.ReadOnly, held: make(map[*lock]struct{}),
		queue: group.New(func(r *appendReq) int { return len(r.recs) }, maxGroupRecords)}
	if err := s.init(ctx); err != nil {
		pool.Close()
		locks.Close()
		return nil, err
	}
	return s, nil
}

// init finds the store's schema and brings its tables to SchemaVersion, or,
// read-only, checks that they are.
func (s *Store) init(ctx context.Context) error {
	var schema *string
	if err := s.pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return s.fail(ctx, "open", err)
	}
	if schema == nil {
		return errors.New("pgstore: open: no schema of the search_path exists; create one or set search_path in the URL")
	}
	s.schema = *schema
	var err error
	if s.readOnly {
		err = checkVersion(ctx, s.pool, s.schema)
	} else {
		err = migrate(ctx, s.pool, lockKey("migrate", s.schema))
	}
	if err != nil && !errors.Is(err, ErrFormat) {
		return s.fail(ctx, "open schema "+s.schema, err)
	}
	return err
}

// lockKey derives a 64-bit advisory lock key from parts. Advisory locks are
// shared by the whole database, so keys include the schema.
func lockKey(parts ...string) int64 {
	h := fnv.New64a()
	h.Write([]byte("reprise"))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return int64(h.Sum64())
}

// begin holds the store open for one call; end must be called after.
func (s *Store) begin() (end func(), err error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, eventlog.ErrClosed
	}
	return s.mu.RUnlock, nil
}

func streamNames(expect []eventlog.Expect) []string {
	names := make([]string, len(expect))
	for i, e := range expect {
		names[i] = e.Stream
	}
	return names
}

// conflict reports the append that failed with cause, an error saying that
// a head it expected moved, as a conflict on the first expected stream whose
// head, read again, is not the one expected. When none moved, the cause is
// returned.
func (s *Store) conflict(ctx context.Context, expect []eventlog.Expect, cause error) error {
	heads, err := s.heads(ctx, streamNames(expect))
	if err != nil {
		return s.fail(ctx, "append", cause)
	}
	for _, e := range expect {
		if head := heads[e.Stream]; head != e.Seq {
			return &eventlog.ConflictError{Stream: e.Stream, Expected: e.Seq, Actual: head}
		}
	}
	return s.fail(ctx, "append", cause)
}

// heads reads the heads of the named streams that exist.
func (s *Store) heads(ctx context.Context, names []string) (map[string]uint64, error) {
	return readHeads(ctx, s.pool, names)
}

// querier is what reads need of a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readHeads reads the heads of the named streams that exist.
func readHeads(ctx context.Context, q querier, names []string) (map[string]uint64, error) {
	rows, err := q.Query(ctx, "SELECT stream, head FROM reprise_streams WHERE stream = ANY($1)", names)
	if err != nil {
		return nil, err
	}
	heads := make(map[string]uint64)
	return heads, scanHeads(rows, heads)
}

// Head implements eventlog.Store.
func (s *Store) Head(ctx context.Context, stream string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := eventlog.ValidateStream(stream); err != nil {
		return 0, err
	}
	end, err := s.begin()
	if err != nil {
		return 0, err
	}
	defer end()
	var head int64
	err = s.pool.QueryRow(ctx, "SELECT head FROM reprise_streams WHERE stream = $1", stream).Scan(&head)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, s.fail(ctx, "head of "+stream, err)
	}
	return uint64(head), nil
}

// readChunk is how many events one query of a read fetches: a reader that
// stops early (a page of a conversation, a search for the last position)
// has fetched at most one chunk more than it used, instead of the whole
// rest of the log, which the driver reads to the end before it closes a
// query.
const readChunk = 1024

// ReadStream implements eventlog.Store. The events are read in chunks of
// readChunk, each its own query: a long read sees the events committed
// when each chunk is read, so it may also pass events appended while it
// runs, always after the ones before them. Each event's Payload is valid
// only until fn returns.
func (s *Store) ReadStream(ctx context.Context, stream string, from uint64, fn func(eventlog.Event) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := eventlog.ValidateStream(stream); err != nil {
		return err
	}
	end, err := s.begin()
	if err != nil {
		return err
	}
	defer end()
	from = max(from, 1)
	var lastPos uint64
	want := from
	for {
		if want > math.MaxInt64 {
			return nil
		}
		n, err := s.readStreamChunk(ctx, stream, from, &want, &lastPos, fn)
		if err != nil || n < readChunk {
			return err
		}
	}
}

// readStreamChunk reads up to readChunk events of stream from seq *want on,
// checking them against the sequence and position before, and returns how
// many it read.
func (s *Store) readStreamChunk(ctx context.Context, stream string, from uint64, want, lastPos *uint64, fn func(eventlog.Event) error) (int, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, position, type, version, time_ns, restore_id, payload
		FROM reprise_events WHERE stream = $1 AND seq >= $2 ORDER BY seq LIMIT $3`, stream, int64(*want), readChunk)
	if err != nil {
		return 0, s.fail(ctx, "read "+stream, err)
	}
	defer rows.Close()
	var row eventRow
	row.stream = stream
	n := 0
	for ; rows.Next(); *want++ {
		n++
		if err := checkCtx(ctx, *want-from); err != nil {
			return n, err
		}
		if err := rows.Scan(&row.seq, &row.position, &row.typ, &row.version, &row.time, &row.restoreID, &row.payload); err != nil {
			return n, s.fail(ctx, "read "+stream, err)
		}
		ev, err := row.event()
		if err != nil {
			return n, err
		}
		if ev.Seq != *want {
			if end, err := gapEnd(ctx, s.pool, stream, *want); err != nil || end+1 != ev.Seq {
				return n, errors.Join(eventlog.Corruptf(stream, *want, "event is missing; the next one stored is %d", ev.Seq), err)
			}
			*want = ev.Seq // a purge removed the events before it
		}
		if ev.Position <= *lastPos {
			return n, eventlog.Corruptf(stream, *want, "position %d does not follow the previous event's %d", ev.Position, *lastPos)
		}
		*lastPos = ev.Position
		if err := fn(ev); err != nil {
			return n, err
		}
	}
	if err := rows.Err(); err != nil {
		return n, s.fail(ctx, "read "+stream, err)
	}
	return n, nil
}

// ReadAll implements eventlog.Store. It reads one snapshot, in a
// read-only REPEATABLE READ transaction: events appended while it runs are
// not passed, and a purge that commits meanwhile changes nothing it
// passes. The events are fetched in chunks of readChunk, each its own
// query in that transaction. Each event's Payload is valid only until fn
// returns.
func (s *Store) ReadAll(ctx context.Context, from uint64, fn func(eventlog.Event) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	end, err := s.begin()
	if err != nil {
		return err
	}
	defer end()
	var fnErr error
	read := func(ev eventlog.Event) error {
		fnErr = fn(ev)
		return fnErr
	}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		from := max(from, 1)
		want := from
		for want <= math.MaxInt64 {
			more, err := readAllChunk(ctx, tx, from, &want, read)
			if err != nil || !more {
				return err
			}
		}
		return nil
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err == nil, errors.Is(err, eventlog.ErrCorrupt):
		return err
	}
	return s.fail(ctx, "read all", err)
}

// readAllChunk reads up to readChunk events from position *want on, in
// tx. It reports whether the log may go on after them: the chunk was full,
// or it ended at a gap that a purge left, which the next chunk reads past.
func readAllChunk(ctx context.Context, tx pgx.Tx, from uint64, want *uint64, fn func(eventlog.Event) error) (more bool, err error) {
	rows, err := tx.Query(ctx, `SELECT position, stream, seq, type, version, time_ns, restore_id, payload
		FROM reprise_events WHERE position >= $1 ORDER BY position LIMIT $2`, int64(*want), readChunk)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var row eventRow
	n := 0
	for ; rows.Next(); *want++ {
		n++
		if err := checkCtx(ctx, *want-from); err != nil {
			return false, err
		}
		if err := rows.Scan(&row.position, &row.stream, &row.seq, &row.typ, &row.version, &row.time, &row.restoreID, &row.payload); err != nil {
			return false, err
		}
		ev, err := row.event()
		if err != nil {
			return false, err
		}
		if ev.Position != *want {
			// The transaction runs one query at a time: close this one
			// before asking for the gap.
			rows.Close()
			if end, err := gapEnd(ctx, tx, "", *want); err == nil && end+1 == ev.Position {
				*want = ev.Position // a purge removed the positions before it
				return true, nil
			}
			return false, fmt.Errorf("%w: position %d is missing; the next one stored is %d (%s#%d)",
				eventlog.ErrCorrupt, *want, ev.Position, ev.Stream, ev.Seq)
		}
		if err := fn(ev); err != nil {
			return false, err
		}
	}
	return n == readChunk, rows.Err()
}

// LastPosition implements eventlog.Positioner.
func (s *Store) LastPosition(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	end, err := s.begin()
	if err != nil {
		return 0, err
	}
	defer end()
	var last int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(position), 0) FROM reprise_events`).Scan(&last); err != nil {
		return 0, s.fail(ctx, "last position", err)
	}
	return uint64(last), nil
}

// eventRow is one row of reprise_events as scanned.
type eventRow struct {
	stream, typ, restoreID string
	position, seq, time    int64
	version                int32
	payload                pgtype.DriverBytes // valid until the next row
}

// event checks the row against the log's invariants and returns its event,
// whose Payload aliases the row's.
func (r *eventRow) event() (eventlog.Event, error) {
	if r.seq < 1 || r.position < 1 {
		return eventlog.Event{}, eventlog.Corruptf(r.stream, uint64(max(r.seq, 0)), "seq %d at position %d", r.seq, r.position)
	}
	if r.version < 0 || r.version > math.MaxUint16 {
		return eventlog.Event{}, eventlog.Corruptf(r.stream, uint64(r.seq), "schema version %d out of range", r.version)
	}
	return eventlog.Event{Stream: r.stream, Seq: uint64(r.seq), Position: uint64(r.position), Type: eventlog.Type(r.typ),
		Version: uint16(r.version), Time: r.time, RestoreID: r.restoreID, Payload: r.payload}, nil
}

// Streams implements eventlog.Store. Names are compared byte by byte: the
// column's collation is "C".
func (s *Store) Streams(ctx context.Context, prefix string, fn func(eventlog.StreamInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	end, err := s.begin()
	if err != nil {
		return err
	}
	defer end()
	rows, err := s.pool.Query(ctx, `SELECT stream, head FROM reprise_streams
		WHERE stream >= $1 AND starts_with(stream, $1) ORDER BY stream`, prefix)
	if err != nil {
		return s.fail(ctx, "list streams", err)
	}
	defer rows.Close()
	var (
		name string
		head int64
		n    uint64
	)
	for rows.Next() {
		if err := checkCtx(ctx, n); err != nil {
			return err
		}
		if err := rows.Scan(&name, &head); err != nil {
			return s.fail(ctx, "list streams", err)
		}
		if err := fn(eventlog.StreamInfo{Name: name, Head: uint64(head)}); err != nil {
			return err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return s.fail(ctx, "list streams", err)
	}
	return nil
}

// Close implements eventlog.Store. It waits for calls in progress, releases
// the locks still held and closes every connection. A second Close returns
// eventlog.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return eventlog.ErrClosed
	}
	s.closed = true
	s.heldMu.Lock()
	held := make([]*lock, 0, len(s.held))
	for l := range s.held {
		held = append(held, l)
	}
	s.heldMu.Unlock()
	for _, l := range held {
		l.release()
	}
	s.pool.Close()
	s.locks.Close()
	return nil
}

// checkCtx checks ctx once every ctxCheckEvery rows; n counts the rows read
// so far.
func checkCtx(ctx context.Context, n uint64) error {
	if n == 0 || n%ctxCheckEvery != 0 {
		return nil
	}
	return ctx.Err()
}
