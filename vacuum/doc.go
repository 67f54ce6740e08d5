// Package vacuum reads a log for what removing its deleted sessions for
// good takes: Read returns a Plan, whose Purge a store that implements
// eventlog.Purger carries out in one transaction, with the Vacuumed record
// that lets an audit accept the gaps it leaves.
//
// # Usage
//
//	plan, err := vacuum.Read(ctx, store)
//	rec, _ := schema.NewRecord(schema.VacuumStream, plan.Record, now, "")
//	plan.Purge.Records = []eventlog.Record{rec}
//	_, err = purger.Purge(ctx, plan.Purge) // a conflict: read again
//
// Package reprise's Engine.Vacuum does this, and removes the sessions'
// files and what it holds of them in memory.
//
// # Caveats
//
// Read only reads, and reads each stream on its own: the purge it plans is
// conditional on the heads it saw, so a log written meanwhile makes the
// purge fail with a conflict rather than miss an event.
package vacuum
