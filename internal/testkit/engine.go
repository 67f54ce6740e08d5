package testkit

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
)

// Discard is a logger that drops everything, for Engines whose warnings a
// test does not read.
var Discard = slog.New(slog.DiscardHandler)

// OpenEngine opens an Engine over the bbolt file at path, closed when tb
// ends.
func OpenEngine(tb testing.TB, path string, opts reprise.Options) *reprise.Engine {
	tb.Helper()
	e, err := reprise.Open(path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

// NewEngine opens an Engine over a new bbolt file in a temporary directory
// and returns it and the file's path.
func NewEngine(tb testing.TB, opts reprise.Options) (*reprise.Engine, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "reprise.db")
	return OpenEngine(tb, path, opts), path
}

// Session creates session id working in cwd (a new temporary directory
// when cwd is "") and appends texts to it, alternating user and assistant.
func Session(tb testing.TB, e *reprise.Engine, id, cwd string, texts ...string) {
	tb.Helper()
	ctx := context.Background()
	if cwd == "" {
		cwd = tb.TempDir()
	}
	if _, err := e.CreateSession(ctx, id, cwd); err != nil {
		tb.Fatal(err)
	}
	for i, text := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		if _, err := e.Append(ctx, id, reprise.Text(role, text)); err != nil {
			tb.Fatal(err)
		}
	}
}

// Agent returns agent id of e.
func Agent(tb testing.TB, e *reprise.Engine, id string) *reprise.Agent {
	tb.Helper()
	a, err := e.Agent(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// Events returns every event of s in store order, each payload a copy the
// caller owns.
func Events(tb testing.TB, s eventlog.Store) []eventlog.Event {
	tb.Helper()
	var evs []eventlog.Event
	err := s.ReadAll(context.Background(), 1, func(ev eventlog.Event) error {
		ev.Payload = slices.Clone(ev.Payload)
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return evs
}

// StreamTypes lists the event types of one stream of s.
func StreamTypes(tb testing.TB, s eventlog.Store, stream string) []eventlog.Type {
	tb.Helper()
	var out []eventlog.Type
	err := s.ReadStream(context.Background(), stream, 1, func(ev eventlog.Event) error {
		out = append(out, ev.Type)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// WriteStore appends evs, one append each and in their order, to a new
// bbolt file in a temporary directory and returns its path. Each event is
// numbered after the previous one of its stream, so a prefix of a real log
// gives the store a process dying after that append leaves, and an edited
// log gives a store that such edits would have made.
func WriteStore(tb testing.TB, evs []eventlog.Event) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "written.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	heads := map[string]uint64{}
	for _, ev := range evs {
		rec := eventlog.Record{Stream: ev.Stream, Type: ev.Type, Version: ev.Version, Time: ev.Time, RestoreID: ev.RestoreID, Payload: ev.Payload}
		if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: ev.Stream, Seq: heads[ev.Stream]}}, []eventlog.Record{rec}); err != nil {
			tb.Fatal(err)
		}
		heads[ev.Stream]++
		// Reading it back waits for the store's log to be applied: each
		// event is a bbolt commit of its own, as tests that damage the
		// file expect.
		if err := s.ReadStream(context.Background(), ev.Stream, heads[ev.Stream], func(eventlog.Event) error { return nil }); err != nil {
			tb.Fatal(err)
		}
	}
	return path
}

// ZeroNewestMeta zeroes the meta page of the bbolt file at path that holds
// its newest transaction, as a torn write or a bad sector would, and
// returns the transaction the file falls back to.
func ZeroNewestMeta(tb testing.TB, path string) (fallback uint64) {
	tb.Helper()
	s, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	pages, err := s.CheckMeta(context.Background())
	s.Close()
	if err != nil {
		tb.Fatal(err)
	}
	newest, older := pages[0], pages[1]
	if older.Txid > newest.Txid {
		newest, older = older, newest
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, newest.PageSize), int64(newest.Page*newest.PageSize)); err != nil {
		tb.Fatal(err)
	}
	return older.Txid
}
