// Package storetest is the conformance suite for eventlog.Store backends. It
// uses nothing but the Store interface, so the in-memory store, the bbolt
// backend and any later backend run the same tests.
//
// # Usage
//
// A backend's tests call Run with a function that opens a fresh, empty store
// for one subtest:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) eventlog.Store {
//			s, err := mybackend.Open(filepath.Join(t.TempDir(), "events"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// # Caveats
//
// The Load tests run only against stores that implement eventlog.Loader,
// the Purge tests against eventlog.Purger, the Index tests against
// eventlog.Indexed, the lock tests against eventlog.StreamLocker.
//
// Run closes every store it opens when its subtest ends; open need not. The
// suite treats a nil and an empty payload as equal, and "name order" as the
// byte order of stream names (Go's string order).
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
)

// testType is the event type of the suite's records; stores do not
// interpret types.
const testType eventlog.Type = "storetest.Event"

// Run runs the conformance suite against the stores open returns. open is
// called once per subtest and must return a new, empty store.
func Run(t *testing.T, open func(t *testing.T) eventlog.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s eventlog.Store)
	}{
		{"AppendToNewStream", testAppendToNewStream},
		{"AppendContinuesStream", testAppendContinuesStream},
		{"AppendToManyStreamsAtomically", testAppendToManyStreams},
		{"ConflictWritesNothing", testConflictWritesNothing},
		{"ExpectationAloneGuardsAppend", testExpectationAloneGuards},
		{"InvalidAppendWritesNothing", testInvalidAppend},
		{"InvalidStreamOnRead", testInvalidStreamOnRead},
		{"LongestStreamName", testLongestStreamName},
		{"ReadStreamFrom", testReadStreamFrom},
		{"ReadStreamKeepsStreamsApart", testReadStreamKeepsStreamsApart},
		{"ReadAllFrom", testReadAllFrom},
		{"StreamsByPrefixInNameOrder", testStreamsByPrefix},
		{"CallbackErrorStopsRead", testCallbackErrorStopsRead},
		{"FieldsRoundTrip", testFieldsRoundTrip},
		{"LargePayloadRoundTrips", testLargePayload},
		{"AppendedEventsAreOwnedByCaller", testAppendResultOwned},
		{"CancelledContext", testCancelledContext},
		{"ConcurrentAppendsToOneStream", testConcurrentOneStream},
		{"ConcurrentAppendsToDistinctStreams", testConcurrentDistinctStreams},
		{"ClosedStore", testClosedStore},
		{"LoadKeepsNumbering", testLoadKeepsNumbering},
		{"LoadRefusesEventsNotAfterStore", testLoadRefuses},
		{"LoadKeepsGaps", testLoadKeepsGaps},
		{"PurgeLeavesGapsReadsPassOver", purger(testPurgeLeavesGaps)},
		{"PurgeRewritesPayloadsInPlace", purger(testPurgeRewrites)},
		{"InvalidPurgeChangesNothing", purger(testInvalidPurge)},
		{"PurgeConflictChangesNothing", purger(testPurgeConflict)},
		{"PurgeTwice", purger(testPurgeTwice)},
		{"LastPosition", testLastPosition},
		{"IndexKeptByAppends", indexed(testIndexKeptByAppends)},
		{"IndexRebuiltUnderAnotherName", indexed(testIndexRebuiltUnderAnotherName)},
		{"IndexFoldFailure", indexed(testIndexFoldFailure)},
		{"IndexConcurrentAppends", indexed(testIndexConcurrentAppends)},
		{"IndexKeptByLoadAndPurge", indexed(testIndexKeptByLoadAndPurge)},
		{"LocksKeepHoldersApart", locker(testLocksKeepHoldersApart)},
		{"HeldContext", locker(testHeldContext)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil && !errors.Is(err, eventlog.ErrClosed) {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

func testAppendToNewStream(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	recs := []eventlog.Record{rec("session/s1", "a"), rec("session/s1", "b"), rec("session/s1", "c")}
	evs := mustAppend(t, s, []eventlog.Expect{{Stream: "session/s1"}}, recs...)
	if len(evs) != len(recs) {
		t.Fatalf("Append returned %d events, want %d", len(evs), len(recs))
	}
	for i, ev := range evs {
		want := eventOf(recs[i], uint64(i+1), ev.Position)
		if d := diff(ev, want); d != "" {
			t.Errorf("event %d: %s", i, d)
		}
		if ev.Position == 0 || i > 0 && ev.Position <= evs[i-1].Position {
			t.Errorf("event %d: position %d does not increase from 1", i, ev.Position)
		}
	}
	if h := mustHead(t, s, "session/s1"); h != 3 {
		t.Errorf("Head = %d, want 3", h)
	}
	if got := readStream(t, s, "session/s1", 0); !equalEvents(got, evs) {
		t.Errorf("ReadStream = %s, want %s", show(got), show(evs))
	}
	if h, err := s.Head(ctx, "session/none"); err != nil || h != 0 {
		t.Errorf("Head of a missing stream = %d, %v; want 0, nil", h, err)
	}
}

func testAppendContinuesStream(t *testing.T, s eventlog.Store) {
	first := mustAppend(t, s, []eventlog.Expect{{Stream: "s"}}, rec("s", "1"), rec("s", "2"))
	second := mustAppend(t, s, []eventlog.Expect{{Stream: "s", Seq: 2}}, rec("s", "3"))
	if second[0].Seq != 3 || second[0].Position <= first[1].Position {
		t.Errorf("continued append got seq %d position %d after position %d; want seq 3 and a later position",
			second[0].Seq, second[0].Position, first[1].Position)
	}
	_, err := s.Append(context.Background(), []eventlog.Expect{{Stream: "s"}}, []eventlog.Record{rec("s", "x")})
	if !errors.Is(err, eventlog.ErrConflict) {
		t.Errorf("Append expecting 0 on an existing stream: err = %v, want ErrConflict", err)
	}
	if got := readStream(t, s, "s", 0); !equalEvents(got, append(first, second...)) {
		t.Errorf("ReadStream = %s", show(got))
	}
}

func testAppendToManyStreams(t *testing.T, s eventlog.Store) {
	mustAppend(t, s, []eventlog.Expect{{Stream: "b"}}, rec("b", "b1"))
	recs := []eventlog.Record{rec("a", "a1"), rec("b", "b2"), rec("a", "a2"), rec("b", "b3"), rec("a", "a3")}
	evs := mustAppend(t, s, []eventlog.Expect{{Stream: "a"}, {Stream: "b", Seq: 1}}, recs...)
	wantSeq := []uint64{1, 2, 2, 3, 3}
	for i, ev := range evs {
		if d := diff(ev, eventOf(recs[i], wantSeq[i], ev.Position)); d != "" {
			t.Errorf("event %d: %s", i, d)
		}
		if i > 0 && ev.Position <= evs[i-1].Position {
			t.Errorf("event %d: position %d not after %d: positions must follow the order given", i, ev.Position, evs[i-1].Position)
		}
	}
	if got := readStream(t, s, "a", 0); !equalEvents(got, []eventlog.Event{evs[0], evs[2], evs[4]}) {
		t.Errorf("ReadStream(a) = %s", show(got))
	}
	all := readAll(t, s, 0)
	if len(all) != 6 || !equalEvents(all[1:], evs) {
		t.Errorf("ReadAll = %s, want the first event of b then %s", show(all), show(evs))
	}
}

func testConflictWritesNothing(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	mustAppend(t, s, []eventlog.Expect{{Stream: "a"}, {Stream: "b"}}, rec("a", "a1"), rec("b", "b1"), rec("b", "b2"))
	before := readAll(t, s, 0)

	_, err := s.Append(ctx,
		[]eventlog.Expect{{Stream: "a", Seq: 1}, {Stream: "b", Seq: 1}, {Stream: "c"}},
		[]eventlog.Record{rec("a", "a2"), rec("b", "b3"), rec("c", "c1")})
	if !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("Append with a stale expectation: err = %v, want ErrConflict", err)
	}
	var ce *eventlog.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("err %v (%T) is not a *ConflictError", err, err)
	}
	if ce.Stream != "b" || ce.Expected != 1 || ce.Actual != 2 {
		t.Errorf("ConflictError = %+v, want Stream b, Expected 1, Actual 2", *ce)
	}
	for stream, want := range map[string]uint64{"a": 1, "b": 2, "c": 0} {
		if h := mustHead(t, s, stream); h != want {
			t.Errorf("Head(%s) = %d after a conflict, want %d", stream, h, want)
		}
	}
	if after := readAll(t, s, 0); !equalEvents(after, before) {
		t.Errorf("ReadAll after a conflict = %s, want %s", show(after), show(before))
	}
	if got := streamNames(t, s, ""); strings.Join(got, ",") != "a,b" {
		t.Errorf("Streams after a conflict = %v, want [a b]", got)
	}
}

func testExpectationAloneGuards(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	mustAppend(t, s, []eventlog.Expect{{Stream: "guard"}}, rec("guard", "g1"))

	_, err := s.Append(ctx,
		[]eventlog.Expect{{Stream: "data"}, {Stream: "guard"}},
		[]eventlog.Record{rec("data", "d1")})
	var ce *eventlog.ConflictError
	if !errors.As(err, &ce) || ce.Stream != "guard" || ce.Expected != 0 || ce.Actual != 1 {
		t.Fatalf("Append guarded by a moved stream: err = %v, want a conflict on guard expecting 0, finding 1", err)
	}
	if h := mustHead(t, s, "data"); h != 0 {
		t.Errorf("Head(data) = %d after a guarded conflict, want 0", h)
	}

	evs := mustAppend(t, s, []eventlog.Expect{{Stream: "data"}, {Stream: "guard", Seq: 1}}, rec("data", "d1"))
	if len(evs) != 1 || evs[0].Stream != "data" || evs[0].Seq != 1 {
		t.Errorf("guarded append = %s, want data#1", show(evs))
	}
	if h := mustHead(t, s, "guard"); h != 1 {
		t.Errorf("Head(guard) = %d, want 1: an expectation alone must not write", h)
	}
}

func testInvalidAppend(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	type invalid struct {
		name   string
		expect []eventlog.Expect
		recs   []eventlog.Record
		want   error
	}
	tests := []invalid{
		{"NoRecords", []eventlog.Expect{{Stream: "a"}}, nil, eventlog.ErrInvalidAppend},
		{"RecordWithoutExpectation", []eventlog.Expect{{Stream: "a"}}, []eventlog.Record{rec("a", "1"), rec("b", "1")}, eventlog.ErrInvalidAppend},
		{"NoExpectations", nil, []eventlog.Record{rec("a", "1")}, eventlog.ErrInvalidAppend},
		{"DuplicateExpectation", []eventlog.Expect{{Stream: "a"}, {Stream: "a"}}, []eventlog.Record{rec("a", "1")}, eventlog.ErrInvalidAppend},
		{"NoType", []eventlog.Expect{{Stream: "a"}}, []eventlog.Record{{Stream: "a", Payload: []byte("1")}}, eventlog.ErrInvalidAppend},
	}
	long := strings.Repeat("x", eventlog.MaxStreamLen+1)
	for _, bad := range []string{"", "nul\x00name", "new\nline", "tab\tname", "del\x7f", long, "bad\xffutf8"} {
		tests = append(tests, invalid{fmt.Sprintf("Stream%.20q", bad),
			[]eventlog.Expect{{Stream: bad}}, []eventlog.Record{rec(bad, "1")}, eventlog.ErrInvalidStream})
	}
	for _, tt := range tests {
		evs, err := s.Append(ctx, tt.expect, tt.recs)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Append = %v, %v; want %v", tt.name, evs, err, tt.want)
		}
	}
	if all := readAll(t, s, 0); len(all) != 0 {
		t.Errorf("invalid appends wrote %s", show(all))
	}
	if names := streamNames(t, s, ""); len(names) != 0 {
		t.Errorf("invalid appends created streams %q", names)
	}
}

