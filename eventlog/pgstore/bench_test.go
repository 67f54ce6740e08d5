package pgstore_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// benchPayload is the ~200-byte payload boltstore's BenchmarkAppendOne
// writes too.
var benchPayload = bytes.Repeat([]byte("p"), 200)

// BenchmarkAppendOne appends one ~200-byte record to one stream per
// operation, durably (the server's synchronous commit): compare it with
// boltstore's BenchmarkAppendOne. It runs on a store that keeps no index,
// and on one that keeps the session index, which every append then
// updates.
func BenchmarkAppendOne(b *testing.B) {
	forIndexes(b, func(b *testing.B, s *pgstore.Store, rec eventlog.Record) {
		ctx := context.Background()
		head := uint64(1)
		for b.Loop() {
			evs, err := s.Append(ctx, []eventlog.Expect{{Stream: rec.Stream, Seq: head}}, []eventlog.Record{rec})
			if err != nil {
				b.Fatal(err)
			}
			head = evs[0].Seq
		}
	})
}

// BenchmarkAppendBulk appends 1,000 ~200-byte messages to one session in
// one append per operation, as a save of a long transcript does.
func BenchmarkAppendBulk(b *testing.B) {
	forIndexes(b, func(b *testing.B, s *pgstore.Store, rec eventlog.Record) {
		ctx := context.Background()
		recs := make([]eventlog.Record, 1000)
		for i := range recs {
			recs[i] = rec
		}
		head := uint64(1)
		for b.Loop() {
			evs, err := s.Append(ctx, []eventlog.Expect{{Stream: rec.Stream, Seq: head}}, recs)
			if err != nil {
				b.Fatal(err)
			}
			head = evs[len(evs)-1].Seq
		}
	})
}

// forIndexes runs bench on a store that keeps no index and on one that
// keeps the session index, with a created session and the record of one
// of its messages. With the index kept, it checks that the rows followed.
func forIndexes(b *testing.B, bench func(*testing.B, *pgstore.Store, eventlog.Record)) {
	stream := projection.SessionStream("bench")
	eachIndexing(b, []string{"bench"}, func(b *testing.B, s *pgstore.Store) {
		bench(b, s, eventlog.Record{Stream: stream, Type: schema.TypeMessageAppended, Version: 1, Time: 2, Payload: benchPayload})
	})
}

// eachIndexing runs bench on a fresh store that keeps no index and on one
// that keeps the session index, as an Engine's store does, each with the
// sessions ids created. With the index kept, it checks afterwards that the
// rows hold every event.
func eachIndexing(b *testing.B, ids []string, bench func(*testing.B, *pgstore.Store)) {
	for _, kept := range []bool{false, true} {
		name := "index=none"
		if kept {
			name = "index=sessions"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			s := newDB(b).open(b, pgstore.Options{})
			if kept {
				if err := s.Index(ctx, projection.SessionIndex); err != nil {
					b.Fatal(err)
				}
			}
			for _, id := range ids {
				created, err := schema.NewRecord(projection.SessionStream(id), &schema.SessionCreated{ID: id, Cwd: "/"}, 1, "")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Append(ctx, []eventlog.Expect{{Stream: created.Stream}}, []eventlog.Record{created}); err != nil {
					b.Fatal(err)
				}
			}
			bench(b, s)
			b.StopTimer()
			if !kept {
				return
			}
			last, err := s.ReadIndex(ctx, projection.SessionIndex.Name(), func(string, []byte) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			if end, err := s.LastPosition(ctx); err != nil || last != end {
				b.Fatalf("the index holds events up to %d of %d (%v)", last, end, err)
			}
		})
	}
}

// BenchmarkRestoreFunctionHooks runs one runtime restore per operation,
// back and forth between two sessions, with a Go SessionEnd hook and a Go
// SessionStart hook whose context is injected, through reprise.New on each
// backend: bbolt with fsync, and PostgreSQL when configured.
func BenchmarkRestoreFunctionHooks(b *testing.B) {
	b.Run("backend=bolt", func(b *testing.B) {
		s, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), boltstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		benchRestores(b, s)
	})
	b.Run("backend=postgres", func(b *testing.B) {
		benchRestores(b, newDB(b).open(b, pgstore.Options{}))
	})
}

