package boltstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/storetest"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// heldRows returns the rows of ix that s holds and their last position.
func heldRows(t *testing.T, s *Store, ix eventlog.Indexer) (map[string]string, uint64) {
	t.Helper()
	rows := map[string]string{}
	last, err := s.ReadIndex(context.Background(), ix.Name(), func(key string, value []byte) error {
		rows[key] = string(value)
		return nil
	})
	if err != nil {
		t.Fatalf("ReadIndex: %v", err)
	}
	return rows, last
}

// foldedRows returns what ix makes of the whole log of s, folded by
// ReadRows over a copy in a store that keeps no index.
func foldedRows(t *testing.T, s *Store, ix eventlog.Indexer) map[string]string {
	t.Helper()
	m := eventlog.NewMemoryStore()
	defer m.Close()
	if err := m.Load(context.Background(), readAll(t, s)); err != nil {
		t.Fatal(err)
	}
	rows, err := eventlog.ReadRows(context.Background(), struct{ eventlog.Store }{m}, ix)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range rows {
		out[k] = string(v)
	}
	return out
}

func lastOf(t *testing.T, s *Store) uint64 {
	t.Helper()
	all := readAll(t, s)
	return all[len(all)-1].Position
}

func mustIndex(t *testing.T, s *Store, ix eventlog.Indexer) {
	t.Helper()
	if err := s.Index(context.Background(), ix); err != nil {
		t.Fatal(err)
	}
}

// txID returns the id of the store's last committed transaction.
func txID(t *testing.T, s *Store) int {
	t.Helper()
	var id int
	if err := s.view(func(tx *bolt.Tx, _ *guard) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestIndexSurvivesReopenAndCompaction closes and reopens a store that
// keeps an index, read-only and for writing, and purges it, which
// compacts the file: the rows are there each time.
func TestIndexSurvivesReopenAndCompaction(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	mustIndex(t, s, storetest.Counts)
	fill(t, s, 3, 40)
	want, wantLast := heldRows(t, s, storetest.Counts)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	ro := mustOpen(t, path, Options{ReadOnly: true})
	if rows, last := heldRows(t, ro, storetest.Counts); !maps.Equal(rows, want) || last != wantLast {
		t.Fatalf("read-only reopen: rows %v up to %d; before closing %v up to %d", rows, last, want, wantLast)
	}
	if err := ro.Index(ctx, storetest.Counts); !errors.Is(err, eventlog.ErrReadOnly) {
		t.Fatalf("Index on a read-only store: %v, want ErrReadOnly", err)
	}
	ro.Close()

	s = mustOpen(t, path, Options{})
	defer s.Close()
	before := txID(t, s)
	mustIndex(t, s, storetest.Counts)
	if after := txID(t, s); after != before {
		t.Fatalf("Index over rows already up to date committed %d transactions", after-before)
	}
	if _, err := s.Purge(ctx, eventlog.Purge{
		Expect:  []eventlog.Expect{{Stream: "stream/0", Seq: 40}, {Stream: "log"}},
		Remove:  []eventlog.SeqRange{{Stream: "stream/0", First: 1, Last: 10}},
		Records: []eventlog.Record{record("log", "purged")},
	}); err != nil {
		t.Fatal(err)
	}
	want["log"] = "1 purged"
	if rows, last := heldRows(t, s, storetest.Counts); !maps.Equal(rows, want) || last != lastOf(t, s) {
		t.Fatalf("after a purge and its compaction: rows %v up to %d, want %v up to %d", rows, last, want, lastOf(t, s))
	}
	// Still kept after the compaction swapped the file.
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "log", Seq: 1}}, []eventlog.Record{record("log", "after")}); err != nil {
		t.Fatal(err)
	}
	if rows, last := heldRows(t, s, storetest.Counts); rows["log"] != "2 after" || last != lastOf(t, s) {
		t.Fatalf("an append after the compaction: rows %v up to %d", rows, last)
	}
}

// TestIndexCatchesUpOnAWriterThatKeptNone appends to a store with rows
// through an open that never calls Index, as an older build does: the
// rows lag, readers catch up, and the next Index folds what was missed.
func TestIndexCatchesUpOnAWriterThatKeptNone(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	mustIndex(t, s, projection.SessionIndex)
	appendSessions(t, s, 0, 5, 3)
	_, keptLast := heldRows(t, s, projection.SessionIndex)
	s.Close()

	s = mustOpen(t, path, Options{}) // no Index: a writer keeping none
	appendSessions(t, s, 3, 8, 2)
	if _, last := heldRows(t, s, projection.SessionIndex); last != keptLast {
		t.Fatalf("a writer keeping no index moved the rows from %d to %d", keptLast, last)
	}
	rows, err := eventlog.ReadRows(ctx, s, projection.SessionIndex)
	if err != nil {
		t.Fatal(err)
	}
	want := foldedRows(t, s, projection.SessionIndex)
	if got := stringRows(rows); !maps.Equal(got, want) {
		t.Fatalf("ReadRows over lagging rows = %v\nthe log folds to %v", got, want)
	}
	s.Close()

	s = mustOpen(t, path, Options{})
	defer s.Close()
	mustIndex(t, s, projection.SessionIndex)
	if rows, last := heldRows(t, s, projection.SessionIndex); !maps.Equal(rows, want) || last != lastOf(t, s) {
		t.Fatalf("after Index the rows = %v up to %d\nthe log folds to %v up to %d", rows, last, want, lastOf(t, s))
	}
	if len(want) != 8 {
		t.Fatalf("the log folds to %d sessions, want 8", len(want))
	}
}