func testInvalidStreamOnRead(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	for _, bad := range []string{"", "nul\x00name", strings.Repeat("x", eventlog.MaxStreamLen+1)} {
		if _, err := s.Head(ctx, bad); !errors.Is(err, eventlog.ErrInvalidStream) {
			t.Errorf("Head(%.20q) err = %v, want ErrInvalidStream", bad, err)
		}
		err := s.ReadStream(ctx, bad, 0, func(eventlog.Event) error { return nil })
		if !errors.Is(err, eventlog.ErrInvalidStream) {
			t.Errorf("ReadStream(%.20q) err = %v, want ErrInvalidStream", bad, err)
		}
	}
}

func testLongestStreamName(t *testing.T, s eventlog.Store) {
	name := "session/" + strings.Repeat("é", (eventlog.MaxStreamLen-len("session/"))/2)
	name += strings.Repeat("x", eventlog.MaxStreamLen-len(name))
	evs := mustAppend(t, s, []eventlog.Expect{{Stream: name}}, rec(name, "1"), rec(name, "2"))
	if got := readStream(t, s, name, 0); !equalEvents(got, evs) {
		t.Errorf("ReadStream of a %d-byte name = %s, want %s", len(name), show(got), show(evs))
	}
	if got := streams(t, s, "session/"); len(got) != 1 || got[0].Name != name || got[0].Head != 2 {
		t.Errorf("Streams = %v, want the %d-byte name at head 2", got, len(name))
	}
}

