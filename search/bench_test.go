package search_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/search"
)

// benchDirEnv names the directory where BenchmarkSearch keeps the store
// and the index it builds, between runs; os.UserCacheDir()'s
// reprise/bench-search by default.
const benchDirEnv = "REPRISE_BENCH_SEARCH_DIR"

// The bench's log: sessions of benchPerSession messages, each of about a
// dozen words of a vocabulary of benchWords; one message in a hundred
// also holds benchNeedle.
const (
	benchPerSession = 1000
	benchWords      = 5000
	benchNeedle     = "needle"
)

// BenchmarkSearch searches an index of one million messages (ten
// thousand with -short) for a word one message in a hundred holds, for
// the first 20 hits and the total. The store and its index are built
// once and kept (see benchDirEnv); build-s is the time the index took to
// build from the log, when it was built.
func BenchmarkSearch(b *testing.B) {
	count := 1_000_000
	if testing.Short() {
		count = 10_000
	}
	ctx := context.Background()
	dir := benchDir(b, count)
	path := filepath.Join(dir, "sessions.db")
	built := filepath.Join(dir, "built")
	if _, err := os.Stat(built); err != nil {
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		writeBenchStore(b, path, count)
	}
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	x, err := search.Open(ctx, search.Dir(path), store)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	start := time.Now()
	n, err := x.Update(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if n > 0 { // built now: keep its time
		took := time.Since(start)
		if err := os.WriteFile(built, []byte(strconv.FormatFloat(took.Seconds(), 'f', 1, 64)), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Logf("built the index of %d events in %s", n, took.Round(time.Millisecond))
	}
	buildSeconds, err := os.ReadFile(built)
	if err != nil {
		b.Fatal(err)
	}

	want := count / 100
	b.ResetTimer()
	for b.Loop() {
		res, err := x.Search(ctx, benchNeedle, 20, 0)
		if err != nil {
			b.Fatal(err)
		}
		if res.Total != want || len(res.Hits) != 20 {
			b.Fatalf("Search(%s) = %d hits of %d; want 20 of %d", benchNeedle, len(res.Hits), res.Total, want)
		}
	}
	if s, err := strconv.ParseFloat(string(buildSeconds), 64); err == nil {
		b.ReportMetric(s, "build-s")
	}
}

// benchDir returns the directory of the bench's store of count messages.
func benchDir(b *testing.B, count int) string {
	root := os.Getenv(benchDirEnv)
	if root == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			b.Skipf("no cache directory (%v): set %s", err, benchDirEnv)
		}
		root = filepath.Join(cache, "reprise", "bench-search")
	}
	return filepath.Join(root, strconv.Itoa(count))
}

// writeBenchStore writes the bench's log to a new store at path: count
// messages, a session's at a time.
func writeBenchStore(b *testing.B, path string, count int) {
	b.Helper()
	ctx := context.Background()
	store, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, benchWords)
	for i := range vocab {
		vocab[i] = benchWord(i)
	}
	now := time.Now().UnixNano()
	for s := 0; s*benchPerSession < count; s++ {
		id := fmt.Sprintf("bench-%06d", s)
		stream := projection.SessionStream(id)
		created, err := schema.NewRecord(stream, &schema.SessionCreated{ID: id, Cwd: "/home/dev/project"}, now, "")
		if err != nil {
			b.Fatal(err)
		}
		msgs := make([]schema.MessageAppended, 0, benchPerSession)
		for i := s * benchPerSession; i < min((s+1)*benchPerSession, count); i++ {
			var text strings.Builder
			for w := range 12 {
				if w > 0 {
					text.WriteByte(' ')
				}
				text.WriteString(vocab[rng.IntN(len(vocab))])
			}
			if i%100 == 50 {
				text.WriteString(" " + benchNeedle)
			}
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msgs = append(msgs, schema.MessageAppended{Message: schema.Message{
				UUID: fmt.Sprintf("m-%09d", i), Role: role, Timestamp: now,
				Content: []schema.Block{{Type: "text", Text: text.String()}}}})
		}
		recs := schema.AppendMessageRecords([]eventlog.Record{created}, stream, msgs, now)
		if _, err := store.Append(ctx, []eventlog.Expect{{Stream: stream}}, recs); err != nil {
			b.Fatal(err)
		}
	}
}

// benchWord is the i'th word of the bench's vocabulary: letters only,
// none of them benchNeedle.
func benchWord(i int) string {
	const letters = "bcdfghjklmpqrstvwxz"
	var w []byte
	for n := i + len(letters); n > 0; n /= len(letters) {
		w = append(w, letters[n%len(letters)], "aeiou"[n%5])
	}
	return string(w)
}
