package remote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
)

// SearchPath is the path at which a holder that serves searches answers
// them (Serve's search handler).
const SearchPath = "/v1/search"

// A Searcher is what a holder that serves searches gives Serve, and
// closes after the Server: package search's Held is one.
type Searcher interface {
	http.Handler
	Close() error
}

// MaxWait bounds how long a following ReadAll waits for its first event.
const MaxWait = time.Minute

// pollEvery is how often a waiting ReadAll looks for new events.
const pollEvery = 20 * time.Millisecond

// contentType is the media type of every response body.
const contentType = "application/vnd.msgpack"

// Handler returns an http.Handler that serves the reads of store: Head,
// ReadStream, ReadAll (with an optional wait, for following), Streams and,
// of a store that keeps indexes (eventlog.Indexed), ReadIndex,
// in the protocol the package documentation describes. It never writes to
// store and never closes it.
func Handler(store eventlog.Store) http.Handler {
	h := &handler{store: store}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/ping", func(w http.ResponseWriter, r *http.Request) { newResponse(w).finish(nil) })
	mux.HandleFunc("GET /v1/head", h.head)
	mux.HandleFunc("GET /v1/streams", h.streams)
	mux.HandleFunc("GET /v1/events", h.events)
	mux.HandleFunc("GET /v1/index", h.index)
	return mux
}

type handler struct{ store eventlog.Store }

func (h *handler) head(w http.ResponseWriter, r *http.Request) {
	out := newResponse(w)
	head, err := h.store.Head(r.Context(), r.URL.Query().Get("stream"))
	if err == nil {
		err = out.write(out.frames.head(head))
	}
	out.finish(err)
}

func (h *handler) streams(w http.ResponseWriter, r *http.Request) {
	out := newResponse(w)
	err := h.store.Streams(r.Context(), r.URL.Query().Get("prefix"), func(info eventlog.StreamInfo) error {
		return out.write(out.frames.stream(info))
	})
	out.finish(err)
}

func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	out := newResponse(w)
	q := r.URL.Query()
	from, err := uintParam(q, "from")
	if err != nil {
		out.finish(err)
		return
	}
	wait, err := waitParam(q)
	switch {
	case err != nil:
	case q.Has("stream"):
		err = h.store.ReadStream(r.Context(), q.Get("stream"), from, out.event)
	default:
		err = h.readAll(r.Context(), from, wait, out)
	}
	out.finish(err)
}

// index sends the rows of the index named by the query's name, then the
// last position they hold, as a head frame.
func (h *handler) index(w http.ResponseWriter, r *http.Request) {
	out := newResponse(w)
	x, ok := h.store.(eventlog.Indexed)
	if !ok {
		out.finish(fmt.Errorf("%w: the store keeps no indexes", eventlog.ErrNoIndex))
		return
	}
	last, err := x.ReadIndex(r.Context(), r.URL.Query().Get("name"), func(key string, value []byte) error {
		return out.write(out.frames.row(key, value))
	})
	if err == nil {
		err = out.write(out.frames.head(last))
	}
	out.finish(err)
}

// readAll sends the events from position from on; when there are none, it
// looks again every pollEvery for up to wait. A wait that ctx ends (the
// client left, or the server is stopping) ends the response without events.
func (h *handler) readAll(ctx context.Context, from uint64, wait time.Duration, out *response) error {
	deadline := time.Now().Add(wait)
	for {
		sent := out.sent
		if err := h.store.ReadAll(ctx, from, out.event); err != nil || out.sent > sent {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		t := time.NewTimer(min(left, pollEvery))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// badRequest is an error in the request's parameters.
type badRequest struct{ error }

func uintParam(q url.Values, name string) (uint64, error) {
	if !q.Has(name) {
		return 0, nil
	}
	n, err := strconv.ParseUint(q.Get(name), 10, 64)
	if err != nil {
		return 0, badRequest{fmt.Errorf("%s: %w", name, err)}
	}
	return n, nil
}

func waitParam(q url.Values) (time.Duration, error) {
	if !q.Has("wait") {
		return 0, nil
	}
	d, err := time.ParseDuration(q.Get("wait"))
	if err != nil || d < 0 || d > MaxWait {
		return 0, badRequest{fmt.Errorf("wait must be a duration from 0 to %v, not %q", MaxWait, q.Get("wait"))}
	}
	return d, nil
}

// response writes the frames of one response through a buffer, flushing
// it when a read ends or waits.
type response struct {
	w      http.ResponseWriter
	buf    *bufio.Writer
	frames *frameWriter
	sent   int // frames written
}

func newResponse(w http.ResponseWriter) *response {
	w.Header().Set("Content-Type", contentType)
	buf := bufio.NewWriterSize(w, 32<<10)
	return &response{w: w, buf: buf, frames: newFrameWriter(buf)}
}

// write counts a frame whose writing returned err.
func (r *response) write(err error) error {
	r.sent++
	return err
}

func (r *response) event(ev eventlog.Event) error { return r.write(r.frames.event(ev)) }

// finish ends the response: with the end frame, or with err as an error
// frame, and then as the status code too if nothing was sent before.
func (r *response) finish(err error) {
	if err == nil {
		_ = r.frames.end()
		_ = r.buf.Flush()
		return
	}
	code := errorCode(err)
	var bad badRequest
	if errors.As(err, &bad) {
		code = codeBadRequest
	}
	if r.sent == 0 {
		r.w.WriteHeader(statusOf(code))
	}
	_ = r.frames.error(code, err.Error())
	_ = r.buf.Flush()
}

// statusOf returns the status code of a response that fails at once.
func statusOf(code string) int {
	switch code {
	case codeBadRequest, codeInvalidStream:
		return http.StatusBadRequest
	case codeClosed:
		return http.StatusServiceUnavailable
	case codeNoIndex:
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}
