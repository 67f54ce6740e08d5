package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/blevesearch/bleve/v2"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/eventlog/remote"
	"github.com/reprise-dev/reprise/search"
)

// searchTotal asks s's /api/search for q and returns its total.
func searchTotal(t *testing.T, s *serving, q string) int {
	t.Helper()
	status, body := s.get(t, "/api/search?q="+q)
	if status != http.StatusOK {
		t.Fatalf("/api/search?q=%s = %d %s", q, status, body)
	}
	var res struct{ Total int }
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	return res.Total
}

// serve builds the search index beside the store at its first search and
// keeps it up to date; rm takes a deleted session's words out of it
// itself, with no serve running, and vacuum out of the index's files.
func TestServeSearchesAndRmAndVacuumTakeTheWordsOut(t *testing.T) {
	c := newCLI(t)
	c.mkdir("state")
	c.session("kept", "where is the wombat", "the wombat is in main.go")
	c.session("gone", "a numbat and a wombat")
	s := startServe(t, "serve", "--addr", "127.0.0.1:0")
	if n := searchTotal(t, s, "wombat"); n != 3 {
		t.Fatalf("wombat found %d times, want 3", n)
	}
	c.session("later", "a quoll arrived")
	if n := searchTotal(t, s, "quoll"); n != 1 {
		t.Fatalf("quoll, appended after the first search, found %d times, want 1", n)
	}
	s.stop(t)

	c.ok("rm", "gone")
	// The index as rm left it, searched without bringing it up to date.
	e, err := reprise.Open(c.store, reprise.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	x, err := search.Open(context.Background(), search.Dir(c.store), e.Store())
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{"numbat": 0, "wombat": 2} {
		res, err := x.Search(context.Background(), q, 20, 0)
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != want {
			t.Errorf("after rm, the index finds %s %d times, want %d", q, res.Total, want)
		}
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	c.ok("vacuum")
	idx, err := bleve.Open(search.Dir(c.store))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	dict, err := idx.FieldDict("text")
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	var terms []string
	for {
		e, err := dict.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		terms = append(terms, e.Term)
	}
	if slices.Contains(terms, "numbat") || !slices.Contains(terms, "wombat") {
		t.Fatalf("after vacuum the index's files hold %q; want wombat, and not numbat, whose session rm deleted", terms)
	}
}

// On PostgreSQL, rm takes a deleted session's words out of the index
// table when the store has one, and makes none when it has not.
func TestRmUpdatesThePostgresIndex(t *testing.T) {
	c := newCLI(t)
	store := postgresStore(t)
	ctx := context.Background()
	for _, s := range [][2]string{{"kept", "the wombat stays"}, {"gone", "the numbat leaves"}} {
		c.ok("--store", store, "new", "--id", s[0], "--cwd", c.dir)
		c.ok("--store", store, "append", s[0], "--role", "user", s[1])
	}
	if ok, err := search.PostgresIndexed(ctx, store); err != nil || ok {
		t.Fatalf("before any search, PostgresIndexed = %v, %v; want no index", ok, err)
	}
	c.ok("--store", store, "rm", "gone")
	if ok, err := search.PostgresIndexed(ctx, store); err != nil || ok {
		t.Fatalf("rm made an index: PostgresIndexed = %v, %v", ok, err)
	}
	c.ok("--store", store, "new", "--id", "later", "--cwd", c.dir)
	c.ok("--store", store, "append", "later", "--role", "user", "a quoll arrives")

	index := func() (eventlog.Store, *search.Index) {
		t.Helper()
		e, err := pgstore.Open(ctx, store, pgstore.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		x, err := search.OpenPostgres(ctx, store, e)
		if err != nil {
			t.Fatal(err)
		}
		return e, x
	}
	e, x := index() // as serve does at its first search
	if _, err := x.Update(ctx); err != nil {
		t.Fatal(err)
	}
	x.Close()
	e.Close()
	c.ok("--store", store, "rm", "later")
	e, x = index()
	defer e.Close()
	defer x.Close()
	res, err := x.Search(ctx, "quoll", 20, 0) // as rm left it: no Update here
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 0 {
		t.Errorf("after rm, the index finds quoll %d times; want 0", res.Total)
	}
}

// serve, reading a store another process holds, searches through that
// holder when it serves searches, which then keeps the index (so no other
// process can open it beside it) and brings it up to date with what it
// appends; a holder that serves none leaves serve to open the index
// itself, for each search.
func TestServeSearchesThroughTheHolder(t *testing.T) {
	for _, kind := range []string{"serving searches", "serving reads only"} {
		t.Run(kind, func(t *testing.T) {
			c := newCLI(t)
			c.session("s", "where is the wombat", "the wombat is in main.go")
			var h *holder
			if kind == "serving searches" {
				h = holdSearching(t, c.store)
			} else {
				h = holdServing(t, c.store)
			}
			defer h.release()
			h.append("s", "a quoll from the host")
			s := startServe(t, "serve", "--addr", "127.0.0.1:0")
			if n := searchTotal(t, s, "wombat"); n != 2 {
				t.Errorf("wombat found %d times, want 2", n)
			}
			if n := searchTotal(t, s, "quoll"); n != 1 {
				t.Errorf("quoll, which the holder appended, found %d times, want 1", n)
			}
			client, err := remote.Dial(context.Background(), remote.SocketPath(c.store))
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			x, err := search.Open(context.Background(), search.Dir(c.store), client)
			if kind == "serving searches" && !errors.Is(err, search.ErrLocked) {
				t.Errorf("opening the index beside a holder that serves searches = %v; want ErrLocked: the holder keeps it", err)
			}
			if kind == "serving reads only" && err != nil {
				t.Errorf("opening the index beside a holder that serves reads only = %v; want it free between serve's searches", err)
			}
			if err == nil {
				x.Close()
			}
			h.append("s", "then a numbat")
			if n := searchTotal(t, s, "numbat"); n != 1 {
				t.Errorf("numbat, appended after the first search, found %d times, want 1", n)
			}
		})
	}
}

// serve --write keeps the index its own searches use and serves it to
// the store's readers: a read-only serve beside it searches through it,
// rather than failing to open the index serve --write holds.
func TestServeWriteSharesItsIndexWithReaders(t *testing.T) {
	c := newCLI(t)
	c.session("s", "where is the wombat", "the wombat is in main.go")
	settings := c.writeFile("settings.json", `{}`)
	w := startWriteServer(t, c, filepath.Join(c.dir, "w.sock"), settings)
	total := func(who string, get func(string) (*http.Response, error)) int {
		t.Helper()
		res, err := get("/api/search?q=wombat")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out struct{ Total int }
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("%s: /api/search = %d (%v)", who, res.StatusCode, err)
		}
		return out.Total
	}
	if n := total("serve --write", func(p string) (*http.Response, error) { return w.client.Get("http://localhost" + p) }); n != 2 {
		t.Errorf("serve --write finds wombat %d times, want 2", n)
	}
	s := startServe(t, "serve", "--addr", "127.0.0.1:0")
	if n := searchTotal(t, s, "wombat"); n != 2 {
		t.Errorf("a serve beside serve --write finds wombat %d times, want 2", n)
	}
}
