package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// cut says how much of a message, or of a record, a page shows.
type cut struct {
	Total, Shown int // bytes of content in all, and shown
	Block        int // the block cut short; the blocks after it are left out
	// Beside is set when what a message's event holds beside its content
	// (its toolUseResult, attachment or transcript record) is cut.
	Beside bool
}

// cutItem is what the page says of an item it shows cut.
type cutItem struct {
	Bytes, Shown int
	Whole        string // the path that serves it whole
	Of           string // what was cut, where the page does not say
}

// cutJSON names, in the API's answer, an item the page holds cut, and
// where the whole is.
type cutJSON struct {
	Stream   string `json:"stream,omitempty"`   // on the events and agent pages
	Position uint64 `json:"position,omitempty"` // on the events and agent pages
	Seq      uint64 `json:"seq"`
	Message  string `json:"message,omitempty"` // "" for a transcript record
	Bytes    int    `json:"bytes"`
	Shown    int    `json:"shown"`
	Whole    string `json:"whole"`
}

// cutBlockJSON is, in the API's answer, the block a message was cut in:
// the start of a text, or another block's type alone.
type cutBlockJSON struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	Cut  bool   `json:"cut"`
}

// newCutBlockJSON describes b, the block a message was cut in.
func newCutBlockJSON(b schema.Block) cutBlockJSON {
	out := cutBlockJSON{Type: b.Type, Cut: true}
	if b.Type == "text" && b.Raw == nil {
		out.Text = b.Text
	}
	return out
}

