package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/jsonview"
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
	for _, bad := range []string{"order=sideways", "since=yesterday", "until=2026-13-01"} {
		if status, _, body := s.get(t, "/api/sessions?"+bad, ""); status != http.StatusBadRequest {
			t.Errorf("/api/sessions?%s = %d %s, want 400", bad, status, body)
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
