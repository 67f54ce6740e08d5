package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise/eventlog"
)

// writer is the state of a write-open store's log: what it has
// acknowledged, what the applier has committed to bbolt since, and the
// segments.
type writer struct {
	noSync bool
	wrap   func(walFile) walFile // wraps each new segment file; tests only

	// logMu is held by the group writing to the log and by the calls that
	// write to bbolt themselves (Load, Purge, Compact, Close), once the log
	// is applied: it makes them the store's one writer.
	logMu sync.Mutex
	heads map[string]head // streams in the unapplied records; logMu
	buf   []byte          // the record being written; logMu

	mu       sync.Mutex
	tail     map[string]head // heads of the streams pending holds, for reads
	pending  []entry         // acknowledged, not yet applied, in order
	acked    uint64          // the last acknowledged position
	applied  uint64          // the last position committed to bbolt
	applying bool            // an applier goroutine is running
	moved    chan struct{}   // closed when applied or failed change
	failed   error           // a write, sync or apply failed: see ErrLogFailed
	segs     []*segment      // not yet removed, oldest first; the last is written
	nextSeg  uint64          // the number of the next segment
}

// head is a stream's head as the log's records left it.
type head struct{ seq, pos uint64 }

// maxApplyRecords bounds the records one apply transaction commits.
const maxApplyRecords = maxGroupRecords

// openLog replays the log of a store opened for writing into bbolt,
// removes its segments and readies the writer: see Open. A store that
// Open has just created has no log: segments beside it belong to a file
// removed since, and are not replayed into a new one.
func (s *Store) openLog(opts Options, created bool) error {
	segs, err := listSegments(s.path)
	if err != nil {
		return err
	}
	if created && len(segs) > 0 {
		return fmt.Errorf("%w: %s was created, but log segments of a store of that name are beside it, from %s on; move them away to start afresh, or put the store's file back",
			ErrFormat, s.path, segs[0].path)
	}
	last, err := s.lastApplied()
	if err != nil {
		return err
	}
	w := &writer{noSync: opts.NoSync, wrap: opts.walWrap, heads: map[string]head{}, tail: map[string]head{},
		acked: last, applied: last, moved: make(chan struct{})}
	if len(segs) > 0 {
		w.nextSeg = segs[len(segs)-1].num + 1
	}
	s.w = w
	pending, err := readLog(segs, last)
	if err != nil {
		return err
	}
	for len(pending) > 0 {
		n := batchLen(pending)
		if err := s.applyEntries(pending[:n]); err != nil {
			return err
		}
		pending = pending[n:]
	}
	if len(segs) == 0 {
		return nil
	}
	if w.acked, err = s.lastApplied(); err != nil {
		return err
	}
	w.applied = w.acked
	// Every record is in bbolt, synced: the segments go, the torn end of
	// the last one with them, before any new segment is written.
	if err := removeSegments(segs); err != nil {
		return err
	}
	if !opts.NoSync {
		if err := syncDir(filepath.Dir(s.path)); err != nil {
			return fmt.Errorf("boltstore: open %s: %w", s.path, err)
		}
	}
	return nil
}

// checkLogApplied fails for a store opened read-only whose log holds
// records bbolt does not: its holder was killed before applying them, and
// reads would miss acknowledged appends.
func (s *Store) checkLogApplied() error {
	segs, err := listSegments(s.path)
	if err != nil || len(segs) == 0 {
		return err
	}
	last, err := s.lastApplied()
	if err != nil {
		return err
	}
	pending, err := readLog(segs, last)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return fmt.Errorf("%w: %d acknowledged append(s), up to position %d, that the file does not hold yet (it holds up to %d): "+
			"the process that held the store stopped before applying them. Opening it for writing applies them "+
			"(from the CLI, any command that writes, such as reprise vacuum)",
			ErrUnapplied, len(pending), pending[len(pending)-1].last(), last)
	}
	return nil
}

