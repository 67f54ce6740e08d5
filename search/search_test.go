package search_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testdirs"
	"github.com/reprise-dev/reprise/search"
)

// newEngine opens an Engine on a bbolt file in a temporary directory and
// returns it with the file's path.
func newEngine(t *testing.T) (*reprise.Engine, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.db")
	e, err := reprise.Open(path, reprise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, path
}

// openIndex opens the index beside the store at path and brings it up to
// date.
func openIndex(t *testing.T, e *reprise.Engine, path string) *search.Index {
	t.Helper()
	x, err := search.Open(context.Background(), search.Dir(path), e.Store())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	update(t, x)
	return x
}

// testStore is an Engine on one of the backends, and how to open its
// index there.
type testStore struct {
	e *reprise.Engine
	// open opens the index.
	open func(t *testing.T) *search.Index
	// kept closes x and returns the words the index keeps, read again
	// from its files or its table.
	kept func(t *testing.T, x *search.Index) []string
}

// index opens the index and brings it up to date.
func (s *testStore) index(t *testing.T) *search.Index {
	t.Helper()
	x := s.open(t)
	update(t, x)
	return x
}

// eachBackend runs test on a bbolt store and on a PostgreSQL one (when
// REPRISE_TEST_POSTGRES names a server).
func eachBackend(t *testing.T, test func(t *testing.T, s *testStore)) {
	t.Run("bbolt", func(t *testing.T) {
		e, path := newEngine(t)
		test(t, &testStore{e: e,
			open: func(t *testing.T) *search.Index {
				x, err := search.Open(context.Background(), search.Dir(path), e.Store())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { x.Close() })
				return x
			},
			kept: func(t *testing.T, x *search.Index) []string {
				if err := x.Close(); err != nil {
					t.Fatal(err)
				}
				return must[[]string](t)(search.Terms(openIndex(t, e, path)))
			}})
	})
	t.Run("postgres", func(t *testing.T) {
		db := newDB(t)
		store, err := pgstore.Open(context.Background(), db.url, pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		e := reprise.New(store, reprise.Options{})
		t.Cleanup(func() { e.Close() })
		test(t, &testStore{e: e,
			open: func(t *testing.T) *search.Index {
				x, err := search.OpenPostgres(context.Background(), db.url, e.Store())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { x.Close() })
				return x
			},
			kept: func(t *testing.T, x *search.Index) []string {
				if err := x.Close(); err != nil {
					t.Fatal(err)
				}
				rows, err := db.admin.Query(context.Background(), "SELECT DISTINCT unnest(tsvector_to_array(words)) FROM "+db.schema+".reprise_search_docs")
				if err != nil {
					t.Fatal(err)
				}
				return must[[]string](t)(pgx.CollectRows(rows, pgx.RowTo[string]))
			}})
	})
}

// postgresEnv names the variable holding the URL of the PostgreSQL
// server the tests use.
const postgresEnv = "REPRISE_TEST_POSTGRES"

// testDB is a test's own schema on the PostgreSQL test server.
type testDB struct {
	schema string
	url    string // the server, with the schema as search_path
	admin  *pgxpool.Pool
}

// newDB creates a schema for t, dropped when t ends, or skips t when no
// server is named.
func newDB(t *testing.T) *testDB {
	t.Helper()
	base := os.Getenv(postgresEnv)
	if base == "" {
		t.Skip(postgresEnv + " is not set: set it to a PostgreSQL URL, such as postgres://postgres@127.0.0.1:5432/test?sslmode=disable, to run the PostgreSQL tests")
	}
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, base)
	if err != nil {
		t.Fatalf("%s: %v", postgresEnv, err)
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	db := &testDB{schema: "search_test_" + hex.EncodeToString(suffix), admin: admin}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+db.schema); err != nil {
		admin.Close()
		t.Fatalf("%s is set, but a schema cannot be created there: %v", postgresEnv, err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP SCHEMA "+db.schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", db.schema, err)
		}
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", postgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", db.schema)
	u.RawQuery = q.Encode()
	db.url = u.String()
	return db
}

func update(t *testing.T, x *search.Index) int {
	t.Helper()
	n, err := x.Update(context.Background())
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	return n
}

