package golden_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/internal/golden"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

var (
	write = flag.Bool("golden.write", false,
		"regenerate the golden store of the current format and its expected rendering; never for a released format")
	rerender = flag.Bool("golden.rerender", false,
		"rewrite expected.txt from the committed stores, after a change of the rendering (never of the stores)")
)

// sets are the directories of the golden stores, one for each format a
// build of reprise wrote, oldest first; every build opens, replays and
// audits them all.
//
//   - v1: event schema 1, envelope format 1, bbolt layout 3, PostgreSQL
//     schema 1; no deletion.
//   - v2: the same, with deleted and vacuumed sessions: bbolt layout 4
//     (the gaps bucket) and PostgreSQL schema 2 (reprise_gaps); and every
//     event type of this build, imports' among them.
//   - v3: the history of v2 written in bbolt layout 5, whose appends
//     store the events they write to a stream as batches, beside events
//     stored alone; its PostgreSQL dump holds the index tables too.
//   - v4: the history of v3 with an agent's tool calls: their hooks, their
//     decisions and their results (ToolHookStarted, ToolHookRan,
//     ToolDecided, ToolResultRecorded).
//   - v5: the history of v4 written in bbolt layout 6, the layout of stores
//     with a write-ahead log, closed cleanly: its log applied and its
//     segments removed.
//   - v6: the history of v5, beta's tool call given its result (appends
//     refuse a conversation the Messages API would), and an async hook:
//     its end and its context taken to the model (AsyncHookEnded,
//     AsyncContextInjected).
//   - v7: the history of v6 with fired hook events (HookEventStarted,
//     HookEventRan): a host's fires, one closed as interrupted by the next
//     process; an answer's PostToolBatch and the meta message of its
//     context; PostCompact after every compaction, and a compaction's
//     trigger in SessionCompacted.
//   - v8: the history of v7 with a subagent: an Agent call's session,
//     linked to the call in its SessionCreated, its SubagentStart context
//     and its SubagentStop block, and its answer as the call's result.
//   - v9: the history of v8 written by a build whose intents name the
//     event their hooks run for when it is a subagent's (the Event of
//     SessionStartHookStarted and StopHookStarted).
var sets = []string{"../../testdata/golden/v1", "../../testdata/golden/v2", "../../testdata/golden/v3", "../../testdata/golden/v4",
	"../../testdata/golden/v5", "../../testdata/golden/v6", "../../testdata/golden/v7", "../../testdata/golden/v8", "../../testdata/golden/v9"}

// current is the set of the format this build writes, the only one
// -golden.write may write, and only into an empty directory.
var current = sets[len(sets)-1]

const (
	boltFile     = "store.db"
	sqlFile      = "postgres.sql"
	expectedFile = "expected.txt"
	transcript   = "../../testdata/transcripts/every-record.jsonl"
)

// urlEnv names the PostgreSQL server the test loads postgres.sql into.
const urlEnv = "REPRISE_TEST_POSTGRES"

// Every golden store reads back as the committed rendering of its set:
// same events, same decoded payloads, same projections; and its audit is
// clean.
func TestGolden(t *testing.T) {
	if *write {
		regenerate(t, current)
	}
	for _, dir := range sets {
		t.Run(filepath.Base(dir), func(t *testing.T) { checkSet(t, dir) })
	}
}