// lastApplied returns the last position bbolt holds.
func (s *Store) lastApplied() (uint64, error) {
	var last uint64
	err := s.view(func(tx *bolt.Tx, _ *guard) error {
		b, err := s.buckets(tx)
		last = lastPosition(b)
		return err
	})
	return last, err
}

// batchLen returns how many of es one apply transaction takes.
func batchLen(es []entry) int {
	n, size := 1, len(es[0].evs)
	for n < len(es) && size+len(es[n].evs) <= maxApplyRecords {
		size += len(es[n].evs)
		n++
	}
	return n
}

// logGroup writes the requests of group to the log as one record, with
// those join returns once group's are encoded (join may be nil), syncs it
// and acknowledges them. A request whose context ended or whose
// expectations do not hold against the heads as the requests before it
// left them fails alone and writes nothing.
func (s *Store) logGroup(group []*appendReq, join func(size int) []*appendReq) {
	w := s.w
	w.logMu.Lock()
	defer w.logMu.Unlock()
	fail := func(err error) {
		for _, r := range group {
			r.evs, r.err = nil, err
		}
	}
	s.mu.RLock()
	closed := s.db == nil
	s.mu.RUnlock()
	if closed {
		fail(eventlog.ErrClosed)
		return
	}
	w.mu.Lock()
	failed := w.failed
	w.mu.Unlock()
	if failed != nil {
		fail(failed)
		return
	}
	s.logs.Add(1)
	evs, err := s.number(&group, join)
	if err != nil {
		fail(err)
		return
	}
	if len(evs) == 0 {
		return // every request failed alone
	}
	e, err := s.writeRecord(evs)
	if err != nil {
		for _, r := range group {
			if r.err == nil {
				r.evs, r.err = nil, err
			}
		}
		return
	}
	for _, ev := range evs {
		w.heads[ev.Stream] = head{ev.Seq, ev.Position}
	}
	// The callers own the events returned: theirs share one copy of the
	// payloads, the log's another.
	var size int
	for _, r := range group {
		for _, ev := range r.evs {
			size += len(ev.Payload)
		}
	}
	payloads := make([]byte, 0, size)
	for _, r := range group {
		for i := range r.evs {
			if p := r.evs[i].Payload; p != nil {
				payloads = append(payloads, p...)
				r.evs[i].Payload = payloads[len(payloads)-len(p) : len(payloads) : len(payloads)]
			}
		}
	}
	w.mu.Lock()
	w.pending = append(w.pending, e)
	w.acked = e.last()
	for _, ev := range evs {
		w.tail[ev.Stream] = head{ev.Seq, ev.Position}
	}
	start := !w.applying
	w.applying = true
	w.mu.Unlock()
	if start {
		go s.applyLoop()
	}
}

