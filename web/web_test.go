package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/web"
	"github.com/reprise-dev/reprise/web/internal/fixture"
)

// served is the fixture's store behind the handler.
type served struct {
	*fixture.Store
	srv *httptest.Server
}

func serve(t *testing.T) *served {
	t.Helper()
	s := fixture.New(t)
	// A machine busy with other tests may take longer than a person waits
	// for an audit; these tests check what it finds.
	srv := httptest.NewServer(web.New(s.Engine, web.Options{AuditWait: time.Minute}))
	t.Cleanup(srv.Close)
	return &served{s, srv}
}

// get requests path with the Accept header accept ("" for none) and
// returns the status, the content type and the body.
func (s *served) get(t *testing.T, path, accept string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("GET", s.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Content-Type"), string(b)
}

// page requests an HTML page and fails unless it answers 200.
func (s *served) page(t *testing.T, path string) string {
	t.Helper()
	status, ctype, body := s.get(t, path, "text/html")
	if status != http.StatusOK || !strings.HasPrefix(ctype, "text/html") {
		t.Fatalf("GET %s = %d %s, want 200 HTML:\n%s", path, status, ctype, body)
	}
	return body
}

// api requests path under /api and decodes its JSON into v.
func (s *served) api(t *testing.T, path string, v any) {
	t.Helper()
	status, ctype, body := s.get(t, "/api"+path, "")
	if status != http.StatusOK || ctype != "application/json" {
		t.Fatalf("GET /api%s = %d %s, want 200 JSON:\n%s", path, status, ctype, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET /api%s: %v\n%s", path, err, body)
	}
}

// contains fails unless body holds each of want.
func contains(t *testing.T, what, body string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

func TestSessionsPageListsLiveSessionsAndMarksUnfinishedImports(t *testing.T) {
	s := serve(t)
	ctx := context.Background()
	if err := s.Engine.DeleteSession(ctx, s.Demo.Clear.To); err != nil {
		t.Fatal(err)
	}
	// An import stopped after its first batch stays unfinished.
	var transcript strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&transcript, `{"type":"user","uuid":"u%d","message":{"role":"user","content":"line %d"}}`+"\n", i, i)
	}
	importCtx, stop := context.WithCancel(ctx)
	defer stop()
	_, err := s.Engine.Import(importCtx, strings.NewReader(transcript.String()),
		reprise.ImportOptions{ID: "half", Cwd: t.TempDir(), Progress: func(int64) { stop() }})
	if err == nil {
		t.Fatal("a cancelled import finished")
	}
	body := s.page(t, "/sessions")
	contains(t, "sessions page", body, s.Demo.Design, s.Demo.Bugfix, s.Demo.Fork.To, s.Work, `href="/agents/crashy"`)
	if strings.Contains(body, s.Demo.Clear.To) {
		t.Errorf("sessions page lists deleted session %s", s.Demo.Clear.To)
	}
	if !strings.Contains(body, `/sessions/half">half</a> <span class="badge warn">import unfinished</span>`) {
		t.Errorf("sessions page does not mark the unfinished import:\n%s", body)
	}
	if !strings.Contains(body, `<p class="title">line 0</p>`) {
		t.Errorf("sessions page does not show the import's title, its first prompt:\n%s", body)
	}
	var list struct {
		Sessions []jsonview.Session `json:"sessions"`
		Next     string             `json:"next_cursor"`
	}
	s.api(t, "/sessions", &list)
	infos, err := s.Engine.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != len(infos) || list.Next != "" {
		t.Fatalf("API lists %d sessions (next %q), want %d and no next page", len(list.Sessions), list.Next, len(infos))
	}
	for i, info := range infos {
		if list.Sessions[i] != jsonview.NewSession(info) {
			t.Errorf("API session %d = %+v, want %+v", i, list.Sessions[i], jsonview.NewSession(info))
		}
	}
}

func TestSessionsPagesWithACursorAndFilters(t *testing.T) {
	s := serve(t)
	var all, seen []string
	var page struct {
		Sessions []jsonview.Session `json:"sessions"`
		Next     string             `json:"next_cursor"`
	}
	s.api(t, "/sessions", &page)
	for _, x := range page.Sessions {
		all = append(all, x.ID)
	}
	cursor := ""
	for range len(all) + 1 {
		page.Next = ""
		s.api(t, "/sessions?limit=2&cursor="+url.QueryEscape(cursor), &page)
		for _, x := range page.Sessions {
			seen = append(seen, x.ID)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if !slices.Equal(seen, all) {
		t.Fatalf("pages of 2 list %v, want %v", seen, all)
	}
	s.api(t, "/sessions?cwd=payments", &page)
	if len(page.Sessions) != len(all)-2 {
		t.Errorf("cwd filter 'payments' lists %d sessions, want %d (all but %s and %s)", len(page.Sessions), len(all)-2, s.Work, s.ToolsWork)
	}
	s.api(t, "/sessions?id=ci-wo", &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID != s.Work {
		t.Errorf("id filter 'ci-wo' lists %+v, want %s alone", page.Sessions, s.Work)
	}
	body := s.page(t, "/sessions?limit=1")
	contains(t, "first page of 1", body, `rel="next"`, "6 session(s)")
}

func TestSessionPageShowsTheConversation(t *testing.T) {
	s := serve(t)
	body := s.page(t, "/sessions/"+s.Work)
	contains(t, "session page", body,
		"Run the tests.", "Running go test ./...",
		`<summary>tool_use Bash toolu_1 <code>go test ./...</code></summary>`, // a tool block, folded
		`<span class="badge inj">injected context</span>`,
		`Injected by SessionStart hooks of <a href="/agents/ci#run-`+s.CIStart.ID+`">restore `+s.CIStart.ID+`</a> of agent ci`,
		`<span class="hook failed">echo broken &gt;&amp;2; exit 3 (failed)</span>`,
		`<span class="hook timeout">sleep 5 (timeout)</span>`,
		`Compacted (manual)`, `<span class="badge">compaction summary</span>`,
		`<summary>the rest (`, // the long injected context, folded after its start
		"The flake is a race on the shared ledger; a lock fixes it.")
	fork := s.page(t, "/sessions/"+s.Demo.Fork.To)
	contains(t, "fork page", fork, `forked from</dt><dd><a href="/sessions/`+s.Demo.Design+`">`)
	parent := s.page(t, "/sessions/"+s.Demo.Design)
	contains(t, "parent page", parent, `forks</dt><dd><a href="/sessions/`+s.Demo.Fork.To+`">`)

	var conv struct {
		jsonview.Conversation
		Parent   string   `json:"parent"`
		Children []string `json:"children"`
		Injected []struct {
			Message, RestoreID, Agent string
		} `json:"injected"`
		Compactions []struct {
			Trigger string `json:"trigger"`
		} `json:"compactions"`
	}
	s.api(t, "/sessions/"+s.Work, &conv)
	msgs, err := s.Engine.FullConversation(context.Background(), s.Work)
	if err != nil {
		t.Fatal(err)
	}
	if len(conv.Messages) != len(msgs) {
		t.Fatalf("API has %d messages, the Engine %d", len(conv.Messages), len(msgs))
	}
	var raw struct {
		Messages []json.RawMessage `json:"messages"`
	}
	s.api(t, "/sessions/"+s.Work, &raw)
	for i, m := range msgs {
		if got, want := string(raw.Messages[i]), encode(t, jsonview.NewMessage(m)); got != want {
			t.Errorf("message %d = %s\nwant what replay --json prints: %s", i, got, want)
		}
	}
	if len(conv.Injected) != 1 || conv.Injected[0].Message != s.CIStart.InjectedUUID || len(conv.Compactions) != 1 {
		t.Errorf("API injected %+v, compactions %+v; want message %s and one compaction", conv.Injected, conv.Compactions, s.CIStart.InjectedUUID)
	}
	s.api(t, "/sessions/"+s.Demo.Design, &conv)
	if !slices.Equal(conv.Children, []string{s.Demo.Fork.To}) {
		t.Errorf("API children of %s = %v, want [%s]", s.Demo.Design, conv.Children, s.Demo.Fork.To)
	}
}

func TestSessionPagesAreCut(t *testing.T) {
	s := serve(t)
	var seen []string
	cursor := ""
	for range 10 {
		var conv struct {
			jsonview.Conversation
			Next string `json:"next_cursor"`
		}
		path := "/sessions/" + s.Work + "?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		s.api(t, path, &conv)
		if len(conv.Messages) > 2 {
			t.Fatalf("page of 2 holds %d messages", len(conv.Messages))
		}
		for _, m := range conv.Messages {
			seen = append(seen, m.UUID)
		}
		if cursor = conv.Next; cursor == "" {
			break
		}
	}
	msgs, err := s.Engine.FullConversation(context.Background(), s.Work)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range msgs {
		want = append(want, m.UUID)
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("pages list %v, want %v", seen, want)
	}
	body := s.page(t, "/sessions/"+s.Work+"?limit=2")
	contains(t, "first page", body, `rel="next"`)
}

func TestSessionFirstPageTakesTheImportFromTheIndex(t *testing.T) {
	s := serve(t)
	ctx := context.Background()
	var transcript strings.Builder
	for i := range 250 { // more than a page holds
		fmt.Fprintf(&transcript, `{"type":"user","uuid":"u%d","message":{"role":"user","content":"line %d"}}`+"\n", i, i)
	}
	if _, err := s.Engine.Import(ctx, strings.NewReader(transcript.String()), reprise.ImportOptions{ID: "whole", Cwd: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	body := s.page(t, "/sessions/whole")
	contains(t, "first page", body, `rel="next"`)
	if strings.Contains(body, "unfinished") {
		t.Error("the first page of a finished import says it is unfinished")
	}
	var conv struct {
		Importing bool `json:"import_unfinished"`
	}
	s.api(t, "/sessions/whole", &conv)
	if conv.Importing {
		t.Error("the API says a finished import is unfinished")
	}

	importCtx, stop := context.WithCancel(ctx)
	defer stop()
	var long strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&long, `{"type":"user","uuid":"u%d","message":{"role":"user","content":"line %d"}}`+"\n", i, i)
	}
	if _, err := s.Engine.Import(importCtx, strings.NewReader(long.String()),
		reprise.ImportOptions{ID: "half", Cwd: t.TempDir(), Progress: func(int64) { stop() }}); err == nil {
		t.Fatal("a cancelled import finished")
	}
	contains(t, "first page of an unfinished import", s.page(t, "/sessions/half"), `<span class="badge warn">unfinished</span>`)
	s.api(t, "/sessions/half", &conv)
	if !conv.Importing {
		t.Error("the API does not say an unfinished import is unfinished")
	}
}

func TestAgentPageShowsEveryHookWithItsOutcome(t *testing.T) {
	s := serve(t)
	body := s.page(t, "/agents/ci")
	for status, name := range map[string]string{"ok": "echo ready", "failed": "echo broken &gt;&amp;2; exit 3", "timeout": "sleep 5", "cancelled": "cancel"} {
		contains(t, "ci timeline", body, `<span class="hook `+status+`">`+status+`</span> `+name+` · `)
	}
	contains(t, "ci timeline", body,
		`class="fill timeout"`, `<span class="badge warn">rolled forward</span>`,
		`restore (startup)`, `compact`, `end`,
		`<dt>exit code</dt><dd>3</dd>`, "<pre>broken</pre>", // the failed hook's stderr
		`spilled output (`+filepath.Join(filepath.Dir(s.Engine.TranscriptPath("x")), s.Work+"-hook-"),
		strings.Repeat("x", 12000),                                   // the whole spilled output
		`<p class="given">given session ci-work, source startup</p>`, // what the intent recorded
		// The spilled run's context cannot be split by hook: shown once.
		`<dt>its context</dt><dd>5 characters, in the run's context below</dd>`,
		`<div class="runcontext"><p>the run's context, which its hooks' parts cannot be told apart in</p>`,
	)
	crashy := s.page(t, "/agents/crashy")
	contains(t, "crashy timeline", crashy, `<span class="hook interrupted">interrupted</span> echo ready`, `<span class="badge warn">rolled forward</span>`)

	var agent struct {
		Agent    string             `json:"agent"`
		Restores []jsonview.Restore `json:"restores"`
		Runs     []struct {
			Kind  string `json:"kind"`
			Hooks []struct {
				Event string             `json:"event"`
				Hooks []jsonview.Outcome `json:"hooks"`
			} `json:"hooks"`
		} `json:"runs"`
	}
	s.api(t, "/agents/ci", &agent)
	if len(agent.Restores) != 3 {
		t.Fatalf("API has %d restores of ci, want 3 (start, compact, end)", len(agent.Restores))
	}
	var raw struct {
		Restores []json.RawMessage `json:"restores"`
	}
	s.api(t, "/agents/ci", &raw)
	if got, want := string(raw.Restores[0]), encode(t, jsonview.NewRestore("ci", s.CIStart.To, s.CIStart)); got != want {
		t.Errorf("API restore = %s\nwant what restore --json prints: %s", got, want)
	}
	var statuses []string
	for _, r := range agent.Runs {
		for _, g := range r.Hooks {
			for _, o := range g.Hooks {
				statuses = append(statuses, o.Status)
			}
		}
	}
	for _, st := range []string{"ok", "failed", "timeout", "cancelled"} {
		if !slices.Contains(statuses, st) {
			t.Errorf("API runs of ci have no %s hook: %v", st, statuses)
		}
	}
	list := s.page(t, "/agents")
	contains(t, "agents page", list, `href="/agents/ci"`, `href="/agents/crashy"`, `href="/agents/demo-host"`)
}

func TestAgentPagesAreCut(t *testing.T) {
	s := serve(t)
	type page struct {
		Restores []jsonview.Restore `json:"restores"`
		Runs     []struct {
			Kind string `json:"kind"`
		} `json:"runs"`
		Prev string `json:"prev_cursor"`
		Next string `json:"next_cursor"`
	}
	kinds := func(p page) []string {
		var out []string
		for _, r := range p.Runs {
			out = append(out, r.Kind)
		}
		return out
	}
	var latest, first page
	s.api(t, "/agents/ci?limit=2", &latest)
	// The compaction's PostCompact, which no hook matched, is a row of
	// its own after it.
	if got := kinds(latest); !slices.Equal(got, []string{"fire", "end"}) || latest.Prev != "0" || latest.Next != "" || len(latest.Restores) != 1 {
		t.Errorf("latest page of 2: runs %v, prev %q, next %q, %d restores", got, latest.Prev, latest.Next, len(latest.Restores))
	}
	s.api(t, "/agents/ci?limit=2&cursor="+latest.Prev, &first)
	if got := kinds(first); !slices.Equal(got, []string{"restore", "compact"}) || first.Prev != "" || first.Next != "2" ||
		len(first.Restores) != 2 || first.Restores[0].RestoreID != s.CIStart.ID {
		t.Errorf("first page of 2: runs %v, prev %q, next %q, restores %+v", got, first.Prev, first.Next, first.Restores)
	}
	body := s.page(t, "/agents/ci?limit=2")
	contains(t, "latest page", body, `<a rel="prev" href="/agents/ci?cursor=0">Earlier runs</a>`)
}

func TestAuditPage(t *testing.T) {
	s := serve(t)
	body := s.page(t, "/audit")
	contains(t, "audit page", body, `<p class="verdict ok">ok:`, "4 agents")
	var rep jsonview.Audit
	s.api(t, "/audit", &rep)
	if !rep.OK || rep.Agents != 4 || rep.HooksFailed == 0 || len(rep.Violations) != 0 {
		t.Errorf("API audit = %+v", rep)
	}
}

func TestAuditPageLinksAStepInProgress(t *testing.T) {
	s := fixture.New(t)
	// The log as it was while crashy's hooks ran: its restore in progress.
	evs := testkit.Events(t, s.Engine.Store())
	cut := 0
	for i, ev := range evs {
		if ev.Stream == "agent/crashy" && ev.Type == schema.TypeSessionStartHookStarted {
			cut = i + 1
		}
	}
	e := testkit.OpenEngine(t, testkit.WriteStore(t, evs[:cut]), reprise.Options{ReadOnly: true})
	srv := httptest.NewServer(web.New(e, web.Options{AuditWait: time.Minute}))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/audit")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	contains(t, "audit page", string(b), `<a href="/agents/crashy#run-`, `<a href="/events?stream=agent%2fcrashy&amp;cursor=`+jsonNumber(evs[cut-1].Position)+`&amp;order=oldest">agent/crashy#`,
		"<code>reprise finish --agent crashy</code>")
}

// encode returns v as the JSON API and reprise --json write it, without
// the newline.
func encode(t *testing.T, v any) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonNumber formats n as JSON does.
func jsonNumber(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestEventsPage(t *testing.T) {
	s := serve(t)
	evs := testkit.Events(t, s.Engine.Store())
	var page struct {
		Events []jsonview.Event `json:"events"`
		Next   string           `json:"next_cursor"`
	}
	var seen []uint64
	cursor := ""
	for range len(evs) {
		page.Next = ""
		s.api(t, "/events?limit=7&cursor="+cursor, &page)
		for _, ev := range page.Events {
			seen = append(seen, ev.Position)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if len(seen) != len(evs) {
		t.Fatalf("pages of 7 hold %d events, the log %d", len(seen), len(evs))
	}
	for i, ev := range evs {
		want, err := jsonview.NewEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		if seen[i] != want.Position {
			t.Fatalf("event %d at position %d, want %d", i, seen[i], want.Position)
		}
	}
	s.api(t, "/events?stream=agent/ci&type=SessionStartHookRan", &page)
	if len(page.Events) != 2 { // startup and compact
		t.Fatalf("filtered events = %d, want 2", len(page.Events))
	}
	for _, ev := range page.Events {
		if ev.Stream != "agent/ci" || ev.Type != schema.TypeSessionStartHookRan || ev.Payload["outcomes"] == nil && ev.Payload["source"] != "compact" {
			t.Errorf("filtered event %+v", ev)
		}
	}
	body := s.page(t, "/events?type=ContextInjected")
	contains(t, "events page", body, "<strong>ContextInjected</strong>", "&#34;message&#34;:")
	if strings.Contains(body, "<strong>SessionLoaded</strong>") {
		t.Error("events page filtered by type shows another type")
	}
}

func TestJSONByAcceptHeader(t *testing.T) {
	s := serve(t)
	status, ctype, body := s.get(t, "/sessions", "application/json")
	if status != 200 || ctype != "application/json" || !strings.HasPrefix(body, `{"sessions":[`) {
		t.Fatalf("GET /sessions with Accept JSON = %d %s %.80s", status, ctype, body)
	}
	_, ctype, _ = s.get(t, "/sessions", "text/html,application/json;q=0.9")
	if !strings.HasPrefix(ctype, "text/html") {
		t.Errorf("a browser's Accept got %s", ctype)
	}
}

func TestErrors(t *testing.T) {
	s := serve(t)
	cases := []struct {
		path   string
		status int
		says   string
	}{
		{"/sessions/nosuch", 404, "no session nosuch"},
		{"/agents/nosuch", 404, "no agent nosuch"},
		{"/sessions?cursor=bogus", 400, "bad cursor"},
		{"/sessions/" + s.Work + "?cursor=x", 400, "bad cursor"},
		{"/events?cursor=-1", 400, "bad cursor"},
		{"/events?limit=0", 400, "limit must be"},
		{"/events?stream=%01", 400, "bad stream"},
		{"/agents/ci?cursor=9", 400, "bad cursor"},
		{"/nowhere", 404, "no page at"},
		// Names no store can hold are unknown, not a failure of the store,
		// and are not echoed whole.
		{"/sessions/a%00b", 404, "no session"},
		{"/agents/a%00b", 404, "no agent"},
		{"/sessions/" + strings.Repeat("a", 20000), 404, "(20000 bytes)"},
	}
	for _, c := range cases {
		status, ctype, body := s.get(t, c.path, "")
		if status != c.status || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(body, c.says) || strings.Contains(body, "goroutine") {
			t.Errorf("GET %s = %d %s, want %d HTML saying %q:\n%s", c.path, status, ctype, c.status, c.says, body)
		}
		apiPath := "/api" + c.path
		status, ctype, body = s.get(t, apiPath, "")
		var e struct {
			Error  string `json:"error"`
			Status int    `json:"status"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || status != c.status || ctype != "application/json" || e.Status != c.status || !strings.Contains(e.Error, c.says) {
			t.Errorf("GET %s = %d %s %s, want %d JSON saying %q", apiPath, status, ctype, body, c.status, c.says)
		}
	}
	// The static files are served, never listed; a missing one is the
	// view's own 404 page.
	if status, _, body := s.get(t, "/static/style.css", ""); status != 200 || !strings.Contains(body, "{") {
		t.Errorf("GET /static/style.css = %d", status)
	}
	for _, path := range []string{"/static/", "/static/nope.js"} {
		status, ctype, body := s.get(t, path, "")
		if status != 404 || !strings.HasPrefix(ctype, "text/html") || strings.Contains(body, "live.js\">") || !strings.Contains(body, "reprise") {
			t.Errorf("GET %s = %d %s:\n%s", path, status, ctype, body)
		}
	}
	if err := s.Engine.DeleteSession(context.Background(), s.Demo.Fork.To); err != nil {
		t.Fatal(err)
	}
	if status, _, body := s.get(t, "/sessions/"+s.Demo.Fork.To, ""); status != 404 || !strings.Contains(body, "was deleted") {
		t.Errorf("deleted session page = %d:\n%s", status, body)
	}
}

func TestStoreErrorIsA500WithTheMessage(t *testing.T) {
	e, _ := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(e, web.Options{Logger: testkit.Discard}))
	defer srv.Close()
	for _, path := range []string{"/sessions", "/api/audit"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 500 || !strings.Contains(string(b), "closed") || strings.Contains(string(b), "goroutine") {
			t.Errorf("GET %s on a closed store = %d:\n%s", path, res.StatusCode, b)
		}
	}
}

func TestRequireToken(t *testing.T) {
	s := fixture.New(t)
	srv := httptest.NewServer(web.RequireToken("s3cret", web.New(s.Engine, web.Options{})))
	defer srv.Close()
	do := func(req *http.Request, client *http.Client) *http.Response {
		t.Helper()
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/sessions", "/api/sessions", "/live", "/sessions?token=wrong"} {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if res := do(req, noRedirect); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token = %d, want 401", path, res.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", srv.URL+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	if res := do(req, noRedirect); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong bearer token got %d", res.StatusCode)
	}
	req.Header.Set("Authorization", "Bearer s3cret")
	if res := do(req, noRedirect); res.StatusCode != http.StatusOK {
		t.Errorf("the bearer token got %d", res.StatusCode)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/sessions?id=ci&token=s3cret", nil)
	res := do(req, noRedirect)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/sessions?id=ci" || len(res.Cookies()) != 1 {
		t.Fatalf("?token= answered %d, Location %q, cookies %v", res.StatusCode, res.Header.Get("Location"), res.Cookies())
	}
	req, _ = http.NewRequest("GET", srv.URL+"/sessions?id=ci", nil)
	req.AddCookie(res.Cookies()[0])
	if res := do(req, noRedirect); res.StatusCode != http.StatusOK {
		t.Errorf("the cookie got %d", res.StatusCode)
	}
}

// The browser login (?token=) works for a token of any characters, since
// the cookie carries it encoded, and sends the browser on only to a path
// of this site: a request for //host/?token=... is not sent off to host.
func TestRequireTokenLoginStaysOnTheSite(t *testing.T) {
	s := fixture.New(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, token := range []string{"s3cret", `a;b"c\d é,e f`} {
		srv := httptest.NewServer(web.RequireToken(token, web.New(s.Engine, web.Options{})))
		for path, want := range map[string]string{
			"/sessions":            "/sessions",
			"//evil.example/x":     "/evil.example/x",
			"/\\evil.example/x":    "/evil.example/x",
			"/%2F%2Fevil.example/": "/evil.example/",
		} {
			req, _ := http.NewRequest("GET", srv.URL+path+"?token="+url.QueryEscape(token), nil)
			res, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != want || len(res.Cookies()) != 1 {
				t.Errorf("token %q, %s?token= answered %d, Location %q; want 303 to %s with a cookie", token, path, res.StatusCode, res.Header.Get("Location"), want)
				continue
			}
			req, _ = http.NewRequest("GET", srv.URL+"/api/sessions", nil)
			req.AddCookie(res.Cookies()[0])
			res, err = noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("token %q: the cookie of the login got %d", token, res.StatusCode)
			}
		}
		srv.Close()
	}
}

func TestValidToken(t *testing.T) {
	for token, want := range map[string]bool{
		"c3f1a9e07b5d4c2e": true, "A-b.c_d~e0": true, "": false,
		"a;b": false, `a"b`: false, `a\b`: false, "é": false, "a b": false, "a+b": false, "a%20": false, "a/b": false,
	} {
		if got := web.ValidToken(token); got != want {
			t.Errorf("ValidToken(%q) = %v, want %v", token, got, want)
		}
	}
}

func TestLiveSendsEachAppend(t *testing.T) {
	s := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.srv.URL+"/live", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := bufio.NewScanner(res.Body)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), ":") {
		t.Fatalf("first line %q, want a comment", lines.Text())
	}
	ev := s.Append(t, s.Work, "appended while the page is open")
	var got []string
	for lines.Scan() && len(got) < 3 {
		if lines.Text() != "" {
			got = append(got, lines.Text())
		}
	}
	want := []string{"id: " + jsonNumber(ev.Position), "event: append",
		`data: {"position":` + jsonNumber(ev.Position) + `,"stream":"session/ci-work","type":"MessageAppended"}`}
	if !slices.Equal(got, want) {
		t.Fatalf("live sent %q, want %q", got, want)
	}
}

// Mounted under a prefix, the pages link within it, and its style sheet
// and script are there.
func TestMountedUnderAPrefix(t *testing.T) {
	s := fixture.New(t)
	mux := http.NewServeMux()
	mux.Handle("/reprise/", http.StripPrefix("/reprise", web.New(s.Engine, web.Options{Prefix: "/reprise"})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/reprise/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Request.URL.Path != "/reprise/sessions" {
		t.Fatalf("GET /reprise/ led to %s, %d", res.Request.URL.Path, res.StatusCode)
	}
	contains(t, "sessions page", string(b), `href="/reprise/sessions/`+s.Work+`"`, `href="/reprise/static/style.css"`,
		`data-live="/reprise/live"`, `href="/reprise/agents/crashy"`)
	for _, path := range []string{"/reprise/static/style.css", "/reprise/static/live.js"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("GET %s = %d", path, res.StatusCode)
		}
	}
}

// The audit page does not wait for a long check: it says one is running
// and reloads itself, and shows the report once there is one; the JSON
// answer waits for it. However many pages ask, one check runs at a time.
func TestAuditPageAnswersWhileTheCheckRuns(t *testing.T) {
	s := fixture.New(t)
	release := make(chan struct{})
	var runs atomic.Int32
	audits := web.NewAudits(func(ctx context.Context) (*reprise.AuditReport, uint64, error) {
		runs.Add(1)
		<-release
		head, err := eventlog.LastPosition(ctx, s.Engine.Store())
		if err != nil {
			return nil, 0, err
		}
		rep, err := reprise.Audit(ctx, s.Engine.Store())
		return rep, head, err
	})
	srv := httptest.NewServer(web.New(s.Engine, web.Options{Audits: audits, AuditWait: 20 * time.Millisecond}))
	t.Cleanup(srv.Close)
	sv := &served{s, srv}

	for range 3 {
		body := sv.page(t, "/audit")
		contains(t, "audit page while checking", body, `<meta http-equiv="refresh" content="2">`, "Checking the log up to position")
		if strings.Contains(body, `class="verdict`) {
			t.Fatalf("a verdict before any check ended:\n%s", body)
		}
	}
	var rep jsonview.Audit
	done := make(chan struct{})
	go func() {
		defer close(done)
		sv.api(t, "/audit", &rep)
	}()
	time.Sleep(50 * time.Millisecond)
	close(release)
	<-done
	if !rep.OK || rep.Events == 0 {
		t.Fatalf("API audit after the check = %+v", rep)
	}
	body := sv.page(t, "/audit")
	contains(t, "audit page after the check", body, `<p class="verdict ok">ok:`)
	if strings.Contains(body, "http-equiv") {
		t.Errorf("the page still reloads itself after the check")
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d checks ran for four requests on an unchanged log, want 1", n)
	}
}

// The live endpoint refuses a position it cannot follow, the largest
// (whose next would wrap around to the whole log), and answers only GET:
// a POST used to stream as well.
func TestLiveRefusesTheLargestPositionAndOtherMethods(t *testing.T) {
	var followed []uint64
	live := web.Live(func(_ context.Context, from uint64, _ func(eventlog.Event) error) error {
		followed = append(followed, from)
		return nil
	}, func(context.Context) (uint64, error) { return 7, nil }, nil)
	for _, c := range []struct {
		method, target, lastEventID string
		status                      int
	}{
		{"GET", "/live?after=18446744073709551615", "", http.StatusBadRequest},
		{"GET", "/live", "18446744073709551615", http.StatusBadRequest},
		{"GET", "/live?after=18446744073709551616", "", http.StatusBadRequest},
		{"POST", "/live", "", http.StatusMethodNotAllowed},
		{"PUT", "/live?after=3", "", http.StatusMethodNotAllowed},
		{"GET", "/live?after=18446744073709551614", "", http.StatusOK},
		{"GET", "/live", "", http.StatusOK},
	} {
		followed = nil
		req := httptest.NewRequest(c.method, c.target, nil)
		if c.lastEventID != "" {
			req.Header.Set("Last-Event-ID", c.lastEventID)
		}
		rec := httptest.NewRecorder()
		live.ServeHTTP(rec, req)
		if rec.Code != c.status {
			t.Errorf("%s %s (Last-Event-ID %q) = %d; want %d", c.method, c.target, c.lastEventID, rec.Code, c.status)
		}
		if c.status != http.StatusOK && len(followed) != 0 {
			t.Errorf("%s %s followed the log from %v", c.method, c.target, followed)
		}
		if c.status == http.StatusMethodNotAllowed && rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", c.method, c.target, rec.Header().Get("Allow"))
		}
	}
	followed = nil
	live.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/live", nil))
	if len(followed) != 1 || followed[0] != 8 {
		t.Errorf("GET /live followed from %v; want 8, after the last position", followed)
	}
}

func TestAuditPageCountsTheSessionsListed(t *testing.T) {
	s := serve(t)
	for _, id := range []string{s.Demo.Clear.To, s.Demo.Fork.To} {
		if err := s.Engine.DeleteSession(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	var listed struct {
		Sessions []jsonview.Session `json:"sessions"`
	}
	s.api(t, "/sessions?limit=1000", &listed)
	var rep jsonview.Audit
	s.api(t, "/audit", &rep)
	if rep.Sessions != len(listed.Sessions) {
		t.Errorf("the audit counts %d sessions, the sessions page lists %d", rep.Sessions, len(listed.Sessions))
	}
	contains(t, "audit page", s.page(t, "/audit"), fmt.Sprintf("%d sessions (2 deleted)", len(listed.Sessions)))
}

// The audit page links each run whose hooks a dying process cut short:
// the fixture's crashy restore, closed as interrupted on reopen, and the
// tools agent's call whose PreToolUse hooks a crash cut.
func TestAuditPageLinksTheInterruptedHooks(t *testing.T) {
	s := fixture.New(t)
	srv := httptest.NewServer(web.New(s.Engine, web.Options{AuditWait: time.Minute}))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/audit")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	page := string(b)
	_, after, ok := strings.Cut(page, "<h2>Interrupted hooks</h2>")
	section, _, _ := strings.Cut(after, "<h2>")
	if !ok || !strings.Contains(section, `<a href="/agents/crashy#run-`) || !strings.Contains(section, `<a href="/agents/tools#run-`) ||
		!strings.Contains(section, "tool call ") {
		t.Fatalf("the interrupted hooks section:\n%s", section)
	}
}
