package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/reprise-dev/reprise/eventlog"
)

var _ eventlog.Purger = (*Store)(nil)

// Purge implements eventlog.Purger in one transaction: it appends
// p.Records (taking the position counter's lock, as every append does,
// and folding them into the kept index's rows),
// deletes the removed events' rows, records the gaps they leave in
// reprise_gaps (created, and the schema marked GapsSchemaVersion, by the
// first purge), and updates the rewritten payloads. The server keeps the
// old row versions until its own VACUUM reclaims them, and its WAL and
// backups as long as they are kept: see docs/postgres.md.
func (s *Store) Purge(ctx context.Context, p eventlog.Purge) ([]eventlog.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := eventlog.CheckPurge(p); err != nil {
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
	var (
		evs []eventlog.Event
		x   *indexing
	)
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		x = s.indexing()
		r := &appendReq{ctx: ctx, expect: p.Expect, recs: p.Records}
		if err := appendIn(ctx, tx, false, []*appendReq{r}, nil, x); err != nil {
			return err
		}
		if evs = r.evs; r.err != nil {
			return r.err
		}
		// The append holds the position counter's lock, so purges create
		// the table one at a time.
		if err := markGaps(ctx, tx); err != nil {
			return err
		}
		return purgeIn(ctx, tx, p)
	})
	var conflict *eventlog.ConflictError
	switch {
	case err == nil:
		s.indexed(x)
		return evs, nil
	case errors.As(err, &conflict), errors.Is(err, eventlog.ErrInvalidPurge), errors.Is(err, eventlog.ErrCorrupt):
		return nil, err
	case sqlState(err) == codeSerializationFailure, sqlState(err) == codeUniqueViolation:
		return nil, s.conflict(ctx, p.Expect, err)
	}
	return nil, s.fail(ctx, "purge", err)
}

// purgeIn removes and rewrites the events p names, in tx, and records the
// gaps.
func purgeIn(ctx context.Context, tx pgx.Tx, p eventlog.Purge) error {
	var positions []int64
	for _, r := range p.Remove {
		var head int64
		err := tx.QueryRow(ctx, "SELECT head FROM reprise_streams WHERE stream = $1", r.Stream).Scan(&head)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if r.Last >= uint64(head) {
			return fmt.Errorf("%w: %s#%d is the head of its stream or beyond it", eventlog.ErrInvalidPurge, r.Stream, r.Last)
		}
		rows, err := tx.Query(ctx, "DELETE FROM reprise_events WHERE stream = $1 AND seq BETWEEN $2 AND $3 RETURNING position",
			r.Stream, int64(r.First), int64(r.Last))
		if err != nil {
			return err
		}
		removed, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if uint64(len(removed)) != r.Last-r.First+1 {
			return fmt.Errorf("%w: %s#%d..%d holds %d stored events", eventlog.ErrInvalidPurge, r.Stream, r.First, r.Last, len(removed))
		}
		positions = append(positions, removed...)
		if _, err := tx.Exec(ctx, "INSERT INTO reprise_gaps (stream, first, last) VALUES ($1, $2, $3)",
			r.Stream, int64(r.First), int64(r.Last)); err != nil {
			return err
		}
	}
	slices.Sort(positions)
	for i := 0; i < len(positions); {
		j := i + 1
		for j < len(positions) && positions[j] == positions[j-1]+1 {
			j++
		}
		if _, err := tx.Exec(ctx, "INSERT INTO reprise_gaps (stream, first, last) VALUES ('', $1, $2)",
			positions[i], positions[j-1]); err != nil {
			return err
		}
		i = j
	}
	for _, r := range p.Rewrite {
		payload := r.Payload
		if payload == nil {
			payload = []byte{}
		}
		tag, err := tx.Exec(ctx, "UPDATE reprise_events SET payload = $3 WHERE stream = $1 AND seq = $2",
			r.Stream, int64(r.Seq), payload)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("%w: %s#%d is not stored", eventlog.ErrInvalidPurge, r.Stream, r.Seq)
		}
	}
	return nil
}

// markGaps creates reprise_gaps and marks the schema GapsSchemaVersion,
// in a transaction that holds the position counter's lock.
func markGaps(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, gapsTable); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, "UPDATE reprise_schema_version SET version = $1 WHERE version < $1", GapsSchemaVersion)
	return err
}

// recordGaps records gaps (an empty Stream for positions) that a load
// leaves, when there are any.
func recordGaps(ctx context.Context, tx pgx.Tx, gaps []eventlog.SeqRange) error {
	if len(gaps) == 0 {
		return nil
	}
	if err := markGaps(ctx, tx); err != nil {
		return err
	}
	for _, g := range gaps {
		if _, err := tx.Exec(ctx, "INSERT INTO reprise_gaps (stream, first, last) VALUES ($1, $2, $3)",
			g.Stream, int64(g.First), int64(g.Last)); err != nil {
			return err
		}
	}
	return nil
}

// gapEnd returns the last of the gaps that purges left in stream (""
// for positions) from at on, following gaps that touch; an error when no
// gap holds at. It reads them through q, the pool or a read's transaction.
func gapEnd(ctx context.Context, q querier, stream string, at uint64) (uint64, error) {
	var first, last int64
	err := q.QueryRow(ctx, `SELECT first, last FROM reprise_gaps WHERE stream = $1 AND first <= $2
		ORDER BY first DESC LIMIT 1`, stream, int64(at)).Scan(&first, &last)
	if err != nil {
		return 0, err
	}
	if uint64(last) < at {
		return 0, fmt.Errorf("no purge left a gap at %d", at)
	}
	for {
		var next int64
		err := q.QueryRow(ctx, "SELECT last FROM reprise_gaps WHERE stream = $1 AND first = $2", stream, last+1).Scan(&next)
		if errors.Is(err, pgx.ErrNoRows) {
			return uint64(last), nil
		}
		if err != nil {
			return 0, err
		}
		last = next
	}
}
