package vacuum

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// Report says what a vacuum removed for good.
type Report struct {
	Sessions  []string // deleted sessions whose events went, in id order
	Events    int      // session events removed
	Rewritten int      // agent events whose copies of their text were blanked
	Files     int      // transcript, env and spilled-output files removed
}

// Plan is what a vacuum of a store's log found to do: the purge to hand to
// the store's eventlog.Purger, the Vacuumed record that says what went, and
// the sessions it removes.
type Plan struct {
	Gone   map[string]bool // every deleted session, vacuumed before or not
	Purge  eventlog.Purge
	Record *schema.Vacuumed
	Report Report
}

// Read reads the log of store for what a vacuum removes: every event of
// each deleted session's stream but its tombstone, and every agent event
// that holds a copy of such a session's text, rewritten without it
// (schema.Redact), and every intent of a blocked prompt that holds its
// text, rewritten with its digest instead. It only reads. The purge is conditional on the heads
// it read: a store that moved meanwhile makes the purge conflict, and the
// caller reads again.
func Read(ctx context.Context, store eventlog.Store) (*Plan, error) {
	head, err := store.Head(ctx, schema.VacuumStream)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Gone: map[string]bool{}, Record: &schema.Vacuumed{},
		Purge: eventlog.Purge{Expect: []eventlog.Expect{{Stream: schema.VacuumStream, Seq: head}}}}
	var sessions []eventlog.StreamInfo
	if err := store.Streams(ctx, "session/", func(info eventlog.StreamInfo) error {
		sessions = append(sessions, info)
		return nil
	}); err != nil {
		return nil, err
	}
	var positions []uint64
	for _, info := range sessions {
		removed, err := plan.session(ctx, store, info)
		if err != nil {
			return nil, err
		}
		positions = append(positions, removed...)
	}
	plan.Record.Positions = positionRanges(positions)
	if err := plan.agents(ctx, store); err != nil {
		return nil, err
	}
	return plan, nil
}

// session adds session stream info to plan if it is deleted, with the
// events before its tombstone that are still stored, and returns their
// positions.
func (plan *Plan) session(ctx context.Context, store eventlog.Store, info eventlog.StreamInfo) ([]uint64, error) {
	deleted := false
	if err := store.ReadStream(ctx, info.Name, info.Head, func(ev eventlog.Event) error {
		deleted = ev.Type == schema.TypeSessionDeleted
		return nil
	}); err != nil || !deleted {
		return nil, err
	}
	id := projection.SessionID(info.Name)
	plan.Gone[id] = true
	var (
		first     uint64
		positions []uint64
	)
	if err := store.ReadStream(ctx, info.Name, 1, func(ev eventlog.Event) error {
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
	plan.Purge.Expect = append(plan.Purge.Expect, eventlog.Expect{Stream: info.Name, Seq: info.Head})
	plan.Purge.Remove = append(plan.Purge.Remove, eventlog.SeqRange{Stream: info.Name, First: first, Last: info.Head - 1})
	plan.Record.Sessions = append(plan.Record.Sessions, schema.VacuumedSession{ID: id, First: first, Last: info.Head - 1})
	plan.Report.Sessions = append(plan.Report.Sessions, id)
	plan.Report.Events += len(positions)
	return positions, nil
}

// agents adds to plan every agent event that holds text of a deleted
// session, rewritten without it, and every intent of a prompt the hooks
// blocked that holds the prompt's text, as intents written before
// schema.PromptHookStarted.PromptSHA256 existed do, rewritten with its
// digest instead.
func (plan *Plan) agents(ctx context.Context, store eventlog.Store) error {
	var agents []string
	if err := store.Streams(ctx, "agent/", func(info eventlog.StreamInfo) error {
		agents = append(agents, info.Name)
		return nil
	}); err != nil {
		return err
	}
	gone := func(id string) bool { return plan.Gone[id] }
	for _, stream := range agents {
		blocked, err := blockedPrompts(ctx, store, stream)
		if err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		if len(plan.Gone) == 0 && len(blocked) == 0 {
			continue
		}
		err = store.ReadStream(ctx, stream, 1, func(ev eventlog.Event) error {
			if len(plan.Gone) == 0 && (ev.Type != schema.TypePromptHookStarted || !blocked[ev.RestoreID]) {
				return nil
			}
			p, err := schema.Decode(ev)
			if err != nil || p == nil {
				return err
			}
			changed := schema.Redact(p, gone)
			if intent, ok := p.(*schema.PromptHookStarted); ok && blocked[ev.RestoreID] {
				changed = intent.Forget() || changed
			}
			if !changed {
				return nil
			}
			rec, err := schema.NewRecord(ev.Stream, p, ev.Time, ev.RestoreID)
			if err != nil {
				return err
			}
			plan.Purge.Rewrite = append(plan.Purge.Rewrite, eventlog.Rewrite{Stream: ev.Stream, Seq: ev.Seq, Payload: rec.Payload})
			plan.Record.Rewritten = append(plan.Record.Rewritten, schema.EventRef{Stream: ev.Stream, Seq: ev.Seq})
			return nil
		})
		if err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
	}
	plan.Report.Rewritten = len(plan.Purge.Rewrite)
	return nil
}

// blockedPrompts returns the runs of UserPromptSubmit hooks on stream, by
// restore id, that blocked their prompt.
func blockedPrompts(ctx context.Context, store eventlog.Store, stream string) (map[string]bool, error) {
	blocked := map[string]bool{}
	err := store.ReadStream(ctx, stream, 1, func(ev eventlog.Event) error {
		if ev.Type != schema.TypePromptHookRan {
			return nil
		}
		p, err := schema.Decode(ev)
		if ran, ok := p.(*schema.PromptHookRan); ok && ran.Blocked {
			blocked[ev.RestoreID] = true
		}
		return err
	})
	return blocked, err
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