func testReadStreamFrom(t *testing.T, s eventlog.Store) {
	evs := mustAppend(t, s, []eventlog.Expect{{Stream: "s"}}, rec("s", "1"), rec("s", "2"), rec("s", "3"), rec("s", "4"), rec("s", "5"))
	tests := []struct {
		from uint64
		want []eventlog.Event
	}{
		{0, evs},
		{1, evs},
		{3, evs[2:]},
		{5, evs[4:]},
		{6, nil},
		{math.MaxUint64, nil},
	}
	for _, tt := range tests {
		if got := readStream(t, s, "s", tt.from); !equalEvents(got, tt.want) {
			t.Errorf("ReadStream from %d = %s, want %s", tt.from, show(got), show(tt.want))
		}
	}
	if got := readStream(t, s, "missing", 0); len(got) != 0 {
		t.Errorf("ReadStream of a missing stream = %s, want nothing", show(got))
	}
}

func testReadStreamKeepsStreamsApart(t *testing.T, s eventlog.Store) {
	names := []string{"s", "s/x", "s0", "r", "s!", "t"}
	byStream := make(map[string][]eventlog.Event)
	for i, name := range names {
		recs := make([]eventlog.Record, i+1)
		for j := range recs {
			recs[j] = rec(name, fmt.Sprintf("%s-%d", name, j))
		}
		byStream[name] = mustAppend(t, s, []eventlog.Expect{{Stream: name}}, recs...)
	}
	for _, name := range names {
		if got := readStream(t, s, name, 0); !equalEvents(got, byStream[name]) {
			t.Errorf("ReadStream(%s) = %s, want %s", name, show(got), show(byStream[name]))
		}
		if h := mustHead(t, s, name); h != uint64(len(byStream[name])) {
			t.Errorf("Head(%s) = %d, want %d", name, h, len(byStream[name]))
		}
	}
}

