package web

import (
	"cmp"
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
)

// The orders of a paged list: its newest rows first, or its oldest.
const (
	newestFirst = "newest"
	oldestFirst = "oldest"
)

// pageOrder reads the order parameter of r: newest first on a page and
// oldest first in JSON when it is absent, since the API listed oldest
// first before it could be turned, and its clients read a list by
// following next_cursor from the default page.
func pageOrder(r *http.Request) (string, error) {
	switch o := r.URL.Query().Get("order"); o {
	case "":
		if wantsJSON(r, strings.HasPrefix(r.URL.Path, "/api/")) {
			return oldestFirst, nil
		}
		return newestFirst, nil
	case newestFirst, oldestFirst:
		return o, nil
	default:
		return "", badRequest("bad order %s: want newest or oldest", clip(o))
	}
}

// otherOrder is the order a page's toggle turns order into.
func otherOrder(order string) string {
	if order == newestFirst {
		return oldestFirst
	}
	return newestFirst
}

// ref names one event of a paged list: its sequence in its stream and
// its position in the log.
type ref struct {
	Seq, Position uint64
}

// rows are the events of a paged list, oldest first, as one read of the
// store found them: how many there are, how many of them come before the
// key the page is read around, the key of the last event the read saw
// (where a page stops, so that what it shows agrees with the count), and
// the event at each index that a page there, or one of its links, needs.
type rows struct {
	n, before int
	last      uint64
	at        func(i int) ref
}

// scanRows reads the events that read passes to its function, without
// decoding them, and returns as rows those that keep keeps, by key: a
// page is read around one key, so rows holds the first k of them, the
// last k, and k either side of around, which are those the page and its
// links may need when k is one more than the page's limit. Its last is
// the key of the last event read, kept or not.
func scanRows(read func(func(eventlog.Event) error) error, keep func(eventlog.Event) bool,
	key func(eventlog.Event) uint64, around uint64, k int) (rows, error) {
	held := map[int]ref{}
	ring := make([]ref, k) // the last k kept, the one at index i in ring[i%k]
	out := rows{at: func(i int) ref { return held[i] }}
	// hold copies the ring into held: the k kept last, before around or
	// in all.
	hold := func() {
		for i := max(out.n-k, 0); i < out.n; i++ {
			held[i] = ring[i%k]
		}
	}
	err := read(func(ev eventlog.Event) error {
		out.last = key(ev)
		if !keep(ev) {
			return nil
		}
		r := ref{Seq: ev.Seq, Position: ev.Position}
		switch {
		case key(ev) < around:
			out.before++
		case out.n == out.before:
			hold() // the first past around: the ring holds the k before it
		}
		if out.n < k || out.n >= out.before && out.n < out.before+k {
			held[out.n] = r
		}
		ring[out.n%k] = r
		out.n++
		return nil
	})
	hold()
	return out, err
}

// logRows returns the events of the whole log as rows without reading
// them: the positions from 1 to the last, less those that vacuums
// removed, which their Vacuumed events name. A purge leaves no other gap
// (an audit reports one as damage), so the arithmetic is exact.
func logRows(ctx context.Context, store eventlog.Store, around uint64) (rows, error) {
	last, err := eventlog.LastPosition(ctx, store)
	if err != nil {
		return rows{}, err
	}
	gone, err := vacuumedPositions(ctx, store, last)
	if err != nil {
		return rows{}, err
	}
	// removed counts the removed positions below p.
	removed := func(p uint64) uint64 {
		n := uint64(0)
		for _, g := range gone {
			if g.First >= p {
				break
			}
			n += min(g.Last, p-1) - g.First + 1
		}
		return n
	}
	below := min(around, last+1) // the positions before around, and after the last, hold no event
	return rows{n: int(last - removed(last+1)), before: int(below - 1 - removed(below)), last: last,
		at: func(i int) ref {
			p := uint64(i) + 1
			for _, g := range gone {
				if g.First > p {
					break
				}
				p += g.Last - g.First + 1
			}
			return ref{Position: p}
		}}, nil
}

