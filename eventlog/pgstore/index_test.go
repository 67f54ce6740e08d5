package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
)

// tally is the tests' Indexer: per stream, how many events it holds.
type tally struct{}

func (tally) Name() string { return "pgstore.tally/1" }

func (tally) Apply(rows eventlog.Rows, ev eventlog.Event) error {
	row, err := rows.Get(ev.Stream)
	if err != nil {
		return err
	}
	n := 0
	if row != nil {
		if n, err = strconv.Atoi(string(row)); err != nil {
			return fmt.Errorf("row %q: %w", row, err)
		}
	}
	rows.Put(ev.Stream, strconv.AppendInt(nil, int64(n+1), 10))
	return nil
}

// storedRows returns the tally rows s holds and the position they hold
// events up to.
func storedRows(t *testing.T, s *pgstore.Store) (map[string]string, uint64) {
	t.Helper()
	rows := map[string]string{}
	last, err := s.ReadIndex(context.Background(), tally{}.Name(), func(key string, value []byte) error {
		rows[key] = string(value)
		return nil
	})
	if err != nil {
		t.Fatalf("ReadIndex: %v", err)
	}
	return rows, last
}

// foldedRows is the tally of the whole log of s, folded afresh.
func foldedRows(t *testing.T, s eventlog.Store) map[string]string {
	t.Helper()
	fold := eventlog.NewFold(func(string) ([]byte, error) { return nil, nil })
	for _, ev := range readAll(t, s, 1) {
		if err := fold.Apply(tally{}, ev); err != nil {
			t.Fatal(err)
		}
	}
	rows := map[string]string{}
	_ = fold.Changed(func(key string, value []byte) error {
		rows[key] = string(value)
		return nil
	})
	return rows
}

// lastPosition is the position of the last event of s.
func lastPosition(t *testing.T, s eventlog.Store) uint64 {
	t.Helper()
	evs := readAll(t, s, 1)
	return evs[len(evs)-1].Position
}

// checkRows checks that s holds the tally of its whole log, up to its last
// event.
func checkRows(t *testing.T, s *pgstore.Store) {
	t.Helper()
	rows, last := storedRows(t, s)
	if want := foldedRows(t, s); !maps.Equal(rows, want) {
		t.Fatalf("stored rows = %v\nthe log folds to %v", rows, want)
	}
	if end := lastPosition(t, s); last != end {
		t.Fatalf("the rows hold events up to %d; the log ends at %d", last, end)
	}
}

// appendN appends n events to stream, one append each.
func appendN(t *testing.T, s eventlog.Store, stream string, n int) {
	t.Helper()
	ctx := context.Background()
	for range n {
		h := head(t, s, stream)
		if _, err := s.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: h}}, []eventlog.Record{rec(stream, "x")}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIndexSurvivesReopen(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	s := db.open(t, pgstore.Options{})
	if err := s.Index(ctx, tally{}); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "a", 3)
	appendN(t, s, "b", 2)
	before, beforeLast := storedRows(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []pgstore.Options{{ReadOnly: true}, {}} {
		s := db.open(t, opts)
		rows, last := storedRows(t, s)
		if !maps.Equal(rows, before) || last != beforeLast || rows["a"] != "3" {
			t.Fatalf("reopened (read-only %v): rows %v up to %d; before closing %v up to %d", opts.ReadOnly, rows, last, before, beforeLast)
		}
		checkRows(t, s)
	}
	// The tables are additive: the schema keeps its version, so builds
	// that know nothing of them keep opening the store.
	var version int
	if err := db.admin.QueryRow(ctx, "SELECT version FROM "+db.schema+".reprise_schema_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != pgstore.SchemaVersion {
		t.Fatalf("schema version %d after indexing, want %d", version, pgstore.SchemaVersion)
	}
}

func TestReadIndexOfAStoreThatNeverIndexed(t *testing.T) {
	db := newDB(t)
	s := db.open(t, pgstore.Options{})
	appendN(t, s, "a", 1)
	ro := db.open(t, pgstore.Options{ReadOnly: true})
	for _, s := range []*pgstore.Store{s, ro} {
		_, err := s.ReadIndex(context.Background(), tally{}.Name(), func(string, []byte) error { return nil })
		if !errors.Is(err, eventlog.ErrNoIndex) {
			t.Fatalf("ReadIndex with no index tables: %v, want ErrNoIndex", err)
		}
	}
	if err := ro.Index(context.Background(), tally{}); !errors.Is(err, eventlog.ErrReadOnly) {
		t.Fatalf("Index on a read-only store: %v, want ErrReadOnly", err)
	}
}

