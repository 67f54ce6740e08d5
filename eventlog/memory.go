package eventlog

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
)

// ctxCheckEvery is how many events a long read passes between checks of its
// context.
const ctxCheckEvery = 256

// MemoryStore is a Store held in memory, for tests and short-lived tools. It
// copies payloads on the way in and on the way out, so neither the caller's
// records nor the events it hands out alias what it keeps.
type MemoryStore struct {
	LocalLocks // Engines sharing the store take turns on an agent

	mu      sync.RWMutex
	closed  bool
	events  []Event          // in position order, gaps allowed (Load)
	streams map[string][]int // stream -> indexes into events, in seq order

	ix     Indexer           // kept in step with every write; nil for none
	ixName string            // the name of the index rows hold
	ixRows map[string][]byte // replaced, never changed, by a write
	ixLast uint64            // the position of the last event the rows hold
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{streams: make(map[string][]int)}
}

var (
	_ Store   = (*MemoryStore)(nil)
	_ Loader  = (*MemoryStore)(nil)
	_ Purger  = (*MemoryStore)(nil)
	_ Indexed = (*MemoryStore)(nil)
)

// Append implements Store.
func (m *MemoryStore) Append(ctx context.Context, expect []Expect, recs []Record) ([]Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckAppend(expect, recs); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	for _, e := range expect {
		if head := m.head(e.Stream); head != e.Seq {
			return nil, &ConflictError{Stream: e.Stream, Expected: e.Seq, Actual: head}
		}
	}
	return m.appendLocked(recs)
}

// appendLocked writes recs, whose expectations hold. m.mu must be held.
func (m *MemoryStore) appendLocked(recs []Record) ([]Event, error) {
	out := make([]Event, len(recs))
	for i, r := range recs {
		ev := Event{
			Stream:    r.Stream,
			Seq:       m.head(r.Stream) + 1,
			Position:  m.last() + 1,
			Type:      r.Type,
			Version:   r.Version,
			Time:      r.Time,
			RestoreID: r.RestoreID,
			Payload:   bytes.Clone(r.Payload),
		}
		m.streams[r.Stream] = append(m.streams[r.Stream], len(m.events))
		m.events = append(m.events, ev)
		out[i] = ev
		out[i].Payload = bytes.Clone(ev.Payload)
	}
	m.indexLocked(out)
	return out, nil
}

// Index implements Indexed.
func (m *MemoryStore) Index(ctx context.Context, ix Indexer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.ix = nil
	if m.ixName != ix.Name() {
		m.ixName, m.ixRows, m.ixLast = ix.Name(), map[string][]byte{}, 0
	}
	first := sort.Search(len(m.events), func(i int) bool { return m.events[i].Position > m.ixLast })
	m.ix = ix
	m.indexLocked(m.events[first:])
	if m.ix == nil {
		return fmt.Errorf("eventlog: index %s: an event could not be folded", ix.Name())
	}
	return nil
}

// indexLocked folds evs, the events just written, into the index rows
// when they hold every event before them. A fold that fails leaves the
// rows as they were, and the store keeps the index no longer: readers
// catching up meet the failing event themselves. m.mu must be held.
func (m *MemoryStore) indexLocked(evs []Event) {
	if m.ix == nil || len(evs) == 0 {
		return
	}
	fold := NewFold(func(key string) ([]byte, error) { return m.ixRows[key], nil })
	for _, ev := range evs {
		if err := fold.Apply(m.ix, ev); err != nil {
			m.ix = nil
			return
		}
	}
	_ = fold.Changed(func(key string, value []byte) error {
		if value == nil {
			delete(m.ixRows, key)
		} else {
			m.ixRows[key] = value
		}
		return nil
	})
	m.ixLast = evs[len(evs)-1].Position
}

// ReadIndex implements Indexed.
func (m *MemoryStore) ReadIndex(ctx context.Context, name string, fn func(key string, value []byte) error) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return 0, ErrClosed
	}
	if m.ixName != name {
		m.mu.RUnlock()
		return 0, fmt.Errorf("%w: %s", ErrNoIndex, name)
	}
	// Copied under the lock, so that fn runs unlocked: the rows change in
	// place.
	keys := slices.Sorted(maps.Keys(m.ixRows))
	values := make([][]byte, len(keys))
	for i, key := range keys {
		values[i] = bytes.Clone(m.ixRows[key])
	}
	last := m.ixLast
	m.mu.RUnlock()
	for n, key := range keys {
		if n > 0 && n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		if err := fn(key, values[n]); err != nil {
			return 0, err
		}
	}
	return last, nil
}

// Head implements Store.
func (m *MemoryStore) Head(ctx context.Context, stream string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := ValidateStream(stream); err != nil {
		return 0, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return 0, ErrClosed
	}
	return m.head(stream), nil
}

// Load implements Loader.
func (m *MemoryStore) Load(ctx context.Context, evs []Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	err := CheckLoad(evs, m.last(), func(stream string) (uint64, error) { return m.head(stream), nil })
	if err != nil {
		return err
	}
	added := make([]Event, len(evs))
	for i, ev := range evs {
		ev.Payload = bytes.Clone(ev.Payload)
		m.streams[ev.Stream] = append(m.streams[ev.Stream], len(m.events))
		m.events = append(m.events, ev)
		added[i] = ev
	}
	m.indexLocked(added)
	return nil
}

