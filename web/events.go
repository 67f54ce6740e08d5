package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// eventsPerPage is how many events a page shows unless limit says.
const eventsPerPage = 100

// eventsData is what the events page shows.
type eventsData struct {
	Stream, Type string // the filters
	Since, Until string // the range of the events' times, as given
	Events       []eventRow
	Next         string // the cursor of the next page, "" on the last
	Order        string // newest or oldest
	Toggle       string // the link to the other order
	Total        int    // events that pass the filters
	From, To     int    // the events shown, counted from 1 in the page's order; 0 when none
	// First, Prev, NextLink and Last are the pager's links, "" where there
	// is no such page.
	First, Prev, NextLink, Last string
	Filtered                    bool
}

// eventRow is one event and its payload as indented JSON.
type eventRow struct {
	jsonview.Event
	JSON string
	Cut  *cutItem
}

// eventsJSON is the API's answer: the events of the page, each as
// reprise log --json prints it, the cursor of the next page, the events
// the page holds cut, the count of those that pass the filters, the
// position of the first, and the links to the first, previous, next and
// last pages.
type eventsJSON struct {
	Events []jsonview.Event `json:"events"`
	Next   string           `json:"next_cursor,omitempty"`
	Cut    []cutJSON        `json:"cut"`
	Total  int              `json:"total"`
	From   int              `json:"from"`
	Pages  pagesJSON        `json:"pages"`
}

// shownEvent is an event as a page shows it, before the page takes it.
type shownEvent struct {
	ev   eventlog.Event // its payload left out
	c    cut
	js   jsonview.Event
	json []byte
}

// events shows the raw log, every stream or one, of every type or one,
// newest first on the page and oldest first in JSON unless order says: a
// page from the cursor, a position, on (oldest first) or down (newest
// first).
//
// A cursor names the position of the event a page starts at, never how
// far it is from the start, so that a link shows the same events however
// many are appended while someone pages: oldest first, events are
// appended after every page, so a page from a position holds the same
// events for good; newest first, a page holds the events at or below its
// cursor, which no append changes, and only the first page, which has no
// cursor, shows what was appended since. The last page, oldest first, is
// named by the position of its first event too: once more are appended,
// it is the same events, no longer the last.
func (h *handler) events(r *http.Request) (*view, error) {
	ctx, q := r.Context(), r.URL.Query()
	limit, err := queryLimit(r, eventsPerPage)
	if err != nil {
		return nil, err
	}
	var cursor uint64
	if v := q.Get("cursor"); v != "" {
		if cursor, err = strconv.ParseUint(v, 10, 64); err != nil || cursor < 1 {
			return nil, badRequest("bad cursor %q: want a position, the next_cursor of a previous page", v)
		}
	}
	order, err := pageOrder(r)
	if err != nil {
		return nil, err
	}
	d := eventsData{Stream: q.Get("stream"), Type: q.Get("type"), Since: q.Get("since"), Until: q.Get("until"), Order: order}
	d.Filtered = d.Stream != "" || d.Type != "" || d.Since != "" || d.Until != ""
	since, until, err := timeRange(d.Since, d.Until)
	if err != nil {
		return nil, err
	}
	if d.Stream != "" {
		if err := eventlog.ValidateStream(d.Stream); err != nil {
			return nil, badRequest("bad stream: %v", err)
		}
	}
	// keep filters by what the envelope says, without the payload.
	keep := func(ev eventlog.Event) bool {
		return (d.Type == "" || string(ev.Type) == d.Type) && (since == 0 || ev.Time >= since) && (until == 0 || ev.Time < until)
	}
	list, err := h.eventRows(ctx, d.Stream, d.Type != "" || since != 0 || until != 0, keep, around(order, cursor), limit+1)
	if err != nil {
		return nil, err
	}
	out := eventsJSON{Events: []jsonview.Event{}, Cut: []cutJSON{}, Total: list.n}
	shown := 0
	// full reports whether the page ends before the next event: at its
	// count of events, or once what is left of its bytes may not hold
	// the next event's JSON.
	full := func() bool { return len(out.Events) == limit || shown > 0 && shown+messageBytes > pageBytes }
	build := func(ev eventlog.Event, p schema.Payload) (shownEvent, error) {
		ev, _, c, err := cutEvent(ev, p, messageBytes)
		if err != nil {
			return shownEvent{}, err
		}
		js, err := jsonview.NewEvent(ev)
		if err != nil {
			return shownEvent{}, err
		}
		b, err := encodeIndented(js.Payload)
		ev.Payload = nil
		return shownEvent{ev: ev, c: c, js: js, json: b}, err
	}
	take := func(e shownEvent) {
		shown += len(e.json)
		out.Events = append(out.Events, e.js)
		d.Events = append(d.Events, eventRow{Event: e.js, JSON: string(e.json),
			Cut: h.cutOf(&out.Cut, wholeEventPath(e.ev, e.c), cutJSON{Stream: e.ev.Stream, Seq: e.ev.Seq, Position: e.ev.Position}, e.c)})
	}
	start := place(list, order)
	if order == oldestFirst {
		err = h.readEventsUp(ctx, d.Stream, list, start, keep, full, build, take, &d.Next)
	} else {
		err = h.readEventsDown(ctx, d.Stream, list, start, limit, keep, full, build, take, &d.Next)
	}
	if err != nil {
		return nil, err
	}
	d.Total, out.Next = list.n, d.Next
	if len(out.Events) > 0 {
		d.From, d.To = start+1, start+len(out.Events)
	}
	out.From = d.From
	link := func(prefix, cursor, order string) string {
		v := url.Values{}
		for key, val := range map[string]string{"stream": d.Stream, "type": d.Type, "since": d.Since, "until": d.Until, "order": order, "cursor": cursor} {
			if val != "" {
				v.Set(key, val)
			}
		}
		if limit != eventsPerPage {
			v.Set("limit", strconv.Itoa(limit))
		}
		if len(v) == 0 {
			return prefix + "/events"
		}
		return prefix + "/events?" + v.Encode()
	}
	cursorAt := func(i int) string { return strconv.FormatUint(inOrder(list, order, i).Position, 10) }
	// The page's links, in its order unless that is the default of the
	// form they are for.
	pageLinksOf := func(prefix, def string) pagesJSON {
		o := order
		if o == def {
			o = ""
		}
		return pageLinks(list.n, start, limit, d.Next, cursorAt, func(c string) string { return link(prefix, c, o) })
	}
	pages := pageLinksOf(h.opts.Prefix, newestFirst)
	d.First, d.Prev, d.NextLink, d.Last = pages.First, pages.Prev, pages.Next, pages.Last
	if other := otherOrder(order); other == newestFirst {
		d.Toggle = link(h.opts.Prefix, "", "")
	} else {
		d.Toggle = link(h.opts.Prefix, "", other)
	}
	out.Pages = pageLinksOf(h.opts.Prefix+"/api", oldestFirst)
	return &view{Template: "events", Title: "Events", Data: d, API: out}, nil
}

