package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/internal/private"
)

// The write-ahead log. An append is acknowledged once its events are in
// the log and the log is synced: one fdatasync, where a bbolt commit takes
// two. The log is a series of segment files beside the store, named
// STORE.wal.N with N a 16-digit hexadecimal number that grows with each
// new segment. A segment is created 0600, never through a link, and
// preallocated to segmentSize bytes; the log moves on to a new segment
// when a record would take the current one past that size (a record larger
// than a segment gets one of its own, which grows to hold it).
//
// A segment is a sequence of records, each a group commit's events:
//
//	length (4 bytes, big-endian), CRC-32C of length and body (4 bytes), body
//
// where the body holds each event's envelope (see envelope.go) after its
// length as a uvarint. A length of zero, the preallocated bytes, ends the
// segment. The envelopes carry their positions, so the records after the
// last position bbolt holds, which each apply transaction commits, are the
// ones not yet applied.
const (
	segmentSize  = 8 << 20
	recordHeader = 8
	walSuffix    = ".wal."
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// walFile is what the log needs of a segment file; tests wrap it to fail
// writes and syncs.
type walFile interface {
	io.WriterAt
	Sync() error // makes what was written durable: see datasync
	Close() error
}

// osSegment is a segment file on disk.
type osSegment struct{ f *os.File }

func (o osSegment) WriteAt(p []byte, off int64) (int, error) { return o.f.WriteAt(p, off) }
func (o osSegment) Sync() error                              { return datasync(o.f) }
func (o osSegment) Close() error                             { return o.f.Close() }

// segment is one segment file of the log.
type segment struct {
	num  uint64
	path string
	f    walFile // open while it is the one written
	end  int64   // bytes of records written
	last uint64  // the last position it holds, 0 for none
}

// entry is one record: a group's events, acknowledged once synced.
type entry struct {
	evs []eventlog.Event // Payloads alias the record
	seg *segment
	off int64 // where the record starts in seg, for errors
}

// first and last return the positions of e's first and last events.
func (e entry) first() uint64 { return e.evs[0].Position }
func (e entry) last() uint64  { return e.evs[len(e.evs)-1].Position }

// segmentName returns the file name of segment num of the store at path.
func segmentName(path string, num uint64) string {
	return fmt.Sprintf("%s%s%016x", path, walSuffix, num)
}

// listSegments returns the segments beside the store at path, oldest
// first, failing with ErrNotPrivate for one that is a link or another
// user's file.
func listSegments(path string) ([]*segment, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	var segs []*segment
	for _, ent := range ents {
		hex, ok := strings.CutPrefix(ent.Name(), base+walSuffix)
		if !ok {
			continue
		}
		num, err := strconv.ParseUint(hex, 16, 64)
		if err != nil || len(hex) != 16 {
			continue // not a name the log gives
		}
		p := filepath.Join(dir, ent.Name())
		info, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // removed since it was listed, once applied
		case err != nil:
			return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
		case info.Mode().Type() == fs.ModeSymlink:
			return nil, fmt.Errorf("%w: log segment %s is a symbolic link", ErrNotPrivate, p)
		case !info.Mode().IsRegular():
			return nil, fmt.Errorf("%w: log segment %s is not a regular file", ErrNotPrivate, p)
		case !private.OwnedByUser(info):
			return nil, fmt.Errorf("%w: log segment %s belongs to another user", ErrNotPrivate, p)
		}
		segs = append(segs, &segment{num: num, path: p})
	}
	slices.SortFunc(segs, func(a, b *segment) int { return compareUint(a.num, b.num) })
	return segs, nil
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// createSegment creates segment num of the store at path, preallocated,
// and syncs the directory so that it survives a crash; wrap, when not
// nil, wraps the file.
func createSegment(path string, num uint64, noSync bool, wrap func(walFile) walFile) (*segment, error) {
	name := segmentName(path, num)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|private.NoFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("boltstore: create log segment: %w", err)
	}
	if err = preallocate(f, segmentSize); err != nil {
		err = fmt.Errorf("preallocate: %w", err)
	} else if !noSync {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(name)
		return nil, fmt.Errorf("boltstore: create log segment %s: %w", name, err)
	}
	var wf walFile = osSegment{f}
	if wrap != nil {
		wf = wrap(wf)
	}
	return &segment{num: num, path: name, f: wf}, nil
}

// appendRecord appends to dst the record of evs, which the log writes at
// once. It points each event's Payload at its copy in the record.
func appendRecord(dst []byte, evs []eventlog.Event) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recordHeader)...)
	for i := range evs {
		ev := &evs[i]
		dst = binary.AppendUvarint(dst, uint64(EnvelopeSize(*ev)))
		dst = appendEnvelope(dst, *ev)
		if ev.Payload != nil {
			end := len(dst) - 4 // the payload ends just before the checksum
			ev.Payload = dst[end-len(ev.Payload) : end : end]
		}
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-recordHeader))
	crc := crc32.Update(crc32.Checksum(dst[start:start+4], crcTable), crcTable, dst[start+recordHeader:])
	binary.BigEndian.PutUint32(dst[start+4:], crc)
	return dst
}

// errBadRecord reports a record that is torn or damaged.
var errBadRecord = errors.New("bad record")

