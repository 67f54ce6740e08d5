package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/api"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/web"
)

// sessionsPage is /api/sessions's answer as a client reads it.
type sessionsPage struct {
	Sessions []jsonview.Session `json:"sessions"`
	Total    int
	From     int
	Pages    struct{ First, Prev, Next, Last string }
}

func (p sessionsPage) ids() []string {
	var ids []string
	for _, s := range p.Sessions {
		ids = append(ids, s.ID)
	}
	return ids
}

// The sessions list is newest first on the page and oldest first in
// JSON unless order says; each page gives its position, the total and
// links to the first, previous, next and last pages, which walk the list
// both ways.
func TestSessionsListMovesBothWays(t *testing.T) {
	s := serve(t)
	var all sessionsPage
	s.api(t, "/sessions?limit=1000", &all)
	oldest := all.ids()
	if len(oldest) < 5 || all.Total != len(oldest) {
		t.Fatalf("the fixture lists %d sessions (total %d); want 5 or more", len(oldest), all.Total)
	}
	newest := slices.Clone(oldest)
	slices.Reverse(newest)

	for _, order := range []struct {
		query string
		want  []string
	}{{"", oldest}, {"&order=newest", newest}} {
		var seen []string
		var p sessionsPage
		s.api(t, "/sessions?limit=2"+order.query, &p)
		var forward []sessionsPage
		for {
			if p.From != len(seen)+1 || p.Total != len(oldest) {
				t.Fatalf("order %q: a page from %d of %d, after %d seen", order.query, p.From, p.Total, len(seen))
			}
			forward = append(forward, p)
			seen = append(seen, p.ids()...)
			if p.Pages.Next == "" {
				break
			}
			next := p.Pages.Next
			p = sessionsPage{}
			s.api(t, strings.TrimPrefix(next, "/api"), &p)
		}
		if !slices.Equal(seen, order.want) {
			t.Fatalf("order %q: the pages list %v, want %v", order.query, seen, order.want)
		}
		last := forward[len(forward)-1]
		if last.Pages.Last != "" || last.Pages.Prev == "" || forward[0].Pages.Prev != "" || forward[0].Pages.First != "" {
			t.Errorf("order %q: the first page's links %+v, the last's %+v", order.query, forward[0].Pages, last.Pages)
		}
		// Previous from the second page is the first page.
		var back sessionsPage
		s.api(t, strings.TrimPrefix(forward[1].Pages.Prev, "/api"), &back)
		if !slices.Equal(back.ids(), forward[0].ids()) {
			t.Errorf("order %q: previous of the second page lists %v, want %v", order.query, back.ids(), forward[0].ids())
		}
		// Last is the final two.
		var end sessionsPage
		s.api(t, strings.TrimPrefix(forward[0].Pages.Last, "/api"), &end)
		if !slices.Equal(end.ids(), order.want[len(order.want)-2:]) {
			t.Errorf("order %q: the last page lists %v, want %v", order.query, end.ids(), order.want[len(order.want)-2:])
		}
	}

	body := s.page(t, "/sessions?limit=2")
	contains(t, "the first page", body, "1–2 of ", "newest first", `>oldest first</a>`, `rel="next"`, ">Last</a>", `/sessions?cursor=`)
	if strings.Contains(body, ">Previous</a>") {
		t.Error("the first page links to a previous one")
	}
	if first := strings.Index(body, newest[0]); first < 0 || first > strings.Index(body, newest[1]) {
		t.Errorf("the page does not list %s, the newest, first", newest[0])
	}
	for _, bad := range []string{"order=sideways", "since=yesterday", "until=2026-13-01", "since=2026-12-03T15:19:07+01:00"} {
		status, _, body := s.get(t, "/api/sessions?"+bad, "")
		var e struct{ Error string }
		json.Unmarshal([]byte(body), &e)
		value := strings.ReplaceAll(bad[strings.Index(bad, "=")+1:], "+", " ")
		if status != http.StatusBadRequest || !strings.Contains(e.Error, strconv.Quote(value)) || strings.Contains(e.Error, `""`) {
			t.Errorf("/api/sessions?%s = %d %s, want 400 naming %q once quoted", bad, status, body, value)
		}
		if strings.Contains(value, " ") && !strings.Contains(e.Error, "%2B") {
			t.Errorf("/api/sessions?%s: %s, want a hint that + is sent as %%2B", bad, e.Error)
		}
	}
}

