package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
)

// purger runs fn only on stores that implement eventlog.Purger.
func purger(fn func(*testing.T, eventlog.Purger, eventlog.Store)) func(*testing.T, eventlog.Store) {
	return func(t *testing.T, s eventlog.Store) {
		p, ok := s.(eventlog.Purger)
		if !ok {
			t.Skip("the store does not implement eventlog.Purger")
		}
		fn(t, p, s)
	}
}

// purgeFixture appends, one append each, s/a#1, x#1, s/a#2, s/a#3, x#2,
// at positions 1 to 5, and returns them.
func purgeFixture(t *testing.T, s eventlog.Store) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	heads := map[string]uint64{}
	for i, stream := range []string{"s/a", "x", "s/a", "s/a", "x"} {
		r := rec(stream, "secret "+string(rune('1'+i)))
		out = append(out, mustAppend(t, s, []eventlog.Expect{{Stream: stream, Seq: heads[stream]}}, r)...)
		heads[stream]++
	}
	return out
}

func testPurgeLeavesGaps(t *testing.T, p eventlog.Purger, s eventlog.Store) {
	ctx := context.Background()
	fx := purgeFixture(t, s)
	done := rec("log/purges", "purged s/a 1..2")
	evs, err := p.Purge(ctx, eventlog.Purge{
		Expect:  []eventlog.Expect{{Stream: "log/purges"}, {Stream: "s/a", Seq: 3}},
		Remove:  []eventlog.SeqRange{{Stream: "s/a", First: 1, Last: 2}},
		Records: []eventlog.Record{done},
	})
	if err != nil {
		t.Fatalf("Purge: %v", err)
	}
	if want := eventOf(done, 1, 6); len(evs) != 1 || diff(evs[0], want) != "" {
		t.Fatalf("Purge appended %s; want %s", show(evs), show([]eventlog.Event{want}))
	}
	if got := readStream(t, s, "s/a", 1); !equalEvents(got, fx[3:4]) {
		t.Errorf("ReadStream(s/a, 1) after the purge = %s; want only s/a#3", show(got))
	}
	if got := readStream(t, s, "s/a", 2); !equalEvents(got, fx[3:4]) {
		t.Errorf("ReadStream(s/a, 2), from inside the gap, = %s; want only s/a#3", show(got))
	}
	want := []eventlog.Event{fx[1], fx[3], fx[4], evs[0]}
	if got := readAll(t, s, 1); !equalEvents(got, want) {
		t.Errorf("ReadAll(1) after the purge = %s; want %s", show(got), show(want))
	}
	if got := readAll(t, s, 3); !equalEvents(got, want[1:]) {
		t.Errorf("ReadAll(3), from inside a gap, = %s; want %s", show(got), show(want[1:]))
	}
	if h := mustHead(t, s, "s/a"); h != 3 {
		t.Errorf("Head(s/a) = %d after the purge; want 3, unchanged", h)
	}
	next := mustAppend(t, s, []eventlog.Expect{{Stream: "s/a", Seq: 3}}, rec("s/a", "after"))
	if next[0].Seq != 4 || next[0].Position != 7 {
		t.Errorf("the append after the purge got s/a#%d at %d; want s/a#4 at 7: nothing removed is reused", next[0].Seq, next[0].Position)
	}
}

func testPurgeRewrites(t *testing.T, p eventlog.Purger, s eventlog.Store) {
	fx := purgeFixture(t, s)
	_, err := p.Purge(context.Background(), eventlog.Purge{
		Expect:  []eventlog.Expect{{Stream: "log/purges"}},
		Rewrite: []eventlog.Rewrite{{Stream: "x", Seq: 1, Payload: []byte("blank")}},
		Records: []eventlog.Record{rec("log/purges", "rewrote x#1")},
	})
	if err != nil {
		t.Fatalf("Purge: %v", err)
	}
	want := fx[1]
	want.Payload = []byte("blank")
	if got := readStream(t, s, "x", 1); len(got) != 2 || diff(got[0], want) != "" || diff(got[1], fx[4]) != "" {
		t.Errorf("ReadStream(x) after the rewrite = %s; want x#1 with the new payload, then x#2 as it was", show(got))
	}
	if got := readAll(t, s, 2); len(got) == 0 || diff(got[0], want) != "" {
		t.Errorf("ReadAll(2) after the rewrite starts with %s; want %s", show(got[:min(1, len(got))]), show([]eventlog.Event{want}))
	}
}

func testInvalidPurge(t *testing.T, p eventlog.Purger, s eventlog.Store) {
	fx := purgeFixture(t, s)
	done := []eventlog.Record{rec("log/purges", "x")}
	expect := []eventlog.Expect{{Stream: "log/purges"}}
	for name, pg := range map[string]eventlog.Purge{
		"the head of a stream":   {Remove: []eventlog.SeqRange{{Stream: "s/a", First: 2, Last: 3}}},
		"beyond the head":        {Remove: []eventlog.SeqRange{{Stream: "x", First: 3, Last: 3}}},
		"a stream never written": {Remove: []eventlog.SeqRange{{Stream: "nope", First: 1, Last: 1}}},
		"a rewrite of nothing": {Rewrite: []eventlog.Rewrite{{Stream: "x", Seq: 9, Payload: []byte("y")}},
			Remove: []eventlog.SeqRange{{Stream: "s/a", First: 1, Last: 1}}},
		"an empty range": {Remove: []eventlog.SeqRange{{Stream: "s/a", First: 2, Last: 1}}},
	} {
		pg.Expect, pg.Records = expect, done
		if _, err := p.Purge(context.Background(), pg); !errors.Is(err, eventlog.ErrInvalidPurge) {
			t.Errorf("Purge of %s: %v; want ErrInvalidPurge", name, err)
		}
	}
	if got := readAll(t, s, 1); !equalEvents(got, fx) {
		t.Errorf("after refused purges the log is %s; want it unchanged, %s", show(got), show(fx))
	}
}

