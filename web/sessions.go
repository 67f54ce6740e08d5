package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
)

// sessionsPerPage is how many sessions a page lists unless limit says.
const sessionsPerPage = 50

// sessionRow is one session of the list page.
type sessionRow struct {
	jsonview.Session
	LastActivity string // the time of its last event, or of its last load if later
	Agents       []string
}

// sessionsData is what the sessions page shows.
type sessionsData struct {
	Rows []sessionRow
	// The filters: id and cwd contain, a current agent's name contains,
	// last activity since and until (dates or times as given), a hook
	// failed on it, it has subagents.
	ID, Cwd, Agent, Since, Until string
	Failed, Subagents            bool
	Order                        string // newest or oldest
	Toggle                       string // the link to the other order
	Next                         string // the cursor of the next page, "" on the last
	Total                        int    // sessions that pass the filters
	From, To                     int    // the rows shown, counted from 1; 0 when none
	// First, Prev, NextLink and Last are the pager's links, "" where there
	// is no such page.
	First, Prev, NextLink, Last string
	Filtered                    bool
}

// sessionsJSON is the API's answer: the sessions of the page, as
// reprise sessions --json lists them, the cursor of the next page, the
// count of those that pass the filters, the position of the first, and
// the links to the first, previous, next and last pages.
type sessionsJSON struct {
	Sessions []jsonview.Session `json:"sessions"`
	Next     string             `json:"next_cursor,omitempty"`
	Total    int                `json:"total"`
	From     int                `json:"from"`
	Pages    pagesJSON          `json:"pages"`
}

// pagesJSON are the links of a paged list, absent where there is no such
// page.
type pagesJSON struct {
	First string `json:"first,omitempty"`
	Prev  string `json:"prev,omitempty"`
	Next  string `json:"next,omitempty"`
	Last  string `json:"last,omitempty"`
}

// sessions lists the sessions that pass the filters, newest first on the
// page and oldest first in JSON (as reprise sessions --json prints them)
// unless order says, a page from the cursor on.
func (h *handler) sessions(r *http.Request) (*view, error) {
	q := r.URL.Query()
	limit, err := queryLimit(r, sessionsPerPage)
	if err != nil {
		return nil, err
	}
	after, err := parseSessionCursor(q.Get("cursor"))
	if err != nil {
		return nil, err
	}
	order, err := pageOrder(r)
	if err != nil {
		return nil, err
	}
	d := sessionsData{ID: q.Get("id"), Cwd: q.Get("cwd"), Agent: q.Get("agent"), Since: q.Get("since"), Until: q.Get("until"),
		Failed: q.Get("failed") == "1", Subagents: q.Get("subagents") == "1", Order: order}
	since, until, err := timeRange(d.Since, d.Until)
	if err != nil {
		return nil, err
	}
	d.Filtered = d.ID != "" || d.Cwd != "" || d.Agent != "" || d.Since != "" || d.Until != "" || d.Failed || d.Subagents
	all, err := h.e.Sessions(r.Context())
	if err != nil {
		return nil, err
	}
	current, err := h.currentAgents(r.Context())
	if err != nil {
		return nil, err
	}
	parents := map[string]bool{}
	for _, s := range all {
		if s.Subagent != nil {
			parents[s.Subagent.Session] = true
		}
	}
	var failed map[string]bool
	if d.Failed {
		ids := make([]string, len(all))
		for i, s := range all {
			ids[i] = s.ID
		}
		if failed, err = h.hookStats.failedOn(r.Context(), h.e.Store(), ids); err != nil {
			return nil, err
		}
	}
	var list []projection.SessionInfo
	for _, s := range all {
		if !strings.Contains(s.ID, d.ID) || !strings.Contains(s.Cwd, d.Cwd) && !strings.Contains(s.ImportedCwd, d.Cwd) ||
			d.Agent != "" && !slices.ContainsFunc(current[s.ID], func(a string) bool { return strings.Contains(a, d.Agent) }) ||
			since != 0 && s.LastActivity < since || until != 0 && s.LastActivity >= until ||
			d.Failed && !failed[s.ID] || d.Subagents && !parents[s.ID] {
			continue
		}
		list = append(list, s)
	}
	slices.SortFunc(list, func(x, y projection.SessionInfo) int {
		return cmp.Or(cmp.Compare(x.Created, y.Created), strings.Compare(x.ID, y.ID))
	})
	if order == newestFirst {
		slices.Reverse(list)
	}
	d.Total = len(list)
	start := 0
	if after != nil {
		start = len(list)
		for i, s := range list {
			if after.before(s) == (order == oldestFirst) && !(after.Created == s.Created && after.ID == s.ID) {
				start = i
				break
			}
		}
	}
	end := min(start+limit, len(list))
	picked := list[start:end]
	if end > start {
		d.From, d.To = start+1, end
	}
	link := func(prefix, cursor, order string) string {
		v := url.Values{}
		for key, val := range map[string]string{"id": d.ID, "cwd": d.Cwd, "agent": d.Agent, "since": d.Since, "until": d.Until} {
			if val != "" {
				v.Set(key, val)
			}
		}
		if d.Failed {
			v.Set("failed", "1")
		}
		if d.Subagents {
			v.Set("subagents", "1")
		}
		if order != "" {
			v.Set("order", order)
		}
		if limit != sessionsPerPage {
			v.Set("limit", strconv.Itoa(limit))
		}
		if cursor != "" {
			v.Set("cursor", cursor)
		}
		if len(v) == 0 {
			return prefix + "/sessions"
		}
		return prefix + "/sessions?" + v.Encode()
	}
	if end < len(list) {
		d.Next = sessionCursor(list[end-1])
	}
	// The page's order in its links, unless it is the default of the form
	// they are for. The page at row i starts after row i-1 (pageLinks
	// names the first page, at 0, by no cursor).
	pageLinksOf := func(prefix string, def string) pagesJSON {
		o := order
		if o == def {
			o = ""
		}
		return pageLinks(len(list), start, limit, d.Next, func(i int) string { return sessionCursor(list[i-1]) },
			func(c string) string { return link(prefix, c, o) })
	}
	pages := pageLinksOf(h.opts.Prefix, newestFirst)
	d.First, d.Prev, d.NextLink, d.Last = pages.First, pages.Prev, pages.Next, pages.Last
	if other := otherOrder(order); other == newestFirst {
		d.Toggle = link(h.opts.Prefix, "", "")
	} else {
		d.Toggle = link(h.opts.Prefix, "", other)
	}
	out := sessionsJSON{Sessions: make([]jsonview.Session, len(picked)), Next: d.Next, Total: d.Total, From: d.From,
		Pages: pageLinksOf(h.opts.Prefix+"/api", oldestFirst)}
	for i, s := range picked {
		out.Sessions[i] = jsonview.NewSession(s)
		d.Rows = append(d.Rows, sessionRow{Session: out.Sessions[i], LastActivity: shortTime(s.LastActivity), Agents: current[s.ID]})
	}
	return &view{Template: "sessions", Title: "Sessions", Data: d, API: out}, nil
}

