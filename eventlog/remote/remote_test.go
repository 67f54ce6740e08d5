package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
)

// served opens a bbolt store in a temporary directory, fills it with
// events of a few streams, serves it and dials it.
func served(t *testing.T) (*boltstore.Store, *Client, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.db")
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	heads := map[string]uint64{}
	for i := range 600 {
		stream := []string{"agent/a", "session/s1", "session/s2"}[i%3]
		payload := bytes.Repeat([]byte{byte(i)}, i%7*100)
		if i == 5 {
			payload = nil
		}
		rec := eventlog.Record{Stream: stream, Type: eventlog.Type(fmt.Sprintf("T%d", i%4)), Version: uint16(i % 3),
			Time: int64(i) * 1e9, RestoreID: strings.Repeat("r", i%2), Payload: payload}
		if _, err := store.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: heads[stream]}}, []eventlog.Record{rec}); err != nil {
			t.Fatal(err)
		}
		heads[stream]++
	}
	srv, err := Serve(store, path, slog.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	client, err := Dial(ctx, SocketPath(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return store, client, path
}

// collect returns copies of the events a read passes.
func collect(read func(fn func(eventlog.Event) error) error) ([]eventlog.Event, error) {
	var evs []eventlog.Event
	err := read(func(ev eventlog.Event) error {
		ev.Payload = bytes.Clone(ev.Payload)
		evs = append(evs, ev)
		return nil
	})
	return evs, err
}

func sameEvents(a, b []eventlog.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !bytes.Equal(x.Payload, y.Payload) || x.Stream != y.Stream || x.Seq != y.Seq || x.Position != y.Position ||
			x.Type != y.Type || x.Version != y.Version || x.Time != y.Time || x.RestoreID != y.RestoreID {
			return false
		}
	}
	return true
}

func TestClientReadsWhatTheStoreHolds(t *testing.T) {
	store, client, _ := served(t)
	ctx := context.Background()
	for _, from := range []uint64{0, 1, 2, 299, 600, 601} {
		want, err := collect(func(fn func(eventlog.Event) error) error { return store.ReadAll(ctx, from, fn) })
		if err != nil {
			t.Fatal(err)
		}
		got, err := collect(func(fn func(eventlog.Event) error) error { return client.ReadAll(ctx, from, fn) })
		if err != nil || !sameEvents(got, want) {
			t.Errorf("ReadAll(%d): %d events, err %v; want the store's %d", from, len(got), err, len(want))
		}
		for _, stream := range []string{"agent/a", "session/s2", "session/none"} {
			want, err := collect(func(fn func(eventlog.Event) error) error { return store.ReadStream(ctx, stream, from, fn) })
			if err != nil {
				t.Fatal(err)
			}
			got, err := collect(func(fn func(eventlog.Event) error) error { return client.ReadStream(ctx, stream, from, fn) })
			if err != nil || !sameEvents(got, want) {
				t.Errorf("ReadStream(%s, %d): %d events, err %v; want the store's %d", stream, from, len(got), err, len(want))
			}
		}
	}
	for _, stream := range []string{"agent/a", "session/s1", "session/none"} {
		want, _ := store.Head(ctx, stream)
		if got, err := client.Head(ctx, stream); err != nil || got != want {
			t.Errorf("Head(%s) = %d, %v; want %d", stream, got, err, want)
		}
	}
	for _, prefix := range []string{"", "session/", "x"} {
		var want, got []eventlog.StreamInfo
		_ = store.Streams(ctx, prefix, func(info eventlog.StreamInfo) error { want = append(want, info); return nil })
		err := client.Streams(ctx, prefix, func(info eventlog.StreamInfo) error { got = append(got, info); return nil })
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Streams(%q) = %v, %v; want %v", prefix, got, err, want)
		}
	}
}