func find(t *testing.T, x *search.Index, q string) search.Result {
	t.Helper()
	res, err := x.Search(context.Background(), q, 0, 0)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	return res
}

// must fails t on err.
func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// fillStore writes, through the Engine, a session whose messages, tool
// call and hooks each hold a word of their own.
func fillStore(t *testing.T, e *reprise.Engine) {
	t.Helper()
	ctx := context.Background()
	e.Hooks().OnSessionStart("context", "", func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		if in.SessionID != "alpha-7f3e" {
			return hookexec.SessionStartOutput{}, nil
		}
		return hookexec.SessionStartOutput{AdditionalContext: "remember the platypus"}, nil
	})
	e.Hooks().OnSessionStart("failing", "", func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		if in.SessionID != "alpha-7f3e" {
			return hookexec.SessionStartOutput{}, nil
		}
		return hookexec.SessionStartOutput{}, errors.New("echidna: permission denied")
	})
	cwd := filepath.Join(t.TempDir(), "zebrafish")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	must[string](t)(e.CreateSession(ctx, "alpha-7f3e", cwd))
	must[reprise.Message](t)(e.Append(ctx, "alpha-7f3e", reprise.Text("user", "Why did the quokka\njump over the fence?")))
	must[reprise.Message](t)(e.Append(ctx, "alpha-7f3e", reprise.ToolUseMessage("call-1", "Bash", json.RawMessage(`{"command":"grep -r wombat ."}`))))
	result, _ := json.Marshal(map[string]any{"type": "tool_result", "tool_use_id": "call-1", "content": "found a numbat\nin burrow.go"})
	must[reprise.Message](t)(e.Append(ctx, "alpha-7f3e", reprise.Message{Role: "user", Content: []reprise.Block{{Type: "tool_result", Raw: result}}}))
	a := must[*reprise.Agent](t)(e.Agent(ctx, "ide"))
	must[*reprise.Transition](t)(a.Start(ctx, "alpha-7f3e"))
}

// TestFindsEveryKindOfText checks that a word is found where it was
// written, and that each hit names its place and shows the word.
func TestFindsEveryKindOfText(t *testing.T) { eachBackend(t, testFindsEveryKindOfText) }

func testFindsEveryKindOfText(t *testing.T, s *testStore) {
	fillStore(t, s.e)
	x := s.index(t)
	for _, tc := range []struct {
		q       string
		kind    search.Kind
		stream  string
		marked  string
		toolUse string
	}{
		{q: "quokka", kind: search.KindMessage, stream: "session/alpha-7f3e", marked: "quokka"},
		{q: "QUOKKA fence", kind: search.KindMessage, stream: "session/alpha-7f3e", marked: "quokka"},
		{q: "wombat", kind: search.KindTool, stream: "session/alpha-7f3e", marked: "wombat", toolUse: "call-1"},
		{q: "numbat", kind: search.KindTool, stream: "session/alpha-7f3e", marked: "numbat", toolUse: "call-1"},
		{q: "permission denied", kind: search.KindHook, stream: "agent/ide", marked: "permission"},
		{q: "zebrafish", kind: search.KindSession, stream: "session/alpha-7f3e", marked: "zebrafish"},
		{q: "alpha-7f", kind: search.KindSession, stream: "session/alpha-7f3e", marked: "alpha"},
	} {
		res := find(t, x, tc.q)
		if len(res.Hits) == 0 {
			t.Errorf("Search(%q) found nothing", tc.q)
			continue
		}
		h := res.Hits[len(res.Hits)-1] // the oldest: where the word was first written
		if h.Kind != tc.kind || h.Stream != tc.stream || h.Session != "alpha-7f3e" || h.Seq == 0 || h.Position == 0 || h.ToolUseID != tc.toolUse {
			t.Errorf("Search(%q) = %+v; want kind %s in %s, tool call %q", tc.q, h, tc.kind, tc.stream, tc.toolUse)
		}
		if len(h.Marks) == 0 || !strings.EqualFold(h.Snippet[h.Marks[0].Start:h.Marks[0].End], tc.marked) {
			t.Errorf("Search(%q): snippet %q marks %v; want %q marked", tc.q, h.Snippet, h.Marks, tc.marked)
		}
		if strings.Contains(h.Snippet, "\n") {
			t.Errorf("Search(%q): snippet %q is not one line", tc.q, h.Snippet)
		}
	}
	// The hook's context reaches the session as a meta message too: one
	// hit in the agent's stream, one in the session's.
	res := find(t, x, "platypus")
	var kinds []search.Kind
	for _, h := range res.Hits {
		kinds = append(kinds, h.Kind)
	}
	if res.Total != 2 || !slices.Contains(kinds, search.KindHook) || !slices.Contains(kinds, search.KindMessage) {
		t.Errorf("Search(platypus) = %d hits of kinds %v; want 2, a hook and a message", res.Total, kinds)
	}
	if res := find(t, x, "quokka giraffe"); res.Total != 0 {
		t.Errorf("Search(quokka giraffe) found %d; want none, no text holds both", res.Total)
	}
}

