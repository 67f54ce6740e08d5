package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// The runs of new appends gather in the recent bucket, which bbolt keeps
// inside its parent's page, until a commit moves them to positions.
func TestRecentRunsStayInlineUntilMoved(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{})
	defer s.Close()
	moves := 0
	var positionsRoot uint64
	for i := range 200 {
		stream := fmt.Sprintf("session/%036d", i%3) // as long as a session id
		if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: stream, Seq: uint64(i / 3)}},
			[]eventlog.Record{record(stream, "x")}); err != nil {
			t.Fatal(err)
		}
		if err := s.applied(t).View(func(tx *bolt.Tx) error {
			recent := tx.Bucket(recentBucket)
			if recent.Root() != 0 {
				t.Fatalf("after append %d the recent bucket has a page of its own", i)
			}
			if n := recentSize(recent); n > recentLimit {
				t.Fatalf("after append %d the recent bucket holds %d bytes of runs", i, n)
			}
			if recent.Sequence() != uint64(i+1) {
				t.Fatalf("after append %d the recent bucket's sequence is %d, not the last position", i, recent.Sequence())
			}
			// bbolt writes a changed page elsewhere: an append that moves
			// no runs must leave the positions tree's pages as they were.
			root := uint64(tx.Bucket(positionsBucket).Root())
			if k, _ := recent.Cursor().First(); k == nil {
				moves++
			} else if i > 0 && root != positionsRoot {
				t.Fatalf("append %d moved no runs but rewrote the positions bucket", i)
			}
			positionsRoot = root
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// 77 bytes a run: ten runs to a move.
	if moves < 15 || moves > 25 {
		t.Fatalf("recent runs were moved %d times in 200 appends", moves)
	}
}

func TestReadAllFromInsideRuns(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{})
	defer s.Close()
	heads := map[string]uint64{}
	var want []eventlog.Event
	// Enough for runs in both the positions and the recent buckets.
	for i := range 12 {
		want = append(want, appendRuns(t, s, heads)...)
		evs, err := s.Append(context.Background(), []eventlog.Expect{{Stream: "d", Seq: uint64(i)}}, []eventlog.Record{record("d", "single")})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, evs...)
		s.applied(t) // one bbolt commit each, so the last leaves runs in recent
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
	// Whether the last commit left runs in recent depends on how the
	// applier grouped the appends, and a commit that fills recent moves
	// its runs; a small append after such a move leaves one there.
	empty := func(name []byte) (none bool) {
		s.applied(t).View(func(tx *bolt.Tx) error {
			k, _ := tx.Bucket(name).Cursor().First()
			none = k == nil
			return nil
		})
		return none
	}
	for i := 12; empty(recentBucket) && i < 15; i++ {
		if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: "d", Seq: uint64(i)}}, []eventlog.Record{record("d", "single")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range [][]byte{positionsBucket, recentBucket} {
		if empty(name) {
			t.Errorf("no runs in bucket %s", name)
		}
	}
}

// toLayout rewrites the store at path as layout 1 or 2 has it: no recent
// bucket, its runs and last position in positions, a heads bucket; in
// layout 1, one positions entry per event.
func toLayout(t *testing.T, path string, version byte) {
	t.Helper()
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		b, err := (&Store{}).buckets(tx)
		if err != nil {
			return err
		}
		if err := moveRecent(tx, b); err != nil {
			return err
		}
		// Older layouts keep the last position as the positions bucket's
		// sequence.
		if err := tx.Bucket(positionsBucket).SetSequence(tx.Bucket(recentBucket).Sequence()); err != nil {
			return err
		}
		if err := tx.DeleteBucket(recentBucket); err != nil {
			return err
		}
		// They kept each stream's head in a bucket of its own.
		heads, err := tx.CreateBucket(headsBucket)
		if err != nil {
			return err
		}
		if err := tx.Bucket(eventsBucket).ForEach(func(k, _ []byte) error {
			end := bytes.IndexByte(k, 0)
			return heads.Put(bytes.Clone(k[:end]), bytes.Clone(k[end+1:]))
		}); err != nil {
			return err
		}
		if version == 1 {
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
		}
		return tx.Bucket(metaBucket).Put(formatKey, []byte{version})
	})
}

func be64From(k []byte) uint64 {
	var n uint64
	for _, b := range k {
		n = n<<8 | uint64(b)
	}
	return n
}

