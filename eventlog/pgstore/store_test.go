package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/eventlog/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	serverURL(t)
	storetest.Run(t, func(t *testing.T) eventlog.Store {
		return newDB(t).open(t, pgstore.Options{})
	})
}

func TestIsURL(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"postgres://u@h/db":        true,
		"postgresql://h:5432/db":   true,
		"sessions.db":              false,
		"/var/lib/reprise/pg.db":   false,
		"host=localhost dbname=db": false,
		"Postgres://h/db":          false,
	} {
		if got := pgstore.IsURL(s); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestOpenUnreachableServer(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1; this test needs no server.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := pgstore.Open(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5", pgstore.Options{})
	if !errors.Is(err, pgstore.ErrConnection) {
		t.Fatalf("Open of an unreachable server: err = %v, want ErrConnection", err)
	}
	if _, err := pgstore.Open(ctx, "postgres://h:notaport/db", pgstore.Options{}); err == nil {
		t.Fatal("Open of a malformed URL succeeded")
	}
}

func TestOpenWithoutSchema(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	url := withParams(t, db.url, map[string]string{"search_path": db.schema + "_missing"})
	_, err := pgstore.Open(context.Background(), url, pgstore.Options{})
	if err == nil || !strings.Contains(err.Error(), "search_path") {
		t.Fatalf("Open with no existing schema on the search_path: err = %v, want one naming search_path", err)
	}
}

func TestHostsMigrateAtOnce(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	const hosts = 6
	var wg sync.WaitGroup
	stores := make([]*pgstore.Store, hosts)
	for i := range hosts {
		wg.Go(func() {
			s, err := pgstore.Open(context.Background(), db.url, pgstore.Options{})
			if err != nil {
				t.Errorf("host %d: Open: %v", i, err)
				return
			}
			stores[i] = s
		})
	}
	wg.Wait()
	for _, s := range stores {
		if s != nil {
			defer s.Close()
		}
	}
	if t.Failed() {
		return
	}
	var version, rows, counters int
	if err := db.admin.QueryRow(context.Background(),
		"SELECT version, (SELECT count(*) FROM "+db.schema+".reprise_schema_version), (SELECT count(*) FROM "+db.schema+".reprise_position) FROM "+db.schema+".reprise_schema_version",
	).Scan(&version, &rows, &counters); err != nil {
		t.Fatal(err)
	}
	if version != pgstore.SchemaVersion || rows != 1 || counters != 1 {
		t.Errorf("after %d concurrent opens: version %d in %d rows, %d counter rows; want version %d, one row each",
			hosts, version, rows, counters, pgstore.SchemaVersion)
	}
	// Every host writes to the same log.
	for i, s := range stores {
		if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: "s", Seq: uint64(i)}}, []eventlog.Record{rec("s", fmt.Sprint(i))}); err != nil {
			t.Fatalf("host %d: Append: %v", i, err)
		}
	}
	if evs := readAll(t, stores[0], 0); len(evs) != hosts || evs[hosts-1].Position != hosts {
		t.Errorf("ReadAll = %d events, the last at position %d; want %d", len(evs), evs[len(evs)-1].Position, hosts)
	}
}