// A writer that keeps no index, as an older build, leaves the rows behind
// the log. A write of a store keeping the index folds what they miss when
// it is little; further behind, the rows wait for the next Index, and
// readers fold the rest.
func TestIndexCatchesUpAfterAWriterKeepingNone(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	kept := db.open(t, pgstore.Options{})
	if err := kept.Index(ctx, tally{}); err != nil {
		t.Fatal(err)
	}
	appendN(t, kept, "a", 2)
	older := db.open(t, pgstore.Options{})
	appendN(t, older, "a", 1)
	appendN(t, older, "b", 2)
	if _, last := storedRows(t, kept); last != 2 {
		t.Fatalf("after appends that kept no index, the rows hold events up to %d, want 2", last)
	}
	appendN(t, kept, "c", 1) // folds the three events it missed, then its own
	checkRows(t, kept)

	// Far behind: the append leaves the rows as they are.
	evs := make([]eventlog.Record, 1500)
	for i := range evs {
		evs[i] = rec("d", "x")
	}
	if _, err := older.Append(ctx, []eventlog.Expect{{Stream: "d"}}, evs); err != nil {
		t.Fatal(err)
	}
	appendN(t, kept, "c", 1)
	rows, last := storedRows(t, kept)
	if last != 6 || rows["d"] != "" {
		t.Fatalf("rows lagging 1500 positions: %v up to %d; want them left at 6", rows, last)
	}
	want := foldedRows(t, kept)
	read, err := eventlog.ReadRows(ctx, kept, tally{})
	if err != nil {
		t.Fatal(err)
	}
	if got := stringRows(read); !maps.Equal(got, want) {
		t.Fatalf("ReadRows over lagging rows = %v, want %v", got, want)
	}

	// Reopened with Index, the store folds what was missed.
	if err := kept.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := db.open(t, pgstore.Options{})
	if err := reopened.Index(ctx, tally{}); err != nil {
		t.Fatal(err)
	}
	checkRows(t, reopened)
	if rows, _ := storedRows(t, reopened); rows["d"] != "1500" {
		t.Fatalf("rows after Index = %v", rows)
	}
}

func stringRows(rows map[string][]byte) map[string]string {
	out := make(map[string]string, len(rows))
	for k, v := range rows {
		out[k] = string(v)
	}
	return out
}

// Two stores on one database, each with a pool of its own, as two
// processes have, both keep the index while appending at once to the same
// streams: no row update is lost.
func TestIndexKeptByTwoPools(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	stores := []*pgstore.Store{db.open(t, pgstore.Options{}), db.open(t, pgstore.Options{})}
	for _, s := range stores {
		if err := s.Index(ctx, tally{}); err != nil {
			t.Fatal(err)
		}
	}
	const perWriter = 25
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		s := stores[w%2]
		stream := fmt.Sprintf("s%d", w%3)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; {
				h, err := s.Head(ctx, stream)
				if err != nil {
					errs <- err
					return
				}
				recs := []eventlog.Record{rec(stream, "x"), rec(stream, "y")}
				_, err = s.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: h}}, recs)
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
	for _, s := range stores {
		checkRows(t, s)
	}
	if rows, _ := storedRows(t, stores[0]); rows["s2"] != strconv.Itoa(2*2*perWriter) || len(rows) != 3 {
		t.Fatalf("rows = %v", rows)
	}
}

// Writes fold into the rows with one statement for the rows they change,
// whatever the number of events: a bulk append to one stream changes one
// row, once.
func TestIndexBulkAppendWritesOneRow(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	s := db.open(t, pgstore.Options{})
	if err := s.Index(ctx, tally{}); err != nil {
		t.Fatal(err)
	}
	recs := make([]eventlog.Record, 5000)
	for i := range recs {
		recs[i] = rec("bulk", "x")
	}
	// Counts the row writes the store makes.
	db.exec(t, "CREATE TABLE {schema}.row_writes (key bytea NOT NULL)")
	db.exec(t, `CREATE FUNCTION {schema}.count_row_write() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO {schema}.row_writes VALUES (NEW.key); RETURN NEW; END $$`)
	db.exec(t, `CREATE TRIGGER count_row_write AFTER INSERT OR UPDATE ON {schema}.reprise_index_rows
		FOR EACH ROW EXECUTE FUNCTION {schema}.count_row_write()`)
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "bulk"}}, recs); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "bulk", 1)
	checkRows(t, s)
	var writes int
	if err := db.admin.QueryRow(ctx, "SELECT count(*) FROM "+db.schema+".row_writes").Scan(&writes); err != nil {
		t.Fatal(err)
	}
	if writes != 2 {
		t.Fatalf("a bulk append of %d events, then an append of one, wrote %d rows; want 2", len(recs), writes)
	}
}