// The sessions page keeps those an agent has as current, those active in
// a time range, those a hook failed on and those with subagents.
func TestSessionsFilters(t *testing.T) {
	s := serve(t)
	var agents struct {
		Agents []struct{ ID, Session string } `json:"agents"`
	}
	s.api(t, "/agents", &agents)
	current := map[string]string{}
	for _, a := range agents.Agents {
		if a.Session != "" {
			current[a.ID] = a.Session
		}
	}
	if current[s.Tools] == "" {
		t.Fatalf("agent %s has no current session: %+v", s.Tools, agents)
	}
	var p sessionsPage
	s.api(t, "/sessions?agent="+s.Tools, &p)
	for _, id := range p.ids() {
		if current[s.Tools] != id {
			t.Errorf("agent %s: lists %s, which is not its current session %s", s.Tools, id, current[s.Tools])
		}
	}
	if len(p.Sessions) != 1 {
		t.Errorf("agent %s: %v, want its current session alone", s.Tools, p.ids())
	}
	p = sessionsPage{}
	s.api(t, "/sessions?failed=1", &p)
	if ids := p.ids(); !slices.Contains(ids, s.Work) || slices.Contains(ids, s.Demo.Design) {
		t.Errorf("failed hooks: %v; want %s, where the fixture's hooks failed, and not %s", ids, s.Work, s.Demo.Design)
	}
	p = sessionsPage{}
	s.api(t, "/sessions?since=2000-01-01&until=2000-01-02", &p)
	if len(p.Sessions) != 0 || p.Total != 0 {
		t.Errorf("active on 2000-01-01: %v", p.ids())
	}
	p = sessionsPage{}
	s.api(t, "/sessions?since=2000-01-01", &p)
	if p.Total == 0 {
		t.Error("no session active since 2000")
	}

	ctx := context.Background()
	dir := t.TempDir()
	e := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	allow := `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'`
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.PreToolUse, Body: hookexec.Command{Line: allow}}); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "parent", dir, "review the code")
	testkit.Session(t, e, "alone", dir, "nothing to delegate")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "parent"); err != nil {
		t.Fatal(err)
	}
	callTool(t, a, "toolu_agent1", "Agent", `{"description": "look", "prompt": "list the files"}`, "")
	if _, err := a.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: "toolu_agent1", Description: "look", Prompt: "list the files"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(e, web.Options{}))
	t.Cleanup(srv.Close)
	sub := &served{srv: srv}
	p = sessionsPage{}
	sub.api(t, "/sessions?subagents=1", &p)
	if ids := p.ids(); !slices.Equal(ids, []string{"parent"}) {
		t.Errorf("sessions with subagents: %v, want parent alone", ids)
	}
	body := sub.page(t, "/sessions?subagents=1")
	contains(t, "the filtered page", body, `name="subagents" value="1" checked`, "1–1 of 1 session(s) match")
}

