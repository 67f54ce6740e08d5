package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/jsonview"
)

// eventsPerPage is how many events a page shows unless limit says.
const eventsPerPage = 100

// eventsData is what the events page shows.
type eventsData struct {
	Stream, Type string // the filters
	Events       []eventRow
	Next         string // the cursor of the next page, "" on the last
}

// eventRow is one event and its payload as indented JSON.
type eventRow struct {
	jsonview.Event
	JSON string
}

// eventsJSON is the API's answer: the events of the page, each as
// reprise log --json prints it, and the cursor of the next page.
type eventsJSON struct {
	Events []jsonview.Event `json:"events"`
	Next   string           `json:"next_cursor,omitempty"`
}

// events shows the raw log from the cursor, a position, on: every stream,
// or one, of every type, or one.
func (h *handler) events(r *http.Request) (*view, error) {
	ctx, q := r.Context(), r.URL.Query()
	limit, err := queryLimit(r, eventsPerPage)
	if err != nil {
		return nil, err
	}
	from := uint64(1)
	if v := q.Get("cursor"); v != "" {
		if from, err = strconv.ParseUint(v, 10, 64); err != nil || from < 1 {
			return nil, badRequest("bad cursor %q: want a position, the next_cursor of a previous page", v)
		}
	}
	d := eventsData{Stream: q.Get("stream"), Type: q.Get("type")}
	if d.Stream != "" {
		if err := eventlog.ValidateStream(d.Stream); err != nil {
			return nil, badRequest("bad stream: %v", err)
		}
	}
	out := eventsJSON{Events: []jsonview.Event{}}
	take := func(ev eventlog.Event) error {
		if ev.Position < from || d.Type != "" && string(ev.Type) != d.Type || d.Stream != "" && ev.Stream != d.Stream {
			return nil
		}
		if len(out.Events) == limit {
			d.Next = strconv.FormatUint(ev.Position, 10)
			return errEnough
		}
		js, err := jsonview.NewEvent(ev)
		if err != nil {
			return err
		}
		out.Events = append(out.Events, js)
		b, err := json.MarshalIndent(js.Payload, "", "  ")
		if err != nil {
			return err
		}
		d.Events = append(d.Events, eventRow{Event: js, JSON: string(b)})
		return nil
	}
	if d.Stream != "" {
		err = h.e.Store().ReadStream(ctx, d.Stream, 1, take)
	} else {
		err = h.e.Store().ReadAll(ctx, from, take)
	}
	if err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	out.Next = d.Next
	return &view{Template: "events", Title: "Events", Data: d, API: out}, nil
}