// eventRows returns the events of stream ("" for the whole log) that
// keep keeps, read around the position around, k either side: the
// whole log unfiltered without reading it (logRows), a stream, or the
// log filtered by type or time, by reading the envelopes of its events
// (scanRows), which decodes no payload.
func (h *handler) eventRows(ctx context.Context, stream string, filtered bool, keep func(eventlog.Event) bool, around uint64, k int) (rows, error) {
	store := h.e.Store()
	if stream == "" && !filtered {
		return logRows(ctx, store, around)
	}
	read := func(fn func(eventlog.Event) error) error { return store.ReadAll(ctx, 1, fn) }
	if stream != "" {
		read = func(fn func(eventlog.Event) error) error { return store.ReadStream(ctx, stream, 1, fn) }
	}
	return scanRows(read, keep, func(ev eventlog.Event) uint64 { return ev.Position }, around, k)
}

// readEventsUp reads an oldest-first page of list, the events of stream
// ("" for the log) that keep keeps, from index start on, until full says
// the page ends, and sets next to the position of the event it ends
// before. It stops at the last event list counted.
func (h *handler) readEventsUp(ctx context.Context, stream string, list rows, start int, keep func(eventlog.Event) bool,
	full func() bool, build func(eventlog.Event, schema.Payload) (shownEvent, error), take func(shownEvent), next *string) error {
	if start >= list.n {
		return nil
	}
	from := list.at(start).Position
	if stream != "" {
		from = list.at(start).Seq
	}
	err := h.readDecoded(ctx, stream, from, func(ev eventlog.Event) error {
		switch {
		case ev.Position > list.last:
			return errEnough
		case !keep(ev):
			return errSkip
		case full():
			*next = strconv.FormatUint(ev.Position, 10)
			return errEnough
		}
		return nil
	}, func(ev eventlog.Event, p schema.Payload) error {
		e, err := build(ev, p)
		if err == nil {
			take(e)
		}
		return err
	})
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	return nil
}

