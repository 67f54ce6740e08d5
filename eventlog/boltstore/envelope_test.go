package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
)

func sampleEvent() eventlog.Event {
	return eventlog.Event{
		Stream:    "session/s1",
		Seq:       42,
		Position:  1 << 40,
		Type:      schema.TypeMessageAppended,
		Version:   schema.Version(schema.TypeMessageAppended),
		Time:      1_700_000_000_123_456_789,
		RestoreID: "restore-7",
		Payload:   []byte("\x00payload\xff"),
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	tests := map[string]eventlog.Event{
		"AllFields": sampleEvent(),
		"Extremes": {Stream: "s", Seq: math.MaxUint64, Position: math.MaxUint64, Type: "t",
			Version: math.MaxUint16, Time: math.MinInt64, Payload: bytes.Repeat([]byte{0xab}, 70000)},
		"NilPayload":   {Stream: "s", Seq: 1, Position: 1, Type: "t", Time: -1},
		"EmptyPayload": {Stream: "s", Seq: 1, Position: 1, Type: "t", Payload: []byte{}},
		"ZeroEvent":    {},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := unmarshalEnvelope(marshalEnvelope(want))
			if err != nil {
				t.Fatalf("UnmarshalEnvelope: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip = %+v, want %+v", got, want)
			}
		})
	}
}

func TestEnvelopePayloadAliasesInput(t *testing.T) {
	data := marshalEnvelope(sampleEvent())
	ev, err := unmarshalEnvelope(data)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, ev.Payload)
	if i < 0 || &data[i] != &ev.Payload[0] {
		t.Errorf("Payload does not alias the envelope bytes")
	}
	if cap(ev.Payload) != len(ev.Payload) {
		t.Errorf("Payload has capacity %d beyond its length %d: appending to it would overwrite the checksum", cap(ev.Payload), len(ev.Payload))
	}
}

func TestEnvelopeDetectsEveryByteFlip(t *testing.T) {
	for _, ev := range []eventlog.Event{sampleEvent(), {Stream: "s", Seq: 1, Position: 1, Type: "t"}} {
		data := marshalEnvelope(ev)
		for i := range data {
			for x := 1; x < 256; x++ {
				bad := bytes.Clone(data)
				bad[i] ^= byte(x)
				if _, err := unmarshalEnvelope(bad); !errors.Is(err, eventlog.ErrCorrupt) {
					t.Fatalf("byte %d of %d xor %#x: err = %v, want ErrCorrupt", i, len(data), x, err)
				}
			}
		}
	}
}

func TestEnvelopeDetectsTruncation(t *testing.T) {
	data := marshalEnvelope(sampleEvent())
	for n := range len(data) {
		if _, err := unmarshalEnvelope(data[:n]); !errors.Is(err, eventlog.ErrCorrupt) {
			t.Errorf("truncated to %d of %d bytes: err = %v, want ErrCorrupt", n, len(data), err)
		}
	}
	if _, err := unmarshalEnvelope(append(bytes.Clone(data), 0)); !errors.Is(err, eventlog.ErrCorrupt) {
		t.Errorf("with a trailing byte: err = %v, want ErrCorrupt", err)
	}
}

func TestEnvelopeBodyIsPlainMsgpack(t *testing.T) {
	ev := sampleEvent()
	data := marshalEnvelope(ev)
	var fields []any
	if err := msgpack.Unmarshal(data[:len(data)-4], &fields); err != nil {
		t.Fatalf("msgpack.Unmarshal of the envelope body: %v", err)
	}
	if len(fields) != 9 {
		t.Fatalf("envelope has %d fields, want 9: %v", len(fields), fields)
	}
	want := []any{uint64(1), ev.Stream, ev.Seq, ev.Position, string(ev.Type), uint64(ev.Version), ev.Time, ev.RestoreID, ev.Payload}
	for i, w := range want {
		if !sameValue(fields[i], w) {
			t.Errorf("field %d = %#v, want %#v", i, fields[i], w)
		}
	}
}

// sameValue compares a value msgpack decoded into an any with the value
// encoded, allowing for msgpack's choice of the smallest integer type.
func sameValue(got, want any) bool {
	switch w := want.(type) {
	case uint64:
		return toInt(got) == int64(w)
	case int64:
		return toInt(got) == w
	case []byte:
		g, ok := got.([]byte)
		return ok && bytes.Equal(g, w)
	default:
		return got == want
	}
}

func toInt(v any) int64 {
	switch n := reflect.ValueOf(v); n.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return n.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(n.Uint())
	}
	return math.MinInt64
}

// TestInternTypeAllocatesOnlyTheFirstTime checks that a type name decoded
// once is served from the intern table afterwards, and that the table
// stops growing at its bound.
func TestInternTypeAllocatesOnlyTheFirstTime(t *testing.T) {
	name := []byte("InternProbeType")
	first := internType(name)
	if first != "InternProbeType" {
		t.Fatalf("internType = %q", first)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = internType(name) }); allocs != 0 {
		t.Errorf("interning a known name allocates %.0f times", allocs)
	}
	for i := range 2 * maxTypeNames {
		internType([]byte(fmt.Sprintf("Bulk%d", i)))
	}
	if n := len(*typeNames.table.Load()); n > maxTypeNames {
		t.Errorf("the table holds %d names, over its bound of %d", n, maxTypeNames)
	}
	if got := internType([]byte("Bulk9999")); got != "Bulk9999" {
		t.Errorf("a name past the bound decodes as %q", got)
	}
}