// cutAt is where to cut s to show at most most bytes of it, not inside a
// character.
func cutAt[T ~string | ~[]byte](s T, most int) int {
	if len(s) <= most {
		return len(s)
	}
	n := most
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// cutText returns the start of s that a page shows, at most most bytes.
func cutText(s string, most int) (string, cut) {
	n := cutAt(s, most)
	return s[:n], cut{Total: len(s), Shown: n}
}

// cutMessage returns a copy of m that holds at most most bytes of its
// content, counted as the blocks' text and JSON: its blocks in order
// while they fit, then the start of the first that does not. The copy
// holds nothing of what m keeps beside its content (the transcript
// record, toolUseResult, attachment), and shares no memory with m, so
// that m, however long, can be dropped.
func cutMessage(m schema.Message, most int) (schema.Message, cut) {
	out := m
	out.Record, out.ToolUseResult, out.Attachment = nil, nil, nil
	out.Content = make([]schema.Block, 0, len(m.Content))
	c := cut{Block: len(m.Content)}
	for _, b := range m.Content {
		c.Total += len(b.Text) + len(b.Raw)
	}
	left := most
	for i, b := range m.Content {
		if n := len(b.Text) + len(b.Raw); n <= left {
			out.Content = append(out.Content, schema.Block{Type: b.Type, Text: strings.Clone(b.Text), Raw: bytes.Clone(b.Raw)})
			left -= n
			c.Shown += n
			continue
		}
		kept := schema.Block{Type: b.Type}
		if b.Raw != nil {
			kept.Raw = bytes.Clone(b.Raw[:cutAt(b.Raw, left)])
		} else {
			kept.Text = strings.Clone(b.Text[:cutAt(b.Text, left)])
		}
		out.Content = append(out.Content, kept)
		c.Shown += len(kept.Text) + len(kept.Raw)
		c.Block = i
		break
	}
	return out, c
}

// errLarge stops a read before an event that must wait for the budget.
var errLarge = errors.New("large event")

// errSkip, returned by readDecoded's before, passes over an event without
// decoding it.
var errSkip = errors.New("skip event")

// readDecoded calls fn with each event of stream from seq from on, or,
// for stream "", of the whole log from position from on, decoded, once
// before has let it through. An event larger than messageBytes is
// decoded within the handler's budget: the read stops before it, waits
// for its size outside the store's read, and goes on from it; the bytes
// go back when fn returns, so fn keeps no part of a large payload.
func (h *handler) readDecoded(ctx context.Context, stream string, from uint64,
	before func(eventlog.Event) error, fn func(eventlog.Event, schema.Payload) error) error {
	key := func(ev eventlog.Event) uint64 { return ev.Seq }
	read := func(from uint64, fn func(eventlog.Event) error) error {
		return h.e.Store().ReadStream(ctx, stream, from, fn)
	}
	if stream == "" {
		key = func(ev eventlog.Event) uint64 { return ev.Position }
		read = func(from uint64, fn func(eventlog.Event) error) error { return h.e.Store().ReadAll(ctx, from, fn) }
	}
	var held uint64 // the large event the budget holds bytes for, 0 for none
	release := func() {}
	defer func() { release() }()
	for {
		var large, size = uint64(0), 0
		err := read(from, func(ev eventlog.Event) error {
			switch err := before(ev); {
			case errors.Is(err, errSkip):
				return nil
			case err != nil:
				return err
			}
			if len(ev.Payload) > messageBytes && key(ev) != held {
				large, size = key(ev), len(ev.Payload)
				return errLarge
			}
			p, err := schema.Decode(ev)
			if err != nil {
				return err
			}
			err = fn(ev, p)
			if key(ev) == held {
				release()
				held = 0
			}
			from = key(ev) + 1
			return err
		})
		if !errors.Is(err, errLarge) {
			return err
		}
		release()
		if release, err = h.reserve(ctx, size); err != nil {
			release = func() {}
			return err
		}
		held, from = large, large
	}
}

// decodeOne reads the one event that read passes to its function twice:
// first for its size, then, within the budget when it is larger than
// messageBytes, to decode it with decode. It returns the function that
// gives the budget back once the caller is done with what decode kept,
// and false when read passes none (none is there, or it was removed
// between the reads).
func (h *handler) decodeOne(ctx context.Context, read func(fn func(eventlog.Event) error) error,
	decode func(eventlog.Event) error) (release func(), found bool, err error) {
	size := -1
	if err := read(func(ev eventlog.Event) error { size = len(ev.Payload); return errEnough }); err != nil && !errors.Is(err, errEnough) {
		return nil, false, err
	}
	if size < 0 {
		return nil, false, nil
	}
	release = func() {}
	if size > messageBytes {
		if release, err = h.reserve(ctx, size); err != nil {
			return nil, false, err
		}
	}
	err = read(func(ev eventlog.Event) error {
		found = true
		if err := decode(ev); err != nil {
			return err
		}
		return errEnough
	})
	if err != nil && !errors.Is(err, errEnough) || !found {
		release()
		return nil, false, err
	}
	return release, true, nil
}

// whole serves the message, or the kept transcript record, at a sequence
// of a session's stream, whole: as text, or as JSON (the object reprise
// replay --json prints for a message; a record as it was kept). The
// answer is written from the decoded event as it goes, so that serving
// it holds one copy of it, counted in the budget.
func (h *handler) whole(api bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asJSON := wantsJSON(r, api)
		p, release, err := h.decodeAt(r)
		if err != nil {
			h.fail(w, r, asJSON, err)
			return
		}
		defer release()
		if asJSON {
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		out := bufio.NewWriterSize(w, 32<<10)
		switch p := p.(type) {
		case *schema.MessageAppended:
			if asJSON {
				err = writeMessageJSON(out, p.Message)
			} else {
				err = writeMessageText(out, p.Message)
			}
		case *schema.TranscriptRecord:
			switch {
			case !asJSON, json.Valid(p.Record):
				_, err = out.Write(p.Record)
			default:
				err = writeJSONString(out, string(p.Record))
			}
			if err == nil && asJSON {
				err = out.WriteByte('\n')
			}
		}
		if err == nil {
			err = out.Flush()
		}
		if err != nil && r.Context().Err() == nil {
			h.log.Warn("web: message not sent whole", "path", r.URL.Path, "error", err)
		}
	})
}

