package web

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// A Budget bounds the memory that the handler's requests take at once to
// decode large events: every event over a page's share of a message
// (messageBytes) is decoded only when its size fits in what the requests
// before it left. Small events are not counted; what a page keeps of
// them is bounded by the page's own limits. One Budget may be shared by
// any number of handlers, and is safe for concurrent use.
type Budget struct {
	mu      sync.Mutex
	limit   int64
	free    int64
	waiting []*claim // in the order they came
}

// claim is a request waiting for n bytes.
type claim struct {
	n       int64
	granted chan struct{}
}

// DefaultBudget is the budget of a handler whose Options name none, in
// bytes: enough for one message of 50 MB, or for many pages of ordinary
// messages, while the host or reprise serve keeps the rest. Decoding an
// event takes about its size once more, and the collector lets the heap
// grow to about twice what is live, so the heap the handler takes for
// large events peaks near twice this.
const DefaultBudget = 64 << 20

// DefaultBudgetWait is how long a request waits for its share of the
// budget when Options.BudgetWait is 0: long enough for several large
// messages before it to be read and sent, after which it answers 503.
const DefaultBudgetWait = 10 * time.Second

// sharedBudget is the budget of every handler whose Options name none,
// so that handlers made afresh for each request share one.
var sharedBudget = NewBudget(DefaultBudget)

// NewBudget returns a Budget of limit bytes. A single event larger than
// limit is decoded alone, when no other is.
func NewBudget(limit int64) *Budget {
	limit = max(limit, 1)
	return &Budget{limit: limit, free: limit}
}

// acquire waits until n bytes are free, or ctx is done, and returns the
// function that gives them back; it is safe to call more than once.
func (b *Budget) acquire(ctx context.Context, n int64) (release func(), err error) {
	n = min(max(n, 1), b.limit)
	release = sync.OnceFunc(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.free += n
		b.grant()
	})
	b.mu.Lock()
	if len(b.waiting) == 0 && b.free >= n {
		b.free -= n
		b.mu.Unlock()
		return release, nil
	}
	c := &claim{n: n, granted: make(chan struct{})}
	b.waiting = append(b.waiting, c)
	b.mu.Unlock()
	select {
	case <-c.granted:
		return release, nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-c.granted: // granted as ctx ended: give it back
		b.free += n
	default:
		for i, w := range b.waiting {
			if w == c {
				b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
				break
			}
		}
	}
	b.grant() // the claims behind this one may fit now
	return nil, ctx.Err()
}

// grant hands the free bytes to the waiting claims, first come first
// served, while the first fits. The caller holds b.mu.
func (b *Budget) grant() {
	for len(b.waiting) > 0 && b.waiting[0].n <= b.free {
		c := b.waiting[0]
		b.waiting = b.waiting[1:]
		b.free -= c.n
		close(c.granted)
	}
}

// retryAfter is the seconds a 503 for a spent budget asks a client to
// wait before it asks again.
const retryAfter = 2

// reserve waits for n bytes of the handler's budget, at most the
// handler's BudgetWait; a request that waited that long is answered 503.
func (h *handler) reserve(ctx context.Context, n int) (release func(), err error) {
	wait, cancel := context.WithTimeout(ctx, h.budgetWait)
	defer cancel()
	release, err = h.budget.acquire(wait, int64(n))
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, &httpError{status: http.StatusServiceUnavailable, retryAfter: retryAfter,
			msg: "the view is busy reading other large messages; try again in a moment"}
	}
	return release, err
}
