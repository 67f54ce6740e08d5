package web

import (
	"context"
	"errors"
	"html"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/search"
)

// Searcher answers a search of the store's text: the hits from offset on,
// at most limit of them, and how many there are in all. The process that
// holds the index brings it up to date first.
type Searcher func(ctx context.Context, q string, limit, offset int) (search.Result, error)

// IndexSearcher is the Searcher of x, which the caller owns and closes:
// each search first folds in what the log gained since the last one.
func IndexSearcher(x *search.Index) Searcher {
	var mu sync.Mutex // one Update at a time, so a burst of searches reads the log once
	return func(ctx context.Context, q string, limit, offset int) (search.Result, error) {
		mu.Lock()
		_, err := x.Update(ctx)
		mu.Unlock()
		if err != nil {
			return search.Result{}, err
		}
		return x.Search(ctx, q, limit, offset)
	}
}

// hitsPerPage is how many hits a search page shows unless limit says;
// maxHits bounds limit, as each hit reads its event back from the log.
const (
	hitsPerPage = search.DefaultLimit
	maxHits     = 100
)

// searchData is what the search page shows.
type searchData struct {
	Query    string
	Hits     []hitRow
	Total    int
	From, To int // the hits shown, counted from 1; 0 when none
	// First, Prev, Next and Last are the links of the pager, "" where
	// there is no such page.
	First, Prev, Next, Last string
}

// hitRow is one hit as the page shows it.
type hitRow struct {
	Kind, Session, Stream, Type, Time string
	Link                              string // the page that shows the hit's event
	Snippet                           template.HTML
}

// searchJSON is the API's answer.
type searchJSON struct {
	Query  string    `json:"query"`
	Total  int       `json:"total"`
	Offset int       `json:"offset"`
	Hits   []hitJSON `json:"hits"`
	// NextOffset is the offset of the next page; absent on the last.
	NextOffset *int `json:"next_offset,omitempty"`
}

// hitJSON is one hit: where its words are and the page that shows them.
type hitJSON struct {
	Kind      search.Kind   `json:"kind"`
	Session   string        `json:"session"`
	Stream    string        `json:"stream"`
	Seq       uint64        `json:"seq"`
	Position  uint64        `json:"position"`
	Type      string        `json:"type"`
	Time      string        `json:"time"`
	UUID      string        `json:"uuid,omitempty"`
	ToolUseID string        `json:"tool_use_id,omitempty"`
	Snippet   string        `json:"snippet"`
	Marks     []search.Mark `json:"marks"`
	Link      string        `json:"link"`
}

// search answers /search?q=WORDS&offset=N: the hits of the words, newest
// first, a page at a time.
func (h *handler) search(r *http.Request) (*view, error) {
	q := r.URL.Query()
	d := searchData{Query: strings.TrimSpace(q.Get("q"))}
	limit, err := queryLimit(r, hitsPerPage)
	if err != nil {
		return nil, err
	}
	if limit > maxHits {
		return nil, badRequest("limit must be a number from 1 to %d for a search, not %d", maxHits, limit)
	}
	offset := 0
	if v := q.Get("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			return nil, badRequest("bad offset %q: want a count of hits, 0 or more", v)
		}
	}
	out := searchJSON{Query: d.Query, Offset: offset, Hits: []hitJSON{}}
	v := &view{Template: "search", Title: "Search", Data: &d, API: &out, Query: d.Query}
	if d.Query != "" {
		v.Title = "Search: " + clip(d.Query)
	}
	if h.opts.Search == nil {
		return nil, &httpError{status: http.StatusNotImplemented, code: "search_unavailable",
			msg: "this view has no search: the process that serves it keeps no index of the store"}
	}
	if d.Query == "" {
		return v, nil
	}
	res, err := h.opts.Search(r.Context(), d.Query, limit, offset)
	if errors.Is(err, search.ErrLocked) {
		return nil, &httpError{status: http.StatusServiceUnavailable, msg: err.Error(), retryAfter: 1}
	}
	if err != nil {
		return nil, err
	}
	out.Total, d.Total = res.Total, res.Total
	for _, hit := range res.Hits {
		link := h.hitLink(hit)
		out.Hits = append(out.Hits, hitJSON{Kind: hit.Kind, Session: hit.Session, Stream: hit.Stream, Seq: hit.Seq,
			Position: hit.Position, Type: string(hit.Type), Time: shortTime(hit.Time), UUID: hit.UUID,
			ToolUseID: hit.ToolUseID, Snippet: hit.Snippet, Marks: append([]search.Mark{}, hit.Marks...), Link: link})
		d.Hits = append(d.Hits, hitRow{Kind: string(hit.Kind), Session: hit.Session, Stream: hit.Stream, Type: string(hit.Type),
			Time: shortTime(hit.Time), Link: link, Snippet: marked(hit.Snippet, hit.Marks)})
	}
	if len(res.Hits) > 0 {
		d.From, d.To = offset+1, offset+len(res.Hits)
	}
	if next := offset + limit; next < res.Total {
		out.NextOffset = &next
	}
	d.First, d.Prev, d.Next, d.Last = h.searchPager(d.Query, limit, offset, res.Total)
	return v, nil
}

// searchPager returns the links to the first, previous, next and last
// pages of a search of q with total hits, from the page at offset; ""
// where the page is this one or there is none.
func (h *handler) searchPager(q string, limit, offset, total int) (first, prev, next, last string) {
	at := func(off int) string {
		v := url.Values{"q": {q}}
		if off > 0 {
			v.Set("offset", strconv.Itoa(off))
		}
		if limit != hitsPerPage {
			v.Set("limit", strconv.Itoa(limit))
		}
		return h.opts.Prefix + "/search?" + v.Encode()
	}
	if offset > 0 {
		first, prev = at(0), at(max(offset-limit, 0))
	}
	if offset+limit < total {
		next, last = at(offset+limit), at((total-1)/limit*limit)
	}
	return first, prev, next, last
}

// hitLink is the page that shows hit's event: the session's conversation
// from the message on, or the agent's stream in the log from the step on.
func (h *handler) hitLink(hit search.Hit) string {
	b := h.opts.Prefix
	switch hit.Kind {
	case search.KindSession:
		return b + "/sessions/" + url.PathEscape(hit.Session)
	case search.KindMessage, search.KindTool:
		if hit.Stream == projection.SessionStream(hit.Session) {
			return b + "/sessions/" + url.PathEscape(hit.Session) + "?order=oldest&cursor=" + strconv.FormatUint(hit.Seq, 10) + "#m-" + url.PathEscape(hit.UUID)
		}
	}
	p := strconv.FormatUint(hit.Position, 10)
	return b + "/events?" + url.Values{"stream": {hit.Stream}, "cursor": {p}}.Encode() + "#p-" + p
}

// marked is snippet as HTML, its marks (byte ranges, in order) in <mark>
// and the rest escaped; a mark out of order or out of the snippet is left
// out.
func marked(snippet string, marks []search.Mark) template.HTML {
	var b strings.Builder
	at := 0
	for _, m := range marks {
		if m.Start < at || m.End <= m.Start || m.End > len(snippet) {
			continue
		}
		b.WriteString(html.EscapeString(snippet[at:m.Start]))
		b.WriteString("<mark>")
		b.WriteString(html.EscapeString(snippet[m.Start:m.End]))
		b.WriteString("</mark>")
		at = m.End
	}
	b.WriteString(html.EscapeString(snippet[at:]))
	return template.HTML(b.String())
}
