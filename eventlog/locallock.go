package eventlog

import (
	"context"
	"fmt"
	"sync"
)

// LocalLocks is a StreamLocker for a store that one process owns, such as
// a bbolt file or a MemoryStore: it keeps apart the Engines of that process
// that share the store. The zero value is ready to use.
type LocalLocks struct {
	mu   sync.Mutex
	held map[string]bool
}

// TryLock takes stream's lock, or fails with an error matching ErrBusy
// while another holder has it.
func (l *LocalLocks) TryLock(ctx context.Context, stream string) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[stream] {
		return nil, fmt.Errorf("%w: %s", ErrBusy, stream)
	}
	if l.held == nil {
		l.held = map[string]bool{}
	}
	l.held[stream] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			delete(l.held, stream)
		})
	}, nil
}
