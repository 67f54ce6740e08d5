package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
}

// eventRow is one event and its payload as indented JSON.
type eventRow struct {
	jsonview.Event
	JSON string
	Cut  *cutItem
}

// eventsJSON is the API's answer: the events of the page, each as
// reprise log --json prints it, the cursor of the next page, and the
// events the page holds cut.
type eventsJSON struct {
	Events []jsonview.Event `json:"events"`
	Next   string           `json:"next_cursor,omitempty"`
	Cut    []cutJSON        `json:"cut"`
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
	d := eventsData{Stream: q.Get("stream"), Type: q.Get("type"), Since: q.Get("since"), Until: q.Get("until")}
	since, err := parseWhen(d.Since, false)
	if err != nil {
		return nil, badRequest("bad since %q: want a date (2006-01-02) or a time (RFC 3339)", clip(d.Since))
	}
	until, err := parseWhen(d.Until, true)
	if err != nil {
		return nil, badRequest("bad until %q: want a date (2006-01-02) or a time (RFC 3339)", clip(d.Until))
	}
	start := from // a position of the log, or a sequence of the stream
	if d.Stream != "" {
		if err := eventlog.ValidateStream(d.Stream); err != nil {
			return nil, badRequest("bad stream: %v", err)
		}
		start = 1
	}
	out := eventsJSON{Events: []jsonview.Event{}, Cut: []cutJSON{}}
	shown := 0
	take := func(ev eventlog.Event) error {
		if ev.Position < from || d.Type != "" && string(ev.Type) != d.Type || since != 0 && ev.Time < since || until != 0 && ev.Time >= until {
			return errSkip
		}
		// A page ends at its count of events, or once what is left of its
		// bytes may not hold the next event's JSON.
		if len(out.Events) == limit || shown > 0 && shown+messageBytes > pageBytes {
			d.Next = strconv.FormatUint(ev.Position, 10)
			return errEnough
		}
		return nil
	}
	err = h.readDecoded(ctx, d.Stream, start, take, func(ev eventlog.Event, p schema.Payload) error {
		ev, _, c, err := cutEvent(ev, p, messageBytes)
		if err != nil {
			return err
		}
		js, err := jsonview.NewEvent(ev)
		if err != nil {
			return err
		}
		b, err := encodeIndented(js.Payload)
		if err != nil {
			return err
		}
		shown += len(b)
		out.Events = append(out.Events, js)
		d.Events = append(d.Events, eventRow{Event: js, JSON: string(b),
			Cut: h.cutOf(&out.Cut, wholeEventPath(ev, c), cutJSON{Stream: ev.Stream, Seq: ev.Seq, Position: ev.Position}, c)})
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	out.Next = d.Next
	return &view{Template: "events", Title: "Events", Data: d, API: out}, nil
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
