package schema

import (
	"fmt"

	"github.com/reprise-dev/reprise/eventlog"

	"github.com/vmihailenco/msgpack/v5"
)

// Each event type has a payload version of its own, kept in the Version of
// every event's envelope. A type starts at version 1. A change that older
// readers would misread (renaming, removing or retyping a field, changing
// what a field means) makes a new version, and with it an upcaster: a pure
// function from the previous version's payload to the new one's, so that
// Decode reads every version ever written as the current struct. Adding
// an optional field (omitempty, its zero value meaning what older events
// meant) is not such a change: the version stays. docs/events.md states
// the rules.

// Upcaster turns the payload of one version of an event type into the
// payload of the next version. Payloads come as msgpack decodes them into
// a map: keys are the msgpack field names, nested maps are
// map[string]any, arrays []any, integers int64 or uint64 by their
// encoding. An upcaster is pure: it may change old in place and return
// it, and does nothing else. An error means the payload is not the shape
// its version says, which Decode reports as corruption.
type Upcaster func(old map[string]any) (map[string]any, error)

// upcasters lists, for each type whose payload has changed since version
// 1, its upcasters in order: the i-th (from 0) turns version i+1 into
// version i+2. None has changed yet.
var upcasters = map[eventlog.Type][]Upcaster{}

// Version returns the payload version of type t that this build writes,
// which is also the newest it reads: one more than t's upcasters.
func Version(t eventlog.Type) uint16 { return std.version(t) }

// registry is what Decode reads payloads with: the struct of each type and
// its upcasters. Tests make registries of their own.
type registry struct {
	payloads  map[eventlog.Type]func() Payload
	upcasters map[eventlog.Type][]Upcaster
}

var std = registry{payloads: payloads, upcasters: upcasters}

func (r registry) version(t eventlog.Type) uint16 { return uint16(1 + len(r.upcasters[t])) }

func (r registry) decode(ev eventlog.Event) (Payload, error) {
	newPayload, ok := r.payloads[ev.Type]
	if !ok {
		if _, skip := ignorable.Load(ev.Type); skip {
			return nil, nil
		}
		return nil, &eventlog.EventError{Stream: ev.Stream, Seq: ev.Seq, Err: fmt.Errorf("%w %q", ErrUnknownType, ev.Type)}
	}
	current := r.version(ev.Type)
	switch {
	case ev.Version == 0:
		return nil, &eventlog.EventError{Stream: ev.Stream, Seq: ev.Seq, Err: fmt.Errorf("%w 0 of %s", ErrBadVersion, ev.Type)}
	case ev.Version > current:
		return nil, &eventlog.EventError{Stream: ev.Stream, Seq: ev.Seq, Err: &VersionError{Type: ev.Type, Version: ev.Version, Newest: current}}
	}
	data := ev.Payload
	if ev.Version < current {
		var err error
		if data, err = upcast(data, r.upcasters[ev.Type][ev.Version-1:]); err != nil {
			return nil, eventlog.Corruptf(ev.Stream, ev.Seq, "%s payload of version %d: %v", ev.Type, ev.Version, err)
		}
	}
	p := newPayload()
	if m, ok := p.(*MessageAppended); ok {
		// Most of a conversation's events: decoded by hand when they are
		// in the form this build writes.
		if decodeMessageAppended(data, m) {
			return p, nil
		}
		p = newPayload()
	}
	if err := msgpack.Unmarshal(data, p); err != nil {
		return nil, eventlog.Corruptf(ev.Stream, ev.Seq, "%s payload: %v", ev.Type, err)
	}
	return p, nil
}

// upcast runs payload, a msgpack map, through ups in order and returns
// the result encoded again.
func upcast(payload []byte, ups []Upcaster) ([]byte, error) {
	var m map[string]any
	if err := msgpack.Unmarshal(payload, &m); err != nil {
		return nil, err
	}
	for _, up := range ups {
		var err error
		if m, err = up(m); err != nil {
			return nil, err
		}
	}
	return msgpack.Marshal(m)
}

// VersionError is the error of an event whose payload version is newer
// than this build reads: a newer build of reprise wrote it. It matches
// ErrNewerVersion.
type VersionError struct {
	Type    eventlog.Type
	Version uint16 // the event's
	Newest  uint16 // the newest this build reads
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s version %d was written by a newer reprise: this build reads %s up to version %d; upgrade reprise to read it",
		e.Type, e.Version, e.Type, e.Newest)
}

// Is reports whether target is ErrNewerVersion.
func (e *VersionError) Is(target error) bool { return target == ErrNewerVersion }
