package boltstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
)

// request returns an Append request for commitGroup.
func request(ctx context.Context, expect []eventlog.Expect, recs ...eventlog.Record) *appendReq {
	return &appendReq{ctx: ctx, expect: expect, recs: recs}
}

// groupCommits are the two ways a store commits a group: to the log, as
// Append does, and to bbolt, as the log's applier does.
var groupCommits = map[string]func(*Store) func([]*appendReq, func(int) []*appendReq){
	"log":   func(s *Store) func([]*appendReq, func(int) []*appendReq) { return s.logGroup },
	"bbolt": func(s *Store) func([]*appendReq, func(int) []*appendReq) { return s.commitGroup },
}

func TestGroupFailuresStayAlone(t *testing.T) {
	for name, commit := range groupCommits {
		t.Run(name, func(t *testing.T) { testGroupFailuresStayAlone(t, commit) })
	}
}

func testGroupFailuresStayAlone(t *testing.T, commit func(*Store) func([]*appendReq, func(int) []*appendReq)) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{})
	defer s.Close()
	fill(t, s, 1, 3) // stream/0 at 3, positions 1 to 3
	s.applied(t)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()

	group := []*appendReq{
		request(ctx, []eventlog.Expect{{Stream: "a"}}, record("a", "a1"), record("a", "a2")),
		request(ctx, []eventlog.Expect{{Stream: "a"}}, record("a", "lost")),                             // a moved earlier in the group
		request(ctx, []eventlog.Expect{{Stream: "b"}, {Stream: "stream/0", Seq: 3}}, record("b", "b1")), // holds
		request(cancelled, []eventlog.Expect{{Stream: "c"}}, record("c", "cancelled")),
		request(ctx, []eventlog.Expect{{Stream: "a", Seq: 2}, {Stream: "b", Seq: 1}}, record("b", "b2"), record("a", "a3")),
		request(ctx, []eventlog.Expect{{Stream: "stream/0", Seq: 2}}, record("stream/0", "stale")),
	}
	commit(s)(group, nil)

	var conflict *eventlog.ConflictError
	if err := group[1].err; !errors.As(err, &conflict) || conflict.Stream != "a" || conflict.Expected != 0 || conflict.Actual != 2 {
		t.Errorf("request expecting a at 0 after a group member wrote 2 events: err = %v, want a conflict at a (0, found 2)", err)
	}
	if err := group[3].err; !errors.Is(err, context.Canceled) {
		t.Errorf("request with a cancelled context: err = %v, want context.Canceled", err)
	}
	if err := group[5].err; !errors.As(err, &conflict) || conflict.Stream != "stream/0" || conflict.Actual != 3 {
		t.Errorf("request with a stale expectation: err = %v, want a conflict at stream/0", err)
	}
	var returned []eventlog.Event
	for _, i := range []int{0, 2, 4} {
		if group[i].err != nil {
			t.Fatalf("request %d: %v", i, group[i].err)
		}
		returned = append(returned, group[i].evs...)
	}
	for _, i := range []int{1, 3, 5} {
		if group[i].evs != nil {
			t.Errorf("failed request %d returned events %v", i, group[i].evs)
		}
	}
	want := []struct {
		stream  string
		seq     uint64
		payload string
	}{{"a", 1, "a1"}, {"a", 2, "a2"}, {"b", 1, "b1"}, {"b", 2, "b2"}, {"a", 3, "a3"}}
	if len(returned) != len(want) {
		t.Fatalf("returned %d events, want %d", len(returned), len(want))
	}
	for i, w := range want {
		ev := returned[i]
		if ev.Stream != w.stream || ev.Seq != w.seq || string(ev.Payload) != w.payload || ev.Position != uint64(4+i) {
			t.Errorf("event %d = %s#%d %q at %d, want %s#%d %q at %d", i, ev.Stream, ev.Seq, ev.Payload, ev.Position, w.stream, w.seq, w.payload, 4+i)
		}
	}
	if got := readAll(t, s)[3:]; !sameEvents(got, returned) {
		t.Errorf("the store holds %v after the group, want what the group returned", got)
	}
	for stream, head := range map[string]uint64{"a": 3, "b": 2, "c": 0, "stream/0": 3} {
		if h, err := s.Head(ctx, stream); err != nil || h != head {
			t.Errorf("Head(%s) = %d, %v; want %d", stream, h, err, head)
		}
	}
}

// Requests that queue up while a group's transaction is written join it:
// one commit holds them all, each checked after the requests before it, and
// join is asked for them with the size of the group so far until it has
// none.
func TestQueuedRequestsJoinTheGroup(t *testing.T) {
	for name, commit := range groupCommits {
		t.Run(name, func(t *testing.T) { testQueuedRequestsJoinTheGroup(t, name, commit) })
	}
}