func testReadAllFrom(t *testing.T, s eventlog.Store) {
	evs := mustAppend(t, s, []eventlog.Expect{{Stream: "a"}, {Stream: "b"}}, rec("a", "1"), rec("b", "1"))
	evs = append(evs, mustAppend(t, s, []eventlog.Expect{{Stream: "b", Seq: 1}}, rec("b", "2"))...)
	evs = append(evs, mustAppend(t, s, []eventlog.Expect{{Stream: "a", Seq: 1}}, rec("a", "2"), rec("a", "3"))...)
	last := evs[len(evs)-1].Position
	tests := []struct {
		from uint64
		want []eventlog.Event
	}{
		{0, evs},
		{1, evs},
		{evs[2].Position, evs[2:]},
		{last, evs[4:]},
		{last + 1, nil},
		{math.MaxUint64, nil},
	}
	for _, tt := range tests {
		if got := readAll(t, s, tt.from); !equalEvents(got, tt.want) {
			t.Errorf("ReadAll from %d = %s, want %s", tt.from, show(got), show(tt.want))
		}
	}
}

func testStreamsByPrefix(t *testing.T, s eventlog.Store) {
	heads := map[string]int{"agent/x": 1, "session/a": 2, "session/B": 3, "session/a0": 1, "session/a/b": 4, "session/a b": 3, "sessionz": 2}
	for name, n := range heads {
		recs := make([]eventlog.Record, n)
		for i := range recs {
			recs[i] = rec(name, "p")
		}
		mustAppend(t, s, []eventlog.Expect{{Stream: name}}, recs...)
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"session/", []string{"session/B", "session/a", "session/a b", "session/a/b", "session/a0"}},
		{"session/a", []string{"session/a", "session/a b", "session/a/b", "session/a0"}},
		{"", []string{"agent/x", "session/B", "session/a", "session/a b", "session/a/b", "session/a0", "sessionz"}},
		{"session/a/b", []string{"session/a/b"}},
		{"nomatch", nil},
		{"session/a/b/", nil},
	}
	for _, tt := range tests {
		got := streams(t, s, tt.prefix)
		var names []string
		for _, info := range got {
			names = append(names, info.Name)
			if info.Head != uint64(heads[info.Name]) {
				t.Errorf("Streams(%q): %s head = %d, want %d", tt.prefix, info.Name, info.Head, heads[info.Name])
			}
		}
		if strings.Join(names, ",") != strings.Join(tt.want, ",") {
			t.Errorf("Streams(%q) = %q, want %q", tt.prefix, names, tt.want)
		}
	}
}

func testCallbackErrorStopsRead(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	mustAppend(t, s, []eventlog.Expect{{Stream: "a"}, {Stream: "b"}, {Stream: "c"}},
		rec("a", "1"), rec("a", "2"), rec("a", "3"), rec("b", "1"), rec("c", "1"))
	stop := errors.New("stop here")
	for _, after := range []int{1, 2} {
		calls := 0
		stopAfter := func() error {
			calls++
			if calls == after {
				return stop
			}
			return nil
		}
		check := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, stop) || calls != after {
				t.Errorf("%s stopping after %d: err = %v after %d calls; want the callback's error after %d", what, after, err, calls, after)
			}
			calls = 0
		}
		check("ReadStream", s.ReadStream(ctx, "a", 0, func(eventlog.Event) error { return stopAfter() }))
		check("ReadAll", s.ReadAll(ctx, 0, func(eventlog.Event) error { return stopAfter() }))
		check("Streams", s.Streams(ctx, "", func(eventlog.StreamInfo) error { return stopAfter() }))
	}
}