// readEventsDown reads a newest-first page of list, the events of stream
// ("" for the log), from index start, in the page's order, down, until
// full says the page ends, and sets next to the position of the event it
// ends before: the events at the indexes the page may show, a span of
// them at a time.
func (h *handler) readEventsDown(ctx context.Context, stream string, list rows, start, limit int, keep func(eventlog.Event) bool,
	full func() bool, build func(eventlog.Event, schema.Payload) (shownEvent, error), take func(shownEvent), next *string) error {
	end := min(start+limit+1, list.n) // the page and the event after it
	key := func(r ref) uint64 { return r.Position }
	if stream != "" {
		key = func(r ref) uint64 { return r.Seq }
	}
	for i := start; i < end; i += backSpan {
		hi, lo := inOrder(list, newestFirst, i), inOrder(list, newestFirst, min(i+backSpan, end)-1)
		span, err := readSpan(ctx, h, stream, key(lo), key(hi), keep, build)
		if err != nil {
			return err
		}
		for _, e := range span {
			if full() {
				*next = strconv.FormatUint(e.ev.Position, 10)
				return nil
			}
			take(e)
		}
	}
	return nil
}

// shortText is the size of a text that cutPayload keeps whole however
// little is left: ids, names, sources.
const shortText = 256

// cutPayload returns a copy of p that holds at most about most bytes of
// its texts, and shares no memory with p, so that p, however long, can
// be dropped. A message is cut as a page shows it (cutMessage), a kept
// record to its start; any other payload keeps its texts (strings and
// bytes, in the order of its fields) whole while they fit, then the
// start of the next longer than shortText, and of the ones after it
// nothing, while the short ones stay whole.
func cutPayload(p schema.Payload, most int) (schema.Payload, cut) {
	switch p := p.(type) {
	case *schema.MessageAppended:
		m, c := cutMessage(p.Message, most)
		// What the event holds beside the content, the tool's result, the
		// attachment and the transcript line it was imported from, is cut
		// with what the content left; only the whole event holds it.
		left := most - c.Shown
		for _, f := range []struct {
			to   *[]byte
			from []byte
		}{{&m.ToolUseResult, p.Message.ToolUseResult}, {&m.Attachment, p.Message.Attachment}, {&m.Record, p.Message.Record}} {
			n := cutAt(f.from, max(left, 0))
			*f.to = bytes.Clone(f.from[:n])
			left -= n
			c.Total += len(f.from)
			c.Shown += n
			c.Beside = c.Beside || n < len(f.from)
		}
		return &schema.MessageAppended{Message: m}, c
	case *schema.TranscriptRecord:
		n := cutAt(p.Record, most)
		return &schema.TranscriptRecord{Record: bytes.Clone(p.Record[:n])}, cut{Total: len(p.Record), Shown: n}
	}
	v := reflect.ValueOf(p).Elem()
	out := reflect.New(v.Type())
	out.Elem().Set(v)
	var c cut
	left := most
	cutTexts(out.Elem(), &left, &c)
	return out.Interface().(schema.Payload), c
}

// cutTexts cuts the texts of v, which it may set, in place, as cutPayload
// says, copying every slice and pointer it goes through.
func cutTexts(v reflect.Value, left *int, c *cut) {
	keep := func(n int, at func(int) int) int {
		c.Total += n
		if n > shortText {
			n = at(max(*left, 0))
		}
		*left -= n
		c.Shown += n
		return n
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		v.SetString(strings.Clone(s[:keep(len(s), func(most int) int { return cutAt(s, most) })]))
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := v.Bytes()
			v.SetBytes(bytes.Clone(b[:keep(len(b), func(most int) int { return cutAt(b, most) })]))
			return
		}
		cp := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(cp, v)
		v.Set(cp)
		for i := range v.Len() {
			cutTexts(v.Index(i), left, c)
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		cp := reflect.New(v.Type().Elem())
		cp.Elem().Set(v.Elem())
		v.Set(cp)
		cutTexts(cp.Elem(), left, c)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				cutTexts(f, left, c)
			}
		}
	}
}

