package eventlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sync"
)

// envelopeFormat is the version of the envelope layout itself, distinct from
// the schema version of the payload it carries.
const envelopeFormat = 1

// envelopeFields is the number of elements in the envelope array.
const envelopeFields = 9

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// The msgpack codes the envelope uses. The encoder writes each value in its
// shortest form, exactly as the msgpack library does; the decoder accepts
// every form the library's decoder accepts for the same Go types.
const (
	mpNil     = 0xc0
	mpBin8    = 0xc4
	mpBin16   = 0xc5
	mpBin32   = 0xc6
	mpUint8   = 0xcc
	mpUint16  = 0xcd
	mpUint32  = 0xce
	mpUint64  = 0xcf
	mpInt8    = 0xd0
	mpInt16   = 0xd1
	mpInt32   = 0xd2
	mpInt64   = 0xd3
	mpStr8    = 0xd9
	mpStr16   = 0xda
	mpStr32   = 0xdb
	mpFixStr  = 0xa0 // to 0xbf
	mpFixArr  = 0x90 // to 0x9f
	mpArray16 = 0xdc
	mpArray32 = 0xdd
)

// MarshalEnvelope encodes ev for storage: a msgpack array of the envelope
// fields and the payload, followed by a big-endian CRC-32C of that array, so
// a flipped byte anywhere in a stored event is detected on read.
func MarshalEnvelope(ev Event) []byte {
	return AppendEnvelope(make([]byte, 0, EnvelopeSize(ev)), ev)
}

// EnvelopeSize returns the length of MarshalEnvelope(ev), so that callers
// can place envelopes in buffers of their own with AppendEnvelope.
func EnvelopeSize(ev Event) int {
	n := 1 + // the array header
		uintSize(envelopeFormat) +
		strSize(len(ev.Stream)) +
		uintSize(ev.Seq) +
		uintSize(ev.Position) +
		strSize(len(ev.Type)) +
		uintSize(uint64(ev.Version)) +
		intSize(ev.Time) +
		strSize(len(ev.RestoreID)) +
		4 // the checksum
	if ev.Payload == nil {
		return n + 1
	}
	return n + binSize(len(ev.Payload))
}

// AppendEnvelope appends MarshalEnvelope(ev) to dst and returns the
// extended slice. It allocates only when dst lacks room for
// EnvelopeSize(ev) more bytes.
func AppendEnvelope(dst []byte, ev Event) []byte {
	start := len(dst)
	dst = append(dst, mpFixArr|envelopeFields)
	dst = appendUint(dst, envelopeFormat)
	dst = appendStr(dst, ev.Stream)
	dst = appendUint(dst, ev.Seq)
	dst = appendUint(dst, ev.Position)
	dst = appendStr(dst, string(ev.Type))
	dst = appendUint(dst, uint64(ev.Version))
	dst = appendInt(dst, ev.Time)
	dst = appendStr(dst, ev.RestoreID)
	if ev.Payload == nil {
		dst = append(dst, mpNil)
	} else {
		dst = appendBinHeader(dst, len(ev.Payload))
		dst = append(dst, ev.Payload...)
	}
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

func uintSize(n uint64) int {
	switch {
	case n <= math.MaxInt8:
		return 1
	case n <= math.MaxUint8:
		return 2
	case n <= math.MaxUint16:
		return 3
	case n <= math.MaxUint32:
		return 5
	}
	return 9
}

func intSize(n int64) int {
	switch {
	case n >= 0:
		return uintSize(uint64(n))
	case n >= -32:
		return 1
	case n >= math.MinInt8:
		return 2
	case n >= math.MinInt16:
		return 3
	case n >= math.MinInt32:
		return 5
	}
	return 9
}

func strSize(n int) int {
	switch {
	case n < 32:
		return 1 + n
	case n < 256:
		return 2 + n
	case n <= math.MaxUint16:
		return 3 + n
	}
	return 5 + n
}

func binSize(n int) int {
	switch {
	case n < 256:
		return 2 + n
	case n <= math.MaxUint16:
		return 3 + n
	}
	return 5 + n
}

func appendUint(b []byte, n uint64) []byte {
	switch {
	case n <= math.MaxInt8:
		return append(b, byte(n))
	case n <= math.MaxUint8:
		return append(b, mpUint8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, mpUint16), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, mpUint32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, mpUint64), n)
}