// number checks each request of *group against the heads and numbers its
// events, appending joined requests to *group; it returns every event the
// group writes, in order, laid out in w.buf, the record to write (their
// Payloads point into it).
func (s *Store) number(group *[]*appendReq, join func(size int) []*appendReq) ([]eventlog.Event, error) {
	w := s.w
	// A head is the group's own, else the unapplied records', else
	// bbolt's. The heads whose positions are applied are dropped, and the
	// read transaction begun, under w.mu: bbolt holds what was dropped,
	// and no apply can drop another head meanwhile, as only this writer
	// drops them.
	var (
		evs     []eventlog.Event
		pos     uint64
		tx      *bolt.Tx
		grouped = map[string]uint64{} // heads as this group leaves them
	)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return nil, eventlog.ErrClosed
	}
	w.mu.Lock()
	for stream, h := range w.heads {
		if h.pos <= w.applied {
			delete(w.heads, stream)
		}
	}
	tx, err := s.db.Begin(false)
	pos = w.acked
	w.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("boltstore: %s: %w", s.path, err)
	}
	defer func() { _ = tx.Rollback() }()
	var b buckets
	g := &guard{path: s.path}
	if err := g.run(func() error {
		var err error
		b, err = s.buckets(tx)
		pos = max(pos, lastPosition(b)) // a Load or a Purge moved it
		return err
	}); err != nil {
		return nil, err
	}
	headOf := func(stream string) (uint64, error) {
		if seq, ok := grouped[stream]; ok {
			return seq, nil
		}
		if h, ok := w.heads[stream]; ok {
			return h.seq, nil
		}
		var seq uint64
		err := g.run(func() error {
			var err error
			seq, err = readHead(b.events.Cursor(), stream)
			return err
		})
		return seq, err
	}
	size := 0
	for i := 0; i < len(*group); i++ {
		r := (*group)[i]
		size += len(r.recs)
		r.evs, r.err = s.numberOne(r, headOf, pos)
		if r.err == nil {
			for _, ev := range r.evs {
				grouped[ev.Stream] = ev.Seq
			}
			pos += uint64(len(r.evs))
			evs = append(evs, r.evs...)
		}
		if i == len(*group)-1 && join != nil {
			*group = append(*group, join(size)...)
		}
	}
	// The record holds the log's copies of the events; each request's
	// events still point at its records' payloads.
	w.buf = appendRecord(w.buf[:0], evs)
	return evs, nil
}

// numberOne checks r's context and expectations and numbers its events
// after position pos.
func (s *Store) numberOne(r *appendReq, headOf func(string) (uint64, error), pos uint64) ([]eventlog.Event, error) {
	if err := r.ctx.Err(); err != nil {
		return nil, err
	}
	var small [4]uint64
	heads := small[:0]
	for _, e := range r.expect {
		h, err := headOf(e.Stream)
		if err != nil {
			return nil, err
		}
		if h != e.Seq {
			return nil, &eventlog.ConflictError{Stream: e.Stream, Expected: e.Seq, Actual: h}
		}
		heads = append(heads, h)
	}
	evs := make([]eventlog.Event, len(r.recs))
	last := 0
	for i, rec := range r.recs {
		last = streamIndex(r.expect, rec.Stream, last)
		heads[last]++
		pos++
		evs[i] = eventlog.Event{Stream: rec.Stream, Seq: heads[last], Position: pos, Type: rec.Type,
			Version: rec.Version, Time: rec.Time, RestoreID: rec.RestoreID, Payload: rec.Payload}
		if n := EnvelopeSize(evs[i]); n > bolt.MaxValueSize {
			return nil, fmt.Errorf("boltstore: append to %s: a record of %d bytes is larger than the %d a value may hold", rec.Stream, n, bolt.MaxValueSize)
		}
	}
	return evs, nil
}

// writeRecord writes w.buf, the record of evs, to the log and syncs it. A
// failure after the first byte is written is the store's end: see
// ErrLogFailed.
func (s *Store) writeRecord(evs []eventlog.Event) (entry, error) {
	w := s.w
	w.mu.Lock()
	var seg *segment
	if len(w.segs) > 0 {
		seg = w.segs[len(w.segs)-1]
	}
	w.mu.Unlock()
	size := int64(len(w.buf))
	if seg == nil || seg.f == nil || seg.end > 0 && seg.end+size > segmentSize {
		next, err := createSegment(s.path, w.nextSeg, w.noSync, w.wrap)
		if err != nil {
			return entry{}, err // nothing written
		}
		w.nextSeg++
		if seg != nil && seg.f != nil {
			_ = seg.f.Close() // synced with its last record
			seg.f = nil
		}
		seg = next
		w.mu.Lock()
		w.segs = append(w.segs, seg)
		w.mu.Unlock()
	}
	n, err := seg.f.WriteAt(w.buf, seg.end)
	if err == nil && n != len(w.buf) {
		err = fmt.Errorf("wrote %d of %d bytes", n, len(w.buf))
	}
	if err == nil && !w.noSync {
		err = seg.f.Sync()
		s.logSyncs.Add(1)
	}
	if err != nil {
		err = fmt.Errorf("%w: %s: %w", ErrLogFailed, seg.path, err)
		s.fail(err)
		return entry{}, err
	}
	// The pending entry owns the record: the next one gets a new buffer.
	e := entry{evs: evs, seg: seg, off: seg.end}
	seg.end += size
	w.mu.Lock()
	seg.last = e.last()
	w.mu.Unlock()
	w.buf = nil
	return e, nil
}