func benchRestores(b *testing.B, s eventlog.Store) {
	ctx := context.Background()
	dir := b.TempDir()
	e := reprise.New(s, reprise.Options{TranscriptDir: dir, Logger: slog.New(slog.DiscardHandler)})
	defer e.Close()
	if err := e.Hooks().OnSessionEnd("end", "", func(context.Context, hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
		return hookexec.SessionEndOutput{}, nil
	}); err != nil {
		b.Fatal(err)
	}
	if err := e.Hooks().OnSessionStart("start", "", func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		return hookexec.SessionStartOutput{AdditionalContext: "tests pass on main"}, nil
	}); err != nil {
		b.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := e.CreateSession(ctx, id, dir); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Append(ctx, id, reprise.Text("user", "hello")); err != nil {
			b.Fatal(err)
		}
	}
	a, err := e.Agent(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := a.Start(ctx, "a"); err != nil {
		b.Fatal(err)
	}
	targets := [2]string{"b", "a"}
	n := 0
	for b.Loop() {
		r, err := a.Restore(ctx, targets[n%2])
		if err != nil || r == nil {
			b.Fatalf("restore %d: %v, %v", n, r, err)
		}
		n++
	}
}

// BenchmarkAppendVsInsert measures one append against the floor it is held
// to: a bare one-row INSERT of the same payload into a scratch table and
// its COMMIT, in a transaction of its own on a pool to the same server.
// Each operation runs one of each, alternately, so both see the same
// server and the same load; the metrics are their times and the ratio.
func BenchmarkAppendVsInsert(b *testing.B) {
	ctx := context.Background()
	db := newDB(b)
	s := db.open(b, pgstore.Options{})
	db.exec(b, "CREATE TABLE {schema}.scratch (id bigint PRIMARY KEY, payload bytea NOT NULL)")
	pool, err := pgxpool.New(ctx, db.url)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	insert := func(id int64) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, "INSERT INTO scratch (id, payload) VALUES ($1, $2)", id, benchPayload); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	rec := eventlog.Record{Stream: "bench", Type: "pgstore.Bench", Version: 1, Time: 1, Payload: benchPayload}
	var (
		head             uint64
		inserts, appends time.Duration
		id               int64
	)
	for b.Loop() {
		start := time.Now()
		id++
		if err := insert(id); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		evs, err := s.Append(ctx, []eventlog.Expect{{Stream: rec.Stream, Seq: head}}, []eventlog.Record{rec})
		if err != nil {
			b.Fatal(err)
		}
		head = evs[0].Seq
		inserts += mid.Sub(start)
		appends += time.Since(mid)
	}
	b.ReportMetric(float64(inserts.Microseconds())/float64(id), "insert-µs")
	b.ReportMetric(float64(appends.Microseconds())/float64(id), "append-µs")
	b.ReportMetric(float64(appends)/float64(inserts), "append/insert")
}

// BenchmarkAppendConcurrent has 64 goroutines of one store append one
// ~200-byte message at a time, each to a session of its own, b.N appends
// in all, and reports their rate: on a store that keeps no index, and on
// one that keeps the session index, as an Engine's store does.
func BenchmarkAppendConcurrent(b *testing.B) {
	const writers = 64
	ids := make([]string, writers)
	for w := range ids {
		ids[w] = fmt.Sprint("w", w)
	}
	eachIndexing(b, ids, func(b *testing.B, s *pgstore.Store) {
		b.ResetTimer()
		start := time.Now()
		var next atomic.Int64
		n := int64(b.N)
		if err := appendWriters(context.Background(), s, projection.SessionStream("w"), writers, func() bool { return next.Add(1) <= n }); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
	})
}

