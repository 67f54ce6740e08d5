package eventlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// envelopeFormat is the version of the envelope layout itself, distinct from
// the schema version of the payload it carries.
const envelopeFormat = 1

// envelopeFields is the number of elements in the envelope array.
const envelopeFields = 9

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var encoderPool = sync.Pool{New: func() any {
	enc := msgpack.NewEncoder(nil)
	return enc
}}

// MarshalEnvelope encodes ev for storage: a msgpack array of the envelope
// fields and the payload, followed by a big-endian CRC-32C of that array, so
// a flipped byte anywhere in a stored event is detected on read.
func MarshalEnvelope(ev Event) []byte {
	var buf bytes.Buffer
	buf.Grow(64 + len(ev.Stream) + len(ev.Type) + len(ev.RestoreID) + len(ev.Payload))
	enc := encoderPool.Get().(*msgpack.Encoder)
	enc.Reset(&buf)
	// Writes to a bytes.Buffer cannot fail, so the errors are not checked.
	_ = enc.EncodeArrayLen(envelopeFields)
	_ = enc.EncodeUint(envelopeFormat)
	_ = enc.EncodeString(ev.Stream)
	_ = enc.EncodeUint(ev.Seq)
	_ = enc.EncodeUint(ev.Position)
	_ = enc.EncodeString(string(ev.Type))
	_ = enc.EncodeUint(uint64(ev.Version))
	_ = enc.EncodeInt(ev.Time)
	_ = enc.EncodeString(ev.RestoreID)
	_ = enc.EncodeBytes(ev.Payload)
	encoderPool.Put(enc)
	out := buf.Bytes()
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

// UnmarshalEnvelope decodes bytes written by MarshalEnvelope. The returned
// event's Payload aliases data. Any malformed input, including a checksum
// mismatch, returns an error matching ErrCorrupt; it never panics.
func UnmarshalEnvelope(data []byte) (Event, error) {
	var ev Event
	if len(data) < 5 {
		return ev, fmt.Errorf("%w: envelope of %d bytes is too short", ErrCorrupt, len(data))
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return ev, fmt.Errorf("%w: envelope checksum mismatch", ErrCorrupt)
	}
	r := bytes.NewReader(body)
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(r)
	if err := decodeEnvelope(dec, r, body, &ev); err != nil {
		return Event{}, fmt.Errorf("%w: envelope: %v", ErrCorrupt, err)
	}
	if r.Len() != 0 {
		return Event{}, fmt.Errorf("%w: envelope has %d trailing bytes", ErrCorrupt, r.Len())
	}
	return ev, nil
}

func decodeEnvelope(dec *msgpack.Decoder, r *bytes.Reader, body []byte, ev *Event) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n != envelopeFields {
		return fmt.Errorf("%d fields, want %d", n, envelopeFields)
	}
	format, err := dec.DecodeUint64()
	if err != nil {
		return err
	}
	if format != envelopeFormat {
		return fmt.Errorf("format %d, want %d", format, envelopeFormat)
	}
	if ev.Stream, err = dec.DecodeString(); err != nil {
		return err
	}
	if ev.Seq, err = dec.DecodeUint64(); err != nil {
		return err
	}
	if ev.Position, err = dec.DecodeUint64(); err != nil {
		return err
	}
	typ, err := dec.DecodeString()
	if err != nil {
		return err
	}
	ev.Type = Type(typ)
	version, err := dec.DecodeUint64()
	if err != nil {
		return err
	}
	if version > 0xffff {
		return fmt.Errorf("schema version %d out of range", version)
	}
	ev.Version = uint16(version)
	if ev.Time, err = dec.DecodeInt64(); err != nil {
		return err
	}
	if ev.RestoreID, err = dec.DecodeString(); err != nil {
		return err
	}
	size, err := dec.DecodeBytesLen()
	if err != nil {
		return err
	}
	if size == -1 { // a nil payload
		return nil
	}
	if size < 0 || size > r.Len() {
		return fmt.Errorf("payload of %d bytes overruns the envelope", size)
	}
	start := len(body) - r.Len()
	ev.Payload = body[start : start+size : start+size]
	_, err = r.Seek(int64(size), io.SeekCurrent)
	return err
}
