package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
)

func events(t *testing.T, s eventlog.Store) []eventlog.Event {
	t.Helper()
	var evs []eventlog.Event
	if err := s.ReadAll(context.Background(), 1, func(ev eventlog.Event) error {
		evs = append(evs, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestCopyKeepsEveryEventInBatches(t *testing.T) {
	ctx := context.Background()
	src := eventlog.NewMemoryStore()
	heads := map[string]uint64{}
	for i := range 10_000 {
		stream := fmt.Sprintf("session/s%d", i%3)
		rec := eventlog.Record{Stream: stream, Type: "T", Version: 1, Time: int64(i), RestoreID: "r", Payload: []byte{byte(i)}}
		if _, err := src.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: heads[stream]}}, []eventlog.Record{rec}); err != nil {
			t.Fatal(err)
		}
		heads[stream]++
	}
	dst := eventlog.NewMemoryStore()
	n, err := eventlog.Copy(ctx, dst, src)
	if err != nil || n != 10_000 {
		t.Fatalf("Copy = %d, %v; want 10000, nil", n, err)
	}
	if got, want := events(t, dst), events(t, src); !reflect.DeepEqual(got, want) {
		t.Error("the copy differs from its source")
	}
	if _, err := eventlog.Copy(ctx, dst, src); !errors.Is(err, eventlog.ErrInvalidLoad) {
		t.Errorf("Copy into a store holding the events already: err = %v, want ErrInvalidLoad", err)
	}
}

func TestMemoryStoreReadsAroundGaps(t *testing.T) {
	ctx := context.Background()
	s := eventlog.NewMemoryStore()
	loaded := []eventlog.Event{
		{Stream: "a", Seq: 2, Position: 3, Type: "T"},
		{Stream: "b", Seq: 1, Position: 7, Type: "T"},
		{Stream: "a", Seq: 5, Position: 8, Type: "T"},
	}
	if err := s.Load(ctx, loaded); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	_ = s.ReadAll(ctx, 4, func(ev eventlog.Event) error { got = append(got, ev.Position); return nil })
	if !reflect.DeepEqual(got, []uint64{7, 8}) {
		t.Errorf("ReadAll from 4 read positions %v, want [7 8]", got)
	}
	got = nil
	_ = s.ReadStream(ctx, "a", 3, func(ev eventlog.Event) error { got = append(got, ev.Seq); return nil })
	if !reflect.DeepEqual(got, []uint64{5}) {
		t.Errorf("ReadStream(a, 3) read seqs %v, want [5]", got)
	}
	evs, err := s.Append(ctx, []eventlog.Expect{{Stream: "a", Seq: 5}}, []eventlog.Record{{Stream: "a", Type: "T"}})
	if err != nil || evs[0].Seq != 6 || evs[0].Position != 9 {
		t.Errorf("Append after gaps: %v, %v; want seq 6 at position 9", evs, err)
	}
}
