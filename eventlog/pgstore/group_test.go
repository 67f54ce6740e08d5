package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
)

// group returns an append for CommitGroup.
func group(ctx context.Context, expect []eventlog.Expect, recs ...eventlog.Record) *pgstore.GroupAppend {
	return &pgstore.GroupAppend{Ctx: ctx, Expect: expect, Recs: recs}
}

// TestGroupFailuresStayAlone commits one group whose appends fail in each
// way an append can fail alone: each that fails writes nothing and gives
// its positions back, and each other is written, its expectations checked
// against the heads the appends before it in the group left.
func TestGroupFailuresStayAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newDB(t).open(t, pgstore.Options{})
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "z"}}, []eventlog.Record{rec("z", "z1"), rec("z", "z2"), rec("z", "z3")}); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()

	g := []*pgstore.GroupAppend{
		group(ctx, []eventlog.Expect{{Stream: "a"}}, rec("a", "a1"), rec("a", "a2")),
		group(ctx, []eventlog.Expect{{Stream: "a"}}, rec("a", "lost")),                      // a moved earlier in the group
		group(ctx, []eventlog.Expect{{Stream: "b"}, {Stream: "z", Seq: 3}}, rec("b", "b1")), // holds
		group(cancelled, []eventlog.Expect{{Stream: "c"}}, rec("c", "cancelled")),
		group(ctx, []eventlog.Expect{{Stream: "a", Seq: 2}, {Stream: "b", Seq: 1}}, rec("b", "b2"), rec("a", "a3")),
		group(ctx, []eventlog.Expect{{Stream: "z", Seq: 2}}, rec("z", "stale")),
	}
	pgstore.CommitGroup(s, g...)

	var conflict *eventlog.ConflictError
	if err := g[1].Err; !errors.As(err, &conflict) || conflict.Stream != "a" || conflict.Expected != 0 || conflict.Actual != 2 {
		t.Errorf("append expecting a at 0 after the group wrote 2 events to it: err = %v, want a conflict on a (0, found 2)", err)
	}
	if err := g[3].Err; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled append: err = %v, want context.Canceled", err)
	}
	if err := g[5].Err; !errors.As(err, &conflict) || conflict.Stream != "z" || conflict.Expected != 2 || conflict.Actual != 3 {
		t.Errorf("stale append: err = %v, want a conflict on z (2, found 3)", err)
	}
	want := []string{"z1", "z2", "z3", "a1", "a2", "b1", "b2", "a3"}
	for i, w := range []struct {
		n     int
		first uint64
	}{{0, 4}, {2, 6}, {4, 7}} {
		a := g[w.n]
		if a.Err != nil || len(a.Events) != len(a.Recs) || a.Events[0].Position != w.first {
			t.Errorf("append %d (%d of those that hold) = %v, %v; want its events from position %d", w.n, i, a.Events, a.Err, w.first)
		}
	}
	checkLog(t, s, want)
	for stream, h := range map[string]uint64{"a": 3, "b": 2, "c": 0, "z": 3} {
		if got := head(t, s, stream); got != h {
			t.Errorf("Head(%s) = %d, want %d", stream, got, h)
		}
	}

	// A group of which every append fails gives back every position.
	g = []*pgstore.GroupAppend{
		group(ctx, []eventlog.Expect{{Stream: "a", Seq: 1}}, rec("a", "stale")),
		group(ctx, []eventlog.Expect{{Stream: "b"}}, rec("b", "stale")),
	}
	pgstore.CommitGroup(s, g...)
	for i, a := range g {
		if !errors.As(a.Err, &conflict) {
			t.Errorf("failing append %d: err = %v, want a conflict", i, a.Err)
		}
	}
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "c"}}, []eventlog.Record{rec("c", "c1")}); err != nil {
		t.Fatal(err)
	}
	checkLog(t, s, append(want, "c1"))
}