func TestClientErrorsMatchTheStores(t *testing.T) {
	_, client, _ := served(t)
	ctx := context.Background()
	if _, err := client.Head(ctx, ""); !errors.Is(err, eventlog.ErrInvalidStream) {
		t.Errorf("Head of an empty stream name: err = %v, want ErrInvalidStream", err)
	}
	if err := client.ReadStream(ctx, "a\x01b", 1, func(eventlog.Event) error { return nil }); !errors.Is(err, eventlog.ErrInvalidStream) {
		t.Errorf("ReadStream of a bad stream name: err = %v, want ErrInvalidStream", err)
	}
	if _, err := client.Append(ctx, nil, nil); !errors.Is(err, eventlog.ErrReadOnly) {
		t.Errorf("Append: err = %v, want ErrReadOnly", err)
	}
	stop := errors.New("stop")
	n := 0
	err := client.ReadAll(ctx, 1, func(eventlog.Event) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Errorf("a callback's error: ReadAll = %v after %d events, want it as is after 3", err, n)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := client.ReadAll(cancelled, 1, func(eventlog.Event) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: err = %v", err)
	}
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Head(ctx, "agent/a"); !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("Head after Close: err = %v, want ErrClosed", err)
	}
}

func TestWaitAllWaitsForAnAppend(t *testing.T) {
	store, client, _ := served(t)
	ctx := context.Background()
	start := time.Now()
	evs, err := collect(func(fn func(eventlog.Event) error) error { return client.WaitAll(ctx, 601, 100*time.Millisecond, fn) })
	if err != nil || len(evs) != 0 || time.Since(start) < 100*time.Millisecond {
		t.Errorf("WaitAll with nothing new: %d events, %v, after %v", len(evs), err, time.Since(start))
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _ = store.Append(ctx, []eventlog.Expect{{Stream: "new"}}, []eventlog.Record{{Stream: "new", Type: "T"}})
	}()
	evs, err = collect(func(fn func(eventlog.Event) error) error { return client.WaitAll(ctx, 601, 10*time.Second, fn) })
	if err != nil || len(evs) != 1 || evs[0].Stream != "new" || evs[0].Position != 601 {
		t.Errorf("WaitAll across an append: %v, %v", evs, err)
	}
}

func TestCloseEndsAWaitingFollowerAndRemovesTheSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	store := eventlog.NewMemoryStore()
	srv, err := Serve(store, path, slog.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	client, err := Dial(context.Background(), srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		done <- client.WaitAll(context.Background(), 1, MaxWait, func(eventlog.Event) error { return nil })
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v with a follower waiting", d)
	}
	if err := <-done; err != nil {
		t.Errorf("the waiting follower: %v", err)
	}
	if _, err := os.Lstat(srv.Path()); !os.IsNotExist(err) {
		t.Errorf("the socket is still there after Close: %v", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("a second Close = %v; want what the first returned", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second Close hangs")
	}
	if _, err := Dial(context.Background(), srv.Path()); !errors.Is(err, ErrNotServing) {
		t.Errorf("Dial after Close: err = %v, want ErrNotServing", err)
	}
}

// serveRaw serves h on a socket of its own and returns the socket's path.
func serveRaw(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "raw.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return path
}

func TestACutResponseIsAnErrorNeverAShortRead(t *testing.T) {
	ev := eventlog.Event{Stream: "s", Seq: 1, Position: 1, Type: "T", Payload: []byte("payload")}
	for _, tt := range []struct {
		name string
		cut  func(w http.ResponseWriter, frames []byte)
	}{
		{"after a whole frame", func(w http.ResponseWriter, frames []byte) { w.Write(frames) }},
		{"inside a frame", func(w http.ResponseWriter, frames []byte) { w.Write(frames[:len(frames)-3]) }},
		{"by a broken connection", func(w http.ResponseWriter, frames []byte) {
			w.Header().Set("Content-Length", "1000")
			w.Write(frames)
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		}},
	} {
		path := serveRaw(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			if r.URL.Path == "/v1/ping" {
				newFrameWriter(w).end()
				return
			}
			var buf bytes.Buffer
			newFrameWriter(&buf).event(ev)
			tt.cut(w, buf.Bytes())
		})
		client, err := Dial(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		err = client.ReadAll(context.Background(), 1, func(eventlog.Event) error { n++; return nil })
		if !errors.Is(err, ErrDisconnected) {
			t.Errorf("%s: ReadAll = %v after %d events, want ErrDisconnected", tt.name, err, n)
		}
		client.Close()
	}
}

func TestDialRefusesWhatIsNotTheUsersSocket(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file.sock")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(context.Background(), file); !errors.Is(err, ErrNotOwned) {
		t.Errorf("Dial of a regular file: err = %v, want ErrNotOwned", err)
	}
	if _, err := Dial(context.Background(), filepath.Join(dir, "none.sock")); !errors.Is(err, ErrNotServing) {
		t.Errorf("Dial of nothing: err = %v, want ErrNotServing", err)
	}
	path := serveRaw(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		newFrameWriter(w).end()
	})
	if c, err := Dial(context.Background(), path); err != nil {
		t.Fatalf("Dial of the user's own socket: %v", err)
	} else {
		c.Close()
	}
	uid := os.Getuid()
	ownUID = func() int { return uid + 1 }
	defer func() { ownUID = os.Getuid }()
	if _, err := Dial(context.Background(), path); !errors.Is(err, ErrNotOwned) {
		t.Errorf("Dial of another user's socket: err = %v, want ErrNotOwned", err)
	}
	if _, err := Serve(eventlog.NewMemoryStore(), strings.TrimSuffix(path, ".sock"), slog.Default(), nil); !errors.Is(err, ErrNotOwned) {
		t.Errorf("Serve over another user's socket: err = %v, want ErrNotOwned", err)
	}
}

func TestServeReplacesOnlyAStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	sock := SocketPath(path)
	// A crashed server's socket: the file stays, nothing answers.
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	srv, err := Serve(eventlog.NewMemoryStore(), path, slog.Default(), nil)
	if err != nil {
		t.Fatalf("Serve over a stale socket: %v", err)
	}
	defer srv.Close()
	if info, err := os.Stat(sock); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the socket: %v, %v; want mode 0600", info, err)
	}
	if _, err := Serve(eventlog.NewMemoryStore(), path, slog.Default(), nil); err == nil || !strings.Contains(err.Error(), "another process serves") {
		t.Errorf("Serve over a live socket: err = %v", err)
	}
	if c, err := Dial(context.Background(), sock); err != nil {
		t.Errorf("the first server stopped answering: %v", err)
	} else {
		c.Close()
	}
}

func TestSocketPath(t *testing.T) {
	runtime := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	short := filepath.Join(t.TempDir(), "r.db")
	if got := SocketPath(short); got != short+".sock" {
		t.Errorf("SocketPath(%s) = %s, want the path beside it", short, got)
	}
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 90), "reprise.db")
	got := SocketPath(long)
	if filepath.Dir(got) != filepath.Join(runtime, "reprise") || len(got) > maxSocketPath {
		t.Errorf("SocketPath of a long path = %s, want a short one under %s", got, runtime)
	}
	if again := SocketPath(long); again != got {
		t.Errorf("SocketPath is not deterministic: %s, then %s", got, again)
	}
	if other := SocketPath(long + "2"); other == got {
		t.Errorf("two stores share the socket %s", got)
	}
	if err := os.MkdirAll(filepath.Dir(long), 0o700); err != nil {
		t.Fatal(err)
	}
	srv, err := Serve(eventlog.NewMemoryStore(), long, slog.Default(), nil)
	if err != nil {
		t.Fatalf("Serve with a long store path: %v", err)
	}
	defer srv.Close()
	if info, err := os.Lstat(filepath.Dir(got)); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the private directory: %v, %v; want mode 0700", info, err)
	}
}

// indexed is the test's Indexer: the number of events of each stream.
type indexed struct{}

func (indexed) Name() string { return "remote.test/1" }

func (indexed) Apply(rows eventlog.Rows, ev eventlog.Event) error {
	row, err := rows.Get(ev.Stream)
	if err != nil {
		return err
	}
	rows.Put(ev.Stream, append(bytes.Clone(row), 'x'))
	return nil
}

