// Package vacuum removes deleted sessions from a log for good. Read
// returns a Plan, whose Purge a store that implements eventlog.Purger
// carries out in one transaction, with the Vacuumed record that lets an
// audit accept the gaps it leaves; Run does the whole vacuum: it reads the
// plan, has the caller remove the sessions' files, purges, and tries again
// when another writer moved a stream meanwhile.
//
// # Usage
//
//	rep, err := vacuum.Run(ctx, store, vacuum.Env{Now: now, RemoveFiles: remove, Forget: forget})
//
// or, step by step:
//
//	plan, err := vacuum.Read(ctx, store)
//	rec, _ := schema.NewRecord(schema.VacuumStream, plan.Record, now, "")
//	plan.Purge.Records = []eventlog.Record{rec}
//	_, err = purger.Purge(ctx, plan.Purge) // a conflict: read again
//
// Package reprise's Engine.Vacuum calls Run with its files
// (files.RemoveSession) and drops what it holds of the sessions in memory.
//
// # Caveats
//
// Read only reads, and reads each stream on its own: the purge it plans is
// conditional on the heads it saw, so a log written meanwhile makes the
// purge fail with a conflict rather than miss an event. Run removes the
// files before the purge, since they need no transaction: a run that then
// fails has removed files of sessions that are deleted anyway, and the
// next run counts only what is left.
package vacuum
