package boltstore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise/eventlog"
)

// appendRuns makes an append whose records form runs of several lengths:
// a, a, a, b, a, c, c, c, c, b.
func appendRuns(t *testing.T, s *Store, heads map[string]uint64) []eventlog.Event {
	t.Helper()
	streams := []string{"a", "a", "a", "b", "a", "c", "c", "c", "c", "b"}
	var recs []eventlog.Record
	for i, st := range streams {
		recs = append(recs, record(st, st+string(rune('0'+i))))
	}
	expect := []eventlog.Expect{{Stream: "a", Seq: heads["a"]}, {Stream: "b", Seq: heads["b"]}, {Stream: "c", Seq: heads["c"]}}
	evs, err := s.Append(context.Background(), expect, recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		heads[ev.Stream] = ev.Seq
	}
	return evs
}

func TestReadAllFromInsideRuns(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{})
	defer s.Close()
	heads := map[string]uint64{}
	var want []eventlog.Event
	for i := range 3 {
		want = append(want, appendRuns(t, s, heads)...)
		evs, err := s.Append(context.Background(), []eventlog.Expect{{Stream: "d", Seq: uint64(i)}}, []eventlog.Record{record("d", "single")})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, evs...)
	}
	for from := range want {
		var got []eventlog.Event
		if err := s.ReadAll(context.Background(), uint64(from+1), func(ev eventlog.Event) error {
			ev.Payload = append([]byte(nil), ev.Payload...)
			got = append(got, ev)
			return nil
		}); err != nil {
			t.Fatalf("ReadAll from %d: %v", from+1, err)
		}
		if !sameEvents(got, want[from:]) {
			t.Fatalf("ReadAll from %d returned %d events, want the last %d written", from+1, len(got), len(want)-from)
		}
	}
}

// toLayout1 rewrites the positions of the store at path as layout 1 has
// them, one entry per event, and marks the store as layout 1.
func toLayout1(t *testing.T, path string) {
	t.Helper()
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		p := tx.Bucket(positionsBucket)
		type entry struct{ k, v []byte }
		var entries []entry
		if err := p.ForEach(func(k, v []byte) error {
			r, ok := splitRun(v, "")
			if !ok {
				return errors.New("malformed run")
			}
			start := be64From(k)
			for i := range r.count {
				entries = append(entries, entry{be64(start + i), eventKey(r.stream, r.seq+i)})
			}
			return nil
		}); err != nil {
			return err
		}
		for _, e := range entries {
			if err := p.Put(e.k, e.v); err != nil {
				return err
			}
		}
		return tx.Bucket(metaBucket).Put(formatKey, []byte{1})
	})
}

func be64From(k []byte) uint64 {
	var n uint64
	for _, b := range k {
		n = n<<8 | uint64(b)
	}
	return n
}

func TestReadsAndUpgradesLayout1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	heads := map[string]uint64{}
	want := appendRuns(t, s, heads)
	s.Close()
	toLayout1(t, path)

	r := mustOpen(t, path, Options{ReadOnly: true})
	if got := readAll(t, r); !sameEvents(got, want) {
		t.Errorf("read-only, a layout 1 store returned %d events, want %d", len(got), len(want))
	}
	r.Close()
	if v := formatOf(t, path); v != 1 {
		t.Fatalf("a read-only open changed the layout version to %d", v)
	}

	s = mustOpen(t, path, Options{})
	defer s.Close()
	want = append(want, appendRuns(t, s, heads)...)
	if got := readAll(t, s); !sameEvents(got, want) {
		t.Errorf("layout 1 positions followed by runs: ReadAll returned %d events, want %d", len(got), len(want))
	}
	s.Close()
	if v := formatOf(t, path); v != layoutVersion {
		t.Errorf("after a write-open the layout version is %d, want %d", v, layoutVersion)
	}
}

func formatOf(t *testing.T, path string) byte {
	t.Helper()
	var v byte
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		v = tx.Bucket(metaBucket).Get(formatKey)[0]
		return nil
	})
	return v
}

func TestTamperedRuns(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(tx *bolt.Tx) error
	}{
		{"RunPastTheLast", func(tx *bolt.Tx) error {
			return tx.Bucket(positionsBucket).Put(be64(6), appendRun(nil, "c", 1, 9))
		}},
		{"RunsOverlap", func(tx *bolt.Tx) error {
			return tx.Bucket(positionsBucket).Put(be64(2), appendRun(nil, "a", 2, 3))
		}},
		{"RunOfOne", func(tx *bolt.Tx) error {
			return tx.Bucket(positionsBucket).Put(be64(6), append(eventKey("c", 1), 0, 0, 0, 1))
		}},
		{"RunTooShortForItsEvents", func(tx *bolt.Tx) error {
			return tx.Bucket(positionsBucket).Put(be64(1), appendRun(nil, "a", 1, 2))
		}},
		{"RunFromSeqZero", func(tx *bolt.Tx) error {
			return tx.Bucket(positionsBucket).Put(be64(1), appendRun(nil, "a", 0, 3))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			s := mustOpen(t, path, Options{})
			appendRuns(t, s, map[string]uint64{})
			s.Close()
			rawUpdate(t, path, tt.tamper)
			s = mustOpen(t, path, Options{})
			defer s.Close()
			err := s.ReadAll(context.Background(), 0, func(eventlog.Event) error { return nil })
			if !errors.Is(err, eventlog.ErrCorrupt) {
				t.Errorf("ReadAll: err = %v, want ErrCorrupt", err)
			}
		})
	}
}
