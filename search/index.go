package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// layout names the documents an index holds and how it holds them. An
// index made under another layout is rebuilt.
const layout = "search/1"

// How much of the log Update folds into one change of the index: at most
// chunkEvents events, and about chunkBytes of text.
const (
	chunkEvents = 4096
	chunkBytes  = 8 << 20
)

// Paging: a Search without a limit returns DefaultLimit hits, and none
// returns more than MaxLimit.
const (
	DefaultLimit = 20
	MaxLimit     = 1000
)

// Hit is one place a search found its words.
type Hit struct {
	Kind Kind
	// Session is the session the text belongs to: the message's, or the
	// one the hooks ran on.
	Session string
	// Stream, Seq and Position name the event that holds the text: a
	// message's in the session's stream, a hook step's in its agent's.
	Stream   string
	Seq      uint64
	Position uint64
	Type     eventlog.Type // the event's type
	Time     int64         // the event's time, UTC unix nanoseconds
	// UUID is the message's uuid, for a message or a tool block;
	// ToolUseID the call, for a tool block.
	UUID      string
	ToolUseID string
	// Snippet is a line of the text around the first word found; Marks
	// are the byte ranges of Snippet that hold the words searched for.
	Snippet string
	Marks   []Mark
}

// Mark is the bytes Start to End (excluded) of a snippet.
type Mark struct{ Start, End int }

// Result is one page of a search: its hits, newest first, and how many
// documents match in all.
type Result struct {
	Hits  []Hit
	Total int
}

// ref names a document the way a backend returns it: its event's position
// and its part.
type ref struct {
	Position uint64
	Part     int
}

// mark is the last event an index holds, which tells whether the log it
// was built from is the one it is asked about.
type mark struct {
	Position uint64 `json:"position"`
	Stream   string `json:"stream"`
	Seq      uint64 `json:"seq"`
	Time     int64  `json:"time"`
}

// state is what a backend keeps beside its documents.
type state struct {
	Layout  string   // "" for an index that holds nothing yet
	Last    mark     // the last event folded in
	Deleted []string // the deleted sessions, whose documents are gone
}

// change is one Update's step: documents to add, sessions whose documents
// go, and the state after them. A backend applies it all or nothing.
type change struct {
	From    uint64 // the position of the last event the index held before
	Docs    []document
	Delete  []string // sessions deleted since the last change
	Deleted []string // every deleted session, Delete's included
	Last    mark
}

// backend is where an Index keeps its documents: a bleve index, or a
// PostgreSQL table. Its methods are called one at a time, but for query,
// which may run beside any of them.
type backend interface {
	// load returns the state the backend holds; a zero state when it
	// holds none.
	load(ctx context.Context) (state, error)
	// reset removes every document and the state.
	reset(ctx context.Context) error
	// apply applies c at once, or returns errMoved when the index no
	// longer ends at c.From: another process shares it, and moved it.
	apply(ctx context.Context, c change) error
	// compact removes for good the bytes of documents removed, when the
	// backend keeps them until then.
	compact(ctx context.Context) error
	// query returns the documents matching q, newest first, from offset
	// on, at most limit of them, and how many match in all.
	query(ctx context.Context, q string, limit, offset int) ([]ref, int, error)
	close() error
}

// Index is a full-text index of the text of a store's log, kept up to
// date by Update. Search and Update may be called concurrently; Updates
// run one at a time.
type Index struct {
	store eventlog.Store
	b     backend

	mu      sync.Mutex // held by Update
	last    mark
	deleted map[string]bool
}

// open returns the index that b keeps of store, emptied first when what
// it holds is not of store's log as it is now.
func open(ctx context.Context, store eventlog.Store, b backend) (*Index, error) {
	st, err := b.load(ctx)
	if err != nil {
		return nil, err
	}
	why, err := stale(ctx, store, st)
	if err != nil {
		return nil, err
	}
	if why != "" {
		slog.Warn("search: rebuilding the index from the log", "why", why)
		if err := b.reset(ctx); err != nil {
			return nil, err
		}
		st = state{}
	}
	x := &Index{store: store, b: b, last: st.Last, deleted: map[string]bool{}}
	for _, id := range st.Deleted {
		x.deleted[id] = true
	}
	return x, nil
}