// An agent's page of runs says which of how many it shows, latest by
// default, and links to the earliest and the latest.
func TestAgentPageSaysWhereItIsAmongItsRuns(t *testing.T) {
	s := serve(t)
	var latest, earliest struct {
		Total, From int
		Prev        string `json:"prev_cursor"`
		Next        string `json:"next_cursor"`
	}
	s.api(t, "/agents/"+s.CI+"?limit=1", &latest)
	if latest.Total < 2 || latest.From != latest.Total || latest.Prev == "" || latest.Next != "" {
		t.Fatalf("the latest page of one run: %+v; want the last of 2 or more", latest)
	}
	s.api(t, "/agents/"+s.CI+"?limit=1&cursor=0", &earliest)
	if earliest.From != 1 || earliest.Total != latest.Total || earliest.Next == "" {
		t.Errorf("the earliest page of one run: %+v", earliest)
	}
	body := s.page(t, "/agents/"+s.CI+"?limit=1&cursor=0")
	contains(t, "the earliest page", body, fmt.Sprintf("Runs 1–1 of %d", latest.Total), ">Latest runs</a>")
	contains(t, "the latest page", s.page(t, "/agents/"+s.CI+"?limit=1"), ">Earliest runs</a>")
}

// listPage is what the paging tests read of a paged answer: the events
// page's or a session page's.
type listPage struct {
	Events   []jsonview.Event `json:"events"`
	Messages []struct {
		UUID string `json:"uuid"`
	} `json:"messages"`
	Compactions []struct {
		Seq uint64 `json:"seq"`
	} `json:"compactions"`
	Records []json.RawMessage `json:"records"`
	Next    string            `json:"next_cursor"`
	Total   int               `json:"total"`
	From    int               `json:"from"`
	Pages   struct{ First, Prev, Next, Last string }
}

// rows are the page's events, by position, or its messages, by uuid.
func (p listPage) rows() []string {
	var out []string
	for _, ev := range p.Events {
		out = append(out, strconv.FormatUint(ev.Position, 10))
	}
	for _, m := range p.Messages {
		out = append(out, m.UUID)
	}
	return out
}

// follow requests a link of the API's answer, which names its path
// under /api.
func (s *served) follow(t *testing.T, link string) listPage {
	t.Helper()
	if !strings.HasPrefix(link, "/api/") {
		t.Fatalf("the link %q is not under /api", link)
	}
	var p listPage
	s.api(t, strings.TrimPrefix(link, "/api"), &p)
	return p
}

// walk reads the pages of a list from path, under /api, following next
// until the last, and checks that each says where it is: the rows before
// it plus one, of the same total.
func (s *served) walk(t *testing.T, path string) []listPage {
	t.Helper()
	var pages []listPage
	p := s.follow(t, "/api"+path)
	for seen := 0; ; {
		if len(p.rows()) > 0 && p.From != seen+1 || len(pages) > 0 && p.Total != pages[0].Total {
			t.Fatalf("%s: page %d starts at %d of %d after %d rows", path, len(pages)+1, p.From, p.Total, seen)
		}
		pages = append(pages, p)
		seen += len(p.rows())
		if p.Pages.Next == "" || len(pages) > 1000 {
			return pages
		}
		if p.Next == "" || !strings.Contains(p.Pages.Next, "cursor="+url.QueryEscape(p.Next)) {
			t.Fatalf("%s: page %d links the next page at %q, its next_cursor is %q", path, len(pages), p.Pages.Next, p.Next)
		}
		p = s.follow(t, p.Pages.Next)
	}
}