func TestReopenKeepsEvents(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := db.open(t, pgstore.Options{})
	evs, err := s.Append(context.Background(), []eventlog.Expect{{Stream: "s"}}, []eventlog.Record{rec("s", "1"), rec("s", "2")})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = db.open(t, pgstore.Options{})
	got := readAll(t, s, 0)
	if len(got) != 2 || got[1].Position != evs[1].Position || string(got[1].Payload) != "2" {
		t.Fatalf("after reopening, ReadAll = %v", got)
	}
	more, err := s.Append(context.Background(), []eventlog.Expect{{Stream: "s", Seq: 2}}, []eventlog.Record{rec("s", "3")})
	if err != nil || more[0].Position != 3 || more[0].Seq != 3 {
		t.Fatalf("append after reopening = %v, %v; want s#3 at position 3", more, err)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	db.open(t, pgstore.Options{}).Close()
	db.exec(t, fmt.Sprintf("UPDATE {schema}.reprise_schema_version SET version = %d", pgstore.GapsSchemaVersion+1))
	for _, readOnly := range []bool{false, true} {
		_, err := pgstore.Open(context.Background(), db.url, pgstore.Options{ReadOnly: readOnly})
		if !errors.Is(err, pgstore.ErrFormat) {
			t.Errorf("Open (read-only %v) of a newer schema: err = %v, want ErrFormat", readOnly, err)
		}
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	if _, err := pgstore.Open(ctx, db.url, pgstore.Options{ReadOnly: true}); !errors.Is(err, pgstore.ErrFormat) {
		t.Fatalf("read-only Open of an empty schema: err = %v, want ErrFormat", err)
	}
	w := db.open(t, pgstore.Options{})
	if _, err := w.Append(ctx, []eventlog.Expect{{Stream: "s"}}, []eventlog.Record{rec("s", "1")}); err != nil {
		t.Fatal(err)
	}
	r := db.open(t, pgstore.Options{ReadOnly: true})
	if _, err := r.Append(ctx, []eventlog.Expect{{Stream: "s", Seq: 1}}, []eventlog.Record{rec("s", "2")}); !errors.Is(err, eventlog.ErrReadOnly) {
		t.Errorf("Append on a read-only store: err = %v, want ErrReadOnly", err)
	}
	if h := head(t, r, "s"); h != 1 {
		t.Errorf("read-only Head = %d, want 1", h)
	}
	db.exec(t, "UPDATE {schema}.reprise_schema_version SET version = 0")
	if _, err := pgstore.Open(ctx, db.url, pgstore.Options{ReadOnly: true}); !errors.Is(err, pgstore.ErrFormat) {
		t.Errorf("read-only Open of an older schema: err = %v, want ErrFormat", err)
	}
}

// TestHostsAppendAtTheSameSeq has two stores, as two hosts would, append at
// the same expected heads at once, many times: each time exactly one wins
// and the other gets a conflict naming the stream that moved.
func TestHostsAppendAtTheSameSeq(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hosts := []*pgstore.Store{db.open(t, pgstore.Options{}), db.open(t, pgstore.Options{})}
	ctx := context.Background()
	const rounds = 30
	for round := range rounds {
		// Odd rounds append to two streams, which overlap in "s".
		expects := [][]eventlog.Expect{{{Stream: "s", Seq: uint64(round)}}, {{Stream: "s", Seq: uint64(round)}}}
		if round%2 == 1 {
			expects[0] = append(expects[0], eventlog.Expect{Stream: "a", Seq: head(t, hosts[0], "a")})
			expects[1] = append([]eventlog.Expect{{Stream: "b", Seq: head(t, hosts[1], "b")}}, expects[1]...)
		}
		errs := make([]error, len(hosts))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, s := range hosts {
			wg.Go(func() {
				var recs []eventlog.Record
				for _, e := range expects[i] {
					recs = append(recs, rec(e.Stream, fmt.Sprintf("host %d round %d", i, round)))
				}
				<-start
				_, errs[i] = s.Append(ctx, expects[i], recs)
			})
		}
		close(start)
		wg.Wait()
		wins := 0
		for i, err := range errs {
			var ce *eventlog.ConflictError
			switch {
			case err == nil:
				wins++
			case errors.As(err, &ce):
				if ce.Stream != "s" || ce.Expected != uint64(round) || ce.Actual != uint64(round+1) {
					t.Errorf("round %d: host %d lost with %v, want a conflict on s expecting %d, finding %d", round, i, err, round, round+1)
				}
			default:
				t.Fatalf("round %d: host %d: %v", round, i, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d hosts won, want exactly 1", round, wins)
		}
	}
	if h := head(t, hosts[1], "s"); h != rounds {
		t.Errorf("Head(s) = %d, want %d", h, rounds)
	}
	all := readAll(t, hosts[0], 0)
	for i, ev := range all {
		if ev.Position != uint64(i+1) {
			t.Fatalf("event %d is at position %d; want positions 1..%d without gaps", i, ev.Position, len(all))
		}
	}
	if h := head(t, hosts[0], "a") + head(t, hosts[0], "b"); h != rounds/2 {
		t.Errorf("the two-stream rounds wrote %d events to a and b, want %d", h, rounds/2)
	}
}

// TestReadersNeverFindAnEarlierPosition appends from several stores at
// once while a reader follows the log by position: every read must continue
// exactly where the last one ended, with no gap, so no event can appear
// below a position already seen.
func TestReadersNeverFindAnEarlierPosition(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hosts := []*pgstore.Store{db.open(t, pgstore.Options{}), db.open(t, pgstore.Options{})}
	reader := db.open(t, pgstore.Options{})
	ctx := context.Background()
	const writers, appends = 3, 25

	done := make(chan struct{})
	var (
		seen    uint64
		readErr error
		rwg     sync.WaitGroup
	)
	rwg.Go(func() {
		for final := false; !final; {
			select {
			case <-done:
				final = true // one more read after the last append
			default:
			}
			err := reader.ReadAll(ctx, seen+1, func(ev eventlog.Event) error {
				if ev.Position != seen+1 {
					return fmt.Errorf("read position %d after %d", ev.Position, seen)
				}
				seen = ev.Position
				return nil
			})
			if err != nil {
				readErr = err
				return
			}
		}
	})

	var wg sync.WaitGroup
	for h, s := range hosts {
		for w := range writers {
			wg.Go(func() {
				stream := fmt.Sprintf("host%d/writer%d", h, w)
				for i := range appends {
					// Every other append also touches a stream all writers
					// share, and retries its conflicts.
					for {
						expect := []eventlog.Expect{{Stream: stream, Seq: uint64(i)}}
						recs := []eventlog.Record{rec(stream, fmt.Sprint(i))}
						if i%2 == 1 {
							shared, err := s.Head(ctx, "shared")
							if err != nil {
								t.Error(err)
								return
							}
							expect = append(expect, eventlog.Expect{Stream: "shared", Seq: shared})
							recs = append(recs, rec("shared", stream))
						}
						_, err := s.Append(ctx, expect, recs)
						if errors.Is(err, eventlog.ErrConflict) {
							continue
						}
						if err != nil {
							t.Error(err)
							return
						}
						break
					}
				}
			})
		}
	}
	wg.Wait()
	close(done)
	rwg.Wait()
	if readErr != nil {
		t.Fatalf("reader: %v", readErr)
	}
	want := uint64(len(hosts) * writers * (appends + appends/2))
	if seen != want {
		t.Errorf("the reader saw positions up to %d, want %d", seen, want)
	}
}

func TestConnectionLossMidAppend(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := db.open(t, pgstore.Options{})
	ctx := context.Background()
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "s"}}, []eventlog.Record{rec("s", "1")}); err != nil {
		t.Fatal(err)
	}
	before := readAll(t, s, 0)

	release := db.holdCounter(t)
	result := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, []eventlog.Expect{{Stream: "s", Seq: 1}, {Stream: "t"}}, []eventlog.Record{rec("s", "2"), rec("t", "1")})
		result <- err
	}()
	db.waitForLockWait(t)
	if n := db.terminate(t); n == 0 {
		t.Fatal("no store session to terminate")
	}
	err := <-result
	if !errors.Is(err, pgstore.ErrConnection) || errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("Append cut off by a lost connection: err = %v, want ErrConnection", err)
	}
	t.Logf("the caller got: %v", err)
	release()

	// Nothing was written, and the next attempt works on a new connection.
	if after := readAll(t, s, 0); len(after) != len(before) {
		t.Fatalf("after the lost append, ReadAll = %d events, want %d", len(after), len(before))
	}
	if h := head(t, s, "t"); h != 0 {
		t.Errorf("Head(t) = %d after the lost append, want 0", h)
	}
	evs, err := s.Append(ctx, []eventlog.Expect{{Stream: "s", Seq: 1}, {Stream: "t"}}, []eventlog.Record{rec("s", "2"), rec("t", "1")})
	if err != nil {
		t.Fatalf("the append after reconnecting: %v", err)
	}
	if evs[0].Position != 2 || evs[1].Position != 3 {
		t.Errorf("the append after reconnecting got positions %d, %d; want 2, 3: the lost one must leave no gap", evs[0].Position, evs[1].Position)
	}
}

