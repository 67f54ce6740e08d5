package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/internal/demo"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/web"
)

// The sizes of the benchmark's store: how many sessions (of
// benchMessagesEach messages each) and how many messages the long
// session holds. The defaults build in a few seconds; the web view's
// target is REPRISE_WEB_BENCH_SESSIONS=100000 and
// REPRISE_WEB_BENCH_MESSAGES=100000.
const (
	benchSessionsEnv  = "REPRISE_WEB_BENCH_SESSIONS"
	benchMessagesEnv  = "REPRISE_WEB_BENCH_MESSAGES"
	benchMessagesEach = 4
)

// BenchmarkFirstByte measures, for each page, the time from a request to
// the first byte of its answer, on a store with many sessions and one
// long session, besides the demo's agents.
func BenchmarkFirstByte(b *testing.B) {
	sessions, messages := envSize(b, benchSessionsEnv, 2000), envSize(b, benchMessagesEnv, 5000)
	path := filepath.Join(b.TempDir(), "bench.db")
	start := time.Now()
	long := writeBenchStore(b, path, sessions, messages)
	e := testkit.OpenEngine(b, path, reprise.Options{AllowMissingCwd: true, Logger: testkit.Discard})
	run, err := demo.Play(context.Background(), e)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("store of %d sessions and a session of %d messages made in %v", sessions+5, messages, time.Since(start).Round(time.Millisecond))
	srv := httptest.NewServer(web.New(e, web.Options{Logger: testkit.Discard}))
	defer srv.Close()
	pages := []struct{ name, path string }{
		{"sessions", "/sessions"},
		{"sessions-filtered", "/sessions?id=ffff"},
		{"long-session", "/sessions/" + long},
		{"long-session-last-page", "/sessions/" + long + "?cursor=" + strconv.Itoa(max(messages-100, 1))},
		{"long-session-oldest", "/sessions/" + long + "?order=oldest"},
		{"long-session-oldest-last", "/sessions/" + long + "?order=oldest&cursor=" + strconv.Itoa(max(messages-100, 1))},
		{"demo-session", "/sessions/" + run.Design},
		{"first-session", "/sessions/" + benchSessionID(0)}, // its forks are looked for in the whole log after it
		{"agent", "/agents/" + demo.Agent},
		{"agents", "/agents"},
		{"audit", "/audit"},
		{"events", "/events"},
		{"events-stream", "/events?stream=agent/" + demo.Agent},
		{"events-oldest", "/events?order=oldest"},
		{"events-oldest-deep", "/events?order=oldest&cursor=" + strconv.Itoa(sessions*(benchMessagesEach+1)/2)},
		{"events-long-stream", "/events?stream=session/" + long},
		{"events-type", "/events?type=" + string(schema.TypeSessionCreated)}, // its count reads every envelope of the log
		{"events-since", "/events?since=2000-01-01&order=oldest"},
		{"api-events", "/api/events"},
		{"api-sessions", "/api/sessions"},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				total += firstByte(b, srv.URL+p.path)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/first-byte")
		})
	}
}

// envSize reads a size from the environment, def when it is not set.
func envSize(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s must be a positive number, not %q", name, v)
	}
	return n
}

// firstByte requests url and returns the time until the first byte of
// the answer came, after reading the whole of it.
func firstByte(b *testing.B, url string) time.Duration {
	var first time.Time
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotFirstResponseByte: func() { first = time.Now() },
	})
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		b.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		b.Fatalf("GET %s = %d", url, res.StatusCode)
	}
	return first.Sub(start)
}

// benchSessionID is the id of the benchmark's short session i.
func benchSessionID(i int) string { return fmt.Sprintf("s-%08x", i*2654435761%(1<<32)) }

// writeBenchStore writes, without syncing, sessions sessions of
// benchMessagesEach messages and one of messages messages, and returns
// the long one's id.
func writeBenchStore(b *testing.B, path string, sessions, messages int) string {
	ctx := context.Background()
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	base := time.Now().Add(-time.Hour).UnixNano()
	stamp := base
	next := func() int64 { stamp += 1000; return stamp }
	record := func(stream string, p schema.Payload) eventlog.Record {
		rec, err := schema.NewRecord(stream, p, next(), "")
		if err != nil {
			b.Fatal(err)
		}
		return rec
	}
	text := func(i int) schema.Message {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		return schema.Message{UUID: fmt.Sprintf("m-%d", i), Role: role, Timestamp: stamp,
			Content: []schema.Block{{Type: "text", Text: fmt.Sprintf("message %d: a line of the conversation, as long as a short answer is.", i)}}}
	}
	const perAppend = 500
	for first := 0; first < sessions; first += perAppend {
		var expect []eventlog.Expect
		var recs []eventlog.Record
		for i := first; i < min(first+perAppend, sessions); i++ {
			id := benchSessionID(i)
			stream := projection.SessionStream(id)
			expect = append(expect, eventlog.Expect{Stream: stream})
			recs = append(recs, record(stream, &schema.SessionCreated{ID: id, Cwd: "/src/project"}))
			for j := range benchMessagesEach {
				recs = append(recs, record(stream, &schema.MessageAppended{Message: text(j)}))
			}
		}
		if _, err := s.Append(ctx, expect, recs); err != nil {
			b.Fatal(err)
		}
	}
	long := "long"
	stream := projection.SessionStream(long)
	head := uint64(0)
	for first := 0; first < messages; first += perAppend * 4 {
		var recs []eventlog.Record
		if first == 0 {
			recs = append(recs, record(stream, &schema.SessionCreated{ID: long, Cwd: "/src/project"}))
		}
		for i := first; i < min(first+perAppend*4, messages); i++ {
			recs = append(recs, record(stream, &schema.MessageAppended{Message: text(i)}))
		}
		evs, err := s.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: head}}, recs)
		if err != nil {
			b.Fatal(err)
		}
		head = evs[len(evs)-1].Seq
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return long
}