func appendInt(b []byte, n int64) []byte {
	switch {
	case n >= 0:
		return appendUint(b, uint64(n))
	case n >= -32:
		return append(b, byte(n))
	case n >= math.MinInt8:
		return append(b, mpInt8, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, mpInt16), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, mpInt32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, mpInt64), uint64(n))
}

func appendStr(b []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 32:
		b = append(b, mpFixStr|byte(n))
	case n < 256:
		b = append(b, mpStr8, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, mpStr16), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, mpStr32), uint32(n))
	}
	return append(b, s...)
}

func appendBinHeader(b []byte, n int) []byte {
	switch {
	case n < 256:
		return append(b, mpBin8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, mpBin16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, mpBin32), uint32(n))
}

// UnmarshalEnvelope decodes bytes written by MarshalEnvelope. The returned
// event's Payload aliases data. Any malformed input, including a checksum
// mismatch, returns an error matching ErrCorrupt; it never panics.
func UnmarshalEnvelope(data []byte) (Event, error) {
	return UnmarshalEnvelopeOn(data, "")
}

// UnmarshalEnvelopeOn is UnmarshalEnvelope for an envelope the caller
// expects to belong to stream: when it does, the event's Stream is stream
// itself rather than a fresh copy, so reading a stream allocates no string
// per event. The caller still compares Stream to check the expectation.
func UnmarshalEnvelopeOn(data []byte, stream string) (Event, error) {
	var ev Event
	if len(data) < 5 {
		return ev, fmt.Errorf("%w: envelope of %d bytes is too short", ErrCorrupt, len(data))
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return ev, fmt.Errorf("%w: envelope checksum mismatch", ErrCorrupt)
	}
	d := decoder{b: body}
	if err := d.envelope(&ev, stream); err != nil {
		return Event{}, fmt.Errorf("%w: envelope: %v", ErrCorrupt, err)
	}
	if rest := len(d.b) - d.i; rest != 0 {
		return Event{}, fmt.Errorf("%w: envelope has %d trailing bytes", ErrCorrupt, rest)
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

func (d *decoder) envelope(ev *Event, stream string) error {
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
	case c >= mpFixArr && c <= mpFixArr|0x0f:
		return int(c & 0x0f), nil
	case c == mpArray16:
		b, err := d.next(2)
		if err != nil {
			return 0, err
		}
		return int(binary.BigEndian.Uint16(b)), nil
	case c == mpArray32:
		b, err := d.next(4)
		if err != nil {
			return 0, err
		}
		return int(binary.BigEndian.Uint32(b)), nil
	case c == mpNil:
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
	case mpNil:
		return 0, nil
	case mpUint8, mpInt8:
		size = 1
	case mpUint16, mpInt16:
		size = 2
	case mpUint32, mpInt32:
		size = 4
	case mpUint64, mpInt64:
		size = 8
	default:
		return 0, fmt.Errorf("invalid code %x decoding an integer", c)
	}
	b, err := d.next(size)
	if err != nil {
		return 0, err
	}
	switch c {
	case mpUint8:
		return uint64(b[0]), nil
	case mpInt8:
		return uint64(int8(b[0])), nil
	case mpUint16:
		return uint64(binary.BigEndian.Uint16(b)), nil
	case mpInt16:
		return uint64(int16(binary.BigEndian.Uint16(b))), nil
	case mpUint32:
		return uint64(binary.BigEndian.Uint32(b)), nil
	case mpInt32:
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
	case c >= mpFixStr && c <= mpFixStr|0x1f:
		n = int(c & 0x1f)
	case c == mpNil:
		return nil, nil
	case c == mpStr8 || c == mpBin8:
		b, err := d.next(1)
		if err != nil {
			return nil, err
		}
		n = int(b[0])
	case c == mpStr16 || c == mpBin16:
		b, err := d.next(2)
		if err != nil {
			return nil, err
		}
		n = int(binary.BigEndian.Uint16(b))
	case c == mpStr32 || c == mpBin32:
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

// knownTypes maps the name of every type in the schema to its Type, so that
// decoding an envelope of a known type allocates no string for it.
var knownTypes = sync.OnceValue(func() map[string]Type {
	m := make(map[string]Type, len(schema))
	for t := range schema {
		m[string(t)] = t
	}
	return m
})

func internType(name []byte) Type {
	if t, ok := knownTypes()[string(name)]; ok {
		return t
	}
	return Type(name)
}
