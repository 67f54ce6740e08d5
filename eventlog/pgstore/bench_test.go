package pgstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/hookexec"
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
			stream := projection.SessionStream("bench")
			created, err := schema.NewRecord(stream, &schema.SessionCreated{ID: "bench", Cwd: "/"}, 1, "")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Append(ctx, []eventlog.Expect{{Stream: stream}}, []eventlog.Record{created}); err != nil {
				b.Fatal(err)
			}
			bench(b, s, eventlog.Record{Stream: stream, Type: schema.TypeMessageAppended, Version: 1, Time: 2, Payload: benchPayload})
			if !kept {
				return
			}
			last, err := s.ReadIndex(ctx, projection.SessionIndex.Name(), func(string, []byte) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			if end := head(b, s, stream); last < end {
				b.Fatalf("the index holds events up to %d of %d", last, end)
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
