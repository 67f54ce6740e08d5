package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/internal/private"
)

var _ eventlog.Purger = (*Store)(nil)

// gapsBucket records the gaps purges left: eventKey(stream, first) -> last
// for a stream's sequences, and eventKey("", first) -> last for positions
// (no stream name is empty).
var gapsBucket = []byte("gaps")

// vacuumSuffix ends the name of the file a purge compacts the store into,
// beside it, before renaming it over the store: "." + the store's name +
// vacuumSuffix + random digits, made exclusively, so that no other user
// can predict it or plant a file or link there. Builds before that used
// STORE.vacuum itself; a compaction removes what a killed one left under
// either name.
const vacuumSuffix = ".vacuum"

// Purge implements eventlog.Purger in one write transaction, after which
// it compacts the file: it copies the live pages into a new file beside the
// store, opened (and so locked) before the old one is closed, syncs it and
// renames it over the store, so that the removed bytes, which bbolt's
// free pages would otherwise keep, are gone from the file and the lock is
// never released. A crash before the rename leaves the store as the
// transaction committed it, purged but not yet compacted, and a stale
// compaction file that the next compaction removes; Compact does the rest.
func (s *Store) Purge(ctx context.Context, p eventlog.Purge) ([]eventlog.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := eventlog.CheckPurge(p); err != nil {
		return nil, err
	}
	var evs []eventlog.Event
	err := s.exclusive(ctx, func() error {
		var err error
		evs, err = s.purge(p)
		return err
	})
	return evs, err
}

// purge is Purge, once the log is applied.
func (s *Store) purge(p eventlog.Purge) ([]eventlog.Event, error) {
	var (
		evs []eventlog.Event
		k   *keeper
	)
	s.ixMu.Lock()
	err := s.update(func(tx *bolt.Tx) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		k = s.keeper(tx)
		prev := lastPosition(b)
		if evs, err = appendTo(b, p.Expect, p.Records); err != nil {
			return err
		}
		// The rows keep what the fold made of the removed events; the
		// records the purge appends are folded like any append's.
		if err := k.fold(prev, evs); err != nil {
			return err
		}
		gaps, err := tx.CreateBucketIfNotExists(gapsBucket)
		if err != nil {
			return fmt.Errorf("boltstore: purge %s: %w", s.path, err)
		}
		// The write-open marked the file with layout 5, which builds
		// that know only gapless stores (layout 3) refuse.
		return purgeIn(b, gaps, p)
	})
	if err == nil {
		s.kept(k)
	}
	s.ixMu.Unlock()
	if err != nil {
		var partial *partialWrite
		if errors.As(err, &partial) {
			err = partial.err
		}
		return nil, err
	}
	// The events returned alias the transaction's buffers only until it
	// ends; appendTo's payloads point into them.
	for i := range evs {
		evs[i].Payload = bytes.Clone(evs[i].Payload)
	}
	return evs, s.compact()
}

// purgeIn removes and rewrites the events p names and records the gaps.
func purgeIn(b buckets, gaps *bolt.Bucket, p eventlog.Purge) error {
	var positions []uint64
	for _, r := range p.Remove {
		head, err := readHead(b.events.Cursor(), r.Stream)
		if err != nil {
			return err
		}
		if r.Last >= head {
			return fmt.Errorf("%w: %s#%d is the head of its stream or beyond it", eventlog.ErrInvalidPurge, r.Stream, r.Last)
		}
		removed, err := removeEvents(b.events, r.Stream, r.First, r.Last)
		if err != nil {
			return err
		}
		positions = append(positions, removed...)
		if err := gaps.Put(eventKey(r.Stream, r.First), be64(r.Last)); err != nil {
			return fmt.Errorf("boltstore: purge %s: %w", r.Stream, err)
		}
	}
	slices.Sort(positions)
	for i := 0; i < len(positions); {
		j := i + 1
		for j < len(positions) && positions[j] == positions[j-1]+1 {
			j++
		}
		if err := gaps.Put(eventKey("", positions[i]), be64(positions[j-1])); err != nil {
			return fmt.Errorf("boltstore: purge positions: %w", err)
		}
		i = j
	}
	for _, pos := range positions {
		if err := dropPosition(b, pos); err != nil {
			return err
		}
	}
	for _, r := range p.Rewrite {
		if err := rewriteEvent(b.events, r); err != nil {
			return err
		}
	}
	return nil
}

// storedValue is what removeEvents and rewriteEvent read of a value of
// the events bucket: the key's seq and the value's events, decoded and
// checked.
type storedValue struct {
	first uint64
	evs   []eventlog.Event
}