// TestDeletedSessionLeavesTheIndex checks that once a session is deleted
// its words are no longer found, the other sessions' still are, and that
// after a vacuum no file of the index holds them.
func TestDeletedSessionLeavesTheIndex(t *testing.T) { eachBackend(t, testDeletedSessionLeavesTheIndex) }

func testDeletedSessionLeavesTheIndex(t *testing.T, s *testStore) {
	ctx := context.Background()
	e := s.e
	fillStore(t, e) // alpha-7f3e, with the hooks' words
	must[string](t)(e.CreateSession(ctx, "beta", ""))
	must[reprise.Message](t)(e.Append(ctx, "beta", reprise.Text("user", "the shared capybara stays")))
	must[reprise.Message](t)(e.Append(ctx, "alpha-7f3e", reprise.Text("user", "a shared capybara and the xylophonist")))
	x := s.index(t)
	if res := find(t, x, "xylophonist"); res.Total != 1 {
		t.Fatalf("before the deletion, xylophonist is found %d times; want 1", res.Total)
	}
	if res := find(t, x, "capybara"); res.Total != 2 {
		t.Fatalf("before the deletion, capybara is found %d times; want 2", res.Total)
	}

	a := must[*reprise.Agent](t)(e.Agent(ctx, "ide"))
	must[*reprise.Transition](t)(a.Restore(ctx, "beta")) // an agent's current session cannot be deleted
	if err := e.DeleteSession(ctx, "alpha-7f3e"); err != nil {
		t.Fatal(err)
	}
	update(t, x)
	for _, q := range []string{"xylophonist", "quokka", "wombat", "echidna", "zebrafish", "alpha-7f3e", "platypus"} {
		if res := find(t, x, q); res.Total != 0 || len(res.Hits) != 0 {
			t.Errorf("after the deletion, Search(%q) = %+v; want nothing", q, res)
		}
	}
	res := find(t, x, "capybara")
	if res.Total != 1 || len(res.Hits) != 1 || res.Hits[0].Session != "beta" {
		t.Errorf("after the deletion, Search(capybara) = %+v; want beta's message alone", res)
	}

	if _, err := e.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	update(t, x) // reads the vacuum's record, and compacts
	// What the files hold, read again by an index opened on them. (A
	// bleve index's dictionaries are finite-state machines, which keep a
	// word's bytes apart: grep finds no word in them, removed or not.)
	kept := s.kept(t, x)
	for _, word := range []string{"xylophonist", "quokka", "numbat", "echidna", "platypus", "zebrafish"} {
		if slices.Contains(kept, word) {
			t.Errorf("after the vacuum, the index holds %q", word)
		}
	}
	if !slices.Contains(kept, "capybara") {
		t.Errorf("after the vacuum the index does not hold capybara, which beta still has: %q", kept)
	}
}

// TestCatchesUpFromWhereItStopped checks that an index reopened reads
// only the events appended since it last updated.
func TestCatchesUpFromWhereItStopped(t *testing.T) { eachBackend(t, testCatchesUpFromWhereItStopped) }

