// Package deletion writes and checks the tombstones that delete sessions:
// Tombstone ends a session's stream with its SessionDeleted event, a Guard
// follows the agents so that no step in flight is cut from under them,
// Tombstoned and Taken say what a tombstone means for an id, and Inactive
// picks the sessions a retention rule deletes.
//
// # Usage
//
//	var g deletion.Guard // one for a run of deletions
//	err := deletion.Tombstone(ctx, store, now, conv, "", &g)
//	// deletion.ErrSessionInUse: an agent has a step in flight on it
//
// Package reprise's Engine.DeleteSession, CheckDelete, InactiveSessions
// and DeleteInactive do this over the conversations the Engine caches,
// holding each session's lock; package vacuum then removes what the
// deleted sessions left.
//
// # Caveats
//
// Tombstone folds into the conversation it is given, caught up from the
// store and then given the tombstone: the caller owns it and must keep
// everyone else off it meanwhile (the Engine holds the session's lock).
// The tombstone is conditional on the session's head and on the head of
// every agent stream as the Guard last read them, so an agent that began a
// step on the session meanwhile makes it read again and try again, up to
// eight times in all; a Guard refreshes only the agent streams that moved,
// so one Guard kept across deletions reads each stream once.
//
// Nothing here caches or locks across processes: an Engine in another
// process learns of a tombstone when it next reads the session's stream.
package deletion
