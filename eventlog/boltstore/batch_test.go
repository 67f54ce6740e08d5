package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
)

// storedValues returns, for each key of stream in the events bucket, the
// seq it names and how many events its value holds.
func storedValues(t *testing.T, s *Store, stream string) [][2]uint64 {
	t.Helper()
	var out [][2]uint64
	prefix := []byte(stream + "\x00")
	if err := s.applied(t).View(func(tx *bolt.Tx) error {
		c := tx.Bucket(eventsBucket).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			n, err := valueCount(v)
			if err != nil {
				return err
			}
			out = append(out, [2]uint64{binary.BigEndian.Uint64(k[len(prefix):]), n})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// appendBatches appends to stream: a batch of three, one event alone, a
// batch of five, and returns the events.
func appendBatches(t *testing.T, s *Store, stream string) []eventlog.Event {
	t.Helper()
	var all []eventlog.Event
	for _, n := range []int{3, 1, 5} {
		var recs []eventlog.Record
		for range n {
			recs = append(recs, record(stream, fmt.Sprintf("event %d", len(all)+len(recs)+1)))
		}
		evs, err := s.Append(context.Background(), []eventlog.Expect{{Stream: stream, Seq: uint64(len(all))}}, recs)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
	}
	return all
}

func TestAppendStoresABatchUnderItsFirstKey(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{})
	defer s.Close()
	want := appendBatches(t, s, "s")
	if got, vals := storedValues(t, s, "s"), [][2]uint64{{1, 3}, {4, 1}, {5, 5}}; fmt.Sprint(got) != fmt.Sprint(vals) {
		t.Fatalf("stored values (first seq, events) = %v, want %v", got, vals)
	}
	// A single event is stored as an envelope alone, as before batches.
	if err := s.applied(t).View(func(tx *bolt.Tx) error {
		v := tx.Bucket(eventsBucket).Get(eventKey("s", 4))
		if _, err := decodeEvent("s", 4, v); err != nil {
			return fmt.Errorf("the value of s#4 is not an envelope: %w", err)
		}
		if v := tx.Bucket(eventsBucket).Get(eventKey("s", 1)); v[0] != batchMarker {
			return fmt.Errorf("the value of s#1 begins with %#x, not a batch", v[0])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if head, err := s.Head(context.Background(), "s"); err != nil || head != 9 {
		t.Errorf("Head = %d, %v; want 9", head, err)
	}
	// Reading from every seq, and from past the head.
	for from := 1; from <= len(want)+1; from++ {
		var got []eventlog.Event
		if err := s.ReadStream(context.Background(), "s", uint64(from), func(ev eventlog.Event) error {
			ev.Payload = bytes.Clone(ev.Payload)
			got = append(got, ev)
			return nil
		}); err != nil {
			t.Fatalf("ReadStream from %d: %v", from, err)
		}
		if !sameEvents(got, want[from-1:]) {
			t.Fatalf("ReadStream from %d returned %d events, want %d", from, len(got), len(want)-from+1)
		}
		got = got[:0]
		if err := s.ReadAll(context.Background(), uint64(from), func(ev eventlog.Event) error {
			ev.Payload = bytes.Clone(ev.Payload)
			got = append(got, ev)
			return nil
		}); err != nil {
			t.Fatalf("ReadAll from %d: %v", from, err)
		}
		if !sameEvents(got, want[from-1:]) {
			t.Fatalf("ReadAll from %d returned %d events, want %d", from, len(got), len(want)-from+1)
		}
	}
	var infos []eventlog.StreamInfo
	if err := s.Streams(context.Background(), "", func(i eventlog.StreamInfo) error { infos = append(infos, i); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Head != 9 {
		t.Errorf("Streams = %v, want s at 9", infos)
	}
}

// An append of more than batchLimit bytes of envelopes to one stream is
// stored in several batches, read back as one run.
func TestLargeAppendSplitsIntoBatches(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{})
	defer s.Close()
	var recs []eventlog.Record
	for i := range 2000 {
		recs = append(recs, record("s", fmt.Sprintf("%d %s", i, strings.Repeat("x", 300))))
	}
	want, err := s.Append(ctx, []eventlog.Expect{{Stream: "s"}}, recs)
	if err != nil {
		t.Fatal(err)
	}
	vals := storedValues(t, s, "s")
	if len(vals) < 2 {
		t.Fatalf("2,000 events of 300 bytes are stored in %d values", len(vals))
	}
	next := uint64(1)
	for _, v := range vals {
		if v[0] != next {
			t.Fatalf("values %v do not follow each other", vals)
		}
		next += v[1]
	}
	if !sameEvents(readStream(t, s, "s"), want) || !sameEvents(readAll(t, s), want) {
		t.Error("the events read back differ from those appended")
	}
	if head, err := s.Head(ctx, "s"); err != nil || head != 2000 {
		t.Errorf("Head = %d, %v; want 2000", head, err)
	}
}

// A purge of part of a batch keeps the rest as a batch under the key of
// its first event, and a rewrite inside a batch changes that event only.
func TestPurgePartOfABatch(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	evs := appendBatches(t, s, "s") // values at 1 (3), 4 (1), 5 (5)
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "t"}}, []eventlog.Record{record("t", "1")}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Purge(ctx, eventlog.Purge{
		Expect:  []eventlog.Expect{{Stream: "v"}},
		Remove:  []eventlog.SeqRange{{Stream: "s", First: 2, Last: 6}},
		Rewrite: []eventlog.Rewrite{{Stream: "s", Seq: 8, Payload: []byte("rewritten")}},
		Records: []eventlog.Record{record("v", "x")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, vals := storedValues(t, s, "s"), [][2]uint64{{1, 1}, {7, 3}}; fmt.Sprint(got) != fmt.Sprint(vals) {
		t.Fatalf("stored values after the purge = %v, want %v", got, vals)
	}
	want := append([]eventlog.Event{evs[0]}, evs[6:]...)
	want[2].Payload = []byte("rewritten")
	for _, reopen := range []bool{false, true} {
		if reopen {
			s.Close()
			s = mustOpen(t, path, Options{})
		}
		if got := readStream(t, s, "s"); !sameEvents(got, want) {
			t.Errorf("after the purge (reopened %t) ReadStream returned %v", reopen, got)
		}
		var got []eventlog.Event
		if err := s.ReadStream(ctx, "s", 3, func(ev eventlog.Event) error { got = append(got, ev); return nil }); err != nil || len(got) != 3 || got[0].Seq != 7 {
			t.Errorf("ReadStream from a purged seq returned %d events, %v", len(got), err)
		}
		all := readAll(t, s)
		if len(all) != 6 || all[1].Seq != 7 || all[3].Seq != 9 {
			t.Errorf("ReadAll after the purge returned %v", all)
		}
	}
	// A purge must name stored events only.
	_, err = s.Purge(ctx, eventlog.Purge{Expect: []eventlog.Expect{{Stream: "v", Seq: 1}},
		Remove: []eventlog.SeqRange{{Stream: "s", First: 5, Last: 7}}, Records: []eventlog.Record{record("v", "y")}})
	if err == nil || !strings.Contains(err.Error(), "s#5 is not stored") {
		t.Errorf("purging removed events: err = %v, want s#5 is not stored", err)
	}
	s.Close()
}

// Load writes batches as an append would, and keeps the caller's events
// as they were.
func TestLoadWritesBatches(t *testing.T) {
	ctx := context.Background()
	src := mustOpen(t, filepath.Join(t.TempDir(), "src.db"), Options{})
	defer src.Close()
	want := appendBatches(t, src, "s")
	evs := readAll(t, src)
	payloads := make([][]byte, len(evs))
	for i, ev := range evs {
		payloads[i] = ev.Payload
	}
	dst := mustOpen(t, filepath.Join(t.TempDir(), "dst.db"), Options{})
	defer dst.Close()
	if err := dst.Load(ctx, evs); err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if &ev.Payload[0] != &payloads[i][0] {
			t.Fatalf("Load changed the Payload of the event %d it was given", i)
		}
	}
	if got := storedValues(t, dst, "s"); len(got) != 1 || got[0] != [2]uint64{1, 9} {
		t.Errorf("loaded values = %v, want one batch of 9", got)
	}
	if !sameEvents(readAll(t, dst), want) {
		t.Error("the loaded events read back differ")
	}
}

// A layout 3 or 4 store holds one envelope a key; a write-open marks it
// with layout 5 and keeps its last position, and new appends put batches
// beside the old values.
func TestUpgradesPerEventLayouts(t *testing.T) {
	ctx := context.Background()
	for _, version := range []byte{3, 4} {
		t.Run(fmt.Sprint("Layout", version), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			s := mustOpen(t, path, Options{})
			want := appendBatches(t, s, "s")
			s.Close()
			// Store every event alone, as older builds did.
			rawUpdate(t, path, func(tx *bolt.Tx) error {
				b := tx.Bucket(eventsBucket)
				var keys [][]byte
				var envs [][]byte
				if err := b.ForEach(func(k, v []byte) error {
					it, err := newValueIter(v)
					if err != nil {
						return err
					}
					first := binary.BigEndian.Uint64(k[len(k)-8:])
					keys = append(keys, bytes.Clone(k))
					for i := uint64(0); it.left > 0; i++ {
						env, err := it.next()
						if err != nil {
							return err
						}
						envs = append(envs, eventKey(string(k[:len(k)-9]), first+i), bytes.Clone(env))
					}
					return nil
				}); err != nil {
					return err
				}
				for _, k := range keys {
					if err := b.Delete(k); err != nil {
						return err
					}
				}
				for i := 0; i < len(envs); i += 2 {
					if err := b.Put(envs[i], envs[i+1]); err != nil {
						return err
					}
				}
				return tx.Bucket(metaBucket).Put(formatKey, []byte{version})
			})
			r := mustOpen(t, path, Options{ReadOnly: true})
			if got := readStream(t, r, "s"); !sameEvents(got, want) {
				t.Errorf("read-only, a layout %d store returned %d events", version, len(got))
			}
			r.Close()
			if v := formatOf(t, path); v != version {
				t.Fatalf("a read-only open changed the layout version to %d", v)
			}
			s = mustOpen(t, path, Options{})
			more, err := s.Append(ctx, []eventlog.Expect{{Stream: "s", Seq: 9}}, []eventlog.Record{record("s", "10"), record("s", "11")})
			if err != nil {
				t.Fatal(err)
			}
			if more[0].Position != 10 {
				t.Errorf("the first append after the upgrade got position %d, want 10", more[0].Position)
			}
			want = append(want, more...)
			if got := readAll(t, s); !sameEvents(got, want) {
				t.Errorf("after the upgrade ReadAll returned %d events, want %d", len(got), len(want))
			}
			if got := storedValues(t, s, "s"); len(got) != 10 || got[9] != [2]uint64{10, 2} {
				t.Errorf("stored values = %v, want nine alone, then a batch of two", got)
			}
			s.Close()
			if v := formatOf(t, path); v != layoutVersion {
				t.Errorf("after a write-open the layout version is %d, want %d", v, layoutVersion)
			}
		})
	}
}

// Reading a batch allocates nothing per event: the events handed to the
// callback alias the mapping.
func TestReadingABatchAllocatesNothingPerEvent(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{})
	defer s.Close()
	read := func(n int) float64 {
		stream := fmt.Sprintf("session/%d", n)
		var recs []eventlog.Record
		for range n {
			// Of a type of the schema, whose name decoding interns.
			rec := record(stream, strings.Repeat("x", 200))
			rec.Type = schema.Types()[0]
			recs = append(recs, rec)
		}
		if _, err := s.Append(ctx, []eventlog.Expect{{Stream: stream}}, recs); err != nil {
			t.Fatal(err)
		}
		nop := func(eventlog.Event) error { return nil }
		return testing.AllocsPerRun(20, func() {
			if err := s.ReadStream(ctx, stream, 0, nop); err != nil {
				t.Fatal(err)
			}
			if err := s.ReadAll(ctx, 0, nop); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := read(10), read(1000)
	if large > small+10 {
		t.Errorf("reading 1,000 events allocates %.0f times, 10 events %.0f", large, small)
	}
}

// FuzzBatchValue stores arbitrary bytes as the value of a stream's first
// key, where a batch of three events was, as a damaged file would hold
// them: reads must return what they can and then an error matching
// ErrCorrupt at the stream, never panic, and never return an event that
// is not the one its seq names.
func FuzzBatchValue(f *testing.F) {
	s := mustOpenF(f)
	recs := []eventlog.Record{record("s", "1"), record("s", "2"), record("s", "3")}
	if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: "s"}}, recs); err != nil {
		f.Fatal(err)
	}
	var good []byte
	if err := s.applied(f).View(func(tx *bolt.Tx) error {
		good = bytes.Clone(tx.Bucket(eventsBucket).Get(eventKey("s", 1)))
		return nil
	}); err != nil {
		f.Fatal(err)
	}
	s.Close()
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(append(bytes.Clone(good), 0))
	f.Add(good[batchHeader:])
	f.Fuzz(func(t *testing.T, value []byte) {
		path := filepath.Join(t.TempDir(), "events.db")
		s := mustOpen(t, path, Options{})
		if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: "s"}}, recs); err != nil {
			t.Fatal(err)
		}
		if err := s.applied(t).Update(func(tx *bolt.Tx) error {
			return tx.Bucket(eventsBucket).Put(eventKey("s", 1), value)
		}); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		check := func(what string, err error) {
			var ee *eventlog.EventError
			if err != nil && (!errors.Is(err, eventlog.ErrCorrupt) || errors.As(err, &ee) && ee.Stream != "s") {
				t.Fatalf("%s: %v, not ErrCorrupt at s", what, err)
			}
		}
		seq := uint64(1)
		check("ReadStream", s.ReadStream(context.Background(), "s", 0, func(ev eventlog.Event) error {
			if ev.Seq != seq || string(ev.Payload) != fmt.Sprint(seq) {
				t.Fatalf("ReadStream returned %s#%d %q as the event %d", ev.Stream, ev.Seq, ev.Payload, seq)
			}
			seq++
			return nil
		}))
		check("ReadAll", s.ReadAll(context.Background(), 0, func(eventlog.Event) error { return nil }))
		_, err := s.Head(context.Background(), "s")
		check("Head", err)
	})
}

func mustOpenF(f *testing.F) *Store {
	s, err := Open(filepath.Join(f.TempDir(), "events.db"), Options{})
	if err != nil {
		f.Fatal(err)
	}
	return s
}

// A large append is stored mostly in big batches, yet the appends after it,
// to its stream and to the stream before it, rewrite leaves of small
// batches only: bbolt leaves the big ones in leaves of their own, whether
// the append makes an odd or even number of them.
func TestAppendsAfterALargeAppendStayCheap(t *testing.T) {
	for _, large := range []int{10_000, 10_850, 11_700, 12_550} {
		t.Run(fmt.Sprint(large), func(t *testing.T) { testAppendsAfterALargeAppend(t, large) })
	}
}

func testAppendsAfterALargeAppend(t *testing.T, large int) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{NoSync: true})
	defer s.Close()
	heads := map[string]uint64{}
	appendTo := func(stream string, n int) {
		t.Helper()
		recs := make([]eventlog.Record, n)
		for i := range recs {
			recs[i] = record(stream, fmt.Sprintf("%s %d %s", stream, heads[stream]+uint64(i)+1, strings.Repeat("x", 300)))
		}
		evs, err := s.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: heads[stream]}}, recs)
		if err != nil {
			t.Fatal(err)
		}
		heads[stream] = evs[len(evs)-1].Seq
	}
	appendTo("a", 1)
	appendTo("s", large)
	if vals := storedValues(t, s, "s"); len(vals) > large/200 {
		t.Fatalf("%d events of 300 bytes are stored in %d values", large, len(vals))
	}
	for _, stream := range []string{"s", "a"} {
		for i := range 10 {
			before := pageAlloc(t, s)
			appendTo(stream, 1)
			if bytes := pageAlloc(t, s) - before; bytes > 32<<10 {
				t.Errorf("append %d to %s after the large one allocates %d bytes of pages", i+1, stream, bytes)
			}
		}
	}
	if got := readStream(t, s, "s"); len(got) != int(heads["s"]) {
		t.Errorf("ReadStream returned %d events, want %d", len(got), heads["s"])
	}
}

// pageAlloc returns the bytes of pages the store's transactions have
// allocated.
func pageAlloc(tb testing.TB, s *Store) int64 {
	stats := s.applied(tb).Stats().TxStats
	return stats.GetPageAlloc()
}
