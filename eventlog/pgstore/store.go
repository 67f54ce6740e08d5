package pgstore

import (
	"bytes"
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
	s := &Store{pool: pool, locks: locks, readOnly: opts.ReadOnly, held: make(map[*lock]struct{})}
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

// errHeadMoved is returned from an append transaction whose conditional
// write of a stream head matched no row.
var errHeadMoved = errors.New("a stream head moved during the append")

// Append implements eventlog.Store in one transaction at READ COMMITTED. It
// first takes the row lock on the position counter, which serializes every
// append to the store, then checks each expected head, then writes the
// events and the new heads, each head write itself conditional on the head
// it expects.
func (s *Store) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := eventlog.CheckAppend(expect, recs); err != nil {
		return nil, err
	}
	end, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer end()
	if s.readOnly {
		return nil, eventlog.ErrReadOnly
	}
	for attempt := 1; ; attempt++ {
		evs, err := s.appendTx(ctx, expect, recs)
		var conflict *eventlog.ConflictError
		code := sqlState(err)
		switch {
		case err == nil:
			return evs, nil
		case errors.As(err, &conflict), errors.Is(err, eventlog.ErrCorrupt):
			return nil, err
		case (code == codeSerializationFailure || code == codeDeadlockDetected) && attempt < maxAttempts && ctx.Err() == nil:
			continue
		case code == codeSerializationFailure || code == codeDeadlockDetected || code == codeUniqueViolation,
			errors.Is(err, errHeadMoved):
			return nil, s.conflict(ctx, expect, err)
		}
		return nil, s.fail(ctx, "append", err)
	}
}

// appendTx runs one append transaction.
func (s *Store) appendTx(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, err
	}
	// A no-op after Commit. If the connection is gone, the server has
	// rolled the transaction back already.
	defer func() { _ = tx.Rollback(ctx) }()
	x := s.indexing()
	evs, err := appendIn(ctx, tx, expect, recs, x)
	if err != nil {
		return nil, err
	}
	if err := commit(ctx, tx); err != nil {
		return nil, err
	}
	s.indexed(x)
	return evs, nil
}

