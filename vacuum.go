package reprise

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// VacuumReport says what a Vacuum removed for good.
type VacuumReport struct {
	Sessions  []string // deleted sessions whose events went, in id order
	Events    int      // session events removed
	Rewritten int      // agent events whose copies of their text were blanked
	Files     int      // transcript, env and spilled-output files removed
}

// Vacuum removes deleted sessions for good: every event of their streams
// but the tombstone (which keeps the id from being used again), the
// copies of their text in agent events (hook output and context,
// prompts, summaries, reasons; schema.Redact says which), whose events
// stay so that the agents' lifecycles still audit, and their transcript,
// env and spilled-output files. A Vacuumed event in schema.VacuumStream,
// written in the same transaction, says what went, so that Audit accepts
// the gaps. A bbolt file is then compacted, so the bytes are gone from it.
// A store that does not implement eventlog.Purger is ErrNoVacuum. It is a
// write: on a file another process holds it waits like any write.
//
// A vacuum with nothing to remove writes nothing, but still compacts a
// bbolt file, which finishes a vacuum that a crash cut short.
func (e *Engine) Vacuum(ctx context.Context) (VacuumReport, error) {
	purger, ok := e.store.(eventlog.Purger)
	if !ok {
		return VacuumReport{}, fmt.Errorf("%w: %T", ErrNoVacuum, e.store)
	}
	files := 0 // removed by earlier tries
	for tries := 1; ; tries++ {
		plan, err := e.planVacuum(ctx)
		if err != nil {
			return VacuumReport{}, err
		}
		files += plan.report.Files
		plan.report.Files, plan.record.Files = files, files
		if len(plan.purge.Remove) == 0 && len(plan.purge.Rewrite) == 0 && plan.report.Files == 0 {
			return plan.report, e.compact(ctx)
		}
		rec, err := schema.NewRecord(schema.VacuumStream, plan.record, e.stamp(), "")
		if err != nil {
			return VacuumReport{}, err
		}
		plan.purge.Records = []eventlog.Record{rec}
		_, err = purger.Purge(ctx, plan.purge)
		if errors.Is(err, eventlog.ErrConflict) && tries < maxDeleteTries {
			continue
		}
		if err != nil {
			return VacuumReport{}, fmt.Errorf("vacuum: %w", err)
		}
		e.forget(ctx, plan.gone)
		return plan.report, nil
	}
}

// compact rewrites a store kept in a file, when it can be.
func (e *Engine) compact(ctx context.Context) error {
	if c, ok := e.store.(interface{ Compact(context.Context) error }); ok {
		return c.Compact(ctx)
	}
	return nil
}

// vacuumPlan is what one attempt at a vacuum found to do.
type vacuumPlan struct {
	gone   map[string]bool // every deleted session, vacuumed before or not
	purge  eventlog.Purge
	record *schema.Vacuumed
	report VacuumReport
}

