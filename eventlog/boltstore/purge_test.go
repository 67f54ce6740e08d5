package boltstore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise/eventlog"
)

// TestPurgeRemovesTheBytesFromTheFile writes a secret many times over
// (enough to fill pages that bbolt then frees), purges it, and checks the
// raw file for it: free pages keep old bytes unless the file is compacted.
func TestPurgeRemovesTheBytesFromTheFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	const secret = "sk-live-TOPSECRET-4242"
	for i := range 200 {
		recs := []eventlog.Record{record("session/x", secret+strings.Repeat(".", i))}
		if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "session/x", Seq: uint64(i)}}, recs); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "agent/a", Seq: uint64(i)}}, []eventlog.Record{record("agent/a", "step")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "session/x", Seq: 200}}, []eventlog.Record{record("session/x", "tombstone")}); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(path); !bytes.Contains(raw, []byte(secret)) {
		t.Fatal("the secret is not in the file before the purge; the test proves nothing")
	}
	_, err := s.Purge(ctx, eventlog.Purge{
		Expect:  []eventlog.Expect{{Stream: "store/vacuum"}},
		Remove:  []eventlog.SeqRange{{Stream: "session/x", First: 1, Last: 200}},
		Records: []eventlog.Record{record("store/vacuum", "removed session/x 1..200")},
	})
	if err != nil {
		t.Fatalf("Purge: %v", err)
	}
	if raw, _ := os.ReadFile(path); bytes.Contains(raw, []byte(secret)) {
		t.Error("the secret is still in the file after the purge")
	}
	if _, err := os.Stat(path + vacuumSuffix); !os.IsNotExist(err) {
		t.Errorf("the compaction file is left beside the store: %v", err)
	}
	// The store goes on under the same handle, and reopens with its gaps.
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "agent/a", Seq: 200}}, []eventlog.Record{record("agent/a", "after")}); err != nil {
		t.Fatalf("append after the purge: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path, Options{})
	defer s.Close()
	evs := readAll(t, s)
	if len(evs) != 203 || evs[0].Position != 2 || evs[len(evs)-1].Position != 403 {
		t.Errorf("after reopening, ReadAll gives %d events from position %d; want 203 (the agent's 201, the tombstone, the record) from 2", len(evs), evs[0].Position)
	}
}

// TestPurgeMarksTheLayout checks that a store with gaps says so, so that a
// build that knows only gapless stores (layout 3) refuses it instead of
// calling the gaps damage: the write-open marked it with layout 5, and the
// purge leaves that mark, which also holds gaps (layout 4), as it is.
func TestPurgeMarksTheLayout(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	for i := range 2 {
		if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "s", Seq: uint64(i)}}, []eventlog.Record{record("s", "x")}); err != nil {
			t.Fatal(err)
		}
	}
	if layout := readLayout(t, s); layout != layoutVersion {
		t.Fatalf("layout before the purge = %d; want %d", layout, layoutVersion)
	}
	_, err := s.Purge(ctx, eventlog.Purge{Expect: []eventlog.Expect{{Stream: "v"}},
		Remove: []eventlog.SeqRange{{Stream: "s", First: 1, Last: 1}}, Records: []eventlog.Record{record("v", "x")}})
	if err != nil {
		t.Fatal(err)
	}
	if layout := readLayout(t, s); layout != layoutVersion {
		t.Errorf("layout after the purge = %d; want %d", layout, layoutVersion)
	}
	s.Close()
}

func readLayout(t *testing.T, s *Store) byte {
	t.Helper()
	var layout byte
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.db.View(func(tx *bolt.Tx) error {
		layout = tx.Bucket(metaBucket).Get(formatKey)[0]
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return layout
}

// TestStaleCompactionFile leaves what a crash during a compaction leaves,
// a partial new file beside the store: the store opens and reads as it
// was, and the next compaction replaces the file and removes it.
func TestStaleCompactionFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	want := fill(t, s, 2, 10)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+vacuumSuffix, []byte("half a bbolt file"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path, Options{})
	defer s.Close()
	if got := readAll(t, s); !sameEvents(got, want) {
		t.Fatalf("with a stale compaction file beside it, the store reads %d events; want %d", len(got), len(want))
	}
	if err := s.Compact(ctx); err != nil {
		t.Fatalf("Compact over a stale compaction file: %v", err)
	}
	if _, err := os.Stat(path + vacuumSuffix); !os.IsNotExist(err) {
		t.Errorf("the compaction file is left: %v", err)
	}
	if got := readAll(t, s); !sameEvents(got, want) {
		t.Errorf("after the compaction the store reads %d events; want %d", len(got), len(want))
	}
}