func testFieldsRoundTrip(t *testing.T, s eventlog.Store) {
	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	const stream = "roundtrip/é✓"
	recs := []eventlog.Record{
		{Stream: stream, Type: "storetest.Full/ü", Version: math.MaxUint16, Time: math.MinInt64, RestoreID: "restore-1", Payload: every},
		{Stream: stream, Type: "t", Version: 0, Time: math.MaxInt64, Payload: nil},
		{Stream: stream, Type: testType, Version: 1, Time: 0, RestoreID: "r/é", Payload: []byte{}},
		{Stream: stream, Type: testType, Version: 2, Time: 1_700_000_000_123_456_789, Payload: []byte{0}},
	}
	evs := mustAppend(t, s, []eventlog.Expect{{Stream: stream}}, recs...)
	for i, r := range recs {
		if d := diff(evs[i], eventOf(r, uint64(i+1), evs[i].Position)); d != "" {
			t.Errorf("Append result %d: %s", i, d)
		}
	}
	for what, got := range map[string][]eventlog.Event{
		"ReadStream": readStream(t, s, stream, 0),
		"ReadAll":    readAll(t, s, 0),
	} {
		if len(got) != len(evs) {
			t.Errorf("%s returned %d events, want %d", what, len(got), len(evs))
			continue
		}
		for i := range got {
			if d := diff(got[i], evs[i]); d != "" {
				t.Errorf("%s event %d: %s", what, i, d)
			}
		}
	}
}

func testLargePayload(t *testing.T, s eventlog.Store) {
	big := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	recs := []eventlog.Record{rec("big", "before"), {Stream: "big", Type: testType, Version: 1, Payload: big}, rec("big", "after")}
	evs := mustAppend(t, s, []eventlog.Expect{{Stream: "big"}}, recs...)
	if got := readStream(t, s, "big", 0); !equalEvents(got, evs) {
		t.Errorf("ReadStream did not return the 1 MiB payload intact")
	}
	if got := readAll(t, s, evs[1].Position); !equalEvents(got, evs[1:]) {
		t.Errorf("ReadAll did not return the 1 MiB payload intact")
	}
}

func testAppendResultOwned(t *testing.T, s eventlog.Store) {
	payload := []byte("original")
	evs := mustAppend(t, s, []eventlog.Expect{{Stream: "own"}}, eventlog.Record{Stream: "own", Type: testType, Version: 1, Payload: payload})
	payload[0] = 'X'
	evs[0].Payload[1] = 'Y'
	kept := cloneEvents(evs)

	mustAppend(t, s, []eventlog.Expect{{Stream: "own", Seq: 1}, {Stream: "other"}}, rec("own", "second"), rec("other", "first"))
	if !equalEvents(evs, kept) {
		t.Errorf("events returned by Append changed under a later append: %s, was %s", show(evs), show(kept))
	}
	got := readStream(t, s, "own", 0)
	if len(got) != 2 || string(got[0].Payload) != "original" {
		t.Errorf("stored payload = %q; changing the record or the returned event must not change the store", got[0].Payload)
	}
}

func testCancelledContext(t *testing.T, s eventlog.Store) {
	mustAppend(t, s, []eventlog.Expect{{Stream: "c"}}, rec("c", "1"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := s.Append(ctx, []eventlog.Expect{{Stream: "c", Seq: 1}, {Stream: "d"}}, []eventlog.Record{rec("c", "2"), rec("d", "1")})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a cancelled context: err = %v, want context.Canceled", err)
	}
	if h := mustHead(t, s, "c"); h != 1 {
		t.Errorf("Head(c) = %d after a cancelled append, want 1", h)
	}
	if h := mustHead(t, s, "d"); h != 0 {
		t.Errorf("Head(d) = %d after a cancelled append, want 0", h)
	}

	if _, err := s.Head(ctx, "c"); !errors.Is(err, context.Canceled) {
		t.Errorf("Head: err = %v, want context.Canceled", err)
	}
	called := false
	fn := func(eventlog.Event) error { called = true; return nil }
	if err := s.ReadStream(ctx, "c", 0, fn); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadStream: err = %v, want context.Canceled", err)
	}
	if err := s.ReadAll(ctx, 0, fn); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadAll: err = %v, want context.Canceled", err)
	}
	if err := s.Streams(ctx, "", func(eventlog.StreamInfo) error { called = true; return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Streams: err = %v, want context.Canceled", err)
	}
	if called {
		t.Errorf("a read with a cancelled context called its callback")
	}
}

