package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
)

// appendJSON is the data of one server-sent event: an event the store
// appended.
type appendJSON struct {
	Position uint64        `json:"position"`
	Stream   string        `json:"stream"`
	Type     eventlog.Type `json:"type"`
}

// Follow waits for the events from position from on and passes each to
// fn, until ctx ends, which is a clean stop.
type Follow func(ctx context.Context, from uint64, fn func(eventlog.Event) error) error

// Live returns the live endpoint alone: it streams, as server-sent
// events, every event follow reports after the position the after
// parameter (or the Last-Event-ID header) names, and by default after
// the position last returns, the store's last. It ends when the client
// goes. A server that does not hold an Engine open mounts it beside the
// pages; New mounts it at /live.
func Live(follow Follow, last func(context.Context) (uint64, error), logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	h := &handler{log: logger}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.live(w, r, follow, last)
	})
}

// live serves the live endpoint for Live.
func (h *handler) live(w http.ResponseWriter, r *http.Request, follow Follow, last func(context.Context) (uint64, error)) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		h.fail(w, r, false, &httpError{status: http.StatusMethodNotAllowed, msg: "the live endpoint answers GET only"})
		return
	}
	ctx := r.Context()
	flusher, ok := w.(http.Flusher)
	if !ok {
		h.fail(w, r, false, errors.New("this server cannot stream responses"))
		return
	}
	after := r.URL.Query().Get("after")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		after = id
	}
	var from uint64
	if after != "" {
		n, err := strconv.ParseUint(after, 10, 64)
		if err != nil || n == math.MaxUint64 {
			// The largest position has no position after it: n+1 would
			// wrap around to 0, the whole log.
			h.fail(w, r, false, badRequest("bad position %q", after))
			return
		}
		from = n + 1
	} else {
		n, err := last(ctx)
		if err != nil {
			h.fail(w, r, false, err)
			return
		}
		from = n + 1
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": following the log\n\n")
	flusher.Flush()
	err := follow(ctx, from, func(ev eventlog.Event) error {
		data, err := json.Marshal(appendJSON{Position: ev.Position, Stream: ev.Stream, Type: ev.Type})
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "id: %d\nevent: append\ndata: %s\n\n", ev.Position, data); err != nil {
			return err
		}
		flusher.Flush()
		return nil
	})
	if err != nil && ctx.Err() == nil {
		h.log.Warn("web: live updates stopped", "error", err)
		fmt.Fprintf(w, "event: failed\ndata: %q\n\n", err.Error())
		flusher.Flush()
	}
}

// poll passes fn every event from position from on, reading the
// Engine's store again every Poll, until ctx ends.
func (h *handler) poll(ctx context.Context, from uint64, fn func(eventlog.Event) error) error {
	t := time.NewTicker(Poll)
	defer t.Stop()
	for {
		err := h.e.Store().ReadAll(ctx, from, func(ev eventlog.Event) error {
			from = ev.Position + 1
			return fn(ev)
		})
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