// readValues reads the values of stream that hold events from first to
// last, which must all be stored, or ErrInvalidPurge. The events' Payloads
// alias the transaction.
func readValues(events *bolt.Bucket, stream string, first, last uint64) ([]storedValue, error) {
	sc := streamCursor{c: events.Cursor()}
	sc.reset(stream)
	if err := sc.seek(first); err != nil {
		return nil, err
	}
	sc.rewind() // the events before first are read too
	var values []storedValue
	want := first
	for sc.on && sc.first <= last {
		v := storedValue{first: sc.first}
		for sc.it.left > 0 {
			seq, env, _, err := sc.next()
			if err != nil {
				return nil, err
			}
			ev, err := decodeEvent(stream, seq, env)
			if err != nil {
				return nil, err
			}
			if seq >= first && seq <= last {
				if seq != want {
					return nil, fmt.Errorf("%w: %s#%d is not stored", eventlog.ErrInvalidPurge, stream, want)
				}
				want++
			}
			v.evs = append(v.evs, ev)
		}
		values = append(values, v)
		k, val := sc.c.Next()
		if err := sc.load(k, val, sc.seq); err != nil {
			return nil, err
		}
	}
	if want <= last {
		return nil, fmt.Errorf("%w: %s#%d is not stored", eventlog.ErrInvalidPurge, stream, want)
	}
	return values, nil
}

// removeEvents deletes the events first to last of stream, rewriting the
// values that hold events besides them with only those, each under the
// key of its first event, and returns the removed events' positions.
func removeEvents(events *bolt.Bucket, stream string, first, last uint64) ([]uint64, error) {
	values, err := readValues(events, stream, first, last)
	if err != nil {
		return nil, err
	}
	var positions []uint64
	var puts [][]eventlog.Event
	for _, v := range values {
		var before, after []eventlog.Event
		for _, ev := range v.evs {
			switch {
			case ev.Seq < first:
				before = append(before, ev)
			case ev.Seq > last:
				after = append(after, ev)
			default:
				positions = append(positions, ev.Position)
			}
		}
		if err := events.Delete(eventKey(stream, v.first)); err != nil {
			return nil, fmt.Errorf("boltstore: purge %s#%d: %w", stream, v.first, err)
		}
		puts = append(puts, before, after)
	}
	for _, evs := range puts {
		if len(evs) == 0 {
			continue
		}
		// The events alias the values just deleted: write copies.
		if _, err := putEvents(events, nil, cloneEvents(evs)); err != nil {
			return nil, fmt.Errorf("boltstore: purge %s: %w", stream, err)
		}
	}
	return positions, nil
}

// rewriteEvent replaces the payload of the event r names, rewriting the
// value that holds it.
func rewriteEvent(events *bolt.Bucket, r eventlog.Rewrite) error {
	values, err := readValues(events, r.Stream, r.Seq, r.Seq)
	if err != nil {
		return err
	}
	evs := cloneEvents(values[0].evs)
	evs[r.Seq-evs[0].Seq].Payload = r.Payload
	if n := EnvelopeSize(evs[r.Seq-evs[0].Seq]); n > bolt.MaxValueSize {
		return fmt.Errorf("boltstore: rewrite %s#%d: %d bytes is larger than a value may hold", r.Stream, r.Seq, n)
	}
	if err := events.Delete(eventKey(r.Stream, values[0].first)); err != nil {
		return fmt.Errorf("boltstore: rewrite %s#%d: %w", r.Stream, r.Seq, err)
	}
	if _, err := putEvents(events, nil, evs); err != nil {
		return fmt.Errorf("boltstore: rewrite %s#%d: %w", r.Stream, r.Seq, err)
	}
	return nil
}

// cloneEvents copies evs with their payloads, which may alias the mapping.
func cloneEvents(evs []eventlog.Event) []eventlog.Event {
	out := make([]eventlog.Event, len(evs))
	for i, ev := range evs {
		ev.Payload = bytes.Clone(ev.Payload)
		out[i] = ev
	}
	return out
}