// checkPages checks the pages of a list from path, under /api, limit
// rows a page: that they hold want, in order, say where they are and
// how many there are, and that each page's first, previous and last
// links show the rows they should.
func (s *served) checkPages(t *testing.T, path string, limit int, want []string) []listPage {
	t.Helper()
	pages := s.walk(t, path)
	var seen []string
	for _, p := range pages {
		if p.Total != len(want) || len(p.rows()) > limit {
			t.Errorf("%s: a page of %d rows of %d, want at most %d of %d", path, len(p.rows()), p.Total, limit, len(want))
		}
		seen = append(seen, p.rows()...)
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("%s: the pages list\n%v\nwant\n%v", path, seen, want)
	}
	first, last := pages[0], pages[len(pages)-1]
	if first.Pages.First != "" || first.Pages.Prev != "" || last.Pages.Next != "" || last.Pages.Last != "" {
		t.Errorf("%s: the first page links %+v, the last %+v", path, first.Pages, last.Pages)
	}
	if len(pages) == 1 {
		return pages
	}
	if first.Pages.Last == "" || last.Pages.First == "" {
		t.Fatalf("%s: the first page links %+v, the last %+v", path, first.Pages, last.Pages)
	}
	end := s.follow(t, first.Pages.Last)
	if at := max(len(want)-limit, 0); !slices.Equal(end.rows(), want[at:]) || end.From != at+1 {
		t.Errorf("%s: the last page lists %v from %d, want %v from %d", path, end.rows(), end.From, want[at:], at+1)
	}
	for _, p := range pages[1:] {
		if back := s.follow(t, p.Pages.First); !slices.Equal(back.rows(), first.rows()) {
			t.Errorf("%s: the first page, from the page at %d, lists %v, want %v", path, p.From, back.rows(), first.rows())
		}
		if p.From == 0 {
			t.Errorf("%s: a page of no rows after the first", path)
			continue
		}
		at := max(p.From-1-limit, 0)
		prev := s.follow(t, p.Pages.Prev)
		if !slices.Equal(prev.rows(), want[at:min(at+limit, len(want))]) || prev.From != at+1 {
			t.Errorf("%s: the page before the one at %d lists %v from %d, want %v from %d", path, p.From, prev.rows(), prev.From,
				want[at:min(at+limit, len(want))], at+1)
		}
	}
	return pages
}

// positions are the positions of evs that keep keeps, oldest first.
func positions(evs []eventlog.Event, keep func(eventlog.Event) bool) []string {
	var out []string
	for _, ev := range evs {
		if keep(ev) {
			out = append(out, strconv.FormatUint(ev.Position, 10))
		}
	}
	return out
}

// reversed returns a reversed copy of rows.
func reversed(rows []string) []string {
	out := slices.Clone(rows)
	slices.Reverse(out)
	return out
}

// The events page moves both ways, filtered or not: oldest first in JSON
// and newest first with order=newest, each page with its position, the
// total and links to the first, previous, next and last pages.
func TestEventsPagesMoveBothWays(t *testing.T) {
	s := serve(t)
	evs := testkit.Events(t, s.Engine.Store())
	for _, f := range []struct {
		query string
		keep  func(eventlog.Event) bool
	}{
		{"", func(eventlog.Event) bool { return true }},
		{"&type=SessionStartHookRan", func(ev eventlog.Event) bool { return ev.Type == schema.TypeSessionStartHookRan }},
		{"&stream=agent/" + s.CI, func(ev eventlog.Event) bool { return ev.Stream == "agent/"+s.CI }},
		{"&stream=agent/" + s.CI + "&type=SessionLoaded", func(ev eventlog.Event) bool { return ev.Stream == "agent/"+s.CI && ev.Type == schema.TypeSessionLoaded }},
		{"&since=2000-01-01", func(eventlog.Event) bool { return true }},
		{"&until=2000-01-01", func(eventlog.Event) bool { return false }},
	} {
		want := positions(evs, f.keep)
		for _, limit := range []int{1, 7} {
			s.checkPages(t, fmt.Sprintf("/events?limit=%d%s", limit, f.query), limit, want)
			s.checkPages(t, fmt.Sprintf("/events?limit=%d&order=newest%s", limit, f.query), limit, reversed(want))
		}
	}
	for _, bad := range []string{"order=sideways", "order=newest&cursor=0", "cursor=x"} {
		if status, _, body := s.get(t, "/api/events?"+bad, ""); status != http.StatusBadRequest {
			t.Errorf("/api/events?%s = %d %s, want 400", bad, status, body)
		}
	}

	// The page is newest first, and says where it is.
	all := positions(evs, func(eventlog.Event) bool { return true })
	body := s.page(t, "/events?limit=3")
	contains(t, "the first page", body, fmt.Sprintf("1–3 of %s event(s), newest first", count(len(all))), `>oldest first</a>`,
		`href="/events?limit=3&amp;order=oldest"`, `rel="next" href="/events?cursor=`+all[len(all)-4]+`&amp;limit=3"`,
		`>Last</a>`, `href="/events?cursor=`+all[2]+`&amp;limit=3">Last</a>`)
	if strings.Contains(body, ">Previous</a>") || strings.Index(body, `id="p-`+all[len(all)-1]+`"`) > strings.Index(body, `id="p-`+all[len(all)-2]+`"`) {
		t.Error("the first page links to a previous one, or does not show the newest event first")
	}
	body = s.page(t, "/events?limit=3&order=oldest&type=SessionStartHookRan")
	contains(t, "a filtered page, oldest first", body, "event(s) match, oldest first", `name="order" value="oldest"`,
		`href="/events?limit=3&amp;type=SessionStartHookRan">newest first</a>`)
}