// The rows of an index reach the client with the position they hold; an
// index the store does not hold, and a serving process of a build that
// serves none, are ErrNoIndex, so that readers fold the log instead.
func TestClientReadsIndexes(t *testing.T) {
	ctx := context.Background()
	store := eventlog.NewMemoryStore()
	if err := store.Index(ctx, indexed{}); err != nil {
		t.Fatal(err)
	}
	for i, stream := range []string{"a", "b", "a"} {
		head := uint64(0)
		if i == 2 {
			head = 1
		}
		if _, err := store.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: head}}, []eventlog.Record{{Stream: stream, Type: "T"}}); err != nil {
			t.Fatal(err)
		}
	}
	h := Handler(store)
	client, err := Dial(ctx, serveRaw(t, h.ServeHTTP))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	rows := map[string]string{}
	last, err := client.ReadIndex(ctx, indexed{}.Name(), func(key string, value []byte) error {
		rows[key] = string(value)
		return nil
	})
	if err != nil || last != 3 || len(rows) != 2 || rows["a"] != "xx" || rows["b"] != "x" {
		t.Fatalf("ReadIndex = %v up to %d, %v", rows, last, err)
	}
	if _, err := client.ReadIndex(ctx, "other/1", func(string, []byte) error { return nil }); !errors.Is(err, eventlog.ErrNoIndex) {
		t.Fatalf("ReadIndex of an index not held: %v, want ErrNoIndex", err)
	}
	if err := client.Index(ctx, indexed{}); !errors.Is(err, eventlog.ErrReadOnly) {
		t.Fatalf("Index through the client: %v, want ErrReadOnly", err)
	}

	older := http.NewServeMux()
	older.HandleFunc("GET /v1/ping", func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })
	old, err := Dial(ctx, serveRaw(t, older.ServeHTTP))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := old.ReadIndex(ctx, indexed{}.Name(), func(string, []byte) error { return nil }); !errors.Is(err, eventlog.ErrNoIndex) {
		t.Fatalf("ReadIndex from a server without indexes: %v, want ErrNoIndex", err)
	}
}

// A serving process that stalls, before its answer or in the middle of a
// frame, fails the read with ErrStalled within the frame deadline instead
// of hanging it; a caller whose own callback is slow is not cut off, and
// a following read may wait for as long as it asked.
func TestAStalledServerFailsTheRead(t *testing.T) {
	defer func(d time.Duration) { frameTimeout = d }(frameTimeout)
	frameTimeout = 200 * time.Millisecond
	info := eventlog.StreamInfo{Name: "s", Head: 1}
	var frames bytes.Buffer
	w := newFrameWriter(&frames)
	w.stream(info)
	w.stream(info)
	w.end()
	whole := frames.Bytes()
	for _, tt := range []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
		slowFn bool
		want   error
	}{
		{"before its header", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, false, ErrStalled},
		{"inside a frame", func(w http.ResponseWriter, r *http.Request) {
			w.Write(whole[:len(whole)/2+3])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, false, ErrStalled},
		{"while the caller is slow", func(w http.ResponseWriter, r *http.Request) { w.Write(whole) }, true, nil},
	} {
		path := serveRaw(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			if r.URL.Path == "/v1/ping" {
				newFrameWriter(w).end()
				return
			}
			tt.answer(w, r)
		})
		client, err := Dial(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			done <- client.Streams(context.Background(), "", func(eventlog.StreamInfo) error {
				if tt.slowFn {
					time.Sleep(3 * frameTimeout)
				}
				return nil
			})
		}()
		select {
		case err := <-done:
			if tt.want == nil && err != nil || tt.want != nil && (!errors.Is(err, tt.want) || !errors.Is(err, ErrDisconnected)) {
				t.Errorf("%s: Streams = %v; want %v", tt.name, err, tt.want)
			}
		case <-time.After(10 * frameTimeout):
			t.Fatalf("%s: Streams still waits after %v", tt.name, 10*frameTimeout)
		}
		client.Close()
	}

	// A follower's wait is the service's to take, on top of the deadline.
	path := serveRaw(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		if r.URL.Path != "/v1/ping" {
			time.Sleep(2 * frameTimeout)
		}
		newFrameWriter(w).end()
	})
	client, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.WaitAll(context.Background(), 1, 4*frameTimeout, func(eventlog.Event) error { return nil }); err != nil {
		t.Errorf("WaitAll answered within its wait: %v", err)
	}
}
