package boltstore

import (
	"bytes"
	"errors"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
)

// FuzzUnmarshalEnvelope feeds arbitrary bytes to the envelope decoder, as
// a damaged store would. Anything it cannot decode must be ErrCorrupt;
// anything it decodes must survive encoding again, and decoding its
// payload must fail cleanly or succeed. It must never panic. The seed
// corpus in testdata/fuzz/FuzzUnmarshalEnvelope holds valid envelopes of
// every event type and damaged ones.
func FuzzUnmarshalEnvelope(f *testing.F) {
	for _, ev := range fuzzSeedEvents(f) {
		data := marshalEnvelope(ev)
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := bytes.Clone(data)
		ev, err := unmarshalEnvelope(data)
		if !bytes.Equal(data, orig) {
			t.Fatal("UnmarshalEnvelope modified its input")
		}
		if err != nil {
			if !errors.Is(err, eventlog.ErrCorrupt) {
				t.Fatalf("UnmarshalEnvelope(%q) = %v, not ErrCorrupt", data, err)
			}
			return
		}
		again, err := unmarshalEnvelope(marshalEnvelope(ev))
		if err != nil {
			t.Fatalf("re-encoded envelope of %+v does not decode: %v", ev, err)
		}
		if !sameEvent(ev, again) {
			t.Fatalf("round trip changed the event:\n%+v\n%+v", ev, again)
		}
		if p, err := schema.Decode(ev); err != nil {
			var ee *eventlog.EventError
			if !errors.As(err, &ee) || ee.Stream != ev.Stream || ee.Seq != ev.Seq {
				t.Fatalf("Decode of %+v = %v, not an EventError naming the event", ev, err)
			}
		} else if p != nil && p.EventType() != ev.Type {
			t.Fatalf("Decode of a %s returned a %s", ev.Type, p.EventType())
		}
	})
}

// FuzzEnvelopeRoundTrip encodes arbitrary events: every one must decode to
// itself.
func FuzzEnvelopeRoundTrip(f *testing.F) {
	for _, ev := range fuzzSeedEvents(f) {
		f.Add(ev.Stream, ev.Seq, ev.Position, string(ev.Type), ev.Version, ev.Time, ev.RestoreID, ev.Payload)
	}
	f.Fuzz(func(t *testing.T, stream string, seq, pos uint64, typ string, version uint16, time int64, restore string, payload []byte) {
		ev := eventlog.Event{Stream: stream, Seq: seq, Position: pos, Type: eventlog.Type(typ), Version: version,
			Time: time, RestoreID: restore, Payload: payload}
		got, err := unmarshalEnvelope(marshalEnvelope(ev))
		if err != nil {
			t.Fatalf("envelope of %+v does not decode: %v", ev, err)
		}
		if !sameEvent(ev, got) {
			t.Fatalf("round trip changed the event:\n%+v\n%+v", ev, got)
		}
	})
}

// sameEvent compares events, a nil payload being equal to an empty one.
func sameEvent(a, b eventlog.Event) bool {
	return a.Stream == b.Stream && a.Seq == b.Seq && a.Position == b.Position && a.Type == b.Type &&
		a.Version == b.Version && a.Time == b.Time && a.RestoreID == b.RestoreID && bytes.Equal(a.Payload, b.Payload)
}

// fuzzSeedEvents returns one event of each type, as the Engine writes them.
func fuzzSeedEvents(f *testing.F) []eventlog.Event {
	payloads := []struct {
		stream string
		p      schema.Payload
	}{
		{"session/s1", &schema.SessionCreated{ID: "s1", Cwd: "/src/app"}},
		{"session/s1", &schema.MessageAppended{Message: schema.Message{UUID: "u1", Role: "user", Timestamp: 1,
			Content: []schema.Block{{Type: "text", Text: "hello"}, {Type: "tool_use", Raw: []byte(`{"type":"tool_use"}`)}}}}},
		{"session/s1", &schema.TranscriptRecord{Record: []byte(`{"type":"summary"}`)}},
		{"agent/ide", &schema.SaveAttempted{From: "s1", To: "s2", Saved: 2}},
		{"agent/ide", &schema.SessionEndHookStarted{Session: "s1", Reason: "resume", Hooks: []string{"a", "b"}}},
		{"agent/ide", &schema.SessionEndHookRan{Session: "s1", Reason: "resume", Outcomes: []schema.HookOutcome{{Name: "a", Status: "ok"}}}},
		{"agent/ide", &schema.SessionLoaded{Session: "s2", Source: "resume", From: "s1", Messages: 3, Head: 4}},
		{"agent/ide", &schema.SessionStartHookStarted{Session: "s2", Source: "resume", Hooks: []string{"c"}}},
		{"agent/ide", &schema.SessionStartHookRan{Session: "s2", Source: "resume", Context: "ctx",
			Outcomes: []schema.HookOutcome{{Name: "c", Status: "interrupted"}}, Interrupted: true}},
		{"agent/ide", &schema.ContextInjected{Session: "s2", MessageUUID: "u9"}},
	}
	var out []eventlog.Event
	for i, p := range payloads {
		rec, err := schema.NewRecord(p.stream, p.p, 1_700_000_000_000_000_000+int64(i), "r1")
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, eventlog.Event{Stream: rec.Stream, Seq: uint64(i + 1), Position: uint64(i + 1), Type: rec.Type,
			Version: rec.Version, Time: rec.Time, RestoreID: rec.RestoreID, Payload: rec.Payload})
	}
	return out
}
