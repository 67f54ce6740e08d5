package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/remote"
	"github.com/reprise-dev/reprise/search"
)

// TestReadersSearchThroughTheHolder checks that an Engine given
// ServeSearch answers the searches of the store's readers on its socket
// with the index it holds, brought up to date before each, and lets the
// index go at Close.
func TestReadersSearchThroughTheHolder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	e, err := reprise.Open(path, reprise.Options{ServeReads: true, ServeSearch: search.Served(path)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	fillStore(t, e)
	c, err := remote.Dial(ctx, remote.SocketPath(path))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	res, err := search.Remote(ctx, c, "platypus", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The context a hook injected: in its step and in the meta message.
	if res.Total != 2 || len(res.Hits) != 2 {
		t.Fatalf("Remote(platypus) = %+v; want the hook step and the message that hold it", res)
	}
	kinds := map[search.Kind]bool{}
	for _, h := range res.Hits {
		kinds[h.Kind] = true
		if h.Session != "alpha-7f3e" || len(h.Marks) != 1 || h.Snippet[h.Marks[0].Start:h.Marks[0].End] != "platypus" || h.Position == 0 || h.Type == "" {
			t.Errorf("the hit lost its place or its marks over the socket: %+v", h)
		}
	}
	if !kinds[search.KindMessage] || !kinds[search.KindHook] {
		t.Errorf("hits of kinds %v; want a message and a hook step", kinds)
	}
	// The holder keeps the index, so no reader can open it beside it.
	if x, err := search.Open(ctx, search.Dir(path), c); !errors.Is(err, search.ErrLocked) {
		if err == nil {
			x.Close()
		}
		t.Errorf("Open while the holder serves searches = %v; want ErrLocked", err)
	}
	// What the holder appends after a search is found by the next.
	if _, err := e.Append(ctx, "alpha-7f3e", reprise.Text("assistant", "an axolotl swims by")); err != nil {
		t.Fatal(err)
	}
	if res, err := search.Remote(ctx, c, "axolotl", 0, 0); err != nil || res.Total != 1 {
		t.Errorf("Remote(axolotl) after an append = %+v, %v; want the new message", res, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed, the Engine lets the index go with the store.
	store, err := reprise.Open(path, reprise.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	x, err := search.Open(ctx, search.Dir(path), store.Store())
	if err != nil {
		t.Fatalf("Open after the holder closed: %v", err)
	}
	x.Close()
}

// TestRemoteErrors checks each answer of a holder that cannot search: one
// that serves no searches, one whose index another process holds, one
// closed, and a request with a bad page.
func TestRemoteErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dial := func(t *testing.T, name string, h remote.Searcher) *remote.Client {
		t.Helper()
		path := filepath.Join(dir, name)
		srv, err := remote.Serve(eventlog.NewMemoryStore(), path, nil, h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		c, err := remote.Dial(ctx, remote.SocketPath(path))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	none := dial(t, "none.db", nil)
	if _, err := search.Remote(ctx, none, "word", 0, 0); !errors.Is(err, search.ErrNotServed) {
		t.Errorf("Remote of a holder without searches = %v; want ErrNotServed", err)
	}

	locked := dial(t, "locked.db", search.Hold(func(context.Context) (*search.Index, error) {
		return nil, fmt.Errorf("open: %w", search.ErrLocked)
	}))
	if _, err := search.Remote(ctx, locked, "word", 0, 0); !errors.Is(err, search.ErrLocked) {
		t.Errorf("Remote of a holder whose index is held elsewhere = %v; want ErrLocked", err)
	}
	resp, err := locked.Get(ctx, remote.SearchPath, url.Values{"q": {"word"}, "limit": {"many"}})
	if err != nil {
		t.Fatal(err)
	}
	var answer struct{ Error, Message string }
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusBadRequest || answer.Error != "bad_request" {
		t.Errorf("a bad limit = %d %+v (%v); want 400 bad_request", resp.StatusCode, answer, err)
	}

	held := search.Hold(func(context.Context) (*search.Index, error) { return nil, errors.New("never opened") })
	closed := dial(t, "closed.db", held)
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := search.Remote(ctx, closed, "word", 0, 0); !errors.Is(err, search.ErrClosed) {
		t.Errorf("Remote of a closed index = %v; want ErrClosed", err)
	}
}
