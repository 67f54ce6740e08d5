package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise/eventlog"
)

// A value of the events bucket holds either one envelope, which begins
// with a msgpack array header (0x99), or, from layout 5 on, a batch: the
// envelopes of consecutive events of one stream, stored under the key of
// the first. A batch begins with batchMarker, the one msgpack code that
// is never used, so no envelope begins with it; then comes the number of
// envelopes (4 bytes, big-endian, at least 2) and each envelope after its
// length as a uvarint:
//
//	0xc1, count, len(env 1), env 1, ..., len(env count), env count
//
// Each envelope keeps its stream, seq, position and checksum, so reads
// check every event of a batch as they check one stored alone.
const (
	batchMarker = 0xc1
	batchHeader = 5
)

// How an append's events to one stream are cut into batches. bbolt
// rewrites a leaf whole, values and all, when a commit adds a key to it,
// as each append to a stream does to the stream's last leaf, and it splits
// a leaf only when it holds more than four keys, cutting pages of at least
// two keys from its front. So an append writes its first batch and its
// last tailBatches with up to batchLimit bytes of envelopes each, and
// those between with up to bigBatchLimit: the split leaves each big batch
// in a leaf of big batches, or with the small first batch, and the leaf
// later appends to this stream or to the stream before it rewrite holds
// small batches only, three or four of them, as it did when every batch
// was small. Under 4,000 bytes, two small batches and their keys fill two
// pages. The big batches cut the keys, puts and writes of a large append:
// see the package documentation.
const (
	batchLimit    = 3900
	bigBatchLimit = 256 << 10
	tailBatches   = 4
)

// errMalformedBatch reports a batch whose header or lengths do not hold
// together.
var errMalformedBatch = errors.New("malformed batch")

// valueIter walks the envelopes of one value of the events bucket.
type valueIter struct {
	v    []byte
	left uint64 // envelopes not yet returned
	off  int
	one  bool // v is one envelope, not a batch
}

// newValueIter returns an iterator over the envelopes of v.
func newValueIter(v []byte) (valueIter, error) {
	n, err := valueCount(v)
	if err != nil {
		return valueIter{}, err
	}
	return valueIter{v: v, left: n, off: batchHeader, one: len(v) == 0 || v[0] != batchMarker}, nil
}

// valueCount returns how many events v holds: its batch count, or 1 for an
// envelope stored alone, whose own checks come when it is decoded.
func valueCount(v []byte) (uint64, error) {
	if len(v) == 0 || v[0] != batchMarker {
		return 1, nil
	}
	if len(v) < batchHeader {
		return 0, fmt.Errorf("%w: header of %d bytes", errMalformedBatch, len(v))
	}
	n := uint64(binary.BigEndian.Uint32(v[1:batchHeader]))
	if n < 2 {
		return 0, fmt.Errorf("%w: it counts %d events", errMalformedBatch, n)
	}
	return n, nil
}

// next returns the next envelope, aliasing the value; the caller checks
// that one is left. After the last, it fails if the batch goes on.
func (it *valueIter) next() ([]byte, error) {
	it.left--
	if it.one {
		return it.v, nil
	}
	n, w := binary.Uvarint(it.v[it.off:])
	if w <= 0 || n > uint64(len(it.v)-it.off-w) {
		return nil, fmt.Errorf("%w: an envelope's length overruns it", errMalformedBatch)
	}
	start := it.off + w
	it.off = start + int(n)
	if it.left == 0 && it.off != len(it.v) {
		return nil, fmt.Errorf("%w: %d bytes follow its last envelope", errMalformedBatch, len(it.v)-it.off)
	}
	return it.v[start:it.off:it.off], nil
}

// streamCursor reads the events of one stream from the events bucket in
// sequence order, through single envelopes and batches alike.
type streamCursor struct {
	c      *bolt.Cursor
	stream string
	prefix []byte // stream + 0x00
	key    []byte // scratch for seek keys
	first  uint64 // the seq in the key of the value it reads
	seq    uint64 // the seq of the next event
	it     valueIter
	on     bool // c is on one of the stream's values, it reads it
}

// reset makes sc read stream, reusing its buffers.
func (sc *streamCursor) reset(stream string) {
	if sc.stream != stream || sc.prefix == nil {
		sc.stream = stream
		sc.prefix = append(append(sc.prefix[:0], stream...), 0)
	}
	sc.it, sc.on = valueIter{}, false
}

// seek places sc at the event seq, or at the first stored after it: in
// the last value whose key is at or before seq, when that value holds it,
// else at the first value after. A read then calls next.
func (sc *streamCursor) seek(seq uint64) error {
	sc.it, sc.on = valueIter{}, false
	sc.key = appendEventKey(sc.key[:0], sc.stream, seq)
	k, v := sc.c.Seek(sc.key)
	if !bytes.Equal(k, sc.key) {
		if k == nil {
			k, v = sc.c.Last()
		} else {
			k, v = sc.c.Prev()
		}
		if k == nil || !bytes.HasPrefix(k, sc.prefix) {
			k, v = sc.c.Seek(sc.key)
			return sc.load(k, v, seq)
		}
		first, err := sc.keySeq(k, seq)
		if err != nil {
			return err
		}
		n, err := valueCount(v)
		if err != nil {
			return eventlog.Corruptf(sc.stream, first, "%v", err)
		}
		if first+n <= seq {
			// That value ends before seq: the next one, if any, is after.
			k, v = sc.c.Next()
			return sc.load(k, v, seq)
		}
	}
	if err := sc.load(k, v, seq); err != nil {
		return err
	}
	for sc.seq < seq && sc.it.left > 0 {
		if _, err := sc.it.next(); err != nil {
			return eventlog.Corruptf(sc.stream, sc.seq, "%v", err)
		}
		sc.seq++
	}
	return nil
}

