package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reprise-dev/reprise/eventlog"
)

// GroupAppend is one append of a group that a test commits with
// CommitGroup, and its outcome.
type GroupAppend struct {
	Ctx    context.Context
	Expect []eventlog.Expect
	Recs   []eventlog.Record

	Events []eventlog.Event
	Err    error
}

// CommitGroup commits appends as one group, as s does with the appends
// that queue up behind its transaction, and sets their outcomes.
func CommitGroup(s *Store, appends ...*GroupAppend) {
	group := make([]*appendReq, len(appends))
	for i, a := range appends {
		group[i] = &appendReq{ctx: a.Ctx, expect: a.Expect, recs: a.Recs}
	}
	s.commitGroup(group, nil)
	for i, r := range group {
		appends[i].Events, appends[i].Err = r.evs, r.err
	}
}

// Groups returns how many group commits s has attempted.
func Groups(s *Store) int64 { return s.groups.Load() }

// Queued returns how many appends wait in s's queue for a group commit.
func Queued(s *Store) int { return s.queue.Waiting() }

// AppendRoundTrips appends recs to s as one request, with its expect, on
// a connection that counts the round trips the append makes, and returns
// their number.
func AppendRoundTrips(ctx context.Context, s *Store, expect []eventlog.Expect, recs []eventlog.Record) (int, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Release()
	q := &countingConn{conn: c}
	r := &appendReq{ctx: ctx, expect: expect, recs: recs}
	x := s.indexing()
	if err := appendIn(ctx, q, true, []*appendReq{r}, nil, x); err != nil {
		return q.trips, err
	}
	s.indexed(x)
	return q.trips, r.err
}

// countingConn is a conn that counts its calls, each a round trip.
type countingConn struct {
	conn
	trips int
}

func (c *countingConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.trips++
	return c.conn.Exec(ctx, sql, args...)
}

func (c *countingConn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.trips++
	return c.conn.Query(ctx, sql, args...)
}

func (c *countingConn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.trips++
	return c.conn.QueryRow(ctx, sql, args...)
}

func (c *countingConn) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c.trips++
	return c.conn.SendBatch(ctx, b)
}

// LockKey returns the advisory lock key of stream's lock in s.
func LockKey(s *Store, stream string) int64 { return lockKey("stream", s.schema, stream) }
