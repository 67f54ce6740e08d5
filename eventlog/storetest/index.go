package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
)

// indexed runs fn only on stores that implement eventlog.Indexed.
func indexed(fn func(*testing.T, eventlog.Indexed, eventlog.Store)) func(*testing.T, eventlog.Store) {
	return func(t *testing.T, s eventlog.Store) {
		x, ok := s.(eventlog.Indexed)
		if !ok {
			t.Skip("the store does not implement eventlog.Indexed")
		}
		fn(t, x, s)
	}
}

// counter is the suite's Indexer: per stream, the number of its events and
// the payload of the last one ("2 last"); a payload "drop" removes the
// stream's row, and one "poison" fails the fold.
type counter struct{ name string }

func (c counter) Name() string { return c.name }

func (c counter) Apply(rows eventlog.Rows, ev eventlog.Event) error {
	switch string(ev.Payload) {
	case "poison":
		return errors.New("poisoned")
	case "drop":
		rows.Put(ev.Stream, nil)
		return nil
	}
	row, err := rows.Get(ev.Stream)
	if err != nil {
		return err
	}
	n := 0
	if row != nil {
		count, _, _ := strings.Cut(string(row), " ")
		if n, err = strconv.Atoi(count); err != nil {
			return fmt.Errorf("row %q: %w", row, err)
		}
	}
	rows.Put(ev.Stream, fmt.Appendf(nil, "%d %s", n+1, ev.Payload))
	return nil
}

var counts = counter{name: "storetest.counts/1"}

// Counts is the Indexer the suite checks stores with, for a backend's own
// tests of what the suite cannot reach (reopening, compaction): per
// stream, the number of its events and the payload of the last one, as
// "2 last"; a payload "drop" removes the stream's row, and one "poison"
// fails the fold.
var Counts eventlog.Indexer = counts

// foldAll is what counts makes of the whole log of s.
func foldAll(t *testing.T, s eventlog.Store) map[string]string {
	t.Helper()
	fold := eventlog.NewFold(func(string) ([]byte, error) { return nil, nil })
	for _, ev := range readAll(t, s, 1) {
		if err := fold.Apply(counts, ev); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]string{}
	_ = fold.Changed(func(key string, value []byte) error {
		if value != nil {
			out[key] = string(value)
		}
		return nil
	})
	return out
}

// readIndex returns the rows of the index named name that s holds, and
// the position they hold events up to.
func readIndex(t *testing.T, x eventlog.Indexed, name string) (map[string]string, uint64) {
	t.Helper()
	rows := map[string]string{}
	prev := ""
	last, err := x.ReadIndex(context.Background(), name, func(key string, value []byte) error {
		if key <= prev && prev != "" {
			return fmt.Errorf("key %q after %q: not in key order", key, prev)
		}
		prev = key
		rows[key] = string(value)
		return nil
	})
	if err != nil {
		t.Fatalf("ReadIndex: %v", err)
	}
	return rows, last
}

// checkIndex checks that the rows s keeps are the fold of its whole log,
// up to its last position.
func checkIndex(t *testing.T, x eventlog.Indexed, s eventlog.Store) {
	t.Helper()
	rows, last := readIndex(t, x, counts.name)
	want := foldAll(t, s)
	if !maps.Equal(rows, want) {
		t.Fatalf("index rows = %v\nthe log folds to %v", rows, want)
	}
	all := readAll(t, s, 1)
	if end := all[len(all)-1].Position; last != end {
		t.Fatalf("ReadIndex says the rows hold events up to %d; the log ends at %d", last, end)
	}
}

func testIndexKeptByAppends(t *testing.T, x eventlog.Indexed, s eventlog.Store) {
	ctx := context.Background()
	if _, err := x.ReadIndex(ctx, counts.name, func(string, []byte) error { return nil }); !errors.Is(err, eventlog.ErrNoIndex) {
		t.Fatalf("ReadIndex of an index never made: %v, want ErrNoIndex", err)
	}
	// Events before Index are folded when it is called.
	mustAppend(t, s, []eventlog.Expect{{Stream: "a"}}, rec("a", "1"), rec("a", "2"))
	if err := x.Index(ctx, counts); err != nil {
		t.Fatal(err)
	}
	checkIndex(t, x, s)
	mustAppend(t, s, []eventlog.Expect{{Stream: "a", Seq: 2}, {Stream: "b"}}, rec("b", "1"), rec("a", "3"), rec("b", "2"))
	mustAppend(t, s, []eventlog.Expect{{Stream: "c"}}, rec("c", "1"))
	checkIndex(t, x, s)
	mustAppend(t, s, []eventlog.Expect{{Stream: "c", Seq: 1}}, rec("c", "drop"))
	checkIndex(t, x, s)
	if rows, _ := readIndex(t, x, counts.name); rows["c"] != "" || rows["a"] != "3 3" {
		t.Fatalf("rows = %v", rows)
	}
	// A conflicting append changes no row.
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "a", Seq: 1}}, []eventlog.Record{rec("a", "lost")}); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("stale append: %v", err)
	}
	checkIndex(t, x, s)
	// Another name is another index, held only once built.
	if _, err := x.ReadIndex(ctx, "storetest.other/1", func(string, []byte) error { return nil }); !errors.Is(err, eventlog.ErrNoIndex) {
		t.Fatalf("ReadIndex of another name: %v, want ErrNoIndex", err)
	}
}