// count formats n as the pages do: 2,001.
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// A link to a page of events shows the same events once more are
// appended: oldest first, the last page's and the next page's; newest
// first, the next page's and the last's. The first page, newest first,
// shows the events appended.
func TestEventsLinksStayOnTheirEvents(t *testing.T) {
	s := serve(t)
	var links []string
	for _, order := range []string{"", "&order=newest"} {
		pages := s.walk(t, "/events?limit=5"+order)
		links = append(links, pages[0].Pages.Next, pages[0].Pages.Last, pages[2].Pages.Prev, pages[len(pages)-1].Pages.First)
	}
	before := make([][]string, len(links))
	for i, link := range links {
		before[i] = s.follow(t, link).rows()
	}
	newest := s.follow(t, "/api/events?limit=5&order=newest")
	appended := s.Append(t, s.Work, "one more")
	for i, link := range links {
		// Only the newest events' page, which names no cursor, moves.
		moves := strings.Contains(link, "order=newest") && !strings.Contains(link, "cursor=")
		if after := s.follow(t, link).rows(); !slices.Equal(after, before[i]) != moves {
			t.Errorf("after an append, %s lists %v, was %v", link, after, before[i])
		}
	}
	now := s.follow(t, "/api/events?limit=5&order=newest")
	if now.Total != newest.Total+1 || now.From != 1 || now.Events[0].Position != appended.Position {
		t.Errorf("after an append the newest page starts at %d of %d with %v; want %d of %d with %d",
			now.From, now.Total, now.rows(), 1, newest.Total+1, appended.Position)
	}
}

// The events page counts what vacuums left of the log: the positions of
// the events they removed are not counted, and pages and their links
// pass over them.
func TestEventsPagesCountWhatVacuumsLeft(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
	for i := range 6 {
		testkit.Session(t, e, fmt.Sprintf("s%d", i), "", "a question", "an answer", "another question")
	}
	for _, id := range []string{"s1", "s4"} {
		if err := e.DeleteSession(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "after", "", "a question after the vacuum")
	evs := testkit.Events(t, e.Store())
	if evs[len(evs)-1].Position == uint64(len(evs)) {
		t.Fatalf("the vacuum left no gap: %d events, the last at %d", len(evs), evs[len(evs)-1].Position)
	}
	srv := httptest.NewServer(web.New(e, web.Options{Logger: testkit.Discard}))
	t.Cleanup(srv.Close)
	s := &served{srv: srv}
	want := positions(evs, func(eventlog.Event) bool { return true })
	for _, limit := range []int{1, 3, 4} {
		s.checkPages(t, fmt.Sprintf("/events?limit=%d", limit), limit, want)
		s.checkPages(t, fmt.Sprintf("/events?limit=%d&order=newest", limit), limit, reversed(want))
	}
	body := s.page(t, "/events?limit=3")
	contains(t, "the first page", body, fmt.Sprintf("1–3 of %d event(s)", len(evs)))
}

// uuids are the uuids of msgs, in their order.
func uuids(msgs []schema.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.UUID)
	}
	return out
}