func testCatchesUpFromWhereItStopped(t *testing.T, s *testStore) {
	ctx := context.Background()
	fillStore(t, s.e)
	x := s.index(t)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	must[reprise.Message](t)(s.e.Append(ctx, "alpha-7f3e", reprise.Text("assistant", "a walrus")))
	x = s.open(t)
	if n := update(t, x); n != 1 {
		t.Errorf("the reopened index read %d events; want the 1 appended since", n)
	}
	if res := find(t, x, "walrus"); res.Total != 1 {
		t.Errorf("Search(walrus) found %d; want the message appended since", res.Total)
	}
	if res := find(t, x, "quokka"); res.Total != 1 {
		t.Errorf("Search(quokka) found %d; want the message indexed before", res.Total)
	}
	if n := update(t, x); n != 0 {
		t.Errorf("an Update with nothing new read %d events", n)
	}
}

// TestRebuildsAStaleIndex checks that an index that is not of the log it
// is opened on is built again from that log, and holds none of the other
// log's words.
func TestRebuildsAStaleIndex(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		other func(t *testing.T, e *reprise.Engine) // what the other log holds
	}{
		{"the log is shorter", func(t *testing.T, e *reprise.Engine) {
			must[string](t)(e.CreateSession(ctx, "gamma", ""))
		}},
		{"the log is as long but another", func(t *testing.T, e *reprise.Engine) {
			must[string](t)(e.CreateSession(ctx, "gamma", ""))
			for range 20 {
				must[reprise.Message](t)(e.Append(ctx, "gamma", reprise.Text("user", "a marmot")))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, path := newEngine(t)
			fillStore(t, e)
			x := openIndex(t, e, path)
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			other, otherPath := newEngine(t)
			tc.other(t, other)
			if err := os.Rename(search.Dir(path), search.Dir(otherPath)); err != nil {
				t.Fatal(err)
			}
			x = openIndex(t, other, otherPath)
			if res := find(t, x, "quokka"); res.Total != 0 {
				t.Errorf("the index of the other log finds quokka %d times; want none", res.Total)
			}
			if res := find(t, x, "gamma"); res.Total != 1 {
				t.Errorf("the index of the other log finds its session %d times; want 1", res.Total)
			}
		})
	}
}

// TestIndexBelongsToOneHolder checks that a second Open of an index's
// directory fails while the first holds it, and that a directory which
// is not an index is left as it is.
func TestIndexBelongsToOneHolder(t *testing.T) {
	ctx := context.Background()
	e, path := newEngine(t)
	openIndex(t, e, path)
	if x, err := search.Open(ctx, search.Dir(path), e.Store()); !errors.Is(err, search.ErrLocked) {
		if err == nil {
			x.Close()
		}
		t.Errorf("a second Open = %v; want ErrLocked", err)
	}

	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if x, err := search.Open(ctx, dir, e.Store()); !errors.Is(err, search.ErrNotIndex) {
		if err == nil {
			x.Close()
		}
		t.Errorf("Open on a directory of notes = %v; want ErrNotIndex", err)
	}
	if _, err := os.Stat(notes); err != nil {
		t.Errorf("Open removed what the directory held: %v", err)
	}
}

// TestPagesAreNewestFirst checks that pages of hits follow each other,
// newest first, with the total on each.
func TestPagesAreNewestFirst(t *testing.T) { eachBackend(t, testPagesAreNewestFirst) }

func testPagesAreNewestFirst(t *testing.T, s *testStore) {
	ctx := context.Background()
	e := s.e
	must[string](t)(e.CreateSession(ctx, "delta", ""))
	for i := range 25 {
		must[reprise.Message](t)(e.Append(ctx, "delta", reprise.Text("user", "lemur number "+strconv.Itoa(i))))
	}
	x := s.index(t)
	var seen []uint64
	for offset := 0; offset < 30; offset += 10 {
		res, err := x.Search(ctx, "lemur", 10, offset)
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != 25 || len(res.Hits) != min(10, 25-offset) {
			t.Fatalf("page at %d: %d hits of %d; want %d of 25", offset, len(res.Hits), res.Total, min(10, 25-offset))
		}
		for _, h := range res.Hits {
			seen = append(seen, h.Seq)
		}
	}
	for i, seq := range seen {
		if want := uint64(26 - i); seq != want { // messages are 2 to 26 of the stream
			t.Fatalf("hits are at %v; want 26 down to 2", seen)
		}
	}
}

