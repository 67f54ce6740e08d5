package schema

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"

	"github.com/vmihailenco/msgpack/v5"
)

// Every type of this build is at version 1: none has an upcaster yet. A
// type that gets one must keep reading its version 1 events, which the
// golden stores hold.
func TestEveryTypeIsAtVersionOne(t *testing.T) {
	for _, typ := range Types() {
		if v := Version(typ); v != 1 {
			t.Errorf("Version(%s) = %d; a new version needs a golden store of the old one and this test updated", typ, v)
		}
	}
	for typ := range upcasters {
		if _, ok := payloads[typ]; !ok {
			t.Errorf("upcasters for %s, which is not a type of the schema", typ)
		}
	}
}

// noteV3 is the current shape of a made-up type that went through two
// changes: version 1 had "text"; version 2 renamed it "body"; version 3
// split "who" out of it and made "lines" a count.
type noteV3 struct {
	Body  string `msgpack:"body"`
	Who   string `msgpack:"who"`
	Lines int    `msgpack:"lines"`
}

func (noteV3) EventType() eventlog.Type { return "Note" }

// renameText is Note's upcaster from version 1 to 2.
func renameText(m map[string]any) (map[string]any, error) {
	m["body"] = m["text"]
	delete(m, "text")
	return m, nil
}

// splitWho is Note's upcaster from version 2 to 3: "who: body" becomes
// who and body, and lines counts the body's lines.
func splitWho(m map[string]any) (map[string]any, error) {
	body, ok := m["body"].(string)
	if !ok {
		return nil, errors.New("body is not a string")
	}
	who, rest, _ := strings.Cut(body, ": ")
	return map[string]any{"body": rest, "who": who, "lines": strings.Count(rest, "\n") + 1}, nil
}

var notes = registry{
	payloads:  map[eventlog.Type]func() Payload{"Note": func() Payload { return new(noteV3) }},
	upcasters: map[eventlog.Type][]Upcaster{"Note": {renameText, splitWho}},
}

func noteEvent(t *testing.T, version uint16, payload any) eventlog.Event {
	t.Helper()
	data, err := msgpack.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return eventlog.Event{Stream: "session/s", Seq: 4, Type: "Note", Version: version, Payload: data}
}

// Each upcaster alone: old shape in, next shape out.
func TestUpcasters(t *testing.T) {
	got, err := renameText(map[string]any{"text": "ann: hi"})
	if want := map[string]any{"body": "ann: hi"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("renameText = %v, %v; want %v", got, err, want)
	}
	got, err = splitWho(map[string]any{"body": "ann: hi\nthere"})
	if want := map[string]any{"body": "hi\nthere", "who": "ann", "lines": 2}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("splitWho = %v, %v; want %v", got, err, want)
	}
	if _, err := splitWho(map[string]any{"body": int64(3)}); err == nil {
		t.Error("splitWho took a body that is not a string")
	}
}

// Decode reads every version ever written as the current struct, running
// the upcasters from the event's version on.
func TestDecodeUpcastsOldVersions(t *testing.T) {
	want := &noteV3{Body: "hi", Who: "ann", Lines: 1}
	for _, ev := range []eventlog.Event{
		noteEvent(t, 1, map[string]any{"text": "ann: hi"}),
		noteEvent(t, 2, map[string]any{"body": "ann: hi"}),
		noteEvent(t, 3, want),
	} {
		got, err := notes.decode(ev)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("version %d: %+v, %v; want %+v", ev.Version, got, err, want)
		}
	}
	if v := notes.version("Note"); v != 3 {
		t.Errorf("version = %d, want 3", v)
	}
}

// An event newer than the reader knows is a *VersionError naming the type
// and both versions, at its stream and sequence; it is not corruption. An
// old payload its upcaster cannot read is.
func TestDecodeNewerAndBrokenVersions(t *testing.T) {
	_, err := notes.decode(noteEvent(t, 4, map[string]any{"body": "x"}))
	var ve *VersionError
	var ee *eventlog.EventError
	if !errors.Is(err, ErrNewerVersion) || errors.Is(err, eventlog.ErrCorrupt) || !errors.As(err, &ve) || !errors.As(err, &ee) ||
		ve.Type != "Note" || ve.Version != 4 || ve.Newest != 3 || ee.Stream != "session/s" || ee.Seq != 4 {
		t.Fatalf("version 4: %#v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "session/s#4: Note version 4 was written by a newer reprise: this build reads Note up to version 3") {
		t.Errorf("message %q", msg)
	}
	_, err = notes.decode(noteEvent(t, 2, map[string]any{"body": 7}))
	if !errors.Is(err, eventlog.ErrCorrupt) || !strings.Contains(err.Error(), "Note payload of version 2: body is not a string") {
		t.Errorf("a broken version 2 payload: %v", err)
	}
}