func testPurgeConflict(t *testing.T, p eventlog.Purger, s eventlog.Store) {
	fx := purgeFixture(t, s)
	_, err := p.Purge(context.Background(), eventlog.Purge{
		Expect:  []eventlog.Expect{{Stream: "log/purges"}, {Stream: "s/a", Seq: 2}},
		Remove:  []eventlog.SeqRange{{Stream: "s/a", First: 1, Last: 2}},
		Rewrite: []eventlog.Rewrite{{Stream: "x", Seq: 1, Payload: []byte("blank")}},
		Records: []eventlog.Record{rec("log/purges", "x")},
	})
	if !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("Purge expecting a stale head: %v; want a conflict", err)
	}
	if got := readAll(t, s, 1); !equalEvents(got, fx) {
		t.Errorf("after a conflicting purge the log is %s; want it unchanged, %s", show(got), show(fx))
	}
}

func testPurgeTwice(t *testing.T, p eventlog.Purger, s eventlog.Store) {
	ctx := context.Background()
	fx := purgeFixture(t, s)
	first := eventlog.Purge{
		Expect:  []eventlog.Expect{{Stream: "log/purges"}},
		Remove:  []eventlog.SeqRange{{Stream: "s/a", First: 2, Last: 2}},
		Records: []eventlog.Record{rec("log/purges", "1")},
	}
	if _, err := p.Purge(ctx, first); err != nil {
		t.Fatalf("first Purge: %v", err)
	}
	first.Expect = []eventlog.Expect{{Stream: "log/purges", Seq: 1}}
	if _, err := p.Purge(ctx, first); !errors.Is(err, eventlog.ErrInvalidPurge) {
		t.Errorf("removing s/a#2 again: %v; want ErrInvalidPurge", err)
	}
	_, err := p.Purge(ctx, eventlog.Purge{
		Expect:  []eventlog.Expect{{Stream: "log/purges", Seq: 1}},
		Remove:  []eventlog.SeqRange{{Stream: "s/a", First: 1, Last: 1}, {Stream: "x", First: 1, Last: 1}},
		Records: []eventlog.Record{rec("log/purges", "2")},
	})
	if err != nil {
		t.Fatalf("second Purge, next to the first one's gap: %v", err)
	}
	got := readAll(t, s, 1)
	if len(got) != 4 || diff(got[0], fx[3]) != "" || diff(got[1], fx[4]) != "" || got[2].Position != 6 || got[3].Position != 7 {
		t.Errorf("after two purges ReadAll = %s; want s/a#3, x#2 and the two records at 6 and 7", show(got))
	}
	if got := readStream(t, s, "s/a", 1); !equalEvents(got, fx[3:4]) {
		t.Errorf("ReadStream(s/a) across two adjacent gaps = %s; want only s/a#3", show(got))
	}
}

// testLoadKeepsGaps loads events with gaps in their sequences and
// positions, as a copy of a vacuumed store has: reads pass over the gaps,
// and appends go on after them.
func testLoadKeepsGaps(t *testing.T, s eventlog.Store) {
	l := loader(t, s)
	evs := []eventlog.Event{
		{Stream: "session/s", Seq: 1, Position: 1, Type: testType, Version: 1, Payload: []byte("s1")},
		{Stream: "session/s", Seq: 3, Position: 4, Type: testType, Version: 1, Payload: []byte("s3")},
		{Stream: "agent/x", Seq: 2, Position: 6, Type: testType, Version: 1, Payload: []byte("x2")},
	}
	if err := l.Load(context.Background(), evs); err != nil {
		t.Fatalf("Load of events with gaps: %v", err)
	}
	if got := readAll(t, s, 0); !equalEvents(got, evs) {
		t.Errorf("ReadAll after the Load = %s; want %s", show(got), show(evs))
	}
	if got := readAll(t, s, 2); !equalEvents(got, evs[1:]) {
		t.Errorf("ReadAll(2), from inside a gap, = %s; want %s", show(got), show(evs[1:]))
	}
	if got := readStream(t, s, "session/s", 1); !equalEvents(got, evs[:2]) {
		t.Errorf("ReadStream(session/s) = %s; want %s", show(got), show(evs[:2]))
	}
	if got := readStream(t, s, "agent/x", 1); !equalEvents(got, evs[2:]) {
		t.Errorf("ReadStream(agent/x) = %s; want %s", show(got), show(evs[2:]))
	}
	next := mustAppend(t, s, []eventlog.Expect{{Stream: "session/s", Seq: 3}}, rec("session/s", "s4"))
	if next[0].Seq != 4 || next[0].Position != 7 {
		t.Errorf("Append after the Load got seq %d position %d; want 4 and 7", next[0].Seq, next[0].Position)
	}
}