// commit commits tx, saying so when its outcome is unknown.
func commit(ctx context.Context, tx pgx.Tx) error {
	if err := tx.Commit(ctx); err != nil {
		if isConnError(err) {
			return fmt.Errorf("commit, whose outcome is unknown (read the streams to learn whether the append was written): %w", err)
		}
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// appendIn writes an append's records in tx if its expectations hold, and
// folds them into the rows of x's index (nil for none).
func appendIn(ctx context.Context, tx pgx.Tx, expect []eventlog.Expect, recs []eventlog.Record, x *indexing) ([]eventlog.Event, error) {
	// The UPDATE waits for the append holding the counter to end; the
	// SELECTs then run with snapshots taken after that append committed.
	var b pgx.Batch
	b.Queue("UPDATE reprise_position SET last = last + $1 RETURNING last", int64(len(recs)))
	b.Queue("SELECT stream, head FROM reprise_streams WHERE stream = ANY($1)", streamNames(expect))
	if x != nil {
		b.Queue("SELECT last FROM reprise_index WHERE name = $1", x.name())
	}
	last, heads, held, err := readCounterAndHeads(tx.SendBatch(ctx, &b), x != nil)
	if err != nil {
		return nil, err
	}
	for _, e := range expect {
		if head := heads[e.Stream]; head != e.Seq {
			return nil, &eventlog.ConflictError{Stream: e.Stream, Expected: e.Seq, Actual: head}
		}
	}

	evs, cols := newEvents(recs, heads, uint64(last)-uint64(len(recs))+1)
	var w pgx.Batch
	writes := 0
	for _, e := range expect {
		head := heads[e.Stream]
		switch {
		case head == e.Seq: // expected, not written
			continue
		case e.Seq == 0:
			w.Queue("INSERT INTO reprise_streams (stream, head) VALUES ($1, $2) ON CONFLICT (stream) DO NOTHING",
				e.Stream, int64(head))
		default:
			w.Queue("UPDATE reprise_streams SET head = $2 WHERE stream = $1 AND head = $3",
				e.Stream, int64(head), int64(e.Seq))
		}
		writes++
	}
	w.Queue(`INSERT INTO reprise_events (position, stream, seq, type, version, time_ns, restore_id, payload)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::integer[], $6::bigint[], $7::text[], $8::bytea[])`,
		cols.positions, cols.streams, cols.seqs, cols.types, cols.versions, cols.times, cols.restoreIDs, cols.payloads)
	if err := foldIn(ctx, tx, &w, x, held, uint64(last)-uint64(len(recs)), evs); err != nil {
		return nil, err
	}
	if err := execWrites(tx.SendBatch(ctx, &w), writes); err != nil {
		return nil, err
	}
	return evs, nil
}

// readCounterAndHeads reads the results of the first batch of an append:
// the last position the counter reached, the heads of the expected streams
// that exist and, when indexed, the last position the index's rows hold
// (-1 when the store holds none of them).
func readCounterAndHeads(br pgx.BatchResults, indexed bool) (last int64, heads map[string]uint64, held int64, err error) {
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	if err := br.QueryRow().Scan(&last); errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, 0, fmt.Errorf("%w: the position counter's row is missing", eventlog.ErrCorrupt)
	} else if err != nil {
		return 0, nil, 0, err
	}
	rows, err := br.Query()
	if err != nil {
		return 0, nil, 0, err
	}
	heads = make(map[string]uint64)
	var (
		name string
		head int64
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &head}, func() error {
		heads[name] = uint64(head)
		return nil
	})
	if err != nil || !indexed {
		return last, heads, -1, err
	}
	if err := br.QueryRow().Scan(&held); errors.Is(err, pgx.ErrNoRows) {
		return last, heads, -1, nil
	} else if err != nil {
		return 0, nil, 0, err
	}
	return last, heads, held, nil
}

// execWrites reads the results of the second batch of an append: writes
// conditional head writes, each of which must change one row, then the
// insert of the events, then the index's writes, if any.
func execWrites(br pgx.BatchResults, writes int) (err error) {
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	for range writes {
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return errHeadMoved
		}
	}
	_, err = br.Exec()
	return err
}

// columns holds an append's events column by column, for unnest.
type columns struct {
	positions, seqs, times []int64
	streams, types         []string
	restoreIDs             []string
	versions               []int32
	payloads               [][]byte
}