// TestGroupRetriedAloneWhenItsTransactionFails commits a group one of whose
// appends the server refuses (a restore id holding NUL, which a text
// column cannot store), which fails the group's transaction: each append is
// then tried alone, so only the refused one fails.
func TestGroupRetriedAloneWhenItsTransactionFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newDB(t).open(t, pgstore.Options{})
	bad := rec("b", "refused")
	bad.RestoreID = "nul\x00"
	g := []*pgstore.GroupAppend{
		group(ctx, []eventlog.Expect{{Stream: "a"}}, rec("a", "a1")),
		group(ctx, []eventlog.Expect{{Stream: "b"}}, bad),
		group(ctx, []eventlog.Expect{{Stream: "a", Seq: 1}}, rec("a", "a2")),
	}
	pgstore.CommitGroup(s, g...)
	var conflict *eventlog.ConflictError
	if err := g[1].Err; err == nil || errors.As(err, &conflict) {
		t.Errorf("append of a restore id holding NUL: err = %v, want the server's refusal", err)
	}
	for _, i := range []int{0, 2} {
		if g[i].Err != nil {
			t.Errorf("append %d failed with the refused one: %v", i, g[i].Err)
		}
	}
	checkLog(t, s, []string{"a1", "a2"})
	if h := head(t, s, "b"); h != 0 {
		t.Errorf("Head(b) = %d after its only append was refused, want 0", h)
	}
}

// TestGroupMemberCancelledWhileWaiting cancels one append of a group while
// the group waits for the position counter: it fails alone with its
// context's error and writes nothing, and the other is written.
func TestGroupMemberCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := db.open(t, pgstore.Options{})
	release := db.holdCounter(t)
	ctx, cancel := context.WithCancel(context.Background())
	g := []*pgstore.GroupAppend{
		group(ctx, []eventlog.Expect{{Stream: "a"}}, rec("a", "cancelled")),
		group(context.Background(), []eventlog.Expect{{Stream: "b"}}, rec("b", "b1")),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pgstore.CommitGroup(s, g...)
	}()
	db.waitForLockWait(t)
	cancel()
	release()
	<-done
	if !errors.Is(g[0].Err, context.Canceled) {
		t.Errorf("append cancelled while its group waited: err = %v, want context.Canceled", g[0].Err)
	}
	if g[1].Err != nil || g[1].Events[0].Position != 1 {
		t.Errorf("the other append = %v, %v; want position 1", g[1].Events, g[1].Err)
	}
	checkLog(t, s, []string{"b1"})
}

// TestGroupWaitsUntilEveryMemberIsCancelled holds the counter while a group
// waits for it: cancelling one append leaves the group waiting for the
// other's sake, and cancelling both ends it, each with its context's
// error and nothing written.
func TestGroupWaitsUntilEveryMemberIsCancelled(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := db.open(t, pgstore.Options{})
	release := db.holdCounter(t)
	ctxs := make([]context.Context, 2)
	cancels := make([]context.CancelFunc, 2)
	g := make([]*pgstore.GroupAppend, 2)
	for i := range g {
		ctxs[i], cancels[i] = context.WithCancel(context.Background())
		stream := fmt.Sprint("s", i)
		g[i] = group(ctxs[i], []eventlog.Expect{{Stream: stream}}, rec(stream, "1"))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pgstore.CommitGroup(s, g...)
	}()
	db.waitForLockWait(t)
	cancels[0]()
	time.Sleep(200 * time.Millisecond) // for the group to end, were it to
	select {
	case <-done:
		t.Fatal("the group ended when one of its two appends was cancelled")
	default:
	}
	cancels[1]()
	<-done
	for i, a := range g {
		if !errors.Is(a.Err, context.Canceled) {
			t.Errorf("append %d: err = %v, want context.Canceled", i, a.Err)
		}
	}
	release()
	checkLog(t, s, nil)
}

