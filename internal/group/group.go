// Package group lets concurrent writers share a commit: requests that
// arrive while one is being committed wait, and the oldest of them then
// commits all that waited, up to a bound, in one go. No delay is added
// when there is no other writer. Both event stores commit appends this
// way; what a commit does is theirs.
package group

import "sync"

// Queue holds the requests waiting to be committed. Its zero value is not
// ready: use New.
type Queue[R any] struct {
	size func(R) int // what a request adds to a group
	max  int         // a group takes requests up to this total size

	mu      sync.Mutex
	waiting []*waiter[R]
	leading bool // a caller of Do is committing a group
}

type waiter[R any] struct {
	req R
	// wake receives false once the request is committed, or true when its
	// caller is to lead the next group itself.
	wake chan bool
}

// New returns a Queue whose groups hold requests of at most max total
// size, as size measures them; a group always takes at least one.
func New[R any](size func(R) int, max int) *Queue[R] {
	return &Queue[R]{size: size, max: max}
}

// Do returns once req has been committed, by this call or by another's.
// The call that leads a group calls commit with the group, req first (or
// the oldest request waiting, when this call was handed the lead), and a
// join function that takes, while the group is not yet written, the
// requests that queued up meanwhile, up to max for a group already of
// the given size. Whatever commit decides for each request it records in
// the request itself.
func (q *Queue[R]) Do(req R, commit func(group []R, join func(size int) []R)) {
	w := &waiter[R]{req: req, wake: make(chan bool, 1)}
	q.mu.Lock()
	q.waiting = append(q.waiting, w)
	if q.leading {
		q.mu.Unlock()
		if lead := <-w.wake; !lead {
			return
		}
	} else {
		q.leading = true
		q.mu.Unlock()
	}
	q.lead(commit)
}

// Waiting returns how many requests wait for a commit, for tests.
func (q *Queue[R]) Waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}

// lead commits the requests at the head of the queue as one group, then
// hands the lead to the oldest request still waiting, if any.
func (q *Queue[R]) lead(commit func(group []R, join func(size int) []R)) {
	q.mu.Lock()
	group := q.take(0)
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		if len(q.waiting) > 0 {
			q.waiting[0].wake <- true
		} else {
			q.leading = false
			q.waiting = nil
		}
		q.mu.Unlock()
		for _, w := range group[1:] {
			w.wake <- false
		}
	}()
	join := func(size int) []R {
		q.mu.Lock()
		late := q.take(size)
		q.mu.Unlock()
		group = append(group, late...)
		return requests(late)
	}
	commit(requests(group), join)
}

// take removes from the queue, and returns, the waiters at its head that a
// group of the given size can take without passing max; an empty group
// takes at least one. q.mu must be held.
func (q *Queue[R]) take(size int) []*waiter[R] {
	n := 0
	for n < len(q.waiting) && (size == 0 || size+q.size(q.waiting[n].req) <= q.max) {
		size += q.size(q.waiting[n].req)
		n++
	}
	taken := q.waiting[:n:n]
	q.waiting = q.waiting[n:]
	return taken
}

func requests[R any](ws []*waiter[R]) []R {
	out := make([]R, len(ws))
	for i, w := range ws {
		out[i] = w.req
	}
	return out
}
