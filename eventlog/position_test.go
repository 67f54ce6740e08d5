package eventlog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
)

// plainStore hides every capability of the store it holds but Store's own
// methods.
type plainStore struct{ eventlog.Store }

// LastPosition gives the last event's position, from the store itself or by
// its search with short reads: on an empty log, on logs of every length up
// to 70, and after a purge left gaps in the positions.
func TestLastPosition(t *testing.T) {
	ctx := context.Background()
	m := eventlog.NewMemoryStore()
	check := func() {
		t.Helper()
		var want uint64
		if err := m.ReadAll(ctx, 1, func(ev eventlog.Event) error { want = ev.Position; return nil }); err != nil {
			t.Fatal(err)
		}
		for _, s := range []eventlog.Store{m, plainStore{m}} {
			got, err := eventlog.LastPosition(ctx, s)
			if err != nil || got != want {
				t.Fatalf("LastPosition of %T = %d, %v; want %d", s, got, err, want)
			}
		}
	}
	check()
	heads := map[string]uint64{}
	for i := range 70 {
		stream := fmt.Sprintf("s%d", i%7)
		rec := eventlog.Record{Stream: stream, Type: "T"}
		if _, err := m.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: heads[stream]}}, []eventlog.Record{rec}); err != nil {
			t.Fatal(err)
		}
		heads[stream]++
		check()
	}
	_, err := m.Purge(ctx, eventlog.Purge{
		Expect:  []eventlog.Expect{{Stream: "s6", Seq: heads["s6"]}, {Stream: "log"}},
		Remove:  []eventlog.SeqRange{{Stream: "s6", First: 1, Last: heads["s6"] - 1}},
		Records: []eventlog.Record{{Stream: "log", Type: "T"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	check()
}