// load makes the value under k, if k is one of the stream's keys, the one
// sc reads; at says where the read is, for errors.
func (sc *streamCursor) load(k, v []byte, at uint64) error {
	sc.it, sc.on = valueIter{}, false
	if k == nil || !bytes.HasPrefix(k, sc.prefix) {
		return nil
	}
	first, err := sc.keySeq(k, at)
	if err != nil {
		return err
	}
	it, err := newValueIter(v)
	if err != nil {
		return eventlog.Corruptf(sc.stream, first, "%v", err)
	}
	sc.first, sc.seq, sc.it, sc.on = first, first, it, true
	return nil
}

// rewind goes back to the first event of the value sc reads.
func (sc *streamCursor) rewind() {
	if sc.on {
		sc.it, _ = newValueIter(sc.it.v) // load checked it
		sc.seq = sc.first
	}
}

// keySeq returns the seq in k, one of the stream's keys.
func (sc *streamCursor) keySeq(k []byte, at uint64) (uint64, error) {
	if len(k) != len(sc.prefix)+8 {
		return 0, eventlog.Corruptf(sc.stream, at, "malformed event key %x", k)
	}
	seq := binary.BigEndian.Uint64(k[len(sc.prefix):])
	if seq == 0 {
		return 0, eventlog.Corruptf(sc.stream, at, "malformed event key %x", k)
	}
	return seq, nil
}

// next returns the next event's seq, as its key and place in its value
// give it, and its envelope, aliasing the mapping; ok is false after the
// stream's last event.
func (sc *streamCursor) next() (seq uint64, env []byte, ok bool, err error) {
	if sc.it.left == 0 {
		if !sc.on {
			return 0, nil, false, nil // past the stream's end
		}
		k, v := sc.c.Next()
		if err := sc.load(k, v, sc.seq); err != nil {
			return 0, nil, false, err
		}
		if sc.it.left == 0 {
			return 0, nil, false, nil
		}
	}
	seq = sc.seq
	env, err = sc.it.next()
	if err != nil {
		return seq, nil, false, eventlog.Corruptf(sc.stream, seq, "%v", err)
	}
	sc.seq++
	return seq, env, true, nil
}

// valueHead returns the seq of the last event in the value stored under
// the key of seq first.
func valueHead(stream string, first uint64, v []byte) (uint64, error) {
	n, err := valueCount(v)
	if err != nil {
		return 0, eventlog.Corruptf(stream, first, "%v", err)
	}
	return first + n - 1, nil
}

// putEvents writes evs, consecutive events of one stream, into events, in
// batches (an event alone when a batch would hold only it): the first
// batch and the last tailBatches hold up to batchLimit bytes of envelopes,
// those between up to bigBatchLimit. It lays the keys and values out in
// buf, which it returns extended, and points each event's Payload at its
// copy there.
func putEvents(events *bolt.Bucket, buf []byte, evs []eventlog.Event) ([]byte, error) {
	// The tail's batches, found from the end: tail[k] is where the k-th
	// last one starts.
	var tail [tailBatches]int
	t, end := len(evs), len(evs)
	for k := 0; k < tailBatches && end > 0; k++ {
		t = end - 1
		for size := EnvelopeSize(evs[t]); t > 0; t-- {
			n := EnvelopeSize(evs[t-1])
			if size+n > batchLimit {
				break
			}
			size += n
		}
		tail[k], end = t, t
	}
	for i := 0; i < len(evs); {
		var j int
		switch {
		case i >= t:
			// In the tail: up to the start of the batch after this one.
			j = len(evs)
			for k := range tail {
				if tail[k] > i && tail[k] < j {
					j = tail[k]
				}
			}
		case i == 0:
			j = fillBatch(evs, i, t, batchLimit)
		default:
			j = fillBatch(evs, i, t, bigBatchLimit)
		}
		var err error
		if buf, err = putBatch(events, buf, evs[i:j]); err != nil {
			return buf, err
		}
		i = j
	}
	return buf, nil
}

// fillBatch returns where a batch that starts at evs[i] ends: before the
// first event that would take it over limit bytes, or at end.
func fillBatch(evs []eventlog.Event, i, end, limit int) int {
	j, size := i+1, EnvelopeSize(evs[i])
	for ; j < end; j++ {
		n := EnvelopeSize(evs[j])
		if size+n > limit {
			break
		}
		size += n
	}
	return j
}

// putBatch writes evs as one value, a batch or, when it is one event, its
// envelope, under the key of the first: see putEvents.
func putBatch(events *bolt.Bucket, buf []byte, evs []eventlog.Event) ([]byte, error) {
	batch := len(evs) > 1
	k := len(buf)
	buf = appendEventKey(buf, evs[0].Stream, evs[0].Seq)
	v := len(buf)
	if batch {
		buf = append(buf, batchMarker)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(evs)))
	}
	for i := range evs {
		ev := &evs[i]
		if batch {
			buf = binary.AppendUvarint(buf, uint64(EnvelopeSize(*ev)))
		}
		buf = appendEnvelope(buf, *ev)
		if ev.Payload != nil {
			// The payload ends just before the checksum.
			end := len(buf) - 4
			ev.Payload = buf[end-len(ev.Payload) : end : end]
		}
	}
	if err := events.Put(buf[k:v:v], buf[v:len(buf):len(buf)]); err != nil {
		return buf, fmt.Errorf("boltstore: write %s#%d: %w", evs[0].Stream, evs[0].Seq, err)
	}
	return buf, nil
}