// newEvents assigns sequences, continuing from heads, and positions, from
// first, to recs. It advances heads to the streams' new heads and returns
// the events, with payloads of their own, and their columns.
func newEvents(recs []eventlog.Record, heads map[string]uint64, first uint64) ([]eventlog.Event, columns) {
	n := len(recs)
	evs := make([]eventlog.Event, n)
	cols := columns{
		positions: make([]int64, n), seqs: make([]int64, n), times: make([]int64, n),
		streams: make([]string, n), types: make([]string, n), restoreIDs: make([]string, n),
		versions: make([]int32, n), payloads: make([][]byte, n),
	}
	for i, r := range recs {
		heads[r.Stream]++
		ev := eventlog.Event{Stream: r.Stream, Seq: heads[r.Stream], Position: first + uint64(i), Type: r.Type,
			Version: r.Version, Time: r.Time, RestoreID: r.RestoreID, Payload: bytes.Clone(r.Payload)}
		evs[i] = ev
		cols.positions[i], cols.seqs[i], cols.times[i] = int64(ev.Position), int64(ev.Seq), ev.Time
		cols.streams[i], cols.types[i], cols.restoreIDs[i] = ev.Stream, string(ev.Type), ev.RestoreID
		cols.versions[i] = int32(ev.Version)
		cols.payloads[i] = r.Payload
		if cols.payloads[i] == nil { // NULL otherwise
			cols.payloads[i] = []byte{}
		}
	}
	return evs, cols
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

// querier is what readHeads needs of a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// readHeads reads the heads of the named streams that exist.
func readHeads(ctx context.Context, q querier, names []string) (map[string]uint64, error) {
	rows, err := q.Query(ctx, "SELECT stream, head FROM reprise_streams WHERE stream = ANY($1)", names)
	if err != nil {
		return nil, err
	}
	heads := make(map[string]uint64)
	var (
		name string
		head int64
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &head}, func() error {
		heads[name] = uint64(head)
		return nil
	})
	return heads, err
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

// ReadStream implements eventlog.Store. The events come from one query, so
// they are those of one snapshot. Each event's Payload is valid only until
// fn returns.
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
	if from > math.MaxInt64 {
		return nil
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, position, type, version, time_ns, restore_id, payload
		FROM reprise_events WHERE stream = $1 AND seq >= $2 ORDER BY seq`, stream, int64(from))
	if err != nil {
		return s.fail(ctx, "read "+stream, err)
	}
	defer rows.Close()
	var (
		row     eventRow
		lastPos uint64
	)
	row.stream = stream
	for want := from; rows.Next(); want++ {
		if err := checkCtx(ctx, want-from); err != nil {
			return err
		}
		if err := rows.Scan(&row.seq, &row.position, &row.typ, &row.version, &row.time, &row.restoreID, &row.payload); err != nil {
			return s.fail(ctx, "read "+stream, err)
		}
		ev, err := row.event()
		if err != nil {
			return err
		}
		if ev.Seq != want {
			if end, err := s.gapEnd(ctx, stream, want); err != nil || end+1 != ev.Seq {
				return errors.Join(eventlog.Corruptf(stream, want, "event is missing; the next one stored is %d", ev.Seq), err)
			}
			want = ev.Seq // a purge removed the events before it
		}
		if ev.Position <= lastPos {
			return eventlog.Corruptf(stream, want, "position %d does not follow the previous event's %d", ev.Position, lastPos)
		}
		lastPos = ev.Position
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.fail(ctx, "read "+stream, err)
	}
	return nil
}

// ReadAll implements eventlog.Store. The events come from one query, so
// they are those of one snapshot, and positions have no gaps. Each event's
// Payload is valid only until fn returns.
func (s *Store) ReadAll(ctx context.Context, from uint64, fn func(eventlog.Event) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	end, err := s.begin()
	if err != nil {
		return err
	}
	defer end()
	from = max(from, 1)
	if from > math.MaxInt64 {
		return nil
	}
	rows, err := s.pool.Query(ctx, `SELECT position, stream, seq, type, version, time_ns, restore_id, payload
		FROM reprise_events WHERE position >= $1 ORDER BY position`, int64(from))
	if err != nil {
		return s.fail(ctx, "read all", err)
	}
	defer rows.Close()
	var row eventRow
	for want := from; rows.Next(); want++ {
		if err := checkCtx(ctx, want-from); err != nil {
			return err
		}
		if err := rows.Scan(&row.position, &row.stream, &row.seq, &row.typ, &row.version, &row.time, &row.restoreID, &row.payload); err != nil {
			return s.fail(ctx, "read all", err)
		}
		ev, err := row.event()
		if err != nil {
			return err
		}
		if ev.Position != want {
			if end, err := s.gapEnd(ctx, "", want); err == nil && end+1 == ev.Position {
				want = ev.Position // a purge removed the positions before it
			}
		}
		if ev.Position != want {
			return fmt.Errorf("%w: position %d is missing; the next one stored is %d (%s#%d)",
				eventlog.ErrCorrupt, want, ev.Position, ev.Stream, ev.Seq)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.fail(ctx, "read all", err)
	}
	return nil
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
