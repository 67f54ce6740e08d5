package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/web"
)

// longMessageSize is the size of the long message the memory tests write:
// the size that made 8 views of one session take 2.4 GB.
const longMessageSize = 50 << 20

// writeSession writes, straight to a bbolt file in dir, session id
// holding msgs, and returns the file's path. The Engine that opens the
// file afterwards holds none of them.
func writeSession(tb testing.TB, dir, id string, msgs ...schema.Message) string {
	tb.Helper()
	path := filepath.Join(dir, "long.db")
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	stream := projection.SessionStream(id)
	stamp := time.Now().Add(-time.Hour).UnixNano()
	record := func(p schema.Payload) eventlog.Record {
		stamp += 1000
		rec, err := schema.NewRecord(stream, p, stamp, "")
		if err != nil {
			tb.Fatal(err)
		}
		return rec
	}
	recs := []eventlog.Record{record(&schema.SessionCreated{ID: id, Cwd: "/src/project"})}
	for _, m := range msgs {
		if m.Timestamp == 0 {
			m.Timestamp = stamp
		}
		recs = append(recs, record(&schema.MessageAppended{Message: m}))
	}
	if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: stream}}, recs); err != nil {
		tb.Fatal(err)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// textMessage is a message of one text block.
func textMessage(uuid, role, text string) schema.Message {
	return schema.Message{UUID: uuid, Role: role, Content: []schema.Block{{Type: "text", Text: text}}}
}

// longText is size bytes of lines, with characters that HTML and JSON
// escape.
func longText(size int) string {
	const line = "the long output of a tool, line after line <&> \"quoted\" é\n"
	return strings.Repeat(line, size/len(line)+1)[:size]
}

// writeLongSession writes a session whose second message, of size bytes,
// sits between short ones, and returns the file's path.
func writeLongSession(tb testing.TB, dir, id string, size int) string {
	tb.Helper()
	return writeSession(tb, dir, id, textMessage("m-0", "user", "Print the log."),
		textMessage("m-1", "assistant", longText(size)), textMessage("m-2", "user", "Thanks."))
}

// heapPeak samples the bytes of the heap's objects, live or not yet
// swept, until stop is called, which returns the largest sample.
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	done := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var most uint64
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			most = max(most, sample[0].Value.Uint64())
			select {
			case <-done:
				peak <- most
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(done); return <-peak }
}

// heapNow is the bytes of the heap's live objects, after a collection.
func heapNow() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

func TestConcurrentViewsOfALongMessageStayWithinAFewTimesItsSize(t *testing.T) {
	concurrentViews(t, "/sessions/long", "/api/sessions/long")
}

func TestConcurrentViewsOfTheEventsOfALongMessageStayWithinAFewTimesItsSize(t *testing.T) {
	concurrentViews(t, "/events", "/api/events")
}

// concurrentViews serves a store whose session "long" holds a message of
// longMessageSize bytes, asks for the page and its JSON answer 4 times
// each at once, and fails when the heap peaks over a few times the
// message.
func concurrentViews(t *testing.T, page, api string) {
	if testing.Short() {
		t.Skip("writes and reads a message of 50 MB")
	}
	// The bound assumes the collector's default pacing, whatever the
	// environment says.
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	dir := t.TempDir()
	path := writeLongSession(t, dir, "long", longMessageSize)
	e := testkit.OpenEngine(t, path, reprise.Options{AllowMissingCwd: true, TranscriptDir: filepath.Join(dir, "files"), Logger: testkit.Discard})
	srv := httptest.NewServer(web.New(e, web.Options{Logger: testkit.Discard}))
	defer srv.Close()

	const views = 8
	paths := make([]string, views)
	for i := range paths {
		paths[i] = page
		if i%2 == 1 {
			paths[i] = api
		}
	}
	base := heapNow()
	stop := heapPeak()
	var wg sync.WaitGroup
	errs := make(chan error, views)
	for _, p := range paths {
		wg.Go(func() {
			res, err := http.Get(srv.URL + p)
			if err != nil {
				errs <- err
				return
			}
			defer res.Body.Close()
			n, err := io.Copy(io.Discard, res.Body)
			if err == nil && res.StatusCode != http.StatusOK {
				err = fmt.Errorf("GET %s = %d", p, res.StatusCode)
			}
			if err != nil {
				errs <- err
				return
			}
			t.Logf("GET %s: %d bytes", p, n)
		})
	}
	wg.Wait()
	peak := stop()
	peak -= min(base, peak)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d views of a message of %d MB: heap peaked %d MB over the %d MB before (%.1f times the message)",
		views, longMessageSize>>20, peak>>20, base>>20, float64(peak)/longMessageSize)
	// One view decodes the message once; the budget lets one decode
	// run at a time, and the collector lets garbage of the one before
	// stay until the heap doubles.
	if peak > 6*longMessageSize {
		t.Errorf("%d concurrent views of a %d MB message took %d MB of heap, more than 6 times the message", views, longMessageSize>>20, peak>>20)
	}
}