// A session's pages move both ways through its messages, oldest first in
// JSON and newest first with order=newest, each page with its position,
// the total and links to the first, previous, next and last pages; each
// compaction boundary is on one page.
func TestSessionPagesMoveBothWays(t *testing.T) {
	s := serve(t)
	msgs, err := s.Engine.FullConversation(context.Background(), s.Work)
	if err != nil {
		t.Fatal(err)
	}
	want := uuids(msgs)
	boundaries := 0
	for _, ty := range testkit.StreamTypes(t, s.Engine.Store(), "session/"+s.Work) {
		if ty == schema.TypeCompactBoundary {
			boundaries++
		}
	}
	if len(want) < 5 || boundaries == 0 {
		t.Fatalf("the fixture's session %s has %d messages and %d boundaries; want 5 or more and one or more", s.Work, len(want), boundaries)
	}
	for _, limit := range []int{1, 2, 3} {
		for _, order := range []string{"", "&order=newest"} {
			w := want
			if order != "" {
				w = reversed(want)
			}
			path := fmt.Sprintf("/sessions/%s?limit=%d%s", s.Work, limit, order)
			pages := s.checkPages(t, path, limit, w)
			n := 0
			for _, p := range pages {
				n += len(p.Compactions)
			}
			if n != boundaries {
				t.Errorf("%s: the pages hold %d compaction boundaries, want %d", path, n, boundaries)
			}
		}
	}
	if status, _, body := s.get(t, "/api/sessions/"+s.Work+"?order=sideways", ""); status != http.StatusBadRequest {
		t.Errorf("/api/sessions/%s?order=sideways = %d %s, want 400", s.Work, status, body)
	}

	// The page is newest first, and says where it is.
	body := s.page(t, "/sessions/"+s.Work+"?limit=2")
	contains(t, "the first page", body, fmt.Sprintf("1–2 of %d message(s), newest first", len(want)), `>oldest first</a>`,
		`href="/sessions/`+s.Work+`?limit=2&amp;order=oldest"`, `rel="next" href="/sessions/`+s.Work+`?cursor=`, `>Last</a>`)
	if strings.Contains(body, ">Previous</a>") || strings.Index(body, `id="m-`+want[len(want)-1]+`"`) > strings.Index(body, `id="m-`+want[len(want)-2]+`"`) {
		t.Error("the first page links to a previous one, or does not show the newest message first")
	}
	body = s.page(t, "/sessions/"+s.Work+"?limit=2&order=oldest")
	contains(t, "the first page, oldest first", body, fmt.Sprintf("1–2 of %d message(s), oldest first", len(want)),
		`href="/sessions/`+s.Work+`?limit=2">newest first</a>`)
	// A compaction's summary follows its boundary: below it oldest first,
	// above it newest first.
	contains(t, "the whole session, oldest first", s.page(t, "/sessions/"+s.Work+"?order=oldest"), "the model sees the summary below")
	contains(t, "the whole session, newest first", s.page(t, "/sessions/"+s.Work), "the model sees the summary above")
}

// writeItems writes a session of the items given, in their order, and
// returns the file's path.
func writeItems(t *testing.T, id string, items ...schema.Payload) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "items.db")
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stream := projection.SessionStream(id)
	var recs []eventlog.Record
	for i, p := range append([]schema.Payload{&schema.SessionCreated{ID: id, Cwd: "/src/project"}}, items...) {
		rec, err := schema.NewRecord(stream, p, int64(i+1)*1000, "")
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: stream}}, recs); err != nil {
		t.Fatal(err)
	}
	return path
}

