package group

import (
	"sync"
	"testing"
	"time"
)

type req struct {
	n       int // its size
	id      int
	commits int // how many commits took it
	group   int // the commit that took it
}

// Many writers at once: each request is committed exactly once, no group
// passes the bound, groups of more than one form while a commit is under
// way, and a request that joins late is committed with its group.
func TestEveryRequestIsCommittedOnceInBoundedGroups(t *testing.T) {
	q := New(func(r *req) int { return r.n }, 10)
	var (
		mu      sync.Mutex
		commits int
		sizes   []int
	)
	commit := func(group []*req, join func(size int) []*req) {
		time.Sleep(time.Millisecond) // a commit takes a while: others queue up
		size := 0
		for _, r := range group {
			size += r.n
		}
		group = append(group, join(size)...)
		mu.Lock()
		defer mu.Unlock()
		commits++
		total := 0
		for _, r := range group {
			r.commits++
			r.group = commits
			total += r.n
		}
		sizes = append(sizes, total)
		if total > 10 && len(group) > 1 {
			t.Errorf("a group of %d requests holds %d, over the bound", len(group), total)
		}
	}
	reqs := make([]*req, 200)
	var wg sync.WaitGroup
	for i := range reqs {
		reqs[i] = &req{n: 1 + i%4, id: i}
		wg.Add(1)
		go func() {
			defer wg.Done()
			q.Do(reqs[i], commit)
			mu.Lock()
			defer mu.Unlock()
			if reqs[i].commits != 1 {
				t.Errorf("request %d returned after %d commits", i, reqs[i].commits)
			}
		}()
	}
	wg.Wait()
	if commits >= len(reqs) {
		t.Errorf("%d commits for %d concurrent requests: none were grouped", commits, len(reqs))
	}
	if q.leading || len(q.waiting) != 0 {
		t.Errorf("after all returned: leading %v, %d waiting", q.leading, len(q.waiting))
	}
}

// A lone request commits at once, in a group of its own, and a request
// larger than the bound still commits, alone.
func TestLoneAndOversizedRequests(t *testing.T) {
	q := New(func(r *req) int { return r.n }, 10)
	for _, n := range []int{1, 50} {
		r := &req{n: n}
		var got []*req
		q.Do(r, func(group []*req, join func(int) []*req) { got = append(group, join(n)...) })
		if len(got) != 1 || got[0] != r {
			t.Fatalf("request of size %d committed in group %v", n, got)
		}
	}
}