// fail ends the store's use: every later call returns err. A failed sync
// is never retried, as the kernel may have dropped the pages it failed to
// write and would report the next sync a success.
func (s *Store) fail(err error) {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed == nil {
		w.failed = err
		s.log.Error("boltstore: the store stops; reopen it to replay its log", "path", s.path, "error", err)
		close(w.moved)
		w.moved = make(chan struct{})
	}
}

// applyLoop commits the pending records to bbolt, in batches, until none
// is left.
func (s *Store) applyLoop() {
	w := s.w
	for {
		w.mu.Lock()
		if len(w.pending) == 0 || w.failed != nil {
			w.applying = false
			close(w.moved)
			w.moved = make(chan struct{})
			w.mu.Unlock()
			return
		}
		batch := w.pending[:batchLen(w.pending)]
		w.mu.Unlock()
		if err := s.applyEntries(batch); err != nil {
			s.fail(fmt.Errorf("%w: apply: %w", ErrLogFailed, err))
			continue
		}
		w.mu.Lock()
		w.pending = w.pending[len(batch):]
		w.applied = batch[len(batch)-1].last()
		for stream, h := range w.tail {
			if h.pos <= w.applied {
				delete(w.tail, stream)
			}
		}
		close(w.moved)
		w.moved = make(chan struct{})
		// The segments before the one written hold only applied records.
		var done []*segment
		for len(w.segs) > 1 && w.segs[0].last <= w.applied {
			done = append(done, w.segs[0])
			w.segs = w.segs[1:]
		}
		w.mu.Unlock()
		if err := removeSegments(done); err != nil {
			s.log.Warn("boltstore: a log segment applied is left", "path", s.path, "error", err)
		}
	}
}

// applyEntries commits es to bbolt in one transaction, through the writes
// an append used to make, and checks that they number each event as the
// log did. The last position bbolt holds, committed with them, is the
// log's applied position.
func (s *Store) applyEntries(es []entry) error {
	reqs := make([]*appendReq, len(es))
	for i, e := range es {
		r := &appendReq{ctx: context.Background(), recs: make([]eventlog.Record, len(e.evs))}
		for j, ev := range e.evs {
			if !expects(r.expect, ev.Stream) {
				r.expect = append(r.expect, eventlog.Expect{Stream: ev.Stream, Seq: ev.Seq - 1})
			}
			r.recs[j] = eventlog.Record{Stream: ev.Stream, Type: ev.Type, Version: ev.Version, Time: ev.Time, RestoreID: ev.RestoreID, Payload: ev.Payload}
		}
		reqs[i] = r
	}
	s.commitGroup(reqs, nil)
	for i, r := range reqs {
		e := es[i]
		if r.err != nil {
			return fmt.Errorf("the record at offset %d of %s: %w", e.off, e.seg.path, r.err)
		}
		for j, ev := range r.evs {
			if ev.Position != e.evs[j].Position || ev.Seq != e.evs[j].Seq {
				return fmt.Errorf("%w: the record at offset %d of %s: %s#%d at position %d applies as #%d at %d",
					eventlog.ErrCorrupt, e.off, e.seg.path, ev.Stream, e.evs[j].Seq, e.evs[j].Position, ev.Seq, ev.Position)
			}
		}
	}
	return nil
}

