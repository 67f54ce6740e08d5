package schema

import (
	"errors"
	"reflect"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
)

// FuzzDecode feeds Decode any type, version and payload, through the
// schema's registry and through one with upcasters (notes): it never
// panics, every error is one of its sentinels at the event's place, and
// what it decodes encodes and decodes to itself.
func FuzzDecode(f *testing.F) {
	for _, typ := range Types() {
		rec, err := NewRecord("session/s", payloads[typ](), 1, "")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(typ), rec.Version, rec.Payload)
		f.Add(string(typ), rec.Version+1, rec.Payload)
	}
	f.Add("Note", uint16(1), []byte("\x81\xa4text\xa7ann: hi"))
	f.Add("Note", uint16(2), []byte("\x81\xa4body\x07"))
	f.Fuzz(func(t *testing.T, typ string, version uint16, payload []byte) {
		ev := eventlog.Event{Stream: "session/s", Seq: 9, Type: eventlog.Type(typ), Version: version, Payload: payload}
		for _, r := range []registry{std, notes} {
			p, err := r.decode(ev)
			if err != nil {
				var ee *eventlog.EventError
				if !errors.As(err, &ee) || ee.Stream != ev.Stream || ee.Seq != ev.Seq {
					t.Fatalf("error %v is not located at the event", err)
				}
				if !errors.Is(err, ErrUnknownType) && !errors.Is(err, ErrBadVersion) && !errors.Is(err, ErrNewerVersion) && !errors.Is(err, eventlog.ErrCorrupt) {
					t.Fatalf("error %v matches no sentinel", err)
				}
				continue
			}
			if p == nil {
				continue
			}
			rec, err := NewRecord("session/s", p, 1, "")
			if err != nil {
				t.Fatalf("decoded %T does not encode: %v", p, err)
			}
			again, err := r.decode(eventlog.Event{Stream: "session/s", Seq: 9, Type: ev.Type, Version: r.version(ev.Type), Payload: rec.Payload})
			if err != nil || !reflect.DeepEqual(again, p) {
				t.Fatalf("%+v encodes and decodes to %+v, %v", p, again, err)
			}
		}
	})
}