// planVacuum reads the log for what a vacuum removes and removes the
// deleted sessions' files, which need no transaction.
func (e *Engine) planVacuum(ctx context.Context) (*vacuumPlan, error) {
	head, err := e.store.Head(ctx, schema.VacuumStream)
	if err != nil {
		return nil, err
	}
	plan := &vacuumPlan{gone: map[string]bool{}, record: &schema.Vacuumed{},
		purge: eventlog.Purge{Expect: []eventlog.Expect{{Stream: schema.VacuumStream, Seq: head}}}}
	var sessions []eventlog.StreamInfo
	if err := e.store.Streams(ctx, "session/", func(info eventlog.StreamInfo) error {
		sessions = append(sessions, info)
		return nil
	}); err != nil {
		return nil, err
	}
	var positions []uint64
	for _, info := range sessions {
		removed, err := e.planSession(ctx, plan, info)
		if err != nil {
			return nil, err
		}
		positions = append(positions, removed...)
	}
	plan.record.Positions = positionRanges(positions)
	if err := e.planAgents(ctx, plan); err != nil {
		return nil, err
	}
	for id := range plan.gone {
		n, err := removeFiles(e.files, id)
		plan.report.Files += n
		if err != nil {
			return nil, err
		}
		if e.legacyFiles == nil {
			continue
		}
		n, err = removeFiles(e.legacyFiles, id)
		plan.report.Files += n
		if errors.Is(err, ErrNotPrivate) {
			e.log.Warn("the files of a deleted session stay in the directory stores shared before: it is not the user's own", "session", id, "error", err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("remove the files of session %s from the directory stores shared before: %w", id, err)
		}
	}
	plan.record.Files = plan.report.Files
	return plan, nil
}

// planSession adds session stream info to plan if it is deleted, with the
// events before its tombstone that are still stored, and returns their
// positions.
func (e *Engine) planSession(ctx context.Context, plan *vacuumPlan, info eventlog.StreamInfo) ([]uint64, error) {
	deleted := false
	if err := e.store.ReadStream(ctx, info.Name, info.Head, func(ev eventlog.Event) error {
		deleted = ev.Type == schema.TypeSessionDeleted
		return nil
	}); err != nil || !deleted {
		return nil, err
	}
	id := projection.SessionID(info.Name)
	plan.gone[id] = true
	var (
		first     uint64
		positions []uint64
	)
	if err := e.store.ReadStream(ctx, info.Name, 1, func(ev eventlog.Event) error {
		if ev.Seq < info.Head {
			first = cmp.Or(first, ev.Seq)
			positions = append(positions, ev.Position)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if first == 0 {
		return nil, nil // vacuumed before
	}
	plan.purge.Expect = append(plan.purge.Expect, eventlog.Expect{Stream: info.Name, Seq: info.Head})
	plan.purge.Remove = append(plan.purge.Remove, eventlog.SeqRange{Stream: info.Name, First: first, Last: info.Head - 1})
	plan.record.Sessions = append(plan.record.Sessions, schema.VacuumedSession{ID: id, First: first, Last: info.Head - 1})
	plan.report.Sessions = append(plan.report.Sessions, id)
	plan.report.Events += len(positions)
	return positions, nil
}

// planAgents adds to plan every agent event that holds text of a deleted
// session, rewritten without it.
func (e *Engine) planAgents(ctx context.Context, plan *vacuumPlan) error {
	if len(plan.gone) == 0 {
		return nil
	}
	var agents []string
	if err := e.store.Streams(ctx, "agent/", func(info eventlog.StreamInfo) error {
		agents = append(agents, info.Name)
		return nil
	}); err != nil {
		return err
	}
	gone := func(id string) bool { return plan.gone[id] }
	for _, stream := range agents {
		err := e.store.ReadStream(ctx, stream, 1, func(ev eventlog.Event) error {
			p, err := schema.Decode(ev)
			if err != nil || p == nil || !schema.Redact(p, gone) {
				return err
			}
			rec, err := schema.NewRecord(ev.Stream, p, ev.Time, ev.RestoreID)
			if err != nil {
				return err
			}
			plan.purge.Rewrite = append(plan.purge.Rewrite, eventlog.Rewrite{Stream: ev.Stream, Seq: ev.Seq, Payload: rec.Payload})
			plan.record.Rewritten = append(plan.record.Rewritten, schema.EventRef{Stream: ev.Stream, Seq: ev.Seq})
			return nil
		})
		if err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
	}
	plan.report.Rewritten = len(plan.purge.Rewrite)
	return nil
}

// removeFiles removes session id's transcript, env files and spilled hook
// output from files, and returns how many there were. Spilled output is named
// <id>-hook-<uuid>.txt; a name with a second "-hook-" belongs to a session
// whose id starts with id's. Env files are <id>.env-<restore id> (restore
// ids hold no "."), and <id>.env in stores written before each run had its
// own; a name with a "." after ".env-" is another session's (its id
// continues with ".env-").
func removeFiles(files Files, id string) (int, error) {
	names, err := files.List(id)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		rest := strings.TrimPrefix(name, id)
		spilled := strings.HasPrefix(rest, "-hook-") && strings.HasSuffix(rest, ".txt") && !strings.Contains(rest[len("-hook-"):], "-hook-")
		run, isEnv := strings.CutPrefix(rest, ".env-")
		env := rest == ".env" || isEnv && run != "" && !strings.Contains(run, ".")
		if rest != ".jsonl" && !env && !spilled {
			continue
		}
		if err := files.Remove(name); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// positionRanges turns positions into sorted runs of consecutive ones.
func positionRanges(positions []uint64) []schema.PositionRange {
	slices.Sort(positions)
	var out []schema.PositionRange
	for _, p := range positions {
		if n := len(out); n > 0 && out[n-1].Last+1 == p {
			out[n-1].Last = p
			continue
		}
		out = append(out, schema.PositionRange{First: p, Last: p})
	}
	return out
}

// forget drops what this Engine holds in memory of the vacuumed text: the
// deleted sessions' conversations, and its agents' views, which are read
// again from the rewritten log. It waits for each agent's action in
// progress.
func (e *Engine) forget(ctx context.Context, gone map[string]bool) {
	e.mu.Lock()
	for id := range gone {
		delete(e.sessions, id)
	}
	agents := make([]*Agent, 0, len(e.agents))
	for _, a := range e.agents {
		agents = append(agents, a)
	}
	e.mu.Unlock()
	for _, a := range agents {
		a.mu.Lock()
		view := projection.NewAgent(a.id)
		if err := e.store.ReadStream(ctx, a.stream, 1, view.Apply); err != nil {
			e.log.Warn("agent view kept as it was after a vacuum", "agent", a.id, "error", err)
		} else {
			a.view = view
		}
		a.mu.Unlock()
	}
}
