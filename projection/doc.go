// Package projection folds events of the log into the views reprise serves:
// a session's conversation, the index of all sessions, and an agent's
// current session and restore history.
//
// Every view has one Apply method that takes the next event. The Engine
// keeps views up to date by applying the events it appends; rebuilding a
// view from the log applies the same events through the same method, so the
// two cannot drift apart.
//
// # Usage
//
//	c := projection.NewConversation("s1")
//	err := store.ReadStream(ctx, "session/s1", 1, c.Apply)
//	for _, m := range c.Messages { ... }
//
// # Caveats
//
// Apply checks the invariants a view depends on (the right stream,
// consecutive sequences, legal lifecycle steps) and returns an error naming
// the stream and sequence when one breaks; the view is unchanged then. The
// package does no I/O: callers read the log and feed the events.
package projection