// timeRange reads a filter's since and until, as UTC unix nanoseconds
// (0 for ""): a date (its start; for until its end) or an RFC 3339 time.
// A value that is neither is a 400.
func timeRange(since, until string) (from, to int64, err error) {
	if from, err = parseWhen("since", since, false); err == nil {
		to, err = parseWhen("until", until, true)
	}
	return from, to, err
}

// parseWhen reads the filter name's time v, the end of a date when end
// is set.
func parseWhen(name, v string, end bool) (int64, error) {
	if v == "" {
		return 0, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		if end {
			t = t.AddDate(0, 0, 1)
		}
		return t.UnixNano(), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		hint := ""
		if strings.Contains(v, " ") {
			hint = " (a + in a query is a space: send it as %2B)"
		}
		return 0, badRequest("bad %s %s: want a date (2006-01-02) or a time (RFC 3339)%s", name, clip(v), hint)
	}
	return t.UnixNano(), nil
}

// cursorAt is where a page of sessions starts: after the session created
// at Created with ID, in the list's order.
type cursorAt struct {
	Created int64
	ID      string
}

// before reports whether the cursor's session comes before s.
func (c *cursorAt) before(s projection.SessionInfo) bool {
	return c.Created < s.Created || c.Created == s.Created && c.ID < s.ID
}

// sessionCursor is the cursor of the page after s: its creation time and
// id.
func sessionCursor(s projection.SessionInfo) string {
	return strconv.FormatInt(s.Created, 10) + "." + s.ID
}

// parseSessionCursor reads a cursor sessionCursor made; "" is the first
// page, nil.
func parseSessionCursor(v string) (*cursorAt, error) {
	if v == "" {
		return nil, nil
	}
	ns, id, ok := strings.Cut(v, ".")
	created, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, badRequest("bad cursor %q: want the next_cursor of a previous page", v)
	}
	return &cursorAt{Created: created, ID: id}, nil
}

// eventAt returns event seq of stream, its payload the caller's own.
func eventAt(ctx context.Context, store eventlog.Store, stream string, seq uint64) (eventlog.Event, error) {
	var out eventlog.Event
	err := store.ReadStream(ctx, stream, seq, func(ev eventlog.Event) error {
		out = ev
		out.Payload = append([]byte(nil), ev.Payload...)
		return errEnough
	})
	if err != nil && !errors.Is(err, errEnough) {
		return eventlog.Event{}, fmt.Errorf("read %s#%d: %w", stream, seq, err)
	}
	return out, nil
}

// currentAgents returns, by session, the agents whose current session it
// is.
func (h *handler) currentAgents(ctx context.Context) (map[string][]string, error) {
	agents, _, err := jsonview.ReadAgents(ctx, h.e.Store())
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, a := range agents {
		if a.Current != "" {
			out[a.Current] = append(out[a.Current], a.ID)
		}
	}
	return out, nil
}
