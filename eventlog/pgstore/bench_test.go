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
	"github.com/reprise-dev/reprise/schema"
)

// benchPayload is the ~200-byte payload boltstore's BenchmarkAppendOne
// writes too.
var benchPayload = bytes.Repeat([]byte("p"), 200)

// BenchmarkAppendOne appends one ~200-byte record to one stream per
// operation, durably (the server's synchronous commit): compare it with
// boltstore's BenchmarkAppendOne.
func BenchmarkAppendOne(b *testing.B) {
	s := newDB(b).open(b, pgstore.Options{})
	ctx := context.Background()
	rec := eventlog.Record{Stream: "session/bench", Type: schema.TypeMessageAppended, Version: 1, Payload: benchPayload}
	var head uint64
	for b.Loop() {
		evs, err := s.Append(ctx, []eventlog.Expect{{Stream: rec.Stream, Seq: head}}, []eventlog.Record{rec})
		if err != nil {
			b.Fatal(err)
		}
		head = evs[0].Seq
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