// cutEvent returns ev and p as a page shows them: as they are when ev is
// no larger than most, else cut by cutPayload, ev's payload encoded
// afresh from the cut copy.
func cutEvent(ev eventlog.Event, p schema.Payload, most int) (eventlog.Event, schema.Payload, cut, error) {
	if len(ev.Payload) <= most {
		return ev, p, cut{}, nil
	}
	p, c := cutPayload(p, most)
	rec, err := schema.NewRecord(ev.Stream, p, ev.Time, ev.RestoreID)
	if err != nil {
		return ev, nil, c, err
	}
	ev.Payload, ev.Version = rec.Payload, rec.Version
	return ev, p, c, nil
}

// wholeEventPath is the path that serves ev, which c cut, whole: a
// session's message or kept record at /sessions/ID/messages/SEQ, unless
// c cut what the message holds beside its content, any other event at
// /events/POSITION.
func wholeEventPath(ev eventlog.Event, c cut) string {
	if id := projection.SessionID(ev.Stream); id != "" && !c.Beside && (ev.Type == schema.TypeMessageAppended || ev.Type == schema.TypeTranscriptRecord) {
		return messagePath(id, ev.Seq)
	}
	return "/events/" + strconv.FormatUint(ev.Position, 10)
}

// wholeEvent serves the event at a position of the log whole, as JSON:
// the object reprise log --json prints for it, written from the decoded
// event as it goes, within the budget.
func (h *handler) wholeEvent() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		pos, err := strconv.ParseUint(r.PathValue("position"), 10, 64)
		if err != nil || pos < 1 {
			h.fail(w, r, true, notFound("no event at position %s", clip(r.PathValue("position"))))
			return
		}
		read := func(fn func(eventlog.Event) error) error {
			err := h.e.Store().ReadAll(ctx, pos, func(ev eventlog.Event) error {
				if ev.Position != pos {
					return errEnough
				}
				return fn(ev)
			})
			if err != nil && !errors.Is(err, errEnough) {
				return fmt.Errorf("read position %d: %w", pos, err)
			}
			return err
		}
		var js jsonview.Event
		release, found, err := h.decodeOne(ctx, read, func(ev eventlog.Event) (err error) {
			js, err = jsonview.NewEvent(ev)
			return err
		})
		if err == nil && !found {
			err = notFound("no event at position %d", pos)
		}
		if err != nil {
			h.fail(w, r, true, err)
			return
		}
		defer release()
		w.Header().Set("Content-Type", "application/json")
		out := bufio.NewWriterSize(w, 32<<10)
		if err = writeEventJSON(out, js); err == nil {
			err = out.Flush()
		}
		if err != nil && ctx.Err() == nil {
			h.log.Warn("web: event not sent whole", "path", r.URL.Path, "error", err)
		}
	})
}

// writeEventJSON writes ev as encoding/json would, without HTML escapes,
// its payload a value at a time and each text a piece at a time, so that
// it holds no second copy of ev.
func writeEventJSON(w *bufio.Writer, ev jsonview.Event) error {
	payload := ev.Payload
	ev.Payload = nil
	head, err := encodeJSON(ev)
	if err != nil {
		return err
	}
	// The payload comes last: the head ends with "payload":null}.
	start, ok := bytes.CutSuffix(head, []byte("null}"))
	if !ok {
		return fmt.Errorf("the event's JSON ends in %q, not its payload", head[max(len(head)-16, 0):])
	}
	w.Write(start)
	if err := writeJSONValue(w, payload); err != nil {
		return err
	}
	_, err = w.WriteString("}\n")
	return err
}

// writeJSONValue writes v, a value of a decoded payload, as encoding/json
// would, without HTML escapes: a map's keys in order, texts a piece at a
// time.
func writeJSONValue(w *bufio.Writer, v any) error {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeJSONString(w, k); err != nil {
				return err
			}
			w.WriteByte(':')
			if err := writeJSONValue(w, v[k]); err != nil {
				return err
			}
		}
		return w.WriteByte('}')
	case []any:
		w.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeJSONValue(w, x); err != nil {
				return err
			}
		}
		return w.WriteByte(']')
	case string:
		return writeJSONString(w, v)
	case json.RawMessage:
		writeCompact(w, v)
		return nil
	}
	b, err := encodeJSON(v)
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}

// encodeJSON is v's JSON without HTML escapes, as writeJSONValue writes.
func encodeJSON(v any) ([]byte, error) { return encode(v, "") }

// encodeIndented is v's JSON indented, without HTML escapes, as a page
// shows it: the page escapes it as HTML.
func encodeIndented(v any) ([]byte, error) { return encode(v, "  ") }

// encode is v's JSON without HTML escapes, indented by indent.
func encode(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