func testIndexRebuiltUnderAnotherName(t *testing.T, x eventlog.Indexed, s eventlog.Store) {
	ctx := context.Background()
	if err := x.Index(ctx, counter{name: "storetest.counts/0"}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, []eventlog.Expect{{Stream: "a"}}, rec("a", "1"), rec("a", "2"))
	if err := x.Index(ctx, counts); err != nil {
		t.Fatal(err)
	}
	checkIndex(t, x, s)
	if _, err := x.ReadIndex(ctx, "storetest.counts/0", func(string, []byte) error { return nil }); !errors.Is(err, eventlog.ErrNoIndex) {
		t.Fatalf("ReadIndex of the replaced index: %v, want ErrNoIndex", err)
	}
}

// A fold that fails does not fail the append: the store keeps the index no
// longer, its rows stay as they were, and ReadRows, catching up, meets the
// failure itself.
func testIndexFoldFailure(t *testing.T, x eventlog.Indexed, s eventlog.Store) {
	ctx := context.Background()
	if err := x.Index(ctx, counts); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, []eventlog.Expect{{Stream: "a"}}, rec("a", "1"))
	mustAppend(t, s, []eventlog.Expect{{Stream: "a", Seq: 1}}, rec("a", "poison"))
	mustAppend(t, s, []eventlog.Expect{{Stream: "a", Seq: 2}}, rec("a", "3"))
	rows, last := readIndex(t, x, counts.name)
	if rows["a"] != "1 1" || last != 1 {
		t.Fatalf("after a failed fold the index holds %v up to %d; want its rows before it", rows, last)
	}
	if _, err := eventlog.ReadRows(ctx, s, counts); err == nil || !strings.Contains(err.Error(), "poisoned") {
		t.Fatalf("ReadRows past the poisoned event: %v", err)
	}
	if err := x.Index(ctx, counts); err == nil {
		t.Fatal("Index over a log that does not fold succeeded")
	}
}

func testIndexConcurrentAppends(t *testing.T, x eventlog.Indexed, s eventlog.Store) {
	ctx := context.Background()
	if err := x.Index(ctx, counts); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := fmt.Sprintf("w%d", w%4) // two writers per stream
			for i := 0; i < 20; {
				head, err := s.Head(ctx, stream)
				if err != nil {
					errs <- err
					return
				}
				_, err = s.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: head}}, []eventlog.Record{rec(stream, strconv.Itoa(i))})
				switch {
				case errors.Is(err, eventlog.ErrConflict):
				case err != nil:
					errs <- err
					return
				default:
					i++
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkIndex(t, x, s)
	if rows, _ := readIndex(t, x, counts.name); len(rows) != 4 || !strings.HasPrefix(rows["w0"], "40 ") {
		t.Fatalf("rows = %v", rows)
	}
}

func testIndexKeptByLoadAndPurge(t *testing.T, x eventlog.Indexed, s eventlog.Store) {
	ctx := context.Background()
	if err := x.Index(ctx, counts); err != nil {
		t.Fatal(err)
	}
	if l, ok := s.(eventlog.Loader); ok {
		err := l.Load(ctx, []eventlog.Event{eventOf(rec("l", "1"), 1, 3), eventOf(rec("l", "2"), 2, 4)})
		if err != nil {
			t.Fatal(err)
		}
		checkIndex(t, x, s)
	}
	p, ok := s.(eventlog.Purger)
	if !ok {
		return
	}
	mustAppend(t, s, []eventlog.Expect{{Stream: "s/a"}}, rec("s/a", "1"), rec("s/a", "2"), rec("s/a", "3"))
	before, _ := readIndex(t, x, counts.name)
	_, err := p.Purge(ctx, eventlog.Purge{
		Expect:  []eventlog.Expect{{Stream: "s/a", Seq: 3}, {Stream: "log"}},
		Remove:  []eventlog.SeqRange{{Stream: "s/a", First: 1, Last: 2}},
		Records: []eventlog.Record{rec("log", "purged")},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The rows keep what the fold saw of the removed events; the records
	// the purge appended are folded in.
	rows, _ := readIndex(t, x, counts.name)
	if rows["s/a"] != before["s/a"] || rows["log"] != "1 purged" {
		t.Fatalf("after the purge rows = %v; before it %v", rows, before)
	}
}
