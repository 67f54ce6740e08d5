package pgstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reprise-dev/reprise/eventlog"
)

// releaseTimeout bounds the unlock a release sends; past it the lock's
// session is ended instead, which releases the lock too.
const releaseTimeout = 5 * time.Second

// lock is a held stream lock: a session-level advisory lock and the pooled
// connection whose session holds it.
type lock struct {
	s    *Store
	key  int64
	conn *pgxpool.Conn
	once sync.Once
}

// TryLock implements eventlog.StreamLocker with a session-level advisory
// lock, pg_try_advisory_lock, on a key hashed from the store's schema and
// stream. The lock's connection stays out of the pool until release, so the
// lock lasts exactly as long as the caller holds it, or until its process
// dies and the server ends the session. It fails with an error matching
// eventlog.ErrBusy while any session, in this process or another, holds
// the lock.
func (s *Store) TryLock(ctx context.Context, stream string) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := eventlog.ValidateStream(stream); err != nil {
		return nil, err
	}
	end, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer end()
	conn, err := s.locks.Acquire(ctx)
	if err != nil {
		return nil, s.fail(ctx, "lock "+stream, err)
	}
	l := &lock{s: s, key: lockKey("stream", s.schema, stream), conn: conn}
	var locked bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", l.key).Scan(&locked); err != nil {
		// A connection that failed mid-call is closed, and its session's
		// locks with it; the pool discards it.
		conn.Release()
		return nil, s.fail(ctx, "lock "+stream, err)
	}
	if !locked {
		conn.Release()
		return nil, fmt.Errorf("pgstore: lock %s: %w", stream, eventlog.ErrBusy)
	}
	s.heldMu.Lock()
	s.held[l] = struct{}{}
	s.heldMu.Unlock()
	return l.release, nil
}

// release unlocks and returns the connection to the pool. If the unlock
// fails, the connection is closed, which ends the session and its locks. A
// second call does nothing.
func (l *lock) release() {
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		var unlocked bool
		err := l.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", l.key).Scan(&unlocked)
		if err != nil || !unlocked {
			_ = l.conn.Conn().Close(ctx)
		}
		l.conn.Release()
		l.s.heldMu.Lock()
		delete(l.s.held, l)
		l.s.heldMu.Unlock()
	})
}
