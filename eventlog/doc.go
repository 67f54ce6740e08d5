// Package eventlog is reprise's append-only event store contract: the
// Store interface that backends implement, the errors they return, and
// MemoryStore, its in-memory twin.
//
// A store holds named streams. Each event has a per-stream sequence number
// (1, 2, 3, ...) and a store-wide position that totally orders all events.
// reprise uses two kinds of stream: "agent/<id>" for one agent host's
// lifecycle and "session/<id>" for one conversation. A store treats
// payloads as opaque bytes under a type name and version; package schema
// says what they mean.
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
// # Caveats
//
// Events passed to ReadStream and ReadAll callbacks, including their Payload
// bytes, are only valid until the callback returns; copy what you keep. A
// callback must not call back into the same Store.
//
// Loader is an optional interface for copying a store: it writes events
// numbered elsewhere as they are, and Copy uses it to load one store's
// snapshot into another.
//
// Purger is an optional operation, which every store of this module
// implements: it removes events for good, leaving gaps in sequences and
// positions that reads pass over. Nothing else ever changes a stored event.
//
// StreamLocker is an optional interface of stores shared by several
// processes (and, as LocalLocks, of those one process owns). A lock of a
// database can be lost while held, when the session holding it ends:
// Hold returns, with the lock, a context that ends then (LockHolder), so
// that a holder doing its work under it stops before another holder's
// work and its own interleave.
//
// Backends live in their own packages and are the caller's choice:
// boltstore (an embedded bbolt file, with its own envelope encoding) and
// pgstore (PostgreSQL). remote reads a store through the process that
// holds it. storetest is the conformance suite every backend, MemoryStore
// included, must pass.
package eventlog