// head returns the seq of stream's last event; m.mu is held.
func (m *MemoryStore) head(stream string) uint64 {
	idx := m.streams[stream]
	if len(idx) == 0 {
		return 0
	}
	return m.events[idx[len(idx)-1]].Seq
}

// last returns the last position given; m.mu is held.
func (m *MemoryStore) last() uint64 {
	if len(m.events) == 0 {
		return 0
	}
	return m.events[len(m.events)-1].Position
}

// LastPosition implements Positioner.
func (m *MemoryStore) LastPosition(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return 0, ErrClosed
	}
	return m.last(), nil
}

// ReadStream implements Store.
func (m *MemoryStore) ReadStream(ctx context.Context, stream string, from uint64, fn func(Event) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateStream(stream); err != nil {
		return err
	}
	events, idx, err := m.snapshot(stream)
	if err != nil {
		return err
	}
	first := sort.Search(len(idx), func(i int) bool { return events[idx[i]].Seq >= from })
	for n, i := range idx[first:] {
		if err := deliver(ctx, n, events[i], fn); err != nil {
			return err
		}
	}
	return nil
}

// ReadAll implements Store.
func (m *MemoryStore) ReadAll(ctx context.Context, from uint64, fn func(Event) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	events, _, err := m.snapshot("")
	if err != nil {
		return err
	}
	first := sort.Search(len(events), func(i int) bool { return events[i].Position >= from })
	for n, ev := range events[first:] {
		if err := deliver(ctx, n, ev, fn); err != nil {
			return err
		}
	}
	return nil
}

// Streams implements Store.
func (m *MemoryStore) Streams(ctx context.Context, prefix string, fn func(StreamInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return ErrClosed
	}
	var infos []StreamInfo
	for name, idx := range m.streams {
		if strings.HasPrefix(name, prefix) {
			infos = append(infos, StreamInfo{Name: name, Head: m.events[idx[len(idx)-1]].Seq})
		}
	}
	m.mu.RUnlock()
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	for n, info := range infos {
		if n > 0 && n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// Close implements Store. A second Close returns ErrClosed.
func (m *MemoryStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	m.events, m.streams = nil, nil
	return nil
}

// Purge implements Purger. It builds a new log without the removed
// events and puts it in place, so reads already under way see the log as
// it was.
func (m *MemoryStore) Purge(ctx context.Context, p Purge) ([]Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckPurge(p); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	for _, e := range p.Expect {
		if head := m.head(e.Stream); head != e.Seq {
			return nil, &ConflictError{Stream: e.Stream, Expected: e.Seq, Actual: head}
		}
	}
	removed := map[int]bool{}
	for _, r := range p.Remove {
		if r.Last >= m.head(r.Stream) {
			return nil, fmt.Errorf("%w: %s#%d is the head of its stream or beyond it", ErrInvalidPurge, r.Stream, r.Last)
		}
		for seq := r.First; seq <= r.Last; seq++ {
			i, err := m.index(r.Stream, seq)
			if err != nil {
				return nil, err
			}
			removed[i] = true
		}
	}
	payloads := map[int][]byte{}
	for _, r := range p.Rewrite {
		i, err := m.index(r.Stream, r.Seq)
		if err != nil {
			return nil, err
		}
		payloads[i] = bytes.Clone(r.Payload)
	}
	events := make([]Event, 0, len(m.events)-len(removed))
	streams := make(map[string][]int, len(m.streams))
	for i, ev := range m.events {
		if removed[i] {
			continue
		}
		if payload, ok := payloads[i]; ok {
			ev.Payload = payload
		}
		streams[ev.Stream] = append(streams[ev.Stream], len(events))
		events = append(events, ev)
	}
	m.events, m.streams = events, streams
	return m.appendLocked(p.Records)
}

// index returns the index in m.events of event seq of stream, or
// ErrInvalidPurge when it is not stored. m.mu is held.
func (m *MemoryStore) index(stream string, seq uint64) (int, error) {
	idx := m.streams[stream]
	n := sort.Search(len(idx), func(i int) bool { return m.events[idx[i]].Seq >= seq })
	if n == len(idx) || m.events[idx[n]].Seq != seq {
		return 0, fmt.Errorf("%w: %s#%d is not stored", ErrInvalidPurge, stream, seq)
	}
	return idx[n], nil
}

// snapshot returns the event log and the indexes of stream's events as they
// stand now. Both only ever grow by appending, and a purge replaces them
// instead of changing them, so the caller may read them without the lock,
// which lets callbacks run unlocked.
func (m *MemoryStore) snapshot(stream string) ([]Event, []int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, nil, ErrClosed
	}
	return m.events, m.streams[stream], nil
}

// deliver passes a copy of ev to fn, checking ctx every ctxCheckEvery events;
// n counts the events delivered so far.
func deliver(ctx context.Context, n int, ev Event, fn func(Event) error) error {
	if n > 0 && n%ctxCheckEvery == 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	ev.Payload = bytes.Clone(ev.Payload)
	return fn(ev)
}