// readRecord reads the record at data[off:]: its events, which alias data,
// and where the next record starts. ok is false at the end of the
// segment; err matches errBadRecord for a record that is torn or damaged.
func readRecord(data []byte, off int64) (evs []eventlog.Event, next int64, ok bool, err error) {
	rest := data[off:]
	if len(rest) < recordHeader {
		if isZero(rest) {
			return nil, off, false, nil
		}
		return nil, off, false, fmt.Errorf("%w: a header cut short", errBadRecord)
	}
	n := int64(binary.BigEndian.Uint32(rest))
	if n == 0 {
		if isZero(rest[4:recordHeader]) {
			return nil, off, false, nil
		}
		return nil, off, false, fmt.Errorf("%w: an empty record with a checksum", errBadRecord)
	}
	if n > int64(len(rest)-recordHeader) {
		return nil, off, false, fmt.Errorf("%w: a length of %d overruns the segment", errBadRecord, n)
	}
	body := rest[recordHeader : recordHeader+n]
	if crc32.Update(crc32.Checksum(rest[:4], crcTable), crcTable, body) != binary.BigEndian.Uint32(rest[4:]) {
		return nil, off, false, fmt.Errorf("%w: checksum mismatch", errBadRecord)
	}
	for len(body) > 0 {
		size, w := binary.Uvarint(body)
		if w <= 0 || size > uint64(len(body)-w) {
			return nil, off, false, fmt.Errorf("%w: an envelope's length overruns the record", errBadRecord)
		}
		ev, err := unmarshalEnvelope(body[w : w+int(size)])
		if err != nil {
			return nil, off, false, fmt.Errorf("%w: %w", errBadRecord, err)
		}
		if len(evs) > 0 && ev.Position != evs[len(evs)-1].Position+1 {
			return nil, off, false, fmt.Errorf("%w: position %d follows %d", errBadRecord, ev.Position, evs[len(evs)-1].Position)
		}
		evs = append(evs, ev)
		body = body[w+int(size):]
	}
	if len(evs) == 0 {
		return nil, off, false, fmt.Errorf("%w: no events", errBadRecord)
	}
	return evs, off + recordHeader + n, true, nil
}

// readLog reads the segments' records, in order, returning those holding
// positions after applied. A bad record that ends the log is a write a
// crash cut short, never acknowledged, and is left out; one followed by a
// good record, in its segment or a later one, is eventlog.ErrCorrupt.
func readLog(segs []*segment, applied uint64) ([]entry, error) {
	var (
		out  []entry
		prev uint64 // the last position of the records read
	)
	for i, seg := range segs {
		data, err := readSegment(seg.path)
		if err != nil {
			return nil, err
		}
		var off int64
		for {
			evs, next, ok, err := readRecord(data, off)
			if err != nil {
				if goodAfter(data, off, segs[i+1:]) {
					return nil, fmt.Errorf("%w: log segment %s: the record at offset %d is damaged (%v), and good records follow it",
						eventlog.ErrCorrupt, seg.path, off, errors.Unwrap(err))
				}
				return out, nil // the torn end of the log
			}
			if !ok {
				break
			}
			e := entry{evs: evs, seg: seg, off: off}
			switch {
			case prev != 0 && e.first() != prev+1:
				return nil, fmt.Errorf("%w: log segment %s: the record at offset %d starts at position %d, after %d",
					eventlog.ErrCorrupt, seg.path, off, e.first(), prev)
			case e.last() <= applied:
				// Applied already.
			case e.first() <= applied:
				return nil, fmt.Errorf("%w: log segment %s: the record at offset %d holds positions %d to %d, and the store holds up to %d",
					eventlog.ErrCorrupt, seg.path, off, e.first(), e.last(), applied)
			case len(out) == 0 && e.first() != applied+1:
				return nil, fmt.Errorf("%w: log segment %s: the record at offset %d starts at position %d; the store holds up to %d",
					eventlog.ErrCorrupt, seg.path, off, e.first(), applied)
			default:
				out = append(out, e)
			}
			prev, off = e.last(), next
			seg.last = prev
		}
	}
	return out, nil
}

// goodAfter reports whether a good record follows the bad one at data[off:]:
// where its length says the next one starts, or in a later segment.
func goodAfter(data []byte, off int64, later []*segment) bool {
	if rest := data[off:]; len(rest) >= recordHeader {
		n := int64(binary.BigEndian.Uint32(rest))
		if next := off + recordHeader + n; n > 0 && next < int64(len(data)) {
			if _, _, ok, err := readRecord(data, next); ok && err == nil {
				return true
			}
		}
	}
	for _, seg := range later {
		data, err := readSegment(seg.path)
		if err != nil {
			return true // cannot tell: do not cut
		}
		if _, _, ok, _ := readRecord(data, 0); ok {
			return true
		}
	}
	return false
}

// readSegment reads a segment whole, never through a link.
func readSegment(path string) ([]byte, error) {
	f, err := openOwnFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("boltstore: read log segment: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("boltstore: read log segment %s: %w", path, err)
	}
	return data, nil
}

// removeSegments removes segs' files.
func removeSegments(segs []*segment) error {
	for _, seg := range segs {
		if err := os.Remove(seg.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("boltstore: remove log segment: %w", err)
		}
	}
	return nil
}