// dropPosition takes pos out of the run that holds it, in the positions or
// the recent bucket, keeping the positions before and after it.
func dropPosition(b buckets, pos uint64) error {
	for _, runs := range []*bolt.Bucket{b.recent, b.positions} {
		c := runs.Cursor()
		k, v := c.Seek(be64(pos))
		if k == nil || binary.BigEndian.Uint64(k) != pos {
			k, v = c.Prev()
		}
		if k == nil {
			continue
		}
		start := binary.BigEndian.Uint64(k)
		r, ok := splitRun(v, "")
		if !ok {
			return fmt.Errorf("%w: position %d holds a malformed event key %x", eventlog.ErrCorrupt, start, v)
		}
		if pos >= start+r.count {
			continue
		}
		if err := runs.Delete(k); err != nil {
			return fmt.Errorf("boltstore: purge position %d: %w", pos, err)
		}
		if before := pos - start; before > 0 {
			if err := runs.Put(be64(start), appendRun(nil, r.stream, r.seq, uint32(before))); err != nil {
				return fmt.Errorf("boltstore: purge position %d: %w", pos, err)
			}
		}
		if after := start + r.count - 1 - pos; after > 0 {
			if err := runs.Put(be64(pos+1), appendRun(nil, r.stream, r.seq+pos-start+1, uint32(after))); err != nil {
				return fmt.Errorf("boltstore: purge position %d: %w", pos, err)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: position %d has no run", eventlog.ErrCorrupt, pos)
}

// recordGaps records gaps (an empty Stream for positions) in the gaps
// bucket, when there are any.
func recordGaps(tx *bolt.Tx, gaps []eventlog.SeqRange) error {
	if len(gaps) == 0 {
		return nil
	}
	bucket, err := tx.CreateBucketIfNotExists(gapsBucket)
	if err != nil {
		return fmt.Errorf("boltstore: record gaps: %w", err)
	}
	for _, g := range gaps {
		if err := bucket.Put(eventKey(g.Stream, g.First), be64(g.Last)); err != nil {
			return fmt.Errorf("boltstore: record gaps: %w", err)
		}
	}
	return nil
}

// gapEnd returns the last of the gaps that purges left in stream (""
// for positions) from at on, following gaps that touch, and false when no
// gap holds at.
func gapEnd(gaps *bolt.Bucket, stream string, at uint64) (uint64, bool) {
	if gaps == nil {
		return 0, false
	}
	c := gaps.Cursor()
	k, v := c.Seek(eventKey(stream, at))
	if !bytes.Equal(k, eventKey(stream, at)) {
		k, v = c.Prev()
	}
	prefix := append([]byte(stream), 0)
	if k == nil || !bytes.HasPrefix(k, prefix) || len(k) != len(prefix)+8 || len(v) != 8 {
		return 0, false
	}
	first, last := binary.BigEndian.Uint64(k[len(prefix):]), binary.BigEndian.Uint64(v)
	if at < first || at > last {
		return 0, false
	}
	for {
		next := gaps.Get(eventKey(stream, last+1))
		if len(next) != 8 {
			return last, true
		}
		last = binary.BigEndian.Uint64(next)
	}
}

// Compact rewrites the store's file with only its live pages, so that
// bytes bbolt freed (removed or overwritten events) are gone from it.
// It holds the file's lock throughout: the new file is opened, and so
// locked, before the old one is closed, then renamed over it. Purge calls
// it; a host may call it to finish a purge a crash cut short.
func (s *Store) Compact(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.exclusive(ctx, s.compact)
}

// compact is Compact, once the log is applied.
func (s *Store) compact() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return eventlog.ErrClosed
	}
	if s.readOnly {
		return eventlog.ErrReadOnly
	}
	dir, base := filepath.Dir(s.path), filepath.Base(s.path)
	removeCompactionLeftovers(dir, base)
	// The new file is made exclusively under a name no one can predict,
	// and bbolt is handed that very file, never reopening it by name.
	f, err := os.CreateTemp(dir, "."+base+vacuumSuffix+"-*")
	if err != nil {
		return fmt.Errorf("boltstore: compact %s: %w", s.path, err)
	}
	tmp := f.Name()
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: s.timeout,
		OpenFile: func(string, int, os.FileMode) (*os.File, error) { return f, nil }})
	if err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("boltstore: compact %s: %w", s.path, err)
	}
	err = bolt.Compact(dst, s.db, 64<<20)
	if err == nil {
		err = dst.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(s.path))
	}
	if err != nil {
		_ = dst.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("boltstore: compact %s: %w", s.path, err)
	}
	old := s.db
	s.db = dst
	if err := old.Close(); err != nil {
		return fmt.Errorf("boltstore: compact %s: close the old file: %w", s.path, err)
	}
	return nil
}

// removeCompactionLeftovers removes, from the store's directory dir, the
// files of compactions killed before their rename: full copies of the
// store, with the bytes they were to remove. They are the user's regular
// files named for the store's compactions, STORE.vacuum by older builds;
// the caller holds the store, so no compaction is writing one. Anything
// else under those names (another user's file, a link, a directory) is
// left alone, and is in no compaction's way.
func removeCompactionLeftovers(dir, base string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range entries {
		name := ent.Name()
		if name != base+vacuumSuffix && !strings.HasPrefix(name, "."+base+vacuumSuffix+"-") {
			continue
		}
		path := filepath.Join(dir, name)
		if info, err := os.Lstat(path); err == nil && info.Mode().IsRegular() && private.OwnedByUser(info) {
			_ = os.Remove(path)
		}
	}
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