// checkSet reads the stores of the golden set in dir, bbolt and
// PostgreSQL, and compares them with its expected.txt.
func checkSet(t *testing.T, dir string) {
	if *rerender {
		if err := os.WriteFile(filepath.Join(dir, expectedFile), render(t, openBolt(t, dir)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(filepath.Join(dir, expectedFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("bbolt", func(t *testing.T) {
		e := openBolt(t, dir)
		compare(t, want, render(t, e))
		audit(t, e)
	})
	t.Run("bbolt-written", func(t *testing.T) { checkWriteOpen(t, dir) })
	t.Run("postgres", func(t *testing.T) {
		base := os.Getenv(urlEnv)
		if base == "" {
			t.Skip(urlEnv + " is not set: set it to a PostgreSQL URL, such as postgres://postgres@127.0.0.1:5432/test?sslmode=disable, to read the PostgreSQL golden store")
		}
		sql, err := os.ReadFile(filepath.Join(dir, sqlFile))
		if err != nil {
			t.Fatal(err)
		}
		u := privateSchema(t, base)
		conn, err := pgx.Connect(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(context.Background(), string(sql))
		conn.Close(context.Background())
		if err != nil {
			t.Fatalf("load %s: %v", sqlFile, err)
		}
		store, err := pgstore.Open(context.Background(), u, pgstore.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		e := closing(t, reprise.New(store, reprise.Options{TranscriptDir: t.TempDir()}))
		compare(t, want, render(t, e))
		audit(t, e)
	})
}

// checkWriteOpen opens a copy of the golden bbolt file of set dir for
// writing, as a newer build meets a store an older one wrote: the open
// builds the session index from the log, and the rows it keeps are what
// folding the whole log says.
func checkWriteOpen(t *testing.T, dir string) {
	ctx := context.Background()
	folded, err := openBolt(t, dir).Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, boltFile))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), boltFile)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := reprise.Open(path, reprise.Options{TranscriptDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	closing(t, e)
	rows := map[string][]byte{}
	_, err = e.Store().(eventlog.Indexed).ReadIndex(ctx, projection.SessionIndex.Name(), func(key string, value []byte) error {
		rows[key] = bytes.Clone(value)
		return nil
	})
	if err != nil {
		t.Fatalf("the write-open kept no session index: %v", err)
	}
	kept, err := projection.Sessions(rows)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(kept, folded) || len(kept) == 0 {
		t.Fatalf("the session index built on a write-open holds\n%+v\nfolding the log gives\n%+v", kept, folded)
	}
}

// audit fails t when the audit of e's store finds anything wrong.
func audit(t *testing.T, e *reprise.Engine) {
	t.Helper()
	rep, err := reprise.Audit(context.Background(), e.Store())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		t.Errorf("audit: %s", v)
	}
	if rep.Events == 0 {
		t.Error("audit read no events")
	}
}

// openBolt opens a copy of the golden bbolt file of set dir, read-only.
func openBolt(t *testing.T, dir string) *reprise.Engine {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, boltFile))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), boltFile)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return openEngine(t, path)
}

// openEngine opens the bbolt store at path read-only, closed when t ends.
func openEngine(t *testing.T, path string) *reprise.Engine {
	t.Helper()
	e, err := reprise.Open(path, reprise.Options{ReadOnly: true, TranscriptDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return closing(t, e)
}

// closing returns e, closed when t ends.
func closing(t *testing.T, e *reprise.Engine) *reprise.Engine {
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// compare fails t at the first line where got differs from want.
func compare(t *testing.T, want, got []byte) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			at := 0
			for at < min(len(w[i]), len(g[i])) && w[i][at] == g[i][at] {
				at++
			}
			from := max(0, at-60)
			t.Fatalf("%s line %d differs at byte %d:\nwant …%s\ngot  …%s", expectedFile, i+1, at+1,
				w[i][from:min(len(w[i]), at+60)], g[i][from:min(len(g[i]), at+60)])
		}
	}
	t.Fatalf("%s has %d lines, the store renders %d", expectedFile, len(w), len(g))
}