func testQueuedRequestsJoinTheGroup(t *testing.T, name string, commit func(*Store) func([]*appendReq, func(int) []*appendReq)) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{})
	defer s.Close()
	group := []*appendReq{request(ctx, []eventlog.Expect{{Stream: "a"}}, record("a", "a1"), record("a", "a2"))}
	late := [][]*appendReq{
		{request(ctx, []eventlog.Expect{{Stream: "a"}}, record("a", "lost"))}, // a moved earlier in the group
		{request(ctx, []eventlog.Expect{{Stream: "a", Seq: 2}}, record("a", "a3")), request(ctx, []eventlog.Expect{{Stream: "b"}}, record("b", "b1"))},
	}
	var sizes []int
	join := func(size int) []*appendReq {
		sizes = append(sizes, size)
		if len(late) == 0 {
			return nil
		}
		next := late[0]
		late = late[1:]
		return next
	}
	// The log's applier commits to bbolt meanwhile: count the log's writes.
	counter := &s.commits
	if name == "log" {
		counter = &s.logs
	}
	commits := counter.Load()
	commit(s)(group, join)
	if n := counter.Load() - commits; n != 1 {
		t.Errorf("%d commits, want 1", n)
	}
	if fmt.Sprint(sizes) != "[2 3 5]" {
		t.Errorf("join was asked for sizes %v, want [2 3 5]", sizes)
	}
	var got []string
	for _, ev := range readAll(t, s) {
		got = append(got, string(ev.Payload))
	}
	if fmt.Sprint(got) != "[a1 a2 a3 b1]" {
		t.Errorf("the store holds %v, want [a1 a2 a3 b1]", got)
	}
}

// When a group's transaction fails after requests joined it, every
// request is tried again alone, the joined ones too: the one that broke
// the transaction fails on its own, and the others land.
func TestJoinedRequestsAreTriedAgainAlone(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{})
	defer s.Close()
	long := strings.Repeat("x", 40<<10) // a key longer than bbolt takes: the put fails after the checks
	group := []*appendReq{request(ctx, []eventlog.Expect{{Stream: "a"}}, record("a", "a1"))}
	late := []*appendReq{
		request(ctx, []eventlog.Expect{{Stream: "b"}}, record("b", "b1")),
		request(ctx, []eventlog.Expect{{Stream: long}}, record(long, "broken")),
		request(ctx, []eventlog.Expect{{Stream: "c"}}, record("c", "c1")),
	}
	joined := false
	s.commitGroup(group, func(int) []*appendReq {
		if joined {
			return nil
		}
		joined = true
		return late
	})
	all := append(group, late...)
	for i, r := range all {
		if (r.err != nil) != (i == 2) {
			t.Errorf("request %d: %v", i, r.err)
		}
	}
	var got []string
	for _, ev := range readAll(t, s) {
		got = append(got, string(ev.Payload))
	}
	if fmt.Sprint(got) != "[a1 b1 c1]" {
		t.Errorf("the store holds %v, want [a1 b1 c1]", got)
	}
}

func TestGroupOnClosedStore(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{})
	s.Close()
	group := []*appendReq{
		request(context.Background(), []eventlog.Expect{{Stream: "a"}}, record("a", "1")),
		request(context.Background(), []eventlog.Expect{{Stream: "b"}}, record("b", "1")),
	}
	s.commitGroup(group, nil)
	for i, r := range group {
		if !errors.Is(r.err, eventlog.ErrClosed) || r.evs != nil {
			t.Errorf("request %d on a closed store: %v, %v; want ErrClosed", i, r.evs, r.err)
		}
	}
}

// TestConcurrentAppendsShareCommits appends from many goroutines at once:
// every append lands once, in order, and they took fewer transactions than
// appends.
func TestConcurrentAppendsShareCommits(t *testing.T) {
	const workers, perWorker = 32, 20
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{})
	defer s.Close()
	before := s.logs.Load()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			stream := fmt.Sprintf("session/%d", w)
			for i := range perWorker {
				// Every other append also expects a shared stream that
				// nobody writes, and every fifth one a stale head.
				expect := []eventlog.Expect{{Stream: stream, Seq: uint64(i)}}
				if i%2 == 0 {
					expect = append(expect, eventlog.Expect{Stream: "shared"})
				}
				if i%5 == 4 {
					_, err := s.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: uint64(i + 1)}}, []eventlog.Record{record(stream, "stale")})
					if !errors.Is(err, eventlog.ErrConflict) {
						t.Errorf("%s: append with a stale head: err = %v, want a conflict", stream, err)
					}
				}
				evs, err := s.Append(ctx, expect, []eventlog.Record{record(stream, fmt.Sprint(i))})
				if err != nil {
					t.Errorf("%s: append %d: %v", stream, i, err)
					return
				}
				if evs[0].Seq != uint64(i+1) || string(evs[0].Payload) != fmt.Sprint(i) {
					t.Errorf("%s: append %d returned seq %d %q", stream, i, evs[0].Seq, evs[0].Payload)
				}
			}
		})
	}
	wg.Wait()
	commits := s.logs.Load() - before
	appends := int64(workers * perWorker * 6 / 5)
	t.Logf("%d appends in %d commits", appends, commits)
	if commits >= appends {
		t.Errorf("%d appends took %d commits; concurrent appends should share them", appends, commits)
	}
	all := readAll(t, s)
	if len(all) != workers*perWorker {
		t.Fatalf("the store holds %d events, want %d", len(all), workers*perWorker)
	}
	for i, ev := range all {
		if ev.Position != uint64(i+1) {
			t.Fatalf("event %d has position %d", i, ev.Position)
		}
	}
	for w := range workers {
		evs := readStream(t, s, fmt.Sprintf("session/%d", w))
		for i, ev := range evs {
			if ev.Seq != uint64(i+1) || string(ev.Payload) != fmt.Sprint(i) {
				t.Errorf("session/%d event %d = #%d %q", w, i, ev.Seq, ev.Payload)
			}
		}
	}
}