func TestReadsAndUpgradesOlderLayouts(t *testing.T) {
	for _, version := range []byte{1, 2} {
		t.Run(fmt.Sprint("Layout", version), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			s := mustOpen(t, path, Options{})
			heads := map[string]uint64{}
			want := appendRuns(t, s, heads)
			s.Close()
			toLayout(t, path, version)

			r := mustOpen(t, path, Options{ReadOnly: true})
			if got := readAll(t, r); !sameEvents(got, want) {
				t.Errorf("read-only, a layout %d store returned %d events, want %d", version, len(got), len(want))
			}
			r.Close()
			if v := formatOf(t, path); v != version {
				t.Fatalf("a read-only open changed the layout version to %d", v)
			}

			s = mustOpen(t, path, Options{})
			defer s.Close()
			want = append(want, appendRuns(t, s, heads)...)
			if got := readAll(t, s); !sameEvents(got, want) {
				t.Errorf("layout %d positions followed by new runs: ReadAll returned %d events, want %d", version, len(got), len(want))
			}
			s.Close()
			if v := formatOf(t, path); v != layoutVersion {
				t.Errorf("after a write-open the layout version is %d, want %d", v, layoutVersion)
			}
			rawUpdate(t, path, func(tx *bolt.Tx) error {
				if tx.Bucket(headsBucket) != nil {
					t.Error("after a write-open the heads bucket is still there")
				}
				return nil
			})
		})
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

// runsIn returns the bucket that holds the runs of a small store: recent,
// unless the runs were moved to positions.
func runsIn(tx *bolt.Tx) *bolt.Bucket {
	if k, _ := tx.Bucket(recentBucket).Cursor().First(); k != nil {
		return tx.Bucket(recentBucket)
	}
	return tx.Bucket(positionsBucket)
}

func TestTamperedRuns(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(runs *bolt.Bucket) error
	}{
		{"RunPastTheLast", func(runs *bolt.Bucket) error {
			return runs.Put(be64(6), appendRun(nil, "c", 1, 9))
		}},
		{"RunsOverlap", func(runs *bolt.Bucket) error {
			return runs.Put(be64(2), appendRun(nil, "a", 2, 3))
		}},
		{"RunOfOne", func(runs *bolt.Bucket) error {
			return runs.Put(be64(6), append(eventKey("c", 1), 0, 0, 0, 1))
		}},
		{"RunTooShortForItsEvents", func(runs *bolt.Bucket) error {
			return runs.Put(be64(1), appendRun(nil, "a", 1, 2))
		}},
		{"RunFromSeqZero", func(runs *bolt.Bucket) error {
			return runs.Put(be64(1), appendRun(nil, "a", 0, 3))
		}},
	}
	for _, moved := range []bool{false, true} {
		for _, tt := range tests {
			name := tt.name + "InRecent"
			if moved {
				name = tt.name + "InPositions"
			}
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "events.db")
				s := mustOpen(t, path, Options{})
				appendRuns(t, s, map[string]uint64{})
				s.Close()
				rawUpdate(t, path, func(tx *bolt.Tx) error {
					if moved {
						b, err := (&Store{}).buckets(tx)
						if err != nil {
							return err
						}
						if err := moveRecent(tx, b); err != nil {
							return err
						}
					}
					return tt.tamper(runsIn(tx))
				})
				s = mustOpen(t, path, Options{})
				defer s.Close()
				err := s.ReadAll(context.Background(), 0, func(eventlog.Event) error { return nil })
				if !errors.Is(err, eventlog.ErrCorrupt) {
					t.Errorf("ReadAll: err = %v, want ErrCorrupt", err)
				}
			})
		}
	}
}

// The positions bucket holds runs older than the recent bucket's: one in
// positions that ends before the first in recent begins is a gap, even
// where a run in recent would cover it.
func TestRunsOverlapAcrossBuckets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	appendRuns(t, s, map[string]uint64{})
	s.Close()
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket(positionsBucket).Put(be64(1), appendRun(nil, "a", 1, 2))
	})
	s = mustOpen(t, path, Options{})
	defer s.Close()
	err := s.ReadAll(context.Background(), 0, func(eventlog.Event) error { return nil })
	if !errors.Is(err, eventlog.ErrCorrupt) {
		t.Errorf("ReadAll: err = %v, want ErrCorrupt", err)
	}
}
