// Package audit proves what a log holds: Check reads the log once, in
// store-wide order, replays every agent stream through the lifecycle table
// and every session stream through the conversation projection, checks
// that positions and each stream's sequences run without gaps and that the
// stream heads the store lists agree with that order, and reports each
// broken rule with its stream and sequence.
//
// # Usage
//
//	rep, err := audit.Check(ctx, store)
//	// err: the store could not be read at all
//	for _, v := range rep.Violations { ... }
//	for _, p := range rep.InProgress { ... } // steps the next action rolls forward
//
// Package reprise forwards Check as reprise.Audit, with its types.
//
// # Caveats
//
// Check takes everything it checks from one ReadAll, which every store of
// this module serves as one snapshot (a bbolt read transaction, a
// PostgreSQL REPEATABLE READ transaction, one read transaction of the
// holder behind a read socket), so writers appending meanwhile change
// nothing it reports. The only other reads are of the stream heads the
// store lists, before and after that one: a head only grows, so the
// reading must end each stream between the two. When the store refuses an
// event (a bad checksum), the reading stops there; Check reports it and
// reads each stream on from where it stopped, up to the heads listed
// after, so one damaged event does not hide the rest of the log.
//
// Check does not hold the log's payloads: it decodes one event at a time
// and keeps, for each stream, its fold without the text folded (a
// session's state, the count of its records and the uuids of its meta
// messages; an agent's state and the step in flight, and the restores that
// injected a message), the gaps that the log's vacuums may explain, and the
// report. Its memory grows with the number of streams and restores, not
// with the size of the messages.
//
// A step an agent's log ends inside is in progress, not a violation: the
// process running it may still be at work. So are the hooks of a tool call
// or a fire started with no outcome at the log's end; their outcome
// recorded twice, or a lifecycle step begun while they run, is one. A store that keeps records
// outside the log (a bbolt file's meta pages) is asked for their damage
// through eventlog.MetaChecker.
package audit