func testConcurrentOneStream(t *testing.T, s eventlog.Store) {
	const (
		workers     = 8
		perWorker   = 8
		maxAttempts = 10_000
		stream      = "contended"
	)
	ctx := context.Background()
	var (
		mu      sync.Mutex
		winners = make(map[uint64]string) // seq -> payload of the append that won it
		wg      sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			won, attempts := 0, 0
			for won < perWorker {
				if attempts++; attempts > maxAttempts {
					t.Errorf("worker %d: no progress after %d attempts", w, maxAttempts)
					return
				}
				head, err := s.Head(ctx, stream)
				if err != nil {
					t.Errorf("worker %d: Head: %v", w, err)
					return
				}
				payload := fmt.Sprintf("w%d-%d", w, won)
				evs, err := s.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: head}}, []eventlog.Record{rec(stream, payload)})
				if errors.Is(err, eventlog.ErrConflict) {
					continue
				}
				if err != nil {
					t.Errorf("worker %d: Append: %v", w, err)
					return
				}
				if evs[0].Seq != head+1 {
					t.Errorf("worker %d: expected head %d but got seq %d", w, head, evs[0].Seq)
				}
				mu.Lock()
				if prev, taken := winners[evs[0].Seq]; taken {
					t.Errorf("seq %d won twice: by %s and %s", evs[0].Seq, prev, payload)
				}
				winners[evs[0].Seq] = payload
				mu.Unlock()
				won++
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	const total = workers * perWorker
	if h := mustHead(t, s, stream); h != total || len(winners) != total {
		t.Fatalf("Head = %d with %d successful appends, want %d", h, len(winners), total)
	}
	for i, ev := range readStream(t, s, stream, 0) {
		if ev.Seq != uint64(i+1) || string(ev.Payload) != winners[ev.Seq] {
			t.Errorf("event %d is seq %d %q; want seq %d %q", i, ev.Seq, ev.Payload, i+1, winners[uint64(i+1)])
		}
	}
}

func testConcurrentDistinctStreams(t *testing.T, s eventlog.Store) {
	const workers, perWorker = 8, 8
	ctx := context.Background()
	returned := make([][]eventlog.Event, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			stream := fmt.Sprintf("worker/%d", w)
			for i := range perWorker {
				evs, err := s.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: uint64(i)}}, []eventlog.Record{rec(stream, fmt.Sprint(i))})
				if err != nil {
					t.Errorf("%s: Append %d: %v", stream, i, err)
					return
				}
				returned[w] = append(returned[w], evs...)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	byPosition := make(map[uint64]eventlog.Event)
	for w, evs := range returned {
		for i, ev := range evs {
			if ev.Seq != uint64(i+1) {
				t.Errorf("worker %d append %d got seq %d", w, i, ev.Seq)
			}
			if prev, dup := byPosition[ev.Position]; dup {
				t.Errorf("position %d given to both %s#%d and %s#%d", ev.Position, prev.Stream, prev.Seq, ev.Stream, ev.Seq)
			}
			byPosition[ev.Position] = ev
		}
	}
	all := readAll(t, s, 0)
	if len(all) != workers*perWorker {
		t.Fatalf("ReadAll returned %d events, want %d", len(all), workers*perWorker)
	}
	for i, ev := range all {
		if ev.Position != uint64(i+1) {
			t.Fatalf("ReadAll event %d has position %d; want positions 1..%d without gaps", i, ev.Position, len(all))
		}
		if d := diff(ev, byPosition[ev.Position]); d != "" {
			t.Errorf("position %d: %s", ev.Position, d)
		}
	}
}

func testClosedStore(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	mustAppend(t, s, []eventlog.Expect{{Stream: "c"}}, rec("c", "1"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, eventlog.ErrClosed) {
			t.Errorf("%s after Close: err = %v, want ErrClosed", what, err)
		}
	}
	_, err := s.Append(ctx, []eventlog.Expect{{Stream: "c", Seq: 1}}, []eventlog.Record{rec("c", "2")})
	check("Append", err)
	_, err = s.Head(ctx, "c")
	check("Head", err)
	check("ReadStream", s.ReadStream(ctx, "c", 0, func(eventlog.Event) error { return nil }))
	check("ReadAll", s.ReadAll(ctx, 0, func(eventlog.Event) error { return nil }))
	check("Streams", s.Streams(ctx, "", func(eventlog.StreamInfo) error { return nil }))
	check("a second Close", s.Close())
}

// rec returns a record of the suite's test type.
func rec(stream, payload string) eventlog.Record {
	return eventlog.Record{Stream: stream, Type: testType, Version: 1, Time: 1_700_000_000_000_000_000, Payload: []byte(payload)}
}

// eventOf returns the event a store should make of r at seq and pos.
func eventOf(r eventlog.Record, seq, pos uint64) eventlog.Event {
	return eventlog.Event{Stream: r.Stream, Seq: seq, Position: pos, Type: r.Type, Version: r.Version,
		Time: r.Time, RestoreID: r.RestoreID, Payload: r.Payload}
}

