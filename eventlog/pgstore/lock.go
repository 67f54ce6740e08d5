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
// connection whose session holds it, which a goroutine watches while it is
// idle so that the lock's loss is known at once.
type lock struct {
	s      *Store
	stream string
	key    int64
	conn   *pgxpool.Conn
	once   sync.Once

	stopWatch context.CancelFunc
	watched   chan struct{}           // closed when the watch has stopped
	lose      context.CancelCauseFunc // ends the context Hold returned; nil for TryLock
}

var _ eventlog.LockHolder = (*Store)(nil)

// TryLock implements eventlog.StreamLocker with a session-level advisory
// lock, pg_try_advisory_lock, on a key hashed from the store's schema and
// stream. The lock's connection stays out of the pool until release, so the
// lock lasts exactly as long as the caller holds it, or until its process
// dies and the server ends the session. It fails with an error matching
// eventlog.ErrBusy while any session, in this process or another, holds
// the lock.
func (s *Store) TryLock(ctx context.Context, stream string) (release func(), err error) {
	l, err := s.lock(ctx, stream, nil)
	if err != nil {
		return nil, err
	}
	return l.release, nil
}

// Hold implements eventlog.LockHolder: it takes stream's lock as TryLock
// does, and returns a context derived from ctx that ends, with a cause
// matching eventlog.ErrLockLost, as soon as the lock's connection fails
// (the server restarted, the network failed, an administrator ended the
// session) and another session may take the lock; release ends it too.
func (s *Store) Hold(ctx context.Context, stream string) (held context.Context, release func(), err error) {
	held, lose := context.WithCancelCause(ctx)
	l, err := s.lock(ctx, stream, lose)
	if err != nil {
		lose(nil)
		return nil, nil, err
	}
	return held, l.release, nil
}

// lock takes stream's lock, and watches its connection until release,
// calling lose (when not nil) if the connection fails meanwhile.
func (s *Store) lock(ctx context.Context, stream string, lose context.CancelCauseFunc) (*lock, error) {
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
	l := &lock{s: s, stream: stream, key: lockKey("stream", s.schema, stream), conn: conn, lose: lose}
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
	var watch context.Context
	watch, l.stopWatch = context.WithCancel(context.Background())
	l.watched = make(chan struct{})
	go l.watch(watch)
	s.heldMu.Lock()
	s.held[l] = struct{}{}
	s.heldMu.Unlock()
	return l, nil
}

// watch reads from the lock's idle connection until watch ends: the
// server sends nothing on it, so a read that returns otherwise means the
// connection failed, and the session holding the lock with it. A read
// stopped by watch leaves the connection as it was.
func (l *lock) watch(watch context.Context) {
	defer close(l.watched)
	err := l.conn.Conn().PgConn().WaitForNotification(watch)
	if watch.Err() != nil {
		return
	}
	if err == nil {
		err = fmt.Errorf("unexpected notification")
	}
	if l.lose != nil {
		l.lose(fmt.Errorf("pgstore: lock %s: %w: %v", l.stream, eventlog.ErrLockLost, err))
	}
}

// release stops the watch, unlocks and returns the connection to the
// pool. If the unlock fails, the connection is closed, which ends the
// session and its locks. A second call does nothing.
func (l *lock) release() {
	l.once.Do(func() {
		l.stopWatch()
		<-l.watched
		if l.lose != nil {
			l.lose(nil)
		}
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