// decodeAt reads and decodes the event that r names, a message or a
// kept record of a session, within the budget, and returns the function
// that gives the budget back once the caller is done with it.
func (h *handler) decodeAt(r *http.Request) (schema.Payload, func(), error) {
	ctx, id := r.Context(), r.PathValue("id")
	if reprise.ValidateID(id) != nil {
		return nil, nil, noSession("no session %s", clip(id))
	}
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil || seq < 1 {
		return nil, nil, notFound("no message %s in session %s", clip(r.PathValue("seq")), id)
	}
	if _, _, err := h.sessionCreated(ctx, id); err != nil {
		return nil, nil, err
	}
	stream := projection.SessionStream(id)
	var payload schema.Payload
	read := func(fn func(eventlog.Event) error) error {
		err := h.e.Store().ReadStream(ctx, stream, seq, func(ev eventlog.Event) error {
			if ev.Seq != seq || ev.Type != schema.TypeMessageAppended && ev.Type != schema.TypeTranscriptRecord {
				return errEnough
			}
			return fn(ev)
		})
		if err != nil && !errors.Is(err, errEnough) {
			return fmt.Errorf("read %s#%d: %w", stream, seq, err)
		}
		return err
	}
	release, found, err := h.decodeOne(ctx, read, func(ev eventlog.Event) (err error) {
		payload, err = schema.Decode(ev)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if !found {
		return nil, nil, notFound("no message %d in session %s", seq, id)
	}
	return payload, release, nil
}

// writeMessageText writes m's content as text: each text block as it is,
// each other block as its JSON, with a blank line between blocks.
func writeMessageText(w *bufio.Writer, m schema.Message) error {
	for i, b := range m.Content {
		if i > 0 {
			w.WriteString("\n\n")
		}
		if b.Raw != nil {
			w.Write(b.Raw)
		} else {
			w.WriteString(b.Text)
		}
	}
	_, err := w.WriteString("\n")
	return err
}

// writeMessageJSON writes m as jsonview.NewMessage describes it, the
// bytes that writeJSON would write, a block at a time and each text a
// piece at a time, so that it holds no second copy of m.
func writeMessageJSON(w *bufio.Writer, m schema.Message) error {
	head := m
	head.Content = nil
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(jsonview.NewMessage(head)); err != nil {
		return err
	}
	// The content comes last: the head ends with "content":[]} and a
	// newline.
	start, ok := bytes.CutSuffix(buf.Bytes(), []byte("[]}\n"))
	if !ok {
		return fmt.Errorf("the message's JSON ends in %q, not its content", buf.Bytes()[max(buf.Len()-16, 0):])
	}
	w.Write(start)
	w.WriteByte('[')
	for i, b := range m.Content {
		if i > 0 {
			w.WriteByte(',')
		}
		switch {
		case json.Valid(b.Raw):
			writeCompact(w, b.Raw)
		case b.Type == "text":
			w.WriteString(`{"type":"text","text":`)
			if err := writeJSONString(w, b.Text); err != nil {
				return err
			}
			w.WriteByte('}')
		default:
			buf.Reset()
			if err := enc.Encode(jsonview.NewMessage(schema.Message{Content: []schema.Block{{Type: b.Type}}}).Content[0]); err != nil {
				return err
			}
			w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		}
	}
	_, err := w.WriteString("]}\n")
	return err
}

// writeCompact writes raw, valid JSON, without the space between its
// tokens, as encoding/json writes a json.RawMessage.
func writeCompact(w io.Writer, raw []byte) {
	inString, escaped, start := false, false, 0
	for i, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			w.Write(raw[start:i])
			start = i + 1
		}
	}
	w.Write(raw[start:])
}

// stringPiece is how many bytes of a text writeJSONString escapes at once.
const stringPiece = 32 << 10

// writeJSONString writes s as a JSON string, escaped as encoding/json
// escapes it without HTML escapes, a piece at a time. A piece ends before
// the start of a character, and encoding/json escapes each character, or
// each byte that starts none, on its own, so the pieces add up to the
// whole.
func writeJSONString(w io.Writer, s string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if _, err := io.WriteString(w, `"`); err != nil {
		return err
	}
	for len(s) > 0 {
		n := min(len(s), stringPiece)
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		buf.Reset()
		if err := enc.Encode(s[:n]); err != nil {
			return err
		}
		quoted := buf.Bytes() // "...", then a newline
		if _, err := w.Write(quoted[1 : len(quoted)-2]); err != nil {
			return err
		}
		s = s[n:]
	}
	_, err := io.WriteString(w, `"`)
	return err
}