// stale says why the index in state st is not one of store's log, ""
// when it is: it was made under another layout, it holds events the log
// does not, or its last event is not the log's.
func stale(ctx context.Context, store eventlog.Store, st state) (string, error) {
	if st.Layout == "" && st.Last.Position == 0 {
		return "", nil
	}
	if st.Layout != layout {
		return fmt.Sprintf("it was made under layout %q, not %q", st.Layout, layout), nil
	}
	if st.Last.Position == 0 {
		return "", nil
	}
	last, err := eventlog.LastPosition(ctx, store)
	if err != nil {
		return "", fmt.Errorf("search: read the log's last position: %w", err)
	}
	if last < st.Last.Position {
		return fmt.Sprintf("it holds events up to position %d, and the log ends at %d", st.Last.Position, last), nil
	}
	m := st.Last
	var found *eventlog.Event
	err = store.ReadStream(ctx, m.Stream, m.Seq, func(ev eventlog.Event) error {
		found = &eventlog.Event{Seq: ev.Seq, Position: ev.Position, Time: ev.Time}
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return "", fmt.Errorf("search: read %s#%d: %w", m.Stream, m.Seq, err)
	}
	if found != nil && found.Seq == m.Seq {
		if found.Position != m.Position || found.Time != m.Time {
			return fmt.Sprintf("the log's %s#%d is at position %d, not %d", m.Stream, m.Seq, found.Position, m.Position), nil
		}
		return "", nil
	}
	// The event is not there: a vacuum removed it, or the log is another.
	head, err := store.Head(ctx, m.Stream)
	if err != nil {
		return "", fmt.Errorf("search: read the head of %s: %w", m.Stream, err)
	}
	if head < m.Seq {
		return fmt.Sprintf("the log's %s ends before %d", m.Stream, m.Seq), nil
	}
	return "", nil
}

// errStop ends a read of the log early.
var errStop = errors.New("stop")

// Update folds into the index the events appended to the log since the
// last Update: their text is added, and a deleted session's is removed.
// After a vacuum it compacts the index, so that the removed text leaves
// its files too. It returns how many events it folded in itself, none
// of those another process sharing the index folded in first.
func (x *Index) Update(ctx context.Context) (int, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	total := 0
	for {
		c, n, compact, err := x.read(ctx)
		if err != nil || n == 0 {
			return total, err
		}
		err = x.b.apply(ctx, c)
		if errors.Is(err, errMoved) {
			if err := x.reload(ctx); err != nil {
				return total, err
			}
			continue
		}
		if err != nil {
			return total, err
		}
		total += n
		x.last = c.Last
		for _, id := range c.Delete {
			x.deleted[id] = true
		}
		if compact {
			if err := x.b.compact(ctx); err != nil {
				return total, err
			}
		}
	}
}

// reload takes the index's state as the backend holds it now.
func (x *Index) reload(ctx context.Context) error {
	st, err := x.b.load(ctx)
	if err != nil {
		return err
	}
	x.last = st.Last
	clear(x.deleted)
	for _, id := range st.Deleted {
		x.deleted[id] = true
	}
	return nil
}

// read reads the next chunk of the log into a change, and says how many
// events it read and whether one was a vacuum's.
func (x *Index) read(ctx context.Context) (c change, n int, compact bool, err error) {
	c.From = x.last.Position
	newly := map[string]bool{}
	gone := func(id string) bool { return x.deleted[id] || newly[id] }
	size, skipped := 0, 0
	err = x.store.ReadAll(ctx, x.last.Position+1, func(ev eventlog.Event) error {
		if n == chunkEvents || size >= chunkBytes {
			return errStop
		}
		n++
		ev.Stream = strings.Clone(ev.Stream)
		c.Last = mark{Position: ev.Position, Stream: ev.Stream, Seq: ev.Seq, Time: ev.Time}
		switch {
		case ev.Type == schema.TypeSessionDeleted:
			if id := projection.SessionID(ev.Stream); id != "" && !gone(id) {
				newly[id] = true
				c.Delete = append(c.Delete, id)
				c.Docs = slices.DeleteFunc(c.Docs, func(d document) bool { return d.Session == id })
			}
			return nil
		case ev.Type == schema.TypeVacuumed:
			compact = true
			return nil
		case !indexed[ev.Type]:
			return nil
		}
		p, err := schema.Decode(ev)
		if errors.Is(err, schema.ErrUnknownType) || errors.Is(err, schema.ErrNewerVersion) {
			skipped++
			return nil
		}
		if err != nil {
			return err
		}
		for _, d := range documents(ev, p) {
			if !gone(d.Session) {
				c.Docs = append(c.Docs, d)
				size += len(d.Text)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return change{}, 0, false, fmt.Errorf("search: read the log from position %d: %w", x.last.Position+1, err)
	}
	if skipped > 0 {
		slog.Warn("search: events this build cannot read are not indexed", "events", skipped)
	}
	if len(c.Delete) > 0 {
		c.Deleted = slices.Sorted(func(yield func(string) bool) {
			for id := range x.deleted {
				if !yield(id) {
					return
				}
			}
			for id := range newly {
				if !yield(id) {
					return
				}
			}
		})
	}
	return c, n, compact, nil
}

// Search returns the documents that hold every word of q, newest first:
// limit of them (DefaultLimit when limit is 0 or less, at most MaxLimit)
// after the first offset, and how many there are in all. A q that is one
// word also finds the sessions whose id starts with it. The index answers
// as of its last Update. A hit whose event a vacuum removed since is left
// out of Hits, though Total still counts it until the next Update.
func (x *Index) Search(ctx context.Context, q string, limit, offset int) (Result, error) {
	q = strings.TrimSpace(q)
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit, offset = min(limit, MaxLimit), max(offset, 0)
	if q == "" {
		return Result{}, nil
	}
	refs, total, err := x.b.query(ctx, q, limit, offset)
	if err != nil {
		return Result{}, err
	}
	res := Result{Total: total}
	words := queryWords(q)
	for _, r := range refs {
		h, ok, err := x.hit(ctx, r, words)
		if err != nil {
			return Result{}, err
		}
		if ok {
			res.Hits = append(res.Hits, h)
		}
	}
	return res, nil
}

// hit reads the document r names back from the log, and reports false
// when the log no longer holds it.
func (x *Index) hit(ctx context.Context, r ref, words []string) (Hit, bool, error) {
	var (
		h     Hit
		found bool
	)
	err := x.store.ReadAll(ctx, r.Position, func(ev eventlog.Event) error {
		if ev.Position != r.Position {
			return errStop
		}
		p, err := schema.Decode(ev)
		if err != nil {
			return err
		}
		docs := documents(ev, p)
		if r.Part >= len(docs) {
			return errStop
		}
		d := docs[r.Part]
		h = Hit{Kind: d.Kind, Session: d.Session, Stream: d.Stream, Seq: d.Seq, Position: d.Position,
			Type: ev.Type, Time: d.Time, UUID: d.UUID, ToolUseID: d.ToolUseID}
		h.Snippet, h.Marks = snippet(d.Text, words)
		h.Stream = strings.Clone(h.Stream)
		found = true
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return Hit{}, false, fmt.Errorf("search: read the event at position %d: %w", r.Position, err)
	}
	return h, found, nil
}

// Compact removes from the index's files the bytes of the documents it
// removed, which they may keep until then. Update calls it after a
// vacuum; it is slow on a large index.
func (x *Index) Compact(ctx context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.b.compact(ctx)
}

// Close closes the index; it does not close the store.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.b.close()
}
