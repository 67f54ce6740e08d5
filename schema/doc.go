// Package schema is the domain of reprise's event log: every event type
// reprise writes, its payload struct (messages, content blocks, hook
// outcomes, the steps of a restore), and the codec between a payload and
// the eventlog.Record a store keeps.
//
// Package eventlog knows nothing of these types: a store keeps opaque
// payload bytes under a type name and a schema version. This package gives
// them meaning.
//
// # Usage
//
//	rec, err := schema.NewRecord("session/s1", &schema.SessionCreated{ID: "s1"}, now, "")
//	...
//	p, err := schema.Decode(ev) // *schema.SessionCreated
//
// # Caveats
//
// Payloads hold no Go maps and no time.Time: msgpack map order is not
// stable, and times are UTC unix nanoseconds. Decode fails on a type it
// does not know (ErrUnknownType) unless it was registered with
// RegisterIgnorable, and on a payload version newer than its type's
// Version (ErrNewerVersion, a *VersionError naming the type and both
// versions: a newer reprise wrote the event, which is not damage); each
// names the stream and sequence. Each type has its own payload version;
// older versions are read through the type's upcasters. The rules for
// changing a payload are in docs/events.md.
package schema