// Kept records and compaction boundaries between messages are each on
// one page of a session, in either order, whatever the page's limit.
func TestSessionPagesHoldEachRecordOnce(t *testing.T) {
	var items []schema.Payload
	var want []string
	records, boundaries := 0, 0
	for i := range 12 {
		m := textMessage(fmt.Sprintf("m-%d", i), "user", fmt.Sprintf("message %d", i))
		items = append(items, &schema.MessageAppended{Message: m})
		want = append(want, m.UUID)
		for range i % 3 {
			items = append(items, &schema.TranscriptRecord{Record: []byte(fmt.Sprintf(`{"type":"file-history-snapshot","n":%d}`, records))})
			records++
		}
		if i%4 == 3 {
			items = append(items, &schema.CompactBoundary{UUID: fmt.Sprintf("b-%d", i), Trigger: "auto"})
			boundaries++
		}
	}
	// Records before the first message, and after the last.
	items = append([]schema.Payload{&schema.TranscriptRecord{Record: []byte(`{"type":"summary"}`)}}, items...)
	items = append(items, &schema.TranscriptRecord{Record: []byte(`{"type":"last"}`)})
	records += 2
	e := testkit.OpenEngine(t, writeItems(t, "items", items...), reprise.Options{AllowMissingCwd: true, Logger: testkit.Discard})
	srv := httptest.NewServer(web.New(e, web.Options{Logger: testkit.Discard}))
	t.Cleanup(srv.Close)
	s := &served{srv: srv}
	for _, limit := range []int{1, 2, 5, 12} {
		for _, order := range []string{"", "&order=newest"} {
			w := want
			if order != "" {
				w = reversed(want)
			}
			path := fmt.Sprintf("/sessions/items?limit=%d%s", limit, order)
			pages := s.checkPages(t, path, limit, w)
			var seen []string
			nb := 0
			for _, p := range pages {
				for _, r := range p.Records {
					seen = append(seen, string(r))
				}
				nb += len(p.Compactions)
			}
			if len(seen) != records || len(slices.Compact(slices.Sorted(slices.Values(seen)))) != records || nb != boundaries {
				t.Errorf("%s: the pages hold %d records (%d apart) and %d boundaries, want %d and %d", path, len(seen),
					len(slices.Compact(slices.Sorted(slices.Values(seen)))), nb, records, boundaries)
			}
		}
	}
}

// A link to a page of a session shows the same messages once more are
// appended; only the newest page, which names no cursor, moves.
func TestSessionLinksStayOnTheirMessages(t *testing.T) {
	s := serve(t)
	var links []string
	for _, order := range []string{"", "&order=newest"} {
		pages := s.walk(t, "/sessions/"+s.Work+"?limit=2"+order)
		links = append(links, pages[0].Pages.Next, pages[0].Pages.Last, pages[2].Pages.Prev, pages[len(pages)-1].Pages.First)
	}
	before := make([][]string, len(links))
	for i, link := range links {
		before[i] = s.follow(t, link).rows()
	}
	s.Append(t, s.Work, "one more")
	for i, link := range links {
		moves := strings.Contains(link, "order=newest") && !strings.Contains(link, "cursor=")
		if after := s.follow(t, link).rows(); !slices.Equal(after, before[i]) != moves {
			t.Errorf("after an append, %s lists %v, was %v", link, after, before[i])
		}
	}
}