// vacuumedPositions returns the positions up to last that the Vacuumed
// events of store's vacuum stream say were removed, in order, each range
// apart from the next.
func vacuumedPositions(ctx context.Context, store eventlog.Store, last uint64) ([]schema.PositionRange, error) {
	var gone []schema.PositionRange
	err := store.ReadStream(ctx, schema.VacuumStream, 1, func(ev eventlog.Event) error {
		p, err := schema.Decode(ev)
		if err != nil {
			return err
		}
		if v, ok := p.(*schema.Vacuumed); ok {
			gone = append(gone, v.Positions...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(gone, func(x, y schema.PositionRange) int { return cmp.Compare(x.First, y.First) })
	var out []schema.PositionRange
	for _, g := range gone {
		g.Last = min(g.Last, last)
		switch {
		case g.First == 0 || g.First > g.Last:
		case len(out) > 0 && g.First <= out[len(out)-1].Last+1:
			out[len(out)-1].Last = max(out[len(out)-1].Last, g.Last)
		default:
			out = append(out, g)
		}
	}
	return out, nil
}

// around is the key a page of a list in order is read around, so that
// rows.before counts the rows before the page: the cursor for oldest
// first, where the page starts; one past it for newest first, where the
// page holds the rows at or below it. No cursor (0) is the start of the
// list in either order.
func around(order string, cursor uint64) uint64 {
	switch {
	case order == oldestFirst:
		return max(cursor, 1)
	case cursor == 0 || cursor == math.MaxUint64:
		return math.MaxUint64
	}
	return cursor + 1
}

// place is where a page of list lies in order: the index, in that order,
// of its first row.
func place(list rows, order string) int {
	if order == oldestFirst {
		return list.before
	}
	return list.n - list.before
}

// inOrder returns the row at index i of list in order.
func inOrder(list rows, order string, i int) ref {
	if order == oldestFirst {
		return list.at(i)
	}
	return list.at(list.n - 1 - i)
}

// pageLinks returns the links of a page of a list of n rows, in its
// order, that starts at index start, limit rows a page, the next page
// starting at the cursor next ("" on the last): link returns the link of
// a page from its cursor ("" for the first), and cursorAt the cursor of
// the page that starts at index i, above 0, which names a row, never a
// distance from the start, so that the link shows the same rows however
// many are appended. The last page is the last limit rows, or the next page when
// the bytes of this one cut it short of those.
func pageLinks(n, start, limit int, next string, cursorAt func(i int) string, link func(cursor string) string) pagesJSON {
	var p pagesJSON
	if start > 0 {
		p.First = link("")
		p.Prev = p.First
		if at := start - limit; at > 0 {
			p.Prev = link(cursorAt(at))
		}
	}
	if next != "" {
		p.Next = link(next)
		p.Last = p.Next
		if at := n - limit; at > start {
			p.Last = link(cursorAt(at))
		}
	}
	return p
}

// backSpan is how many events a newest-first page reads at a time: it
// reads them forward, then takes them newest first, so that a page cut
// short by its bytes decodes at most this many events more than it
// shows.
const backSpan = 16

// readSpan reads the events of stream (of the log, for "") from key lo to
// key hi that keep keeps, decoded as readDecoded decodes them, and
// returns what build makes of each, newest first. build keeps no part of
// the payload it is given.
func readSpan[T any](ctx context.Context, h *handler, stream string, lo, hi uint64, keep func(eventlog.Event) bool,
	build func(eventlog.Event, schema.Payload) (T, error)) ([]T, error) {
	var out []T
	key := eventKey(stream)
	err := h.readDecoded(ctx, stream, lo, func(ev eventlog.Event) error {
		switch {
		case key(ev) > hi:
			return errEnough
		case !keep(ev):
			return errSkip
		}
		return nil
	}, func(ev eventlog.Event, p schema.Payload) error {
		x, err := build(ev, p)
		out = append(out, x)
		return err
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

// eventKey returns the key of an event of stream: its sequence, or, for
// the log (""), its position.
func eventKey(stream string) func(eventlog.Event) uint64 {
	if stream == "" {
		return func(ev eventlog.Event) uint64 { return ev.Position }
	}
	return func(ev eventlog.Event) uint64 { return ev.Seq }
}
