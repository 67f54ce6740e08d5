package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/search"
	"github.com/reprise-dev/reprise/web"
	"github.com/reprise-dev/reprise/web/internal/fixture"
)

// searchJSON is /api/search's answer as a client reads it.
type searchJSON struct {
	Query  string `json:"query"`
	Total  int    `json:"total"`
	Offset int    `json:"offset"`
	Hits   []struct {
		Kind, Session, Stream, Type, Link string
		UUID                              string `json:"uuid"`
		Snippet                           string
		Marks                             []struct{ Start, End int }
	} `json:"hits"`
	NextOffset *int `json:"next_offset"`
}

// serveSearch serves the fixture's store with a search of a bleve index
// of its log in a temporary directory.
func serveSearch(t *testing.T) *served {
	t.Helper()
	s := fixture.New(t)
	x, err := search.Open(context.Background(), t.TempDir(), s.Engine.Store())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	srv := httptest.NewServer(web.New(s.Engine, web.Options{AuditWait: time.Minute, Search: web.IndexSearcher(x)}))
	t.Cleanup(srv.Close)
	return &served{s, srv}
}

// Words appended after the index was opened are found, each hit links to
// the page that shows it, and that page holds it; the words are marked in
// the snippet and the rest of it escaped.
func TestSearchFindsMessagesAndHooksAndLinksToThem(t *testing.T) {
	s := serveSearch(t)
	if !strings.Contains(s.page(t, "/sessions"), `action="/search"`) {
		t.Fatal("the sessions page has no search box")
	}
	s.Append(t, s.Work, "the <script>alert(1)</script> zanzibar report")

	var res searchJSON
	s.api(t, "/search?q=zanzibar", &res)
	if res.Total != 1 || len(res.Hits) != 1 || res.Hits[0].Kind != "message" || res.Hits[0].Session != s.Work {
		t.Fatalf("search for zanzibar: %+v, want one message of %s", res, s.Work)
	}
	hit := res.Hits[0]
	if m := hit.Marks; len(m) != 1 || hit.Snippet[m[0].Start:m[0].End] != "zanzibar" {
		t.Fatalf("hit's marks %v on %q do not mark zanzibar", m, hit.Snippet)
	}
	path, anchor, _ := strings.Cut(hit.Link, "#")
	if !strings.HasPrefix(path, "/sessions/"+s.Work+"?order=oldest&cursor=") || anchor != "m-"+hit.UUID {
		t.Fatalf("hit's link %q, want the session's page from the message, at m-%s", hit.Link, hit.UUID)
	}
	if body := s.page(t, path); !strings.Contains(body, `id="`+anchor+`"`) || !strings.Contains(body, "zanzibar") {
		t.Fatalf("the hit's page %s does not hold its message:\n%s", path, body)
	}
	body := s.page(t, "/search?q=zanzibar")
	if strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;script&gt;") || !strings.Contains(body, "<mark>zanzibar</mark>") {
		t.Fatalf("the search page does not show the snippet escaped with its word marked:\n%s", body)
	}
	if !strings.Contains(body, `value="zanzibar"`) {
		t.Fatal("the search page's box does not hold the words searched for")
	}

	// The fixture's failing hook wrote "broken" to stderr: a hook step's
	// hit links to the agent's stream in the log, at the step.
	s.api(t, "/search?q=broken", &res)
	var hook string
	for _, h := range res.Hits {
		if h.Kind == "hook" {
			hook = h.Link
		}
	}
	if hook == "" {
		t.Fatalf("search for broken: %+v, want a hook step's hit", res)
	}
	path, anchor, _ = strings.Cut(hook, "#")
	if !strings.HasPrefix(path, "/events?") || !strings.Contains(s.page(t, path), `id="`+anchor+`"`) {
		t.Fatalf("the hook's hit links to %q, whose page does not hold %s", hook, anchor)
	}
}

// A search's hits come a page at a time, with their position, the total
// and links to the first, previous, next and last pages.
func TestSearchPages(t *testing.T) {
	s := serveSearch(t)
	for i := range 25 {
		s.Append(t, s.Work, fmt.Sprintf("quokka number %d", i))
	}
	var res searchJSON
	s.api(t, "/search?q=quokka", &res)
	if res.Total != 25 || len(res.Hits) != 20 || res.NextOffset == nil || *res.NextOffset != 20 {
		t.Fatalf("first page: total %d, %d hits, next %v; want 25, 20, 20", res.Total, len(res.Hits), res.NextOffset)
	}
	if !strings.Contains(res.Hits[0].Snippet, "number 24") {
		t.Fatalf("first hit %q, want the newest message", res.Hits[0].Snippet)
	}
	body := s.page(t, "/search?q=quokka")
	if !strings.Contains(body, "1–20 of 25") || !strings.Contains(body, `href="/search?offset=20&amp;q=quokka">Last`) ||
		strings.Contains(body, ">Previous<") {
		t.Fatalf("first page's position or pager is wrong:\n%s", body)
	}
	res = searchJSON{}
	s.api(t, "/search?q=quokka&offset=20", &res)
	if len(res.Hits) != 5 || res.NextOffset != nil || !strings.Contains(res.Hits[4].Snippet, "number 0") {
		t.Fatalf("last page: %d hits, next %v, want the 5 oldest and no next", len(res.Hits), res.NextOffset)
	}
	body = s.page(t, "/search?q=quokka&offset=20")
	if !strings.Contains(body, "21–25 of 25") || !strings.Contains(body, `href="/search?q=quokka">First`) || strings.Contains(body, ">Next<") {
		t.Fatalf("last page's position or pager is wrong:\n%s", body)
	}
	for _, bad := range []string{"offset=-1", "offset=x", "limit=101", "limit=0"} {
		if status, _, body := s.get(t, "/api/search?q=quokka&"+bad, ""); status != http.StatusBadRequest || !strings.Contains(body, `"code":"bad_request"`) {
			t.Errorf("/api/search?%s = %d %s, want 400 bad_request", bad, status, body)
		}
	}
}

// A view without a search shows no box and answers /search with 501.
func TestViewWithoutSearch(t *testing.T) {
	s := serve(t)
	if strings.Contains(s.page(t, "/sessions"), `action="/search"`) {
		t.Fatal("a view without a search shows a search box")
	}
	status, _, body := s.get(t, "/api/search?q=x", "")
	if status != http.StatusNotImplemented || !strings.Contains(body, `"code":"search_unavailable"`) {
		t.Fatalf("/api/search without a search = %d %s, want 501 search_unavailable", status, body)
	}
}