func mustAppend(t *testing.T, s eventlog.Store, expect []eventlog.Expect, recs ...eventlog.Record) []eventlog.Event {
	t.Helper()
	evs, err := s.Append(context.Background(), expect, recs)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return evs
}

func mustHead(t *testing.T, s eventlog.Store, stream string) uint64 {
	t.Helper()
	h, err := s.Head(context.Background(), stream)
	if err != nil {
		t.Fatalf("Head(%s): %v", stream, err)
	}
	return h
}

// readStream returns copies of the events ReadStream passes, since they are
// only valid inside the callback.
func readStream(t *testing.T, s eventlog.Store, stream string, from uint64) []eventlog.Event {
	t.Helper()
	var evs []eventlog.Event
	err := s.ReadStream(context.Background(), stream, from, func(ev eventlog.Event) error {
		evs = append(evs, cloneEvent(ev))
		return nil
	})
	if err != nil {
		t.Fatalf("ReadStream(%s, %d): %v", stream, from, err)
	}
	return evs
}

// readAll returns copies of the events ReadAll passes.
func readAll(t *testing.T, s eventlog.Store, from uint64) []eventlog.Event {
	t.Helper()
	var evs []eventlog.Event
	err := s.ReadAll(context.Background(), from, func(ev eventlog.Event) error {
		evs = append(evs, cloneEvent(ev))
		return nil
	})
	if err != nil {
		t.Fatalf("ReadAll(%d): %v", from, err)
	}
	return evs
}

func streams(t *testing.T, s eventlog.Store, prefix string) []eventlog.StreamInfo {
	t.Helper()
	var infos []eventlog.StreamInfo
	if err := s.Streams(context.Background(), prefix, func(info eventlog.StreamInfo) error {
		infos = append(infos, info)
		return nil
	}); err != nil {
		t.Fatalf("Streams(%q): %v", prefix, err)
	}
	return infos
}

func streamNames(t *testing.T, s eventlog.Store, prefix string) []string {
	t.Helper()
	var names []string
	for _, info := range streams(t, s, prefix) {
		names = append(names, info.Name)
	}
	return names
}

func cloneEvent(ev eventlog.Event) eventlog.Event {
	ev.Payload = bytes.Clone(ev.Payload)
	return ev
}

func cloneEvents(evs []eventlog.Event) []eventlog.Event {
	out := make([]eventlog.Event, len(evs))
	for i, ev := range evs {
		out[i] = cloneEvent(ev)
	}
	return out
}

// diff describes how got differs from want, or returns "" when they are
// equal. A nil and an empty payload are equal.
func diff(got, want eventlog.Event) string {
	var d []string
	if got.Stream != want.Stream || got.Seq != want.Seq || got.Position != want.Position {
		d = append(d, fmt.Sprintf("at %s#%d position %d, want %s#%d position %d",
			got.Stream, got.Seq, got.Position, want.Stream, want.Seq, want.Position))
	}
	if got.Type != want.Type || got.Version != want.Version {
		d = append(d, fmt.Sprintf("type %s v%d, want %s v%d", got.Type, got.Version, want.Type, want.Version))
	}
	if got.Time != want.Time {
		d = append(d, fmt.Sprintf("time %d, want %d", got.Time, want.Time))
	}
	if got.RestoreID != want.RestoreID {
		d = append(d, fmt.Sprintf("restore id %q, want %q", got.RestoreID, want.RestoreID))
	}
	if !bytes.Equal(got.Payload, want.Payload) {
		d = append(d, fmt.Sprintf("payload of %d bytes %.32q, want %d bytes %.32q", len(got.Payload), got.Payload, len(want.Payload), want.Payload))
	}
	return strings.Join(d, "; ")
}

func equalEvents(got, want []eventlog.Event) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if diff(got[i], want[i]) != "" {
			return false
		}
	}
	return true
}

// show formats events briefly for test failures.
func show(evs []eventlog.Event) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		parts[i] = fmt.Sprintf("%s#%d@%d:%.16q", ev.Stream, ev.Seq, ev.Position, ev.Payload)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// loader returns s as an eventlog.Loader, skipping the test for a store
// that is not one.
func loader(t *testing.T, s eventlog.Store) eventlog.Loader {
	t.Helper()
	l, ok := s.(eventlog.Loader)
	if !ok {
		t.Skip("the store is not an eventlog.Loader")
	}
	return l
}