// Newest first, pages are bounded by bytes as they are oldest first, and
// still hold every message and event once.
func TestNewestPagesAreBoundedByBytes(t *testing.T) {
	var msgs []schema.Message
	for i := range 60 {
		msgs = append(msgs, textMessage(fmt.Sprintf("m-%d", i), "assistant", longText(50<<10)))
	}
	s := serveSession(t, web.Options{}, "wide", msgs...)
	for _, path := range []string{"/sessions/wide?order=newest", "/events?order=newest"} {
		pages := s.walk(t, path)
		var seen []string
		for _, p := range pages {
			size := 0
			for _, ev := range p.Events {
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false) // as the answer holds it
				if err := enc.Encode(ev); err != nil {
					t.Fatal(err)
				}
				size += b.Len()
			}
			if size > 1<<20+64<<10 || len(p.Messages) > 21 {
				t.Errorf("%s: a page of %d events (%d bytes) and %d messages; want about 1 MiB at most", path, len(p.Events), size, len(p.Messages))
			}
			seen = append(seen, p.rows()...)
		}
		if len(pages) < 3 || len(seen) != len(slices.Compact(slices.Sorted(slices.Values(seen)))) {
			t.Errorf("%s: %d pages list %d rows, %v", path, len(pages), len(seen), seen)
		}
		if path == "/sessions/wide?order=newest" && !slices.Equal(seen, reversed(uuids(msgs))) {
			t.Errorf("%s: the pages list %v", path, seen)
		}
		if last := pages[len(pages)-1]; path == "/events?order=newest" && (len(seen) != len(msgs)+1 || last.Events[len(last.Events)-1].Position != 1) {
			t.Errorf("%s: the pages list %v", path, seen)
		}
	}
}

// The OpenAPI document describes the answers of the events page and a
// session page as the handler gives them: each property it names with
// the type it says, the required ones present, none other where it
// allows none.
func TestTheDocumentDescribesThePagedAnswers(t *testing.T) {
	s := serve(t)
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(api.Document, &doc); err != nil {
		t.Fatal(err)
	}
	// check fails unless v is what the schema says.
	var check func(at string, schema json.RawMessage, v any)
	check = func(at string, schema json.RawMessage, v any) {
		var sc struct {
			Ref                  string                     `json:"$ref"`
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
			Items                json.RawMessage            `json:"items"`
		}
		if err := json.Unmarshal(schema, &sc); err != nil {
			t.Fatalf("%s: %v", at, err)
		}
		if sc.Ref != "" {
			check(at, doc.Components.Schemas[strings.TrimPrefix(sc.Ref, "#/components/schemas/")], v)
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if sc.Type != "object" {
				t.Errorf("%s is an object, the document says %s", at, sc.Type)
			}
			for _, key := range sc.Required {
				if _, ok := x[key]; !ok {
					t.Errorf("%s lacks %s, which the document requires", at, key)
				}
			}
			for key, val := range x {
				if p, ok := sc.Properties[key]; ok {
					check(at+"."+key, p, val)
				} else if sc.AdditionalProperties != nil && !*sc.AdditionalProperties {
					t.Errorf("%s has %s, which the document does not allow", at, key)
				}
			}
		case []any:
			if sc.Type != "array" {
				t.Errorf("%s is an array, the document says %s", at, sc.Type)
			}
			for i, item := range x {
				if sc.Items != nil {
					check(fmt.Sprintf("%s[%d]", at, i), sc.Items, item)
				}
			}
		case string:
			if sc.Type != "string" {
				t.Errorf("%s is a string, the document says %s", at, sc.Type)
			}
		case float64:
			if sc.Type != "number" && (sc.Type != "integer" || x != float64(int64(x))) {
				t.Errorf("%s is %v, the document says %s", at, x, sc.Type)
			}
		}
	}
	for _, c := range []struct{ path, schema string }{
		{"/events?limit=2&cursor=5", "Events"},
		{"/events?limit=2&order=newest&type=SessionStartHookRan", "Events"},
		{"/sessions/" + s.Work + "?limit=2&cursor=4", "Conversation"},
		{"/sessions/" + s.Work + "?limit=2&order=newest", "Conversation"},
	} {
		var v any
		s.api(t, c.path, &v)
		if doc.Components.Schemas[c.schema] == nil {
			t.Fatalf("the document has no %s", c.schema)
		}
		check(c.path, doc.Components.Schemas[c.schema], v)
	}
}