// crashEnv, set to a store's path, makes the test binary a process that
// updates the store's index and exits at once, closing nothing, as a
// process that dies does.
const crashEnv = "REPRISE_SEARCH_TEST_CRASH"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		os.Exit(updateAndDie(path))
	}
	os.Exit(testdirs.Run(m.Run))
}

func updateAndDie(path string) int {
	ctx := context.Background()
	e, err := reprise.Open(path, reprise.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	x, err := search.Open(ctx, search.Dir(path), e.Store())
	if err == nil {
		_, err = x.Update(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0 // the index is not closed: what it had not written is lost
}

// TestCatchesUpAfterACrash checks that an index whose process died
// without closing it is brought up to date by the next Update, or built
// again, and finds every word.
func TestCatchesUpAfterACrash(t *testing.T) {
	e, path := newEngine(t)
	fillStore(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the process that dies: %v\n%s", err, out)
	}
	if _, err := os.Stat(search.Dir(path)); err != nil {
		t.Fatalf("the process that died left no index: %v", err)
	}
	e = must[*reprise.Engine](t)(reprise.Open(path, reprise.Options{}))
	t.Cleanup(func() { e.Close() })
	x := openIndex(t, e, path)
	for _, q := range []string{"quokka", "wombat", "numbat", "echidna", "zebrafish"} {
		if res := find(t, x, q); res.Total == 0 {
			t.Errorf("after the crash, Search(%q) finds nothing", q)
		}
	}
	if n := update(t, x); n != 0 {
		t.Errorf("a second Update read %d events; want none", n)
	}
}

// TestPostgresIndexIsShared checks that two processes' indexes of one
// PostgreSQL store, updated in turn, hold each document once: the one
// behind reads the log again from where the other left the table.
func TestPostgresIndexIsShared(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	store, err := pgstore.Open(ctx, db.url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := reprise.New(store, reprise.Options{})
	t.Cleanup(func() { e.Close() })
	open := func() *search.Index {
		x, err := search.OpenPostgres(ctx, db.url, e.Store())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	}
	first, second := open(), open()
	fillStore(t, e)
	update(t, first)
	must[reprise.Message](t)(e.Append(ctx, "alpha-7f3e", reprise.Text("assistant", "a walrus")))
	if n := update(t, second); n != 1 {
		t.Errorf("the second index read %d events; want the 1 the first had not indexed", n)
	}
	for _, x := range []*search.Index{first, second} {
		for _, q := range []string{"quokka", "walrus", "wombat"} {
			if res := find(t, x, q); res.Total != 1 {
				t.Errorf("Search(%q) found %d; want 1", q, res.Total)
			}
		}
	}
}

// TestVacuumCompactsAnIndexOfOneSegment checks that a vacuum removes the
// words of a deleted session from an index already merged into one
// segment, which a merge alone would leave as it is.
func TestVacuumCompactsAnIndexOfOneSegment(t *testing.T) {
	ctx := context.Background()
	e, path := newEngine(t)
	must[string](t)(e.CreateSession(ctx, "keep", ""))
	must[reprise.Message](t)(e.Append(ctx, "keep", reprise.Text("user", "the capybara stays")))
	must[string](t)(e.CreateSession(ctx, "drop", ""))
	must[reprise.Message](t)(e.Append(ctx, "drop", reprise.Text("user", "the xylophonist leaves")))
	x, err := search.Open(ctx, search.Dir(path), e.Store())
	if err != nil {
		t.Fatal(err)
	}
	update(t, x)
	if err := x.Compact(ctx); err != nil { // one segment now
		t.Fatal(err)
	}
	if err := e.DeleteSession(ctx, "drop"); err != nil {
		t.Fatal(err)
	}
	update(t, x)
	if _, err := e.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	update(t, x)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	y := openIndex(t, e, path)
	kept := must[[]string](t)(search.Terms(y))
	if slices.Contains(kept, "xylophonist") || !slices.Contains(kept, "capybara") {
		t.Errorf("after the vacuum the index holds %q; want capybara, and not xylophonist", kept)
	}
	if res := find(t, y, "the"); res.Total != 1 {
		t.Errorf("the word of the kept message is found %d times; want 1", res.Total)
	}
}