func TestConnectionLossWhileIdle(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := db.open(t, pgstore.Options{})
	ctx := context.Background()
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "s"}}, []eventlog.Record{rec("s", "1")}); err != nil {
		t.Fatal(err)
	}
	db.terminate(t)
	// A call may meet a connection that died in the pool; it fails clearly,
	// and the store then reconnects.
	for try := 1; ; try++ {
		_, err := s.Append(ctx, []eventlog.Expect{{Stream: "s", Seq: 1}}, []eventlog.Record{rec("s", "2")})
		if err == nil {
			break
		}
		if !errors.Is(err, pgstore.ErrConnection) || try == 2 {
			t.Fatalf("append %d after the server dropped idle connections: %v", try, err)
		}
	}
	if got := readAll(t, s, 0); len(got) != 2 {
		t.Errorf("ReadAll = %d events, want 2", len(got))
	}
}

func TestCancelWhileWaitingToAppend(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := db.open(t, pgstore.Options{})
	release := db.holdCounter(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := s.Append(ctx, []eventlog.Expect{{Stream: "s"}}, []eventlog.Record{rec("s", "1")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append past its deadline: err = %v, want context.DeadlineExceeded", err)
	}
	release()
	if h := head(t, s, "s"); h != 0 {
		t.Fatalf("Head(s) = %d after a cancelled append, want 0", h)
	}
	evs, err := s.Append(context.Background(), []eventlog.Expect{{Stream: "s"}}, []eventlog.Record{rec("s", "1")})
	if err != nil || evs[0].Position != 1 {
		t.Fatalf("the next append = %v, %v; want position 1", evs, err)
	}
}

// Reads fetch the log in chunks: a read longer than a chunk comes back
// whole and in order from any starting point, across a purge's gap at a
// chunk's edge, and a read that stops at its first event leaves the
// rest of a long log unread (the connection goes back to the pool at once
// and the next query on it runs).
func TestReadsCrossChunks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newDB(t).open(t, pgstore.Options{})
	const n = 2500
	recs := make([]eventlog.Record, n)
	for i := range recs {
		recs[i] = rec("a", fmt.Sprint(i+1))
	}
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "a"}}, recs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "b"}}, []eventlog.Record{rec("b", "x")}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Purge(ctx, eventlog.Purge{
		Expect:  []eventlog.Expect{{Stream: "a", Seq: n}, {Stream: "log"}},
		Remove:  []eventlog.SeqRange{{Stream: "a", First: 1020, Last: 1030}},
		Records: []eventlog.Record{rec("log", "purged")},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []uint64{1, 1000, 1024, 1025, 2049} {
		want := uint64(0)
		for seq := from; seq <= n; seq++ {
			if seq < 1020 || seq > 1030 {
				want++
			}
		}
		var got, last uint64
		err := s.ReadStream(ctx, "a", from, func(ev eventlog.Event) error {
			if ev.Seq <= last || string(ev.Payload) != fmt.Sprint(ev.Seq) {
				return fmt.Errorf("event %d (%q) after %d", ev.Seq, ev.Payload, last)
			}
			got, last = got+1, ev.Seq
			return nil
		})
		if err != nil || got != want {
			t.Fatalf("ReadStream from %d: %d events, %v; want %d", from, got, err, want)
		}
	}
	if all := readAll(t, s, 1); len(all) != n-11+2 || all[len(all)-1].Stream != "log" {
		t.Fatalf("ReadAll: %d events, want %d", len(all), n-11+2)
	}
	stop := errors.New("stop")
	for range 20 {
		err := s.ReadAll(ctx, 1, func(eventlog.Event) error { return stop })
		if !errors.Is(err, stop) {
			t.Fatalf("ReadAll stopped by its callback: %v", err)
		}
	}
	if last, err := s.LastPosition(ctx); err != nil || last != n+2 {
		t.Fatalf("LastPosition = %d, %v; want %d", last, err, n+2)
	}
}

// ReadAll reads one snapshot, however many chunks it takes: events that
// another host appends while it runs are not passed, and nothing it passes
// changes under it.
func TestReadAllReadsOneSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newDB(t)
	s, other := db.open(t, pgstore.Options{}), db.open(t, pgstore.Options{})
	const n = 2500
	recs := make([]eventlog.Record, n)
	for i := range recs {
		recs[i] = rec("a", fmt.Sprint(i+1))
	}
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "a"}}, recs); err != nil {
		t.Fatal(err)
	}
	var got uint64
	err := s.ReadAll(ctx, 1, func(ev eventlog.Event) error {
		if got++; got == 1 {
			_, err := other.Append(ctx, []eventlog.Expect{{Stream: "b"}}, []eventlog.Record{rec("b", "later")})
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("ReadAll passed %d events, want the %d stored when it began", got, n)
	}
	if all := readAll(t, s, 1); len(all) != n+1 {
		t.Fatalf("the next ReadAll passed %d events, want %d", len(all), n+1)
	}
}