// An append to a store that keeps an index makes two round trips, the
// fold's rows read in the first with the counter; so does one that
// creates its stream, and one of many streams. The rows then hold what a
// fold of the whole log makes.
func TestIndexedAppendTakesTwoRoundTrips(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	s := db.open(t, pgstore.Options{})
	if err := s.Index(ctx, tally{}); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "a", 2)
	rec := func(stream string) eventlog.Record {
		return eventlog.Record{Stream: stream, Type: "pgstore.Test", Version: 1, Time: 1, Payload: []byte("x")}
	}
	for _, c := range []struct {
		name   string
		expect []eventlog.Expect
		recs   []eventlog.Record
	}{
		{"one event", []eventlog.Expect{{Stream: "a", Seq: 2}}, []eventlog.Record{rec("a")}},
		{"a new stream", []eventlog.Expect{{Stream: "b", Seq: 0}}, []eventlog.Record{rec("b"), rec("b")}},
		{"three streams", []eventlog.Expect{{Stream: "a", Seq: 3}, {Stream: "b", Seq: 2}, {Stream: "c", Seq: 0}},
			[]eventlog.Record{rec("a"), rec("b"), rec("c")}},
	} {
		trips, err := pgstore.AppendRoundTrips(ctx, s, c.expect, c.recs)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if trips != 2 {
			t.Errorf("%s: %d round trips, want 2", c.name, trips)
		}
	}
	checkRows(t, s)
	if rows, _ := storedRows(t, s); rows["a"] != "4" || rows["b"] != "3" || rows["c"] != "1" {
		t.Fatalf("rows %v, want a 4, b 3, c 1", rows)
	}
}

// countingTally is tally that counts the events it is given.
type countingTally struct{ applied *atomic.Int64 }

func (c countingTally) Name() string { return "pgstore.counting-tally/1" }

func (c countingTally) Apply(rows eventlog.Rows, ev eventlog.Event) error {
	c.applied.Add(1)
	return tally{}.Apply(rows, ev)
}

// A long append to one stream is folded once, and tried ahead for the
// rows it reads on its first few records only: the trial of a long save
// would cost a fold of its own.
func TestLongAppendTriesAFewRecordsAhead(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	s := db.open(t, pgstore.Options{})
	ix := countingTally{applied: new(atomic.Int64)}
	if err := s.Index(ctx, ix); err != nil {
		t.Fatal(err)
	}
	recs := make([]eventlog.Record, 100)
	for i := range recs {
		recs[i] = eventlog.Record{Stream: "a", Type: "pgstore.Test", Version: 1, Time: 1, Payload: []byte("x")}
	}
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "a"}}, recs); err != nil {
		t.Fatal(err)
	}
	if n := ix.applied.Load(); n < 100 || n > 110 {
		t.Errorf("the indexer was given %d events for an append of 100, want the 100 and a few tried ahead", n)
	}
	rows := map[string]string{}
	last, err := s.ReadIndex(ctx, ix.Name(), func(key string, value []byte) error {
		rows[key] = string(value)
		return nil
	})
	if err != nil || rows["a"] != "100" || last != 100 {
		t.Fatalf("rows %v up to %d (%v), want a 100 up to 100", rows, last, err)
	}
}

// total is an Indexer with one row for the whole log: how many events it
// holds. Every append reads and writes that row.
type total struct{}

func (total) Name() string { return "pgstore.total/1" }

func (total) Apply(rows eventlog.Rows, _ eventlog.Event) error {
	row, err := rows.Get("total")
	if err != nil {
		return err
	}
	n := 0
	if row != nil {
		if n, err = strconv.Atoi(string(row)); err != nil {
			return err
		}
	}
	rows.Put("total", strconv.AppendInt(nil, int64(n+1), 10))
	return nil
}

// Stores that write one row at once, as processes sharing a database do,
// each read it in the round trip that takes the counter, never before: no
// write is lost, also when one store keeps no index and the others fold
// what it wrote first.
func TestConcurrentStoresReadTheRowAheadUnderTheCounter(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	const stores, writers, appends = 4, 6, 5
	var all []*pgstore.Store
	for i := range stores {
		s := db.open(t, pgstore.Options{})
		if i > 0 { // the first keeps no index: the rows lag behind its writes
			if err := s.Index(ctx, total{}); err != nil {
				t.Fatal(err)
			}
		}
		all = append(all, s)
	}
	var wg sync.WaitGroup
	errs := make(chan error, stores*writers)
	for i, s := range all {
		for w := range writers {
			wg.Go(func() {
				stream := fmt.Sprintf("s%d-w%d", i, w)
				for n := range appends {
					rec := eventlog.Record{Stream: stream, Type: "pgstore.Test", Version: 1, Time: 1, Payload: []byte("x")}
					if _, err := s.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: uint64(n)}}, []eventlog.Record{rec}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// One more append by an indexing store folds whatever the rows miss.
	if _, err := all[1].Append(ctx, []eventlog.Expect{{Stream: "last"}},
		[]eventlog.Record{{Stream: "last", Type: "pgstore.Test", Version: 1, Time: 1, Payload: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	last, err := all[1].ReadIndex(ctx, total{}.Name(), func(key string, value []byte) error {
		rows[key] = string(value)
		return nil
	})
	want := stores*writers*appends + 1
	if err != nil || rows["total"] != strconv.Itoa(want) || last != uint64(want) {
		t.Fatalf("rows %v up to %d (%v), want total %d up to %d", rows, last, err, want, want)
	}
}
