package proptest

import (
	"context"
	"errors"
	"sync"

	"github.com/reprise-dev/reprise/eventlog"
)

// errCrashed is what a faultStore returns once its process has "died".
var errCrashed = errors.New("proptest: the process died here")

// faultStore is a real store that can be told to die at its k-th next
// append, before writing it or after writing it but before answering. Once
// dead it refuses every append, as a dead process writes nothing more. It
// stands for a process crash inside the state machine test, where killing
// the process is not possible; the crash tests kill real processes.
type faultStore struct {
	eventlog.Store

	mu        sync.Mutex
	countdown int
	after     bool
	dead      bool
}

// arm makes the k-th next append the last one.
func (f *faultStore) arm(k int, after bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.countdown, f.after = k, after
}

// Append implements eventlog.Store.
func (f *faultStore) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	f.mu.Lock()
	if f.dead {
		f.mu.Unlock()
		return nil, errCrashed
	}
	fire := false
	if f.countdown > 0 {
		f.countdown--
		fire = f.countdown == 0
		f.dead = fire
	}
	after := f.after
	f.mu.Unlock()
	if !fire {
		return f.Store.Append(ctx, expect, recs)
	}
	if after {
		if _, err := f.Store.Append(ctx, expect, recs); err != nil {
			return nil, errors.Join(errCrashed, err)
		}
	}
	return nil, errCrashed
}

// Purge implements eventlog.Purger when the store under it does; a dead
// process purges nothing.
func (f *faultStore) Purge(ctx context.Context, p eventlog.Purge) ([]eventlog.Event, error) {
	f.mu.Lock()
	dead := f.dead
	f.mu.Unlock()
	if dead {
		return nil, errCrashed
	}
	purger, ok := f.Store.(eventlog.Purger)
	if !ok {
		return nil, errors.New("proptest: the store cannot purge")
	}
	return purger.Purge(ctx, p)
}
