package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/internal/msgp"
)

// envelopeFormat is the version of the envelope layout itself, distinct from
// the schema version of the payload it carries.
const envelopeFormat = 1

// envelopeFields is the number of elements in the envelope array.
const envelopeFields = 9

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// marshalEnvelope encodes ev for storage: a msgpack array of the envelope
// fields and the payload, followed by a big-endian CRC-32C of that array, so
// a flipped byte anywhere in a stored event is detected on read.
func marshalEnvelope(ev eventlog.Event) []byte {
	return appendEnvelope(make([]byte, 0, EnvelopeSize(ev)), ev)
}

// EnvelopeSize returns the length of marshalEnvelope(ev), so that callers
// can place envelopes in buffers of their own with appendEnvelope.
func EnvelopeSize(ev eventlog.Event) int {
	n := 1 + // the array header
		msgp.UintSize(envelopeFormat) +
		msgp.StrSize(len(ev.Stream)) +
		msgp.UintSize(ev.Seq) +
		msgp.UintSize(ev.Position) +
		msgp.StrSize(len(ev.Type)) +
		msgp.UintSize(uint64(ev.Version)) +
		msgp.IntSize(ev.Time) +
		msgp.StrSize(len(ev.RestoreID)) +
		4 // the checksum
	if ev.Payload == nil {
		return n + 1
	}
	return n + msgp.BinSize(len(ev.Payload))
}

