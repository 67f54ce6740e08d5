package boltstore

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
)

// referenceEnvelope encodes ev with the msgpack library's encoder, as the
// layout in the package documentation describes it: a msgpack array of nine
// fields, then a big-endian CRC-32C of the array.
func referenceEnvelope(t *testing.T, ev eventlog.Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	for _, err := range []error{
		enc.EncodeArrayLen(9),
		enc.EncodeUint(1),
		enc.EncodeString(ev.Stream),
		enc.EncodeUint(ev.Seq),
		enc.EncodeUint(ev.Position),
		enc.EncodeString(string(ev.Type)),
		enc.EncodeUint(uint64(ev.Version)),
		enc.EncodeInt(ev.Time),
		enc.EncodeString(ev.RestoreID),
		enc.EncodeBytes(ev.Payload),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	body := buf.Bytes()
	return binary.BigEndian.AppendUint32(body, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
}

// TestStoredEnvelopeBytes checks that envelopes are stored byte for byte as
// the msgpack library encodes the documented layout, for values at every
// boundary between msgpack's integer, string and binary forms, so stores
// written by any build read the same.
func TestStoredEnvelopeBytes(t *testing.T) {
	ints := []int64{0, 1, 31, 32, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
		-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64}
	lens := []int{0, 1, 31, 32, 255, 256, 65535, 65536}
	r := rand.New(rand.NewPCG(1, 2))
	var events []eventlog.Event
	for i := range 400 {
		ev := eventlog.Event{
			Stream:    strings.Repeat("s", lens[r.IntN(len(lens)-2)]),
			Seq:       uint64(ints[r.IntN(len(ints))]),
			Position:  uint64(ints[r.IntN(len(ints))]),
			Type:      eventlog.Type(strings.Repeat("T", lens[r.IntN(4)])),
			Version:   uint16(ints[r.IntN(len(ints))]),
			Time:      ints[r.IntN(len(ints))],
			RestoreID: strings.Repeat("r", lens[r.IntN(len(lens))]),
			Payload:   bytes.Repeat([]byte{0xab}, lens[r.IntN(len(lens))]),
		}
		if i%7 == 0 {
			ev.Payload = nil
		}
		events = append(events, ev)
	}
	events = append(events, eventlog.Event{}, eventlog.Event{Seq: math.MaxUint64, Position: math.MaxUint64, Version: math.MaxUint16})
	for _, ev := range events {
		want := referenceEnvelope(t, ev)
		got := marshalEnvelope(ev)
		if !bytes.Equal(got, want) {
			t.Fatalf("envelope of %+v:\n got %x\nwant %x", short(ev), got, want)
		}
		if n := EnvelopeSize(ev); n != len(want) {
			t.Fatalf("EnvelopeSize of %+v = %d, want %d", short(ev), n, len(want))
		}
		back, err := unmarshalEnvelope(want)
		if err != nil {
			t.Fatalf("reference envelope of %+v does not decode: %v", short(ev), err)
		}
		if !sameEvents([]eventlog.Event{back}, []eventlog.Event{ev}) {
			t.Fatalf("reference envelope of %+v decodes to %+v", short(ev), short(back))
		}
	}
}

// TestEnvelopeLongIntegerForms checks that integers written in a longer
// msgpack form than needed still decode, as they did with the library.
func TestEnvelopeLongIntegerForms(t *testing.T) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	_ = enc.EncodeArrayLen(9)
	_ = enc.EncodeUint64(1)
	_ = enc.EncodeString("session/s")
	_ = enc.EncodeInt64(7)
	_ = enc.EncodeUint32(9)
	_ = enc.EncodeString("MessageAppended")
	_ = enc.EncodeUint16(1)
	_ = enc.EncodeInt64(-5)
	_ = enc.EncodeNil()
	_ = enc.EncodeBytes([]byte("p"))
	body := buf.Bytes()
	data := binary.BigEndian.AppendUint32(body, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	ev, err := unmarshalEnvelope(data)
	if err != nil {
		t.Fatal(err)
	}
	want := eventlog.Event{Stream: "session/s", Seq: 7, Position: 9, Type: schema.TypeMessageAppended, Version: 1, Time: -5, Payload: []byte("p")}
	if !sameEvents([]eventlog.Event{ev}, []eventlog.Event{want}) {
		t.Errorf("decoded %+v, want %+v", ev, want)
	}
}

func short(ev eventlog.Event) eventlog.Event {
	if len(ev.Payload) > 8 {
		ev.Payload = ev.Payload[:8]
	}
	return ev
}
