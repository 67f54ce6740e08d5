package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reprise-dev/reprise/eventlog"
)

// maxGroupRecords bounds the records one group commit writes, so that one
// transaction stays a manageable size; requests beyond it wait for the next.
const maxGroupRecords = 1 << 16

// errOutcomeUnknown marks the failure of a transaction that may have
// committed: its connection failed, or its context ended, during the
// round trip that carried its COMMIT.
var errOutcomeUnknown = errors.New("commit, whose outcome is unknown (read the streams to learn whether the append was written)")

// conn is what a write needs of the connection or the transaction it runs
// on.
type conn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// appendReq is one Append waiting for, or taking part in, a group commit.
type appendReq struct {
	ctx    context.Context
	expect []eventlog.Expect
	recs   []eventlog.Record

	evs []eventlog.Event
	err error
}

// Append implements eventlog.Store. Appends that arrive while another
// group of appends is being committed are committed together by one of
// them, in one transaction; each keeps its own atomicity and its own
// expectations (see the package documentation).
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
	r := &appendReq{ctx: ctx, expect: expect, recs: recs}
	s.queue.Do(r, s.commitGroup)
	return r.evs, r.err
}

// commitGroup commits the requests of group in one transaction, with those
// join returns once the transaction has the position counter (join may be
// nil). A request whose context ended, or whose expectations do not hold
// against the heads as the requests before it left them, fails alone and
// writes nothing. If the transaction as a whole fails, each request is
// tried again in a transaction of its own, so that one request's failure
// is never another's; unless the connection failed, which would fail them
// all again, or the transaction may have committed.
func (s *Store) commitGroup(group []*appendReq, join func(size int) []*appendReq) {
	s.groups.Add(1)
	live := make([]*appendReq, 0, len(group))
	for _, r := range group {
		if r.err = r.ctx.Err(); r.err == nil {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return
	}
	ctx := newGroupContext(live)
	if take := join; take != nil {
		join = func(size int) []*appendReq {
			late := take(size)
			for _, r := range late {
				ctx.add(r)
			}
			live = append(live, late...)
			return late
		}
	}
	err := s.appendTx(ctx, live, join)
	ctx.stop()
	switch {
	case err == nil:
	case len(live) == 1:
		if s.failed(live[0], err, 1) {
			s.appendAlone(live[0], 2)
		}
	case isConnError(err), errors.Is(err, errOutcomeUnknown):
		for _, r := range live {
			r.evs, r.err = nil, s.fail(r.ctx, "append", err)
		}
	default:
		for _, r := range live {
			s.appendAlone(r, 1)
		}
	}
}

// appendAlone commits r in a transaction of its own, from the given
// attempt on, running it again when the database reports a serialization
// failure or a deadlock.
func (s *Store) appendAlone(r *appendReq, attempt int) {
	for ; ; attempt++ {
		err := s.appendTx(r.ctx, []*appendReq{r}, nil)
		if err == nil || !s.failed(r, err, attempt) {
			return
		}
	}
}

// failed sets the outcome of r, whose transaction failed with err at the
// given attempt, or reports that the transaction should run again.
func (s *Store) failed(r *appendReq, err error, attempt int) (again bool) {
	code := sqlState(err)
	r.evs = nil
	switch {
	case errors.Is(err, eventlog.ErrCorrupt):
		r.err = err
	case (code == codeSerializationFailure || code == codeDeadlockDetected) && attempt < maxAttempts && r.ctx.Err() == nil:
		return true
	case code == codeSerializationFailure || code == codeDeadlockDetected || code == codeUniqueViolation:
		r.err = s.conflict(r.ctx, r.expect, err)
	default:
		r.err = s.fail(r.ctx, "append", err)
	}
	return false
}

// groupContext is the context of a group's transaction: it ends once
// the contexts of all the group's requests have ended, and carries the
// values of the first's. When one of them can never end, neither can it,
// and it has no Done channel: the driver then watches nothing, which
// saves it a goroutine a round trip.
type groupContext struct {
	context.Context
	cancel context.CancelFunc // nil when it never ends
	left   atomic.Int64       // the requests whose contexts have not ended
	stops  []func() bool
}

// newGroupContext returns the context of a group whose requests, so far,
// are live.
func newGroupContext(live []*appendReq) *groupContext {
	g := &groupContext{Context: context.WithoutCancel(live[0].ctx)}
	if !slices.ContainsFunc(live, func(r *appendReq) bool { return r.ctx.Done() == nil }) {
		g.Context, g.cancel = context.WithCancel(g.Context)
	}
	for _, r := range live {
		g.add(r)
	}
	return g
}

// add makes g last for r's context too.
func (g *groupContext) add(r *appendReq) {
	if g.cancel == nil {
		return
	}
	g.left.Add(1)
	g.stops = append(g.stops, context.AfterFunc(r.ctx, func() {
		if g.left.Add(-1) == 0 {
			g.cancel()
		}
	}))
}

// stop releases g.
func (g *groupContext) stop() {
	for _, stop := range g.stops {
		stop()
	}
	if g.cancel != nil {
		g.cancel()
	}
}

// appendTx runs one append transaction for the requests of group, and
// those join returns, on a connection of the pool, its BEGIN sent with its
// first statements and its COMMIT with its writes (see appendIn).
func (s *Store) appendTx(ctx context.Context, group []*appendReq, join func(size int) []*appendReq) (err error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer func() {
		// A transaction still open after a failure is rolled back; if
		// the connection is gone, the server has rolled it back already.
		// Release closes a connection left in a transaction, as when ctx
		// has ended.
		if err != nil && c.Conn().PgConn().TxStatus() != 'I' && !c.Conn().IsClosed() {
			_, _ = c.Exec(ctx, "ROLLBACK")
		}
		c.Release()
	}()
	x := s.indexing()
	if err := appendIn(ctx, c, true, group, join, x); err != nil {
		return err
	}
	s.indexed(x)
	return nil
}

// appendIn writes the requests of group in q's transaction: each whose
// expectations hold against the heads as the requests before it leave
// them gets its events in r.evs; each other gets its conflict in r.err, as
// does, with its context's error, each whose context ended while the
// transaction waited for the position counter. Once it has the counter,
// the requests join returns (join may be nil) take part too, after group's:
// those that queued up meanwhile. It folds the events written into the rows
// of x's index (nil for none). With own set, q is a bare connection:
// appendIn begins the transaction in the round trip that takes the
// position counter's lock, and commits it in the one that writes.
func appendIn(ctx context.Context, q conn, own bool, group []*appendReq, join func(size int) []*appendReq, x *indexing) error {
	seen := make(map[string]bool)
	names, total := streamsOf(group, seen, nil)
	// The counter's UPDATE waits for the transaction holding the counter
	// to end; the SELECTs after it then run with snapshots taken after
	// that transaction committed, and lock the heads they read until this
	// one ends. The UPDATE takes positions for group's records; the writes
	// set the counter right when requests fail or join.
	var b pgx.Batch
	if own {
		b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	}
	b.Queue("UPDATE reprise_position SET last = last + $1 RETURNING last", int64(total))
	b.Queue("SELECT stream, head FROM reprise_streams WHERE stream = ANY($1) FOR UPDATE", names)
	var keys [][]byte // of the index rows the fold will read, read here too
	if x != nil {
		b.Queue("SELECT last FROM reprise_index WHERE name = $1", x.name())
		if keys = aheadKeys(x, group); len(keys) > 0 {
			b.Queue(selectRows, x.name(), keys)
		}
	}
	last, heads, held, fetched, err := readCounterAndHeads(q.SendBatch(ctx, &b), own, x != nil, keys)
	if err != nil {
		return err
	}
	if x != nil && fetched == nil {
		fetched = make(map[string][]byte) // the fold reads no row ahead but these
	}
	prev := uint64(last) - uint64(total) // the last position before the transaction's
	if join != nil {
		if late := join(total); len(late) > 0 {
			group = slices.Concat(group, late)
			more, _ := streamsOf(late, seen, nil)
			names = append(names, more...)
			if err := readLate(ctx, q, x, late, more, heads, fetched); err != nil {
				return err
			}
		}
	}
	read := make(map[string]uint64, len(heads))
	for name, head := range heads {
		read[name] = head
	}

	var (
		evs  []eventlog.Event
		cols columns
	)
	for _, r := range group {
		r.evs, r.err = nil, r.ctx.Err() // ended while the group waited for the counter
		for i := 0; r.err == nil && i < len(r.expect); i++ {
			e := r.expect[i]
			if head := heads[e.Stream]; head != e.Seq {
				r.err = &eventlog.ConflictError{Stream: e.Stream, Expected: e.Seq, Actual: head}
			}
		}
		if r.err == nil {
			r.evs = newEvents(&cols, r.recs, heads, prev+uint64(len(evs))+1)
			evs = append(evs, r.evs...)
		}
	}

	var w pgx.Batch
	if end := prev + uint64(len(evs)); end != uint64(last) { // positions given back, or taken by late requests
		w.Queue("UPDATE reprise_position SET last = $1", int64(end))
	}
	queueHeads(&w, names, read, heads)
	if len(evs) > 0 {
		queueEvents(&w, cols)
	}
	if err := foldIn(ctx, q, &w, x, held, prev, evs, fetched); err != nil {
		return err
	}
	if own {
		w.Queue("COMMIT")
	}
	if w.Len() == 0 {
		return nil
	}
	tag, err := execAll(q.SendBatch(ctx, &w), w.Len())
	switch {
	case err != nil && own && (isConnError(err) || ctx.Err() != nil):
		return fmt.Errorf("%w: %w", errOutcomeUnknown, err)
	case err != nil:
		return err
	case own && tag.String() != "COMMIT":
		return fmt.Errorf("commit: the server ended the transaction with %s", tag)
	}
	return nil
}

// queueHeads queues in b the writes that move the heads of the named
// streams from those read to those now: an update of the streams that
// exist, whose rows the transaction holds locked, and an insert of the new
// ones, which fails if another transaction created one of them meanwhile.
func queueHeads(b *pgx.Batch, names []string, read, now map[string]uint64) {
	var updated, inserted headWrites
	for _, name := range names {
		switch old, head := read[name], now[name]; {
		case head == old:
		case old == 0:
			inserted.streams, inserted.heads = append(inserted.streams, name), append(inserted.heads, int64(head))
		default:
			updated.streams, updated.heads = append(updated.streams, name), append(updated.heads, int64(head))
		}
	}
	// One stream, the most common write, costs less as plain parameters
	// than as arrays.
	switch len(updated.streams) {
	case 0:
	case 1:
		b.Queue("UPDATE reprise_streams SET head = $2 WHERE stream = $1", updated.streams[0], updated.heads[0])
	default:
		b.Queue(`UPDATE reprise_streams AS s SET head = n.head
			FROM unnest($1::text[], $2::bigint[]) AS n (stream, head) WHERE s.stream = n.stream`,
			updated.streams, updated.heads)
	}
	switch len(inserted.streams) {
	case 0:
	case 1:
		b.Queue("INSERT INTO reprise_streams (stream, head) VALUES ($1, $2)", inserted.streams[0], inserted.heads[0])
	default:
		b.Queue("INSERT INTO reprise_streams (stream, head) SELECT * FROM unnest($1::text[], $2::bigint[])",
			inserted.streams, inserted.heads)
	}
}

// queueEvents queues in b the insert of the events in cols.
func queueEvents(b *pgx.Batch, cols columns) {
	if len(cols.positions) == 1 { // as plain parameters, which cost less than arrays
		b.Queue(`INSERT INTO reprise_events (position, stream, seq, type, version, time_ns, restore_id, payload)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			cols.positions[0], cols.streams[0], cols.seqs[0], cols.types[0], cols.versions[0], cols.times[0], cols.restoreIDs[0], cols.payloads[0])
		return
	}
	b.Queue(`INSERT INTO reprise_events (position, stream, seq, type, version, time_ns, restore_id, payload)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::integer[], $6::bigint[], $7::text[], $8::bytea[])`,
		cols.positions, cols.streams, cols.seqs, cols.types, cols.versions, cols.times, cols.restoreIDs, cols.payloads)
}

// streamsOf adds to names, and to seen, the streams group expects that
// seen does not hold yet, and counts group's records.
func streamsOf(group []*appendReq, seen map[string]bool, names []string) (_ []string, records int) {
	for _, r := range group {
		for _, e := range r.expect {
			if !seen[e.Stream] {
				seen[e.Stream] = true
				names = append(names, e.Stream)
			}
		}
		records += len(r.recs)
	}
	return names, records
}

// scanHeads reads rows of stream names and heads into heads.
func scanHeads(rows pgx.Rows, heads map[string]uint64) error {
	var (
		name string
		head int64
	)
	_, err := pgx.ForEachRow(rows, []any{&name, &head}, func() error {
		heads[name] = uint64(head)
		return nil
	})
	return err
}

// headWrites are the streams whose heads one statement writes, and their
// new heads.
type headWrites struct {
	streams []string
	heads   []int64
}

// readCounterAndHeads reads the results of the first batch of an append:
// its BEGIN when own, the last position the counter reached, the heads of
// the expected streams that exist and, when indexed, the last position the
// index's rows hold (-1 when the store holds none of them) and the rows
// of keys, when there are any (see scanRows).
func readCounterAndHeads(br pgx.BatchResults, own, indexed bool, keys [][]byte) (last int64, heads map[string]uint64, held int64, rows map[string][]byte, err error) {
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	if own {
		if _, err := br.Exec(); err != nil {
			return 0, nil, 0, nil, err
		}
	}
	if err := br.QueryRow().Scan(&last); errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, 0, nil, fmt.Errorf("%w: the position counter's row is missing", eventlog.ErrCorrupt)
	} else if err != nil {
		return 0, nil, 0, nil, err
	}
	result, err := br.Query()
	if err != nil {
		return 0, nil, 0, nil, err
	}
	heads = make(map[string]uint64)
	if err := scanHeads(result, heads); err != nil || !indexed {
		return last, heads, -1, nil, err
	}
	if err := br.QueryRow().Scan(&held); errors.Is(err, pgx.ErrNoRows) {
		held = -1
	} else if err != nil {
		return 0, nil, 0, nil, err
	}
	if len(keys) > 0 {
		if result, err = br.Query(); err == nil {
			rows, err = scanRows(result, keys)
		}
	}
	return last, heads, held, rows, err
}

// readLate reads, in one round trip, the heads of the streams more that
// the late requests expect and that the group did not, locked as the
// group's are, and the rows of x the late requests' fold reads that
// fetched lacks, into heads and fetched.
func readLate(ctx context.Context, q conn, x *indexing, late []*appendReq, more []string, heads map[string]uint64, fetched map[string][]byte) error {
	var keys [][]byte
	if x != nil {
		for _, key := range aheadKeys(x, late) {
			if _, ok := fetched[string(key)]; !ok {
				keys = append(keys, key)
			}
		}
	}
	if len(more) == 0 && len(keys) == 0 {
		return nil
	}
	var b pgx.Batch
	if len(more) > 0 {
		b.Queue("SELECT stream, head FROM reprise_streams WHERE stream = ANY($1) FOR UPDATE", more)
	}
	if len(keys) > 0 {
		b.Queue(selectRows, x.name(), keys)
	}
	br := q.SendBatch(ctx, &b)
	defer br.Close()
	if len(more) > 0 {
		rows, err := br.Query()
		if err == nil {
			err = scanHeads(rows, heads)
		}
		if err != nil {
			return err
		}
	}
	if len(keys) > 0 {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		got, err := scanRows(rows, keys)
		if err != nil {
			return err
		}
		maps.Copy(fetched, got)
	}
	return br.Close()
}

// aheadKeys returns the keys of x's rows that folding the records of
// group reads, learnt from a trial fold of them as events without
// positions, for the append's first round trip to read them with the
// counter. Only the first aheadPerStream records of each stream are
// tried: a long save to one session reads its row at the first, and the
// trial of the rest would cost a fold of its own.
func aheadKeys(x *indexing, group []*appendReq) [][]byte {
	var evs []eventlog.Event
	tried := map[string]int{}
	for _, r := range group {
		for _, rec := range r.recs {
			if tried[rec.Stream] == aheadPerStream {
				continue
			}
			tried[rec.Stream]++
			evs = append(evs, eventlog.Event{Stream: rec.Stream, Type: rec.Type, Version: rec.Version,
				Time: rec.Time, RestoreID: rec.RestoreID, Payload: rec.Payload})
		}
	}
	return rowKeys(x.kept.ix, evs)
}

// aheadPerStream is how many records of each stream aheadKeys tries.
const aheadPerStream = 4

// execAll reads the results of the n statements of a batch. It returns
// the first error, and otherwise the command tag of the last statement.
func execAll(br pgx.BatchResults, n int) (tag pgconn.CommandTag, err error) {
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	for range n {
		if tag, err = br.Exec(); err != nil {
			return tag, err
		}
	}
	return tag, nil
}

// columns holds the events of an append's transaction column by column,
// for unnest.
type columns struct {
	positions, seqs, times []int64
	streams, types         []string
	restoreIDs             []string
	versions               []int32
	payloads               [][]byte
}

// newEvents assigns sequences, continuing from heads, and positions, from
// first, to recs. It advances heads to the streams' new heads, adds the
// events to cols and returns them, with payloads of their own.
func newEvents(cols *columns, recs []eventlog.Record, heads map[string]uint64, first uint64) []eventlog.Event {
	evs := make([]eventlog.Event, len(recs))
	for i, r := range recs {
		heads[r.Stream]++
		ev := eventlog.Event{Stream: r.Stream, Seq: heads[r.Stream], Position: first + uint64(i), Type: r.Type,
			Version: r.Version, Time: r.Time, RestoreID: r.RestoreID, Payload: bytes.Clone(r.Payload)}
		evs[i] = ev
		payload := r.Payload
		if payload == nil { // NULL otherwise
			payload = []byte{}
		}
		cols.positions, cols.seqs, cols.times = append(cols.positions, int64(ev.Position)), append(cols.seqs, int64(ev.Seq)), append(cols.times, ev.Time)
		cols.streams, cols.types, cols.restoreIDs = append(cols.streams, ev.Stream), append(cols.types, string(ev.Type)), append(cols.restoreIDs, ev.RestoreID)
		cols.versions = append(cols.versions, int32(ev.Version))
		cols.payloads = append(cols.payloads, payload)
	}
	return evs
}