// TestReadersNeverSeePositionsGoBackUnderGroups has two stores of 16
// writers each append at once, every third append also to a stream all
// writers share (retrying its conflicts), so that each store commits its
// appends in groups, some of whose members conflict. Readers follow the
// log, each from the last position it saw: every read must continue
// exactly after it, and at the end every event of the log must be one the
// readers saw, at the position they saw it, so no event ever appeared below
// a position already seen.
func TestReadersNeverSeePositionsGoBackUnderGroups(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hosts := []*pgstore.Store{db.open(t, pgstore.Options{}), db.open(t, pgstore.Options{})}
	ctx := context.Background()
	const writers, appends, readers = 16, 12, 2

	done := make(chan struct{})
	seen := make([]map[uint64]string, readers)
	readErrs := make([]error, readers)
	var rwg sync.WaitGroup
	for i := range readers {
		seen[i] = make(map[uint64]string)
		reader := db.open(t, pgstore.Options{})
		rwg.Go(func() {
			var last uint64
			for final := false; !final; {
				select {
				case <-done:
					final = true // one more read after the last append
				default:
				}
				err := reader.ReadAll(ctx, last+1, func(ev eventlog.Event) error {
					if ev.Position != last+1 {
						return fmt.Errorf("read position %d after %d", ev.Position, last)
					}
					last = ev.Position
					seen[i][ev.Position] = fmt.Sprintf("%s#%d", ev.Stream, ev.Seq)
					return nil
				})
				if err != nil {
					readErrs[i] = err
					return
				}
			}
		})
	}

	before := []int64{pgstore.Groups(hosts[0]), pgstore.Groups(hosts[1])}
	calls := make([]atomic.Int64, len(hosts)) // Appends, retries included
	var wg sync.WaitGroup
	for h, s := range hosts {
		for w := range writers {
			wg.Go(func() {
				stream := fmt.Sprintf("host%d/writer%d", h, w)
				for i := range appends {
					if err := appendRetrying(ctx, s, stream, uint64(i), i%3 == 2, &calls[h]); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(done)
	rwg.Wait()
	for i, err := range readErrs {
		if err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
	}
	all := readAll(t, hosts[0], 1)
	want := len(hosts) * writers * (appends + appends/3)
	if len(all) != want {
		t.Fatalf("the log holds %d events, want %d", len(all), want)
	}
	for _, ev := range all {
		id := fmt.Sprintf("%s#%d", ev.Stream, ev.Seq)
		for i := range seen {
			if got := seen[i][ev.Position]; got != id {
				t.Fatalf("reader %d saw %q at position %d, where the log now holds %s", i, got, ev.Position, id)
			}
		}
	}
	for h, s := range hosts {
		groups, n := pgstore.Groups(s)-before[h], calls[h].Load()
		t.Logf("host %d: %d appends in %d groups", h, n, groups)
		if groups >= n {
			t.Errorf("host %d: %d appends took %d group commits; appends waiting together should share them", h, n, groups)
		}
	}
}

// appendRetrying appends one record to stream, expected at seq, and, with
// shared set, one to the stream "shared" at its head, reading the head
// again after each conflict on it. It counts its Appends in calls.
func appendRetrying(ctx context.Context, s *pgstore.Store, stream string, seq uint64, shared bool, calls *atomic.Int64) error {
	for {
		calls.Add(1)
		expect := []eventlog.Expect{{Stream: stream, Seq: seq}}
		recs := []eventlog.Record{rec(stream, fmt.Sprint(seq+1))}
		if shared {
			h, err := s.Head(ctx, "shared")
			if err != nil {
				return err
			}
			expect = append(expect, eventlog.Expect{Stream: "shared", Seq: h})
			recs = append(recs, rec("shared", stream))
		}
		_, err := s.Append(ctx, expect, recs)
		var conflict *eventlog.ConflictError
		if errors.As(err, &conflict) && conflict.Stream == "shared" {
			continue
		}
		return err
	}
}

// checkLog checks that s's log holds events with the payloads want, at
// positions 1 onwards, and that each stream's events follow each other.
func checkLog(t *testing.T, s *pgstore.Store, want []string) {
	t.Helper()
	all := readAll(t, s, 1)
	if len(all) != len(want) {
		t.Fatalf("the log holds %d events, want %d (%q)", len(all), len(want), want)
	}
	seqs := map[string]uint64{}
	for i, ev := range all {
		seqs[ev.Stream]++
		if ev.Position != uint64(i+1) || string(ev.Payload) != want[i] || ev.Seq != seqs[ev.Stream] {
			t.Errorf("event %d is %s#%d %q at position %d; want %q at position %d, #%d of its stream",
				i, ev.Stream, ev.Seq, ev.Payload, ev.Position, want[i], i+1, seqs[ev.Stream])
		}
	}
}

// TestGroupFoldsIntoIndex commits a group to several streams, some of
// which have rows already, one twice and one append of which fails, on a
// store keeping an index: the rows are those of the log folded afresh.
func TestGroupFoldsIntoIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newDB(t).open(t, pgstore.Options{})
	if err := s.Index(ctx, tally{}); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "a", 2)
	appendN(t, s, "b", 1)
	g := []*pgstore.GroupAppend{
		group(ctx, []eventlog.Expect{{Stream: "a", Seq: 2}}, rec("a", "a3"), rec("a", "a4")),
		group(ctx, []eventlog.Expect{{Stream: "c"}, {Stream: "b", Seq: 1}}, rec("c", "c1"), rec("b", "b2")),
		group(ctx, []eventlog.Expect{{Stream: "b", Seq: 1}}, rec("b", "stale")),
		group(ctx, []eventlog.Expect{{Stream: "a", Seq: 4}, {Stream: "d"}}, rec("d", "d1"), rec("a", "a5")),
	}
	pgstore.CommitGroup(s, g...)
	for i, a := range g {
		if (a.Err != nil) != (i == 2) {
			t.Errorf("append %d: err = %v", i, a.Err)
		}
	}
	checkRows(t, s)
	if rows, _ := storedRows(t, s); rows["a"] != "5" || rows["b"] != "2" || rows["c"] != "1" || rows["d"] != "1" {
		t.Errorf("rows = %v, want a 5, b 2, c 1, d 1", rows)
	}
}

// TestAppendsQueuedMeanwhileJoinTheGroup holds the counter while one
// append waits for it and two more queue up behind it: once the counter is
// free, the three commit in one transaction, the later two checked after
// the first, so that the one expecting what the first changed conflicts.
// On a store that keeps an index, the late appends' rows are folded too.
func TestAppendsQueuedMeanwhileJoinTheGroup(t *testing.T) {
	t.Parallel()
	for _, indexed := range []bool{false, true} {
		t.Run(fmt.Sprintf("indexed=%v", indexed), func(t *testing.T) {
			t.Parallel()
			appendsJoinTheGroup(t, indexed)
		})
	}
}

func appendsJoinTheGroup(t *testing.T, indexed bool) {
	ctx := context.Background()
	db := newDB(t)
	s := db.open(t, pgstore.Options{})
	if indexed {
		if err := s.Index(ctx, tally{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "z"}}, []eventlog.Record{rec("z", "z1")}); err != nil {
		t.Fatal(err)
	}
	release := db.holdCounter(t)
	appends := []struct {
		expect []eventlog.Expect
		recs   []eventlog.Record
	}{
		{[]eventlog.Expect{{Stream: "a"}}, []eventlog.Record{rec("a", "a1")}},
		{[]eventlog.Expect{{Stream: "a"}}, []eventlog.Record{rec("a", "lost")}},
		{[]eventlog.Expect{{Stream: "z", Seq: 1}, {Stream: "c"}}, []eventlog.Record{rec("z", "z2"), rec("c", "c1")}},
	}
	errs := make([]error, len(appends))
	before := pgstore.Groups(s)
	var wg sync.WaitGroup
	for i, a := range appends {
		wg.Go(func() { _, errs[i] = s.Append(ctx, a.expect, a.recs) })
		if i == 0 {
			db.waitForLockWait(t)
		} else {
			waitFor(t, "the append to queue up", func() bool { return pgstore.Queued(s) == i })
		}
	}
	release()
	wg.Wait()
	var conflict *eventlog.ConflictError
	if errs[0] != nil || errs[2] != nil {
		t.Errorf("appends = %v; want the first and the third to succeed", errs)
	}
	if !errors.As(errs[1], &conflict) || conflict.Stream != "a" || conflict.Actual != 1 {
		t.Errorf("second append to a at 0: err = %v, want a conflict on a (0, found 1)", errs[1])
	}
	if n := pgstore.Groups(s) - before; n != 1 {
		t.Errorf("the three appends took %d group commits, want 1", n)
	}
	checkLog(t, s, []string{"z1", "a1", "z2", "c1"})
	if h := head(t, s, "c"); h != 1 {
		t.Errorf("Head(c) = %d, want 1", h)
	}
	if indexed {
		checkRows(t, s)
		if rows, _ := storedRows(t, s); rows["z"] != "2" || rows["a"] != "1" || rows["c"] != "1" {
			t.Errorf("rows = %v, want z 2, a 1, c 1", rows)
		}
	}
}