// appendEnvelope appends marshalEnvelope(ev) to dst and returns the
// extended slice. It allocates only when dst lacks room for
// EnvelopeSize(ev) more bytes.
func appendEnvelope(dst []byte, ev eventlog.Event) []byte {
	start := len(dst)
	dst = append(dst, msgp.CodeFixArr|envelopeFields)
	dst = msgp.AppendUint(dst, envelopeFormat)
	dst = msgp.AppendStr(dst, ev.Stream)
	dst = msgp.AppendUint(dst, ev.Seq)
	dst = msgp.AppendUint(dst, ev.Position)
	dst = msgp.AppendStr(dst, string(ev.Type))
	dst = msgp.AppendUint(dst, uint64(ev.Version))
	dst = msgp.AppendInt(dst, ev.Time)
	dst = msgp.AppendStr(dst, ev.RestoreID)
	if ev.Payload == nil {
		dst = append(dst, msgp.CodeNil)
	} else {
		dst = msgp.AppendBinHeader(dst, len(ev.Payload))
		dst = append(dst, ev.Payload...)
	}
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// unmarshalEnvelope decodes bytes written by marshalEnvelope. The returned
// event's Payload aliases data. Any malformed input, including a checksum
// mismatch, returns an error matching eventlog.ErrCorrupt; it never panics.
func unmarshalEnvelope(data []byte) (eventlog.Event, error) {
	return unmarshalEnvelopeOn(data, "")
}

// unmarshalEnvelopeOn is unmarshalEnvelope for an envelope the caller
// expects to belong to stream: when it does, the event's Stream is stream
// itself rather than a fresh copy, so reading a stream allocates no string
// per event. The caller still compares Stream to check the expectation.
func unmarshalEnvelopeOn(data []byte, stream string) (eventlog.Event, error) {
	var ev eventlog.Event
	if len(data) < 5 {
		return ev, fmt.Errorf("%w: envelope of %d bytes is too short", eventlog.ErrCorrupt, len(data))
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return ev, fmt.Errorf("%w: envelope checksum mismatch", eventlog.ErrCorrupt)
	}
	d := decoder{b: body}
	if err := d.envelope(&ev, stream); err != nil {
		return eventlog.Event{}, fmt.Errorf("%w: envelope: %v", eventlog.ErrCorrupt, err)
	}
	if rest := len(d.b) - d.i; rest != 0 {
		return eventlog.Event{}, fmt.Errorf("%w: envelope has %d trailing bytes", eventlog.ErrCorrupt, rest)
	}
	return ev, nil
}

// errShort reports an envelope that ends in the middle of a value.
var errShort = errors.New("unexpected end of data")

// decoder reads msgpack values from b, starting at i.
type decoder struct {
	b []byte
	i int
}

func (d *decoder) envelope(ev *eventlog.Event, stream string) error {
	c, err := d.byte()
	if err != nil {
		return err
	}
	n, err := d.arrayLen(c)
	if err != nil {
		return err
	}
	if n != envelopeFields {
		return fmt.Errorf("%d fields, want %d", n, envelopeFields)
	}
	format, err := d.uint()
	if err != nil {
		return err
	}
	if format != envelopeFormat {
		return fmt.Errorf("format %d, want %d", format, envelopeFormat)
	}
	s, err := d.bytes()
	if err != nil {
		return err
	}
	if string(s) == stream {
		ev.Stream = stream
	} else {
		ev.Stream = string(s)
	}
	if ev.Seq, err = d.uint(); err != nil {
		return err
	}
	if ev.Position, err = d.uint(); err != nil {
		return err
	}
	if s, err = d.bytes(); err != nil {
		return err
	}
	ev.Type = internType(s)
	version, err := d.uint()
	if err != nil {
		return err
	}
	if version > 0xffff {
		return fmt.Errorf("schema version %d out of range", version)
	}
	ev.Version = uint16(version)
	t, err := d.uint()
	if err != nil {
		return err
	}
	ev.Time = int64(t)
	if s, err = d.bytes(); err != nil {
		return err
	}
	if len(s) > 0 {
		ev.RestoreID = string(s)
	}
	if ev.Payload, err = d.bytes(); err != nil {
		return err
	}
	if ev.Payload != nil {
		ev.Payload = ev.Payload[:len(ev.Payload):len(ev.Payload)]
	}
	return nil
}

func (d *decoder) byte() (byte, error) {
	if d.i >= len(d.b) {
		return 0, errShort
	}
	c := d.b[d.i]
	d.i++
	return c, nil
}

// next returns the next n bytes.
func (d *decoder) next(n int) ([]byte, error) {
	if n < 0 || n > len(d.b)-d.i {
		return nil, errShort
	}
	b := d.b[d.i : d.i+n]
	d.i += n
	return b, nil
}

func (d *decoder) arrayLen(c byte) (int, error) {
	switch {
	case c >= msgp.CodeFixArr && c <= msgp.CodeFixArr|0x0f:
		return int(c & 0x0f), nil
	case c == msgp.CodeArray16:
		b, err := d.next(2)
		if err != nil {
			return 0, err
		}
		return int(binary.BigEndian.Uint16(b)), nil
	case c == msgp.CodeArray32:
		b, err := d.next(4)
		if err != nil {
			return 0, err
		}
		return int(binary.BigEndian.Uint32(b)), nil
	case c == msgp.CodeNil:
		return -1, nil
	}
	return 0, fmt.Errorf("invalid code %x decoding array length", c)
}

// uint reads an integer in any msgpack form; negative ones wrap around, as
// they do in the msgpack library, and int64 fields convert back.
func (d *decoder) uint() (uint64, error) {
	c, err := d.byte()
	if err != nil {
		return 0, err
	}
	if c <= 0x7f || c >= 0xe0 { // positive and negative fixnums
		return uint64(int8(c)), nil
	}
	var size int
	switch c {
	case msgp.CodeNil:
		return 0, nil
	case msgp.CodeUint8, msgp.CodeInt8:
		size = 1
	case msgp.CodeUint16, msgp.CodeInt16:
		size = 2
	case msgp.CodeUint32, msgp.CodeInt32:
		size = 4
	case msgp.CodeUint64, msgp.CodeInt64:
		size = 8
	default:
		return 0, fmt.Errorf("invalid code %x decoding an integer", c)
	}
	b, err := d.next(size)
	if err != nil {
		return 0, err
	}
	switch c {
	case msgp.CodeUint8:
		return uint64(b[0]), nil
	case msgp.CodeInt8:
		return uint64(int8(b[0])), nil
	case msgp.CodeUint16:
		return uint64(binary.BigEndian.Uint16(b)), nil
	case msgp.CodeInt16:
		return uint64(int16(binary.BigEndian.Uint16(b))), nil
	case msgp.CodeUint32:
		return uint64(binary.BigEndian.Uint32(b)), nil
	case msgp.CodeInt32:
		return uint64(int32(binary.BigEndian.Uint32(b))), nil
	}
	return binary.BigEndian.Uint64(b), nil
}

// bytes reads a string or binary value in any msgpack form. It returns nil
// for a msgpack nil, and otherwise a non-nil slice aliasing the data.
func (d *decoder) bytes() ([]byte, error) {
	c, err := d.byte()
	if err != nil {
		return nil, err
	}
	var n int
	switch {
	case c >= msgp.CodeFixStr && c <= msgp.CodeFixStr|0x1f:
		n = int(c & 0x1f)
	case c == msgp.CodeNil:
		return nil, nil
	case c == msgp.CodeStr8 || c == msgp.CodeBin8:
		b, err := d.next(1)
		if err != nil {
			return nil, err
		}
		n = int(b[0])
	case c == msgp.CodeStr16 || c == msgp.CodeBin16:
		b, err := d.next(2)
		if err != nil {
			return nil, err
		}
		n = int(binary.BigEndian.Uint16(b))
	case c == msgp.CodeStr32 || c == msgp.CodeBin32:
		b, err := d.next(4)
		if err != nil {
			return nil, err
		}
		n = int(binary.BigEndian.Uint32(b))
	default:
		return nil, fmt.Errorf("invalid code %x decoding a string", c)
	}
	if n > len(d.b)-d.i {
		return nil, fmt.Errorf("value of %d bytes overruns the envelope", n)
	}
	return d.next(n)
}

// typeNames interns the type names of decoded envelopes, so that decoding
// an envelope of a type seen before allocates no string for it. A log
// holds a few dozen types; past maxTypeNames, say in a store written by
// hosts with types of their own, a name is allocated each time. The table
// is copied on write, so reads take no lock.
var typeNames struct {
	mu    sync.Mutex
	table atomic.Pointer[map[string]eventlog.Type]
}

const maxTypeNames = 256

func internType(name []byte) eventlog.Type {
	if m := typeNames.table.Load(); m != nil {
		if t, ok := (*m)[string(name)]; ok {
			return t
		}
	}
	t := eventlog.Type(name)
	typeNames.mu.Lock()
	defer typeNames.mu.Unlock()
	next := map[string]eventlog.Type{}
	if old := typeNames.table.Load(); old != nil {
		next = maps.Clone(*old)
	}
	if len(next) >= maxTypeNames {
		return t
	}
	next[string(t)] = t
	typeNames.table.Store(&next)
	return t
}