// render writes what the log holds and what the projections make of it,
// one item a line: every event with its decoded payload, every session's
// conversation and transcript, the session index, every agent's history.
func render(t *testing.T, e *reprise.Engine) []byte {
	t.Helper()
	store := e.Store()
	ctx := context.Background()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// A value is written as JSON without its zero fields, keys sorted, so
	// that adding an optional field to a payload or a view, which changes
	// nothing that was stored, changes nothing here either.
	put := func(prefix string, v any) {
		b.WriteString(prefix)
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var tree any
		if err := json.Unmarshal(data, &tree); err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(pruneZero(tree)); err != nil {
			t.Fatal(err)
		}
	}

	b.WriteString("# events\n")
	err := store.ReadAll(ctx, 1, func(ev eventlog.Event) error {
		p, err := schema.Decode(ev)
		if err != nil {
			return err
		}
		put(fmt.Sprintf("%d %s %d %s v%d time=%d restore=%q ", ev.Position, ev.Stream, ev.Seq, ev.Type, ev.Version, ev.Time, ev.RestoreID), p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, stream := range streams(t, store, "session/") {
		id := strings.TrimPrefix(stream, "session/")
		c := projection.NewConversation(id)
		if err := store.ReadStream(ctx, stream, 1, c.Apply); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "# session %s cwd=%q created=%d head=%d messages=%d view=%d..%d\n",
			c.ID, c.Cwd, c.Created, c.Head, len(c.Messages), c.ViewStart, len(c.Messages))
		for i, m := range c.Messages {
			put(fmt.Sprintf("message %d ", i), m)
		}
		for _, m := range c.View() {
			fmt.Fprintf(&b, "view %s\n", m.UUID)
		}
		for _, k := range c.Kept {
			fmt.Fprintf(&b, "kept before=%d %q\n", k.Before, k.Record)
		}
		if c.Deleted {
			b.WriteString("deleted: no transcript\n")
			continue
		}
		var transcript bytes.Buffer
		if err := e.Export(ctx, id, &transcript); err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(transcript.String()) {
			b.WriteString("transcript " + line)
		}
	}

	b.WriteString("# index\n")
	index := projection.NewIndex()
	if err := store.ReadAll(ctx, 1, index.Apply); err != nil {
		t.Fatal(err)
	}
	sessions, err := index.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		put("", s)
	}

	for _, stream := range streams(t, store, "agent/") {
		a := projection.NewAgent(strings.TrimPrefix(stream, "agent/"))
		if err := store.ReadStream(ctx, stream, 1, a.Apply); err != nil {
			t.Fatal(err)
		}
		history := a.History
		a.History = nil
		put("# agent ", a)
		for i, r := range history {
			put(fmt.Sprintf("restore %d ", i), r)
		}
	}
	return b.Bytes()
}

func streams(t *testing.T, store eventlog.Store, prefix string) []string {
	t.Helper()
	var names []string
	err := store.Streams(context.Background(), prefix, func(s eventlog.StreamInfo) error {
		names = append(names, s.Name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// privateSchema creates a schema of its own on the server at base, dropped
// when t ends, and returns base with that schema as search_path.
func privateSchema(t *testing.T, base string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("%s: %v", urlEnv, err)
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	schema := "golden_test_" + hex.EncodeToString(suffix)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close(ctx)
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close(ctx)
	})
	if !pgstore.IsURL(base) {
		return base + " search_path=" + schema
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", urlEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// regenerate writes, into set dir, the golden bbolt store, its copy as a
// PostgreSQL dump, and the expected rendering of both.
func regenerate(t *testing.T, dir string) {
	ctx := context.Background()
	base := os.Getenv(urlEnv)
	if base == "" {
		t.Fatalf("-golden.write needs %s, to write %s", urlEnv, sqlFile)
	}
	if _, err := os.Stat(filepath.Join(dir, boltFile)); err == nil {
		t.Fatalf("%s already holds a released golden store, which is never regenerated: write a new format's stores into a new directory", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	path := filepath.Join(tmp, boltFile)
	store, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	jsonl, err := os.ReadFile(transcript)
	if err != nil {
		t.Fatal(err)
	}
	if err := golden.Generate(ctx, store, filepath.Join(tmp, "transcripts"), jsonl); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, boltFile), data, 0o644); err != nil {
		t.Fatal(err)
	}

	// The same events, gaps and all, into a schema of its own, dumped.
	u := privateSchema(t, base)
	schema := searchPath(t, u)
	dst, err := pgstore.Open(ctx, u, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eventlog.Copy(ctx, dst, openEngine(t, path).Store()); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("pg_dump", "--inserts", "--no-owner", "--no-privileges", "--schema="+schema, "--dbname="+base)
	cmd.Stderr = os.Stderr
	dump, err := cmd.Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, sqlFile), schemaFree(dump, schema), 0o644); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(dir, expectedFile), render(t, openBolt(t, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// searchPath returns the search_path of a URL privateSchema made.
func searchPath(t *testing.T, u string) string {
	t.Helper()
	if i := strings.LastIndex(u, " search_path="); i >= 0 {
		return u[i+len(" search_path="):]
	}
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return parsed.Query().Get("search_path")
}

// dumpNoise matches the lines of a dump that tie it to one schema, one
// server version or psql: the schema's creation, settings, and psql's
// backslash commands.
var dumpNoise = regexp.MustCompile(`^(\\|SET |SELECT pg_catalog\.set_config|CREATE SCHEMA |ALTER SCHEMA )`)

// dumpHeader opens postgres.sql.
const dumpHeader = `-- The golden PostgreSQL store: pg_dump --inserts --no-owner --no-privileges
-- of a store's schema, with the schema's name, settings and psql commands
-- taken out. Run it with search_path naming an empty schema.
`

// schemaFree makes a dump of schema load into whichever schema the
// connection's search_path names, and names no random schema.
func schemaFree(dump []byte, schema string) []byte {
	out := bytes.NewBufferString(dumpHeader)
	for line := range strings.Lines(string(dump)) {
		if dumpNoise.MatchString(line) {
			continue
		}
		line = strings.ReplaceAll(line, schema+".", "")
		out.WriteString(strings.ReplaceAll(line, schema, "reprise"))
	}
	return out.Bytes()
}

// pruneZero drops, from the objects in v, the members whose value is
// zero: null, false, 0, "", and empty arrays and objects.
func pruneZero(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			x = pruneZero(x)
			if isZero(x) {
				delete(v, k)
			} else {
				v[k] = x
			}
		}
	case []any:
		for i, x := range v {
			v[i] = pruneZero(x)
		}
	}
	return v
}

func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// The newest golden set holds an event of every type the schema has, at
// the payload version this build writes, so that a type or a version added
// without regenerating it fails here instead of going unread by every
// later build.
func TestGoldenHoldsEveryType(t *testing.T) {
	e := openBolt(t, current)
	seen := make(map[eventlog.Type]map[uint16]bool)
	err := e.Store().ReadAll(context.Background(), 1, func(ev eventlog.Event) error {
		if seen[ev.Type] == nil {
			seen[ev.Type] = make(map[uint16]bool)
		}
		seen[ev.Type][ev.Version] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range schema.Types() {
		if v := schema.Version(typ); !seen[typ][v] {
			t.Errorf("%s holds no %s event of version %d: add one to golden.Generate and regenerate the set", current, typ, v)
		}
	}
}

// The newest golden set holds fired hook events in each of their shapes:
// a fire closed as interrupted, a PostToolBatch whose context reached the
// model as a meta message, a PostCompact whose hooks ran, and a
// compaction's trigger; an event type alone would not show that later
// builds read these fields.
func TestGoldenHoldsFires(t *testing.T) {
	e := openBolt(t, current)
	want := map[string]bool{"interrupted fire": false, "PostToolBatch message": false, "PostCompact hooks": false,
		"compaction trigger": false}
	err := e.Store().ReadAll(context.Background(), 1, func(ev eventlog.Event) error {
		p, err := schema.Decode(ev)
		if err != nil {
			return err
		}
		switch p := p.(type) {
		case *schema.HookEventRan:
			want["interrupted fire"] = want["interrupted fire"] || p.Interrupted
			want["PostToolBatch message"] = want["PostToolBatch message"] || p.Event == schema.HookPostToolBatch && p.MessageUUID != ""
			want["PostCompact hooks"] = want["PostCompact hooks"] || p.Event == schema.HookPostCompact && len(p.Outcomes) > 0
		case *schema.SessionCompacted:
			want["compaction trigger"] = want["compaction trigger"] || p.Trigger != ""
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for what, seen := range want {
		if !seen {
			t.Errorf("%s holds no %s: add one to golden.Generate and regenerate the set", current, what)
		}
	}
}

// The newest golden set holds a subagent's session, linked to its call,
// whose start and stop ran SubagentStart and SubagentStop hooks.
func TestGoldenHoldsASubagent(t *testing.T) {
	e := openBolt(t, current)
	subs, err := e.Subagents(context.Background(), "zeta")
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 1 || subs[0].Session.Subagent.ToolUseID != "toolu_agent" || subs[0].Session.Subagent.Depth != 1 || !subs[0].Resulted ||
		subs[0].Turn.Phase != reprise.TurnOver {
		t.Fatalf("%s: the subagents of zeta are %+v; want the one of call toolu_agent, over, its answer the call's", current, subs)
	}
	msgs, err := e.Conversation(context.Background(), subs[0].Session.ID)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range msgs {
		texts = append(texts, projection.FirstText(m))
	}
	got := strings.Join(texts, "|")
	if !strings.Contains(got, "SubagentStart hook additional context: the tests are in ./ci") || !strings.Contains(got, "SubagentStop hook blocking error") {
		t.Errorf("%s: the subagent's session: %s", current, got)
	}
}
