package schema_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
)

func TestDecode(t *testing.T) {
	payloads := []schema.Payload{
		&schema.SessionCreated{ID: "s1", Cwd: "/home/u/project"},
		&schema.MessageAppended{Message: schema.Message{
			UUID: "m2", ParentUUID: "m1", Role: "assistant", Timestamp: 1_700_000_000_000_000_000,
			Content: []schema.Block{{Type: "text", Text: "hello"}, {Type: "tool_use", Raw: []byte(`{"id":"t1"}`)}},
		}},
		&schema.SessionEndHookRan{Session: "s1", Reason: "clear", Outcomes: []schema.HookOutcome{
			{Name: "save", Source: "settings.json", Status: schema.HookFailed, ExitCode: 2, Duration: 1500, Stderr: "boom"},
		}},
	}
	for _, p := range payloads {
		t.Run(string(p.EventType()), func(t *testing.T) {
			r, err := schema.NewRecord("session/s1", p, 99, "restore-1")
			if err != nil {
				t.Fatal(err)
			}
			if r.Type != p.EventType() || r.Version != schema.Version(p.EventType()) || r.Time != 99 || r.RestoreID != "restore-1" {
				t.Errorf("NewRecord = %+v", r)
			}
			got, err := schema.Decode(eventlog.Event{Stream: r.Stream, Seq: 1, Type: r.Type, Version: r.Version, Payload: r.Payload})
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
	good, err := schema.NewRecord("session/s1", &schema.SessionCreated{ID: "s1"}, 1, "")
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
		{"UnknownType", event("NoSuchType", 1, good.Payload), schema.ErrUnknownType},
		{"VersionZero", event(good.Type, 0, good.Payload), schema.ErrBadVersion},
		{"VersionFromTheFuture", event(good.Type, schema.Version(good.Type)+1, good.Payload), schema.ErrNewerVersion},
		{"GarbagePayload", event(good.Type, 1, []byte{0xc1}), eventlog.ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := schema.Decode(tt.ev)
			if !errors.Is(err, tt.want) || tt.want != eventlog.ErrCorrupt && errors.Is(err, eventlog.ErrCorrupt) {
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
	schema.RegisterIgnorable(typ)
	ev := eventlog.Event{Stream: "agent/a1", Seq: 3, Type: typ, Version: 9, Payload: []byte{0xc1}}
	if p, err := schema.Decode(ev); p != nil || err != nil {
		t.Errorf("Decode of an ignorable type = %v, %v; want nil, nil", p, err)
	}
}