func testLoadKeepsNumbering(t *testing.T, s eventlog.Store) {
	l := loader(t, s)
	ctx := context.Background()
	evs := []eventlog.Event{
		{Stream: "agent/a", Seq: 1, Position: 1, Type: testType, Version: 2, Time: 5, RestoreID: "r1", Payload: []byte("a1")},
		{Stream: "session/s", Seq: 1, Position: 2, Type: testType, Version: 1, Time: -7, Payload: []byte("s1")},
		{Stream: "session/s", Seq: 2, Position: 3, Type: "other", Version: 65535, Time: 9, Payload: nil},
		{Stream: "agent/a", Seq: 2, Position: 4, Type: testType, Version: 1, Time: 10, RestoreID: "r2", Payload: []byte("a2")},
	}
	if err := l.Load(ctx, evs[:3]); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := l.Load(ctx, evs[3:]); err != nil {
		t.Fatalf("second Load: %v", err)
	}
	if got := readAll(t, s, 0); !equalEvents(got, evs) {
		t.Errorf("ReadAll after Load = %s, want %s", show(got), show(evs))
	}
	if got := readStream(t, s, "session/s", 2); !equalEvents(got, evs[2:3]) {
		t.Errorf("ReadStream(session/s, 2) = %s", show(got))
	}
	if got := streams(t, s, ""); len(got) != 2 || got[0] != (eventlog.StreamInfo{Name: "agent/a", Head: 2}) ||
		got[1] != (eventlog.StreamInfo{Name: "session/s", Head: 2}) {
		t.Errorf("Streams = %v", got)
	}
	next := mustAppend(t, s, []eventlog.Expect{{Stream: "agent/a", Seq: 2}}, rec("agent/a", "a3"))
	if next[0].Seq != 3 || next[0].Position != 5 {
		t.Errorf("Append after Load got seq %d position %d, want 3 and 5", next[0].Seq, next[0].Position)
	}
}

func testLoadRefuses(t *testing.T, s eventlog.Store) {
	l := loader(t, s)
	ctx := context.Background()
	held := mustAppend(t, s, []eventlog.Expect{{Stream: "s"}}, rec("s", "1"), rec("s", "2"))
	ev := func(stream string, seq, pos uint64) eventlog.Event {
		return eventlog.Event{Stream: stream, Seq: seq, Position: pos, Type: testType, Payload: []byte("x")}
	}
	for _, tt := range []struct {
		name string
		evs  []eventlog.Event
	}{
		{"position already held", []eventlog.Event{ev("t", 1, 2)}},
		{"seq at the stream's head", []eventlog.Event{ev("s", 2, 3)}},
		{"positions out of order", []eventlog.Event{ev("t", 1, 4), ev("u", 1, 3)}},
		{"seqs out of order", []eventlog.Event{ev("t", 2, 3), ev("t", 1, 4)}},
		{"a good event before a bad one", []eventlog.Event{ev("t", 1, 3), ev("s", 1, 4)}},
	} {
		if err := l.Load(ctx, tt.evs); !errors.Is(err, eventlog.ErrInvalidLoad) {
			t.Errorf("%s: Load err = %v, want ErrInvalidLoad", tt.name, err)
		}
	}
	if got := readAll(t, s, 0); !equalEvents(got, held) {
		t.Errorf("refused loads wrote: ReadAll = %s", show(got))
	}
	if err := l.Load(ctx, []eventlog.Event{{Stream: "t", Seq: 1, Position: 3}}); !errors.Is(err, eventlog.ErrInvalidLoad) {
		t.Errorf("Load of an event without a type: err = %v, want ErrInvalidLoad", err)
	}
}

// testLastPosition checks a Positioner's answer against the last event
// a read finds: empty, after appends, after a purge.
func testLastPosition(t *testing.T, s eventlog.Store) {
	ctx := context.Background()
	p, ok := s.(eventlog.Positioner)
	if !ok {
		t.Skip("the store does not implement eventlog.Positioner")
	}
	check := func(want uint64) {
		t.Helper()
		if got, err := p.LastPosition(ctx); err != nil || got != want {
			t.Fatalf("LastPosition = %d, %v; want %d", got, err, want)
		}
	}
	check(0)
	mustAppend(t, s, []eventlog.Expect{{Stream: "a"}}, rec("a", "1"), rec("a", "2"))
	check(2)
	mustAppend(t, s, []eventlog.Expect{{Stream: "b"}}, rec("b", "1"))
	check(3)
	if pu, ok := s.(eventlog.Purger); ok {
		_, err := pu.Purge(ctx, eventlog.Purge{
			Expect:  []eventlog.Expect{{Stream: "a", Seq: 2}, {Stream: "log"}},
			Remove:  []eventlog.SeqRange{{Stream: "a", First: 1, Last: 1}},
			Records: []eventlog.Record{rec("log", "purged")},
		})
		if err != nil {
			t.Fatal(err)
		}
		check(4)
	}
}
