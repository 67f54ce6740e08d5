package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
)

// locker runs fn only on stores that implement eventlog.StreamLocker.
func locker(fn func(*testing.T, eventlog.StreamLocker)) func(*testing.T, eventlog.Store) {
	return func(t *testing.T, s eventlog.Store) {
		l, ok := s.(eventlog.StreamLocker)
		if !ok {
			t.Skip("the store does not implement eventlog.StreamLocker")
		}
		fn(t, l)
	}
}

// testLocksKeepHoldersApart checks that a held lock refuses a second
// holder with ErrBusy, whether taken with TryLock or Hold, that other
// streams' locks are apart, and that a release, even a second one, frees
// the lock.
func testLocksKeepHoldersApart(t *testing.T, l eventlog.StreamLocker) {
	ctx := context.Background()
	release, err := l.TryLock(ctx, "agent/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryLock(ctx, "agent/a"); !errors.Is(err, eventlog.ErrBusy) {
		t.Errorf("TryLock of a held lock: %v, want ErrBusy", err)
	}
	if _, _, err := eventlog.Hold(ctx, l, "agent/a"); !errors.Is(err, eventlog.ErrBusy) {
		t.Errorf("Hold of a held lock: %v, want ErrBusy", err)
	}
	other, err := l.TryLock(ctx, "agent/b")
	if err != nil {
		t.Fatalf("TryLock of another stream: %v", err)
	}
	other()
	release()
	release()
	held, release, err := eventlog.Hold(ctx, l, "agent/a")
	if err != nil {
		t.Fatalf("Hold after the release: %v", err)
	}
	if _, err := l.TryLock(ctx, "agent/a"); !errors.Is(err, eventlog.ErrBusy) {
		t.Errorf("TryLock of a lock taken with Hold: %v, want ErrBusy", err)
	}
	release()
	again, err := l.TryLock(ctx, "agent/a")
	if err != nil {
		t.Fatalf("TryLock after Hold's release: %v", err)
	}
	again()
	if held.Err() == nil {
		t.Error("the context of a released Hold has not ended")
	}
}

// testHeldContext checks that the context Hold returns lives while the
// lock is held, derives from the caller's, and ends with its release
// without a lost lock's cause.
func testHeldContext(t *testing.T, l eventlog.StreamLocker) {
	parent, cancel := context.WithCancel(context.Background())
	held, release, err := eventlog.Hold(parent, l, "agent/a")
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Err(); err != nil {
		t.Fatalf("the context of a held lock: %v", err)
	}
	cancel()
	if !errors.Is(held.Err(), context.Canceled) {
		t.Errorf("after the caller's context ended: %v, want context.Canceled", held.Err())
	}
	release()
	if errors.Is(context.Cause(held), eventlog.ErrLockLost) {
		t.Errorf("a released lock's context says it was lost: %v", context.Cause(held))
	}
	if _, _, err := eventlog.Hold(parent, l, "agent/a"); !errors.Is(err, context.Canceled) {
		t.Errorf("Hold with an ended context: %v, want context.Canceled", err)
	}
}
