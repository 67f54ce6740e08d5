// Package audit proves what a log holds: Check replays every agent stream
// through the lifecycle table and every session stream through the
// conversation projection, compares the per-stream reading of the log with
// its store-wide order, and reports each broken rule with its stream and
// sequence.
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
// Check reads each stream on its own, so a store that is being written
// meanwhile may show a mismatch that is not in the log. A step an agent's
// log ends inside is in progress, not a violation: the process running it
// may still be at work. A store that keeps records outside the log (a
// bbolt file's meta pages) is asked for their damage through
// eventlog.MetaChecker.
package audit