// BenchmarkAppendProcesses has 4 processes, each with a store of its own,
// run 16 goroutines that append one ~200-byte record at a time, each to a
// stream of its own, b.N appends in all, and reports their rate from the
// moment all were ready to the moment the last finished.
func BenchmarkAppendProcesses(b *testing.B) {
	const procs, writers = 4, 16
	db := newDB(b)
	db.open(b, pgstore.Options{}) // creates the tables once
	children := make([]*testkit.Child, procs)
	for i := range children {
		children[i] = startHelper(b, "append-writers", envStoreURL+"="+db.url,
			envStream+"="+fmt.Sprintf("p%d-", i), envWriters+"="+strconv.Itoa(writers),
			envAppends+"="+strconv.Itoa((b.N+procs-1)/procs))
		if line := children[i].Line(b); line != "ready" {
			b.Fatalf("helper %d says %q, want ready; stderr:\n%s", i, line, children[i].Stderr)
		}
	}
	b.ResetTimer()
	start := time.Now()
	for _, c := range children {
		if _, err := io.WriteString(c.Stdin, "go\n"); err != nil {
			b.Fatal(err)
		}
	}
	for i, c := range children {
		if line := c.Line(b); line != "done" {
			b.Fatalf("helper %d says %q, want done; stderr:\n%s", i, line, c.Stderr)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	for _, c := range children {
		c.Wait(b)
	}
	total := procs * ((b.N + procs - 1) / procs)
	b.ReportMetric(float64(total)/elapsed.Seconds(), "appends/s")
}

// appendWriters runs writers goroutines appending to s, each one ~200-byte
// message at a time to a stream of its own named prefix and its number,
// from the stream's head, while more says to go on. It returns the first
// error.
func appendWriters(ctx context.Context, s eventlog.Store, prefix string, writers int, more func() bool) error {
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	for w := range writers {
		wg.Go(func() {
			rec := eventlog.Record{Stream: fmt.Sprintf("%s%d", prefix, w), Type: schema.TypeMessageAppended, Version: 1, Time: 2, Payload: benchPayload}
			head, err := s.Head(ctx, rec.Stream)
			for err == nil && more() {
				var evs []eventlog.Event
				if evs, err = s.Append(ctx, []eventlog.Expect{{Stream: rec.Stream, Seq: head}}, []eventlog.Record{rec}); err == nil {
					head = evs[0].Seq
				}
			}
			if err != nil {
				errMu.Lock()
				first = cmp.Or(first, err)
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// BenchmarkToolCall records one tool call per operation on a PostgreSQL
// store, as a host does for each call of an answer: the answer holding
// the tool_use, PreToolUse and PostToolUse, without hooks. Each call's
// steps hold the call's lock, which is one lock and one unlock more per
// step than a store without locks.
func BenchmarkToolCall(b *testing.B) {
	db := newDB(b)
	ctx := context.Background()
	e := reprise.New(db.open(b, pgstore.Options{}), reprise.Options{Logger: testkit.Discard})
	b.Cleanup(func() { _ = e.Close() })
	testkit.Session(b, e, "s", b.TempDir(), "hello")
	agent := testkit.Agent(b, e, "ide")
	if _, err := agent.Start(ctx, "s"); err != nil {
		b.Fatal(err)
	}
	n := 0
	for b.Loop() {
		n++
		id := fmt.Sprintf("toolu_%d", n)
		use := fmt.Sprintf(`{"type":"tool_use","id":%q,"name":"Bash","input":{}}`, id)
		if _, err := e.Append(ctx, "s", reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "tool_use", Raw: []byte(use)}}}); err != nil {
			b.Fatal(err)
		}
		if _, err := agent.PreToolUse(ctx, reprise.ToolCall{ID: id, Name: "Bash", Permission: hookexec.Allow}); err != nil {
			b.Fatal(err)
		}
		if _, err := agent.PostToolUse(ctx, reprise.ToolResult{ID: id, Output: []byte(`"ok"`)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTryLock takes and releases one stream lock per operation, the
// cost a tool call's step pays for its lock: compare it with
// BenchmarkAppendOne.
func BenchmarkTryLock(b *testing.B) {
	s := newDB(b).open(b, pgstore.Options{})
	ctx := context.Background()
	for b.Loop() {
		release, err := s.TryLock(ctx, "tool/ide/toolu_1")
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}
