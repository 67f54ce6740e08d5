package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

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
	Rows     []sessionRow
	ID, Cwd  string // the filters
	Next     string // the cursor of the next page, "" on the last
	Total    int    // sessions that pass the filters
	Filtered bool
}

// sessionsJSON is the API's answer: the sessions of the page, as
// reprise sessions --json lists them, and the cursor of the next page.
type sessionsJSON struct {
	Sessions []jsonview.Session `json:"sessions"`
	Next     string             `json:"next_cursor,omitempty"`
}

// sessions lists the sessions, oldest first, from the cursor on, those
// whose id and cwd contain the filters.
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
	all, err := h.e.Sessions(r.Context())
	if err != nil {
		return nil, err
	}
	d := sessionsData{ID: q.Get("id"), Cwd: q.Get("cwd")}
	d.Filtered = d.ID != "" || d.Cwd != ""
	var picked []projection.SessionInfo
	for _, s := range all {
		if !strings.Contains(s.ID, d.ID) || !strings.Contains(s.Cwd, d.Cwd) && !strings.Contains(s.ImportedCwd, d.Cwd) {
			continue
		}
		d.Total++
		if after != nil && !after.before(s) {
			continue
		}
		if len(picked) == limit {
			d.Next = sessionCursor(picked[len(picked)-1])
			continue
		}
		picked = append(picked, s)
	}
	current, err := h.currentAgents(r.Context())
	if err != nil {
		return nil, err
	}
	out := sessionsJSON{Sessions: make([]jsonview.Session, len(picked)), Next: d.Next}
	for i, s := range picked {
		out.Sessions[i] = jsonview.NewSession(s)
		d.Rows = append(d.Rows, sessionRow{Session: out.Sessions[i], LastActivity: shortTime(s.LastActivity), Agents: current[s.ID]})
	}
	return &view{Template: "sessions", Title: "Sessions", Data: d, API: out}, nil
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