func stringRows(rows map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range rows {
		out[k] = string(v)
	}
	return out
}

// appendSessions appends, for sessions from to to-1, a SessionCreated
// unless the session exists, then msgs messages, one append each.
func appendSessions(t *testing.T, s *Store, from, to, msgs int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < to; i++ {
		id := fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)
		stream := "session/" + id
		head, err := s.Head(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		if head == 0 {
			rec, err := schema.NewRecord(stream, &schema.SessionCreated{ID: id, Cwd: "/w"}, int64(i+1), "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Append(ctx, []eventlog.Expect{{Stream: stream}}, []eventlog.Record{rec}); err != nil {
				t.Fatal(err)
			}
			head = 1
		}
		for range msgs {
			m := schema.Message{UUID: fmt.Sprint(head), Role: "user", Content: []schema.Block{{Type: "text", Text: "m"}}}
			rec, err := schema.NewRecord(stream, &schema.MessageAppended{Message: m}, int64(i+100), "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: head}}, []eventlog.Record{rec}); err != nil {
				t.Fatal(err)
			}
			head++
		}
	}
}

// TestGroupFoldsOnlyWhatCommits commits one group in which a request
// conflicts and one fails to fold: the rows hold the requests before the
// failed fold, and the store keeps the index no longer.
func TestGroupFoldsOnlyWhatCommits(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{})
	defer s.Close()
	mustIndex(t, s, storetest.Counts)
	s.commitGroup([]*appendReq{
		request(ctx, []eventlog.Expect{{Stream: "a"}}, record("a", "a1")),
		request(ctx, []eventlog.Expect{{Stream: "a"}}, record("a", "lost")), // conflicts
		request(ctx, []eventlog.Expect{{Stream: "b"}}, record("b", "b1")),
	}, nil)
	if rows, last := heldRows(t, s, storetest.Counts); !maps.Equal(rows, map[string]string{"a": "1 a1", "b": "1 b1"}) || last != 2 {
		t.Fatalf("after a group with a conflict the rows = %v up to %d", rows, last)
	}
	group := []*appendReq{
		request(ctx, []eventlog.Expect{{Stream: "a", Seq: 1}}, record("a", "a2")),
		request(ctx, []eventlog.Expect{{Stream: "b", Seq: 1}}, record("b", "poison")),
		request(ctx, []eventlog.Expect{{Stream: "c"}}, record("c", "c1")),
	}
	s.commitGroup(group, nil)
	for i, r := range group {
		if r.err != nil {
			t.Fatalf("request %d: a failed fold failed the append: %v", i, r.err)
		}
	}
	if rows, last := heldRows(t, s, storetest.Counts); !maps.Equal(rows, map[string]string{"a": "2 a2", "b": "1 b1"}) || last != 3 {
		t.Fatalf("after a group with a failed fold the rows = %v up to %d", rows, last)
	}
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "c", Seq: 1}}, []eventlog.Record{record("c", "c2")}); err != nil {
		t.Fatal(err)
	}
	if _, last := heldRows(t, s, storetest.Counts); last != 3 {
		t.Fatalf("an append after a failed fold moved the rows to %d", last)
	}
}

// TestIndexPagesPerAppend measures the pages an append to one session
// allocates, on stores of many sessions with and without the session
// index kept: keeping it must cost only the path from the rows' root to
// the leaf of the one row changed, as the index's name and last position
// live in the page every commit writes anyway.
func TestIndexPagesPerAppend(t *testing.T) {
	const sessions, appends = 2000, 50
	pages := map[bool]float64{}
	var depth int
	for _, kept := range []bool{false, true} {
		s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{NoSync: true})
		if kept {
			mustIndex(t, s, projection.SessionIndex)
		}
		appendSessions(t, s, 0, sessions, 1)
		before := pageCount(t, s)
		appendSessions(t, s, sessions/2, sessions/2+1, appends)
		pages[kept] = float64(pageCount(t, s)-before) / appends
		if kept {
			rows, last := heldRows(t, s, projection.SessionIndex)
			if len(rows) != sessions || last != lastOf(t, s) {
				t.Fatalf("the index holds %d rows up to %d", len(rows), last)
			}
			if err := s.applied(t).View(func(tx *bolt.Tx) error {
				depth = tx.Bucket(indexBucket).Stats().Depth
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
	}
	t.Logf("pages allocated per append to one of %d sessions: %.2f without the index, %.2f with it (rows %d deep)",
		sessions, pages[false], pages[true], depth)
	if extra := pages[true] - pages[false]; extra > float64(depth)+0.25 {
		t.Fatalf("keeping the index costs %.2f more pages an append; the path to a row is %d", extra, depth)
	}
}

// pageCount returns the pages the store's transactions have allocated.
func pageCount(tb testing.TB, s *Store) int64 {
	stats := s.applied(tb).Stats().TxStats
	return stats.GetPageCount()
}
