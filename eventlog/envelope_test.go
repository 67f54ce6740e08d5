package eventlog_test

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/reprise-dev/reprise/eventlog"
)

func sampleEvent() eventlog.Event {
	return eventlog.Event{
		Stream:    "session/s1",
		Seq:       42,
		Position:  1 << 40,
		Type:      eventlog.TypeMessageAppended,
		Version:   eventlog.SchemaVersion,
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
			got, err := eventlog.UnmarshalEnvelope(eventlog.MarshalEnvelope(want))
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
	data := eventlog.MarshalEnvelope(sampleEvent())
	ev, err := eventlog.UnmarshalEnvelope(data)
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
		data := eventlog.MarshalEnvelope(ev)
		for i := range data {
			for x := 1; x < 256; x++ {
				bad := bytes.Clone(data)
				bad[i] ^= byte(x)
				if _, err := eventlog.UnmarshalEnvelope(bad); !errors.Is(err, eventlog.ErrCorrupt) {
					t.Fatalf("byte %d of %d xor %#x: err = %v, want ErrCorrupt", i, len(data), x, err)
				}
			}
		}
	}
}

func TestEnvelopeDetectsTruncation(t *testing.T) {
	data := eventlog.MarshalEnvelope(sampleEvent())
	for n := range len(data) {
		if _, err := eventlog.UnmarshalEnvelope(data[:n]); !errors.Is(err, eventlog.ErrCorrupt) {
			t.Errorf("truncated to %d of %d bytes: err = %v, want ErrCorrupt", n, len(data), err)
		}
	}
	if _, err := eventlog.UnmarshalEnvelope(append(bytes.Clone(data), 0)); !errors.Is(err, eventlog.ErrCorrupt) {
		t.Errorf("with a trailing byte: err = %v, want ErrCorrupt", err)
	}
}

func TestEnvelopeBodyIsPlainMsgpack(t *testing.T) {
	ev := sampleEvent()
	data := eventlog.MarshalEnvelope(ev)
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

func TestDecode(t *testing.T) {
	payloads := []eventlog.Payload{
		&eventlog.SessionCreated{ID: "s1", Cwd: "/home/u/project"},
		&eventlog.MessageAppended{Message: eventlog.Message{
			UUID: "m2", ParentUUID: "m1", Role: "assistant", Timestamp: 1_700_000_000_000_000_000,
			Content: []eventlog.Block{{Type: "text", Text: "hello"}, {Type: "tool_use", Raw: []byte(`{"id":"t1"}`)}},
		}},
		&eventlog.SessionEndHookRan{Session: "s1", Reason: "clear", Outcomes: []eventlog.HookOutcome{
			{Name: "save", Source: "settings.json", Status: eventlog.HookFailed, ExitCode: 2, Duration: 1500, Stderr: "boom"},
		}},
	}
	for _, p := range payloads {
		t.Run(string(p.EventType()), func(t *testing.T) {
			r, err := eventlog.NewRecord("session/s1", p, 99, "restore-1")
			if err != nil {
				t.Fatal(err)
			}
			if r.Type != p.EventType() || r.Version != eventlog.SchemaVersion || r.Time != 99 || r.RestoreID != "restore-1" {
				t.Errorf("NewRecord = %+v", r)
			}
			got, err := eventlog.Decode(eventlog.Event{Stream: r.Stream, Seq: 1, Type: r.Type, Version: r.Version, Payload: r.Payload})
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, p) {
				t.Errorf("Decode = %+v, want %+v", got, p)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	good, err := eventlog.NewRecord("session/s1", &eventlog.SessionCreated{ID: "s1"}, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	event := func(typ eventlog.Type, version uint16, payload []byte) eventlog.Event {
		return eventlog.Event{Stream: "session/s1", Seq: 7, Type: typ, Version: version, Payload: payload}
	}
	tests := []struct {
		name string
		ev   eventlog.Event
		want error
	}{
		{"UnknownType", event("NoSuchType", 1, good.Payload), eventlog.ErrUnknownType},
		{"VersionZero", event(good.Type, 0, good.Payload), eventlog.ErrBadVersion},
		{"VersionFromTheFuture", event(good.Type, eventlog.SchemaVersion+1, good.Payload), eventlog.ErrBadVersion},
		{"GarbagePayload", event(good.Type, 1, []byte{0xc1}), eventlog.ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := eventlog.Decode(tt.ev)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode = %v, %v; want %v", p, err, tt.want)
			}
			var ee *eventlog.EventError
			if !errors.As(err, &ee) || ee.Stream != "session/s1" || ee.Seq != 7 {
				t.Errorf("err = %#v, want an *EventError at session/s1#7", err)
			}
			if !strings.Contains(err.Error(), "session/s1#7") {
				t.Errorf("error %q does not name the stream and sequence", err)
			}
		})
	}
}

func TestDecodeIgnorable(t *testing.T) {
	const typ eventlog.Type = "host.CustomThing"
	eventlog.RegisterIgnorable(typ)
	ev := eventlog.Event{Stream: "agent/a1", Seq: 3, Type: typ, Version: 9, Payload: []byte{0xc1}}
	if p, err := eventlog.Decode(ev); p != nil || err != nil {
		t.Errorf("Decode of an ignorable type = %v, %v; want nil, nil", p, err)
	}
}
