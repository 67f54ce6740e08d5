package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
)

func TestTryLock(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	s1, s2 := db.open(t, pgstore.Options{}), db.open(t, pgstore.Options{})

	release, err := s1.TryLock(ctx, "agent/a")
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*pgstore.Store{"another store": s2, "the same store": s1} {
		if _, err := s.TryLock(ctx, "agent/a"); !errors.Is(err, eventlog.ErrBusy) {
			t.Errorf("TryLock of a held stream from %s: err = %v, want ErrBusy", name, err)
		}
	}
	other, err := s2.TryLock(ctx, "agent/b")
	if err != nil {
		t.Fatalf("TryLock of another stream: %v", err)
	}
	other()

	// Advisory locks belong to the database; a store in another schema has
	// streams of its own.
	elsewhere := newDB(t).open(t, pgstore.Options{})
	r, err := elsewhere.TryLock(ctx, "agent/a")
	if err != nil {
		t.Fatalf("TryLock of the same name in another schema: %v", err)
	}
	r()

	release()
	release() // a second release does nothing
	again, err := s2.TryLock(ctx, "agent/a")
	if err != nil {
		t.Fatalf("TryLock after release: %v", err)
	}

	// Closing a store ends the sessions of its locks.
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	again() // after Close, does nothing
	r, err = s1.TryLock(ctx, "agent/a")
	if err != nil {
		t.Fatalf("TryLock after the holder's store closed: %v", err)
	}
	r()

	if _, err := s2.TryLock(ctx, "agent/a"); !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("TryLock on a closed store: err = %v, want ErrClosed", err)
	}
	if _, err := s1.TryLock(ctx, "bad\x00name"); !errors.Is(err, eventlog.ErrInvalidStream) {
		t.Errorf("TryLock of an invalid name: err = %v, want ErrInvalidStream", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s1.TryLock(cancelled, "agent/a"); !errors.Is(err, context.Canceled) {
		t.Errorf("TryLock with a cancelled context: err = %v, want context.Canceled", err)
	}
}

func TestMaxLocks(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := db.open(t, pgstore.Options{MaxLocks: 1})
	release, err := s.TryLock(context.Background(), "agent/a")
	if err != nil {
		t.Fatal(err)
	}
	// Every lock connection is taken: a second lock waits for one.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.TryLock(ctx, "agent/b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("TryLock beyond MaxLocks: err = %v, want context.DeadlineExceeded", err)
	}
	// Appends and reads have connections of their own.
	if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: "s"}}, []eventlog.Record{rec("s", "1")}); err != nil {
		t.Errorf("Append while every lock connection is taken: %v", err)
	}
	release()
	r, err := s.TryLock(context.Background(), "agent/b")
	if err != nil {
		t.Fatalf("TryLock after a release: %v", err)
	}
	r()
}

func TestLockDiesWithItsProcess(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	db.open(t, pgstore.Options{}).Close() // create the schema
	s := db.open(t, pgstore.Options{})
	ctx := context.Background()

	h := startHelper(t, "hold-lock", envStoreURL+"="+db.url, envStream+"=agent/held")
	if l := h.Line(t); l != "locked" {
		t.Fatalf("helper said %q, want locked", l)
	}
	if _, err := s.TryLock(ctx, "agent/held"); !errors.Is(err, eventlog.ErrBusy) {
		t.Fatalf("TryLock while another process holds the lock: err = %v, want ErrBusy", err)
	}
	if err := h.Cmd.Process.Kill(); err != nil { // SIGKILL: no release runs
		t.Fatal(err)
	}
	<-h.Done
	waitFor(t, "the dead process's lock to be released", func() bool {
		release, err := s.TryLock(ctx, "agent/held")
		if err == nil {
			release()
			return true
		}
		if !errors.Is(err, eventlog.ErrBusy) {
			t.Fatalf("TryLock: %v", err)
		}
		return false
	})
}

// terminateLock ends the server session that holds stream's lock in s, as
// an administrator's pg_terminate_backend does, and returns once the lock
// is free.
func (db *testDB) terminateLock(tb testing.TB, s *pgstore.Store, stream string) {
	tb.Helper()
	key := uint64(pgstore.LockKey(s, stream))
	var n int
	err := db.admin.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND classid = $1::bigint::oid AND objid = $2::bigint::oid`,
		int64(key>>32), int64(key&0xffffffff)).Scan(&n)
	if err != nil || n != 1 {
		tb.Fatalf("terminate the session of lock %s: %d sessions, %v", stream, n, err)
	}
	other := db.open(tb, pgstore.Options{})
	waitFor(tb, "the terminated lock to be free", func() bool {
		release, err := other.TryLock(context.Background(), stream)
		if err == nil {
			release()
		}
		return err == nil
	})
}

// TestHoldTellsALostLock ends the session of a lock taken with Hold: the
// context Hold returned ends at once with ErrLockLost as its cause, the
// lock is free for another holder, and the release that follows does no
// harm.
func TestHoldTellsALostLock(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := db.open(t, pgstore.Options{})
	ctx := context.Background()
	held, release, err := s.Hold(ctx, "turn/ide")
	if err != nil {
		t.Fatal(err)
	}
	kept, keep, err := s.Hold(ctx, "turn/other")
	if err != nil {
		t.Fatal(err)
	}
	db.terminateLock(t, s, "turn/ide")
	select {
	case <-held.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the context of a lost lock has not ended")
	}
	if cause := context.Cause(held); !errors.Is(cause, eventlog.ErrLockLost) {
		t.Errorf("the cause: %v, want ErrLockLost", cause)
	}
	if kept.Err() != nil {
		t.Errorf("another lock of the store, still held: %v", context.Cause(kept))
	}
	release()
	keep()
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "s"}}, []eventlog.Record{rec("s", "1")}); err != nil {
		t.Errorf("Append after a lost lock: %v", err)
	}
	again, err := s.TryLock(ctx, "turn/ide")
	if err != nil {
		t.Fatalf("TryLock after a lost lock's release: %v", err)
	}
	again()
}
