package pgstore

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/reprise-dev/reprise/eventlog"
)

var _ eventlog.Loader = (*Store)(nil)

// Load implements eventlog.Loader in one transaction. Like Append, it
// takes the position counter's row lock first; it leaves the counter at the
// last loaded position, so appends continue after it.
func (s *Store) Load(ctx context.Context, evs []eventlog.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	end, err := s.begin()
	if err != nil {
		return err
	}
	defer end()
	if s.readOnly {
		return eventlog.ErrReadOnly
	}
	var x *indexing
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		x = s.indexing()
		return loadTx(ctx, tx, evs, x)
	})
	if err == nil {
		s.indexed(x)
	}
	if err != nil && !errors.Is(err, eventlog.ErrInvalidLoad) && !errors.Is(err, eventlog.ErrInvalidStream) {
		return s.fail(ctx, "load", err)
	}
	return err
}

// loadTx checks evs against the store as tx sees it under the counter's
// lock, then writes them, the heads they leave and the counter, and folds
// them into the rows of x's index (nil for none).
func loadTx(ctx context.Context, tx pgx.Tx, evs []eventlog.Event, x *indexing) error {
	var last int64
	if err := tx.QueryRow(ctx, "SELECT last FROM reprise_position FOR UPDATE").Scan(&last); errors.Is(err, pgx.ErrNoRows) {
		return errors.New("the position counter's row is missing")
	} else if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, ev := range evs {
		names[ev.Stream] = true
	}
	heads, err := readHeads(ctx, tx, slices.Collect(maps.Keys(names)))
	if err != nil {
		return err
	}
	head := func(stream string) (uint64, error) { return heads[stream], nil }
	if err := eventlog.CheckLoad(evs, uint64(last), head); err != nil || len(evs) == 0 {
		return err
	}
	gaps, err := eventlog.LoadGaps(evs, uint64(last), head)
	if err != nil {
		return err
	}
	if err := recordGaps(ctx, tx, gaps); err != nil {
		return err
	}
	n := len(evs)
	cols := columns{
		positions: make([]int64, n), seqs: make([]int64, n), times: make([]int64, n),
		streams: make([]string, n), types: make([]string, n), restoreIDs: make([]string, n),
		versions: make([]int32, n), payloads: make([][]byte, n),
	}
	loaded := map[string]int64{}
	for i, ev := range evs {
		cols.positions[i], cols.seqs[i], cols.times[i] = int64(ev.Position), int64(ev.Seq), ev.Time
		cols.streams[i], cols.types[i], cols.restoreIDs[i] = ev.Stream, string(ev.Type), ev.RestoreID
		cols.versions[i] = int32(ev.Version)
		cols.payloads[i] = ev.Payload
		if cols.payloads[i] == nil { // NULL otherwise
			cols.payloads[i] = []byte{}
		}
		loaded[ev.Stream] = int64(ev.Seq)
	}
	streams := make([]string, 0, len(loaded))
	seqs := make([]int64, 0, len(loaded))
	for name, seq := range loaded {
		streams, seqs = append(streams, name), append(seqs, seq)
	}
	var b pgx.Batch
	b.Queue(`INSERT INTO reprise_events (position, stream, seq, type, version, time_ns, restore_id, payload)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::integer[], $6::bigint[], $7::text[], $8::bytea[])`,
		cols.positions, cols.streams, cols.seqs, cols.types, cols.versions, cols.times, cols.restoreIDs, cols.payloads)
	b.Queue(`INSERT INTO reprise_streams (stream, head) SELECT * FROM unnest($1::text[], $2::bigint[])
		ON CONFLICT (stream) DO UPDATE SET head = EXCLUDED.head`, streams, seqs)
	b.Queue("UPDATE reprise_position SET last = $1", int64(evs[n-1].Position))
	held := int64(-1)
	if x != nil {
		err := tx.QueryRow(ctx, "SELECT last FROM reprise_index WHERE name = $1", x.name()).Scan(&held)
		if errors.Is(err, pgx.ErrNoRows) {
			held = -1
		} else if err != nil {
			return err
		}
	}
	if err := foldIn(ctx, tx, &b, x, held, uint64(last), evs, nil); err != nil {
		return err
	}
	return tx.SendBatch(ctx, &b).Close()
}
