// Package eventlog is reprise's append-only event store: the event envelope
// and its encoding, the schema of every event reprise writes, the Store
// contract that backends implement, and an in-memory Store.
//
// A store holds named streams. Each event has a per-stream sequence number
// (1, 2, 3, ...) and a store-wide position that totally orders all events.
// reprise uses two kinds of stream: "agent/<id>" for one agent host's
// lifecycle and "session/<id>" for one conversation.
//
// # Usage
//
// Appends are conditional: the caller names, for every stream it writes, the
// sequence it last saw. If any stream has moved, nothing is written and an
// error matching ErrConflict comes back.
//
//	evs, err := store.Append(ctx,
//		[]eventlog.Expect{{Stream: "session/s1", Seq: head}},
//		[]eventlog.Record{rec})
//
// Payloads are typed structs (see schema.go); NewRecord turns one into a
// Record and Decode turns an Event back into its payload.
//
// # Caveats
//
// Events passed to ReadStream and ReadAll callbacks, including their Payload
// bytes, are only valid until the callback returns; copy what you keep. A
// callback must not call back into the same Store.
//
// The bbolt backend lives in package boltstore; the conformance suite every
// backend must pass lives in package storetest.
package eventlog