// expects reports whether expect names stream.
func expects(expect []eventlog.Expect, stream string) bool {
	for _, e := range expect {
		if e.Stream == stream {
			return true
		}
	}
	return false
}

// caughtUp waits until bbolt holds every append acknowledged before the
// call, so that a read sees them; it fails once the store has failed.
func (s *Store) caughtUp(ctx context.Context) error {
	if s.w == nil {
		return nil // read-only: there is no log
	}
	s.w.mu.Lock()
	return s.waitApplied(ctx, s.w.acked)
}

// streamCaughtUp waits until bbolt holds the events of stream from seq
// from on that were acknowledged before the call: those a read of the
// stream from there returns. A stream none of whose pending events is at
// or after from needs no wait, which spares the reads that look for what
// other writers appended, and find nothing, the wait for the apply.
func (s *Store) streamCaughtUp(ctx context.Context, stream string, from uint64) error {
	if s.w == nil {
		return nil
	}
	s.w.mu.Lock()
	var target uint64
	if h, ok := s.w.tail[stream]; ok && h.seq >= from {
		target = h.pos
	}
	return s.waitApplied(ctx, target)
}

// tailHead returns the head of stream as the acknowledged appends left
// it, when bbolt does not hold them all yet.
func (s *Store) tailHead(stream string) (seq uint64, ok bool, err error) {
	if s.w == nil {
		return 0, false, nil
	}
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.w.failed != nil {
		return 0, false, s.w.failed
	}
	h, ok := s.w.tail[stream]
	return h.seq, ok, nil
}

// waitApplied waits until bbolt holds position target, with w.mu held,
// which it releases.
func (s *Store) waitApplied(ctx context.Context, target uint64) error {
	w := s.w
	for w.failed == nil && w.applied < target {
		moved := w.moved
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-moved:
		}
		w.mu.Lock()
	}
	err := w.failed
	w.mu.Unlock()
	return err
}

// exclusive runs fn as the store's one writer, once the log is applied:
// no append is logged meanwhile.
func (s *Store) exclusive(ctx context.Context, fn func() error) error {
	if s.w == nil {
		return fn()
	}
	s.w.logMu.Lock()
	defer s.w.logMu.Unlock()
	if err := s.caughtUp(ctx); err != nil {
		return err
	}
	// Every segment is applied: none is left beside the file fn changes.
	if err := s.retireSegments(); err != nil {
		return err
	}
	return fn()
}

// retireSegments waits for the applier to stop, closes the segment written
// and removes every segment: the log must be applied and w.logMu held.
func (s *Store) retireSegments() error {
	w := s.w
	w.mu.Lock()
	for w.applying {
		moved := w.moved
		w.mu.Unlock()
		<-moved
		w.mu.Lock()
	}
	segs := w.segs
	w.segs = nil
	w.mu.Unlock()
	for _, seg := range segs {
		if seg.f != nil {
			_ = seg.f.Close()
			seg.f = nil
		}
	}
	return removeSegments(segs)
}

// closeLog applies what is pending and removes the segments, unless the
// store failed, when they are left for the next Open to replay.
func (s *Store) closeLog() error {
	if err := s.caughtUp(context.Background()); err != nil {
		w := s.w
		w.mu.Lock()
		for _, seg := range w.segs {
			if seg.f != nil {
				_ = seg.f.Close()
				seg.f = nil
			}
		}
		w.mu.Unlock()
		return nil
	}
	return s.retireSegments()
}

// Syncs counts the syncs a store has made: those of its log, one for each
// group of appends, which an append waits for, and the bbolt commits
// applying the log, each of which syncs the file twice (its pages, then
// its meta page) and which no append waits for.
type Syncs struct {
	Log         int64
	BoltCommits int64
}

// Syncs returns the syncs s has made since it was opened.
func (s *Store) Syncs() Syncs {
	return Syncs{Log: s.logSyncs.Load(), BoltCommits: s.boltCommits.Load()}
}
