package eventlog_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) eventlog.Store {
		return eventlog.NewMemoryStore()
	})
}

func TestLocalLocksKeepHoldersApart(t *testing.T) {
	var l eventlog.LocalLocks
	ctx := context.Background()
	release, err := l.TryLock(ctx, "agent/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryLock(ctx, "agent/a"); !errors.Is(err, eventlog.ErrBusy) {
		t.Fatalf("second TryLock: err = %v, want ErrBusy", err)
	}
	other, err := l.TryLock(ctx, "agent/b")
	if err != nil {
		t.Fatalf("another stream: %v", err)
	}
	other()
	release()
	release() // releasing twice is harmless
	again, err := l.TryLock(ctx, "agent/a")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}
