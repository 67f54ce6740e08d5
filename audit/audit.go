package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// Kinds of violation.
const (
	Undecodable      = "undecodable-event"   // bad bytes, unknown type or version
	NewerVersion     = "newer-event-version" // written by a newer reprise: upgrade to read it
	SequenceGap      = "sequence-gap"        // a stream skips or repeats a sequence
	OutOfOrder       = "out-of-order-step"   // a lifecycle step the table forbids there
	DoubleHookRun    = "double-hook-run"     // a hook step recorded twice for one restore
	Unresolved       = "unresolved-intent"   // hooks started, no outcome recorded
	Unfinished       = "unfinished-restore"  // a restore stopped between steps
	Projection       = "projection-mismatch" // two readings of the log disagree
	MissingInjected  = "missing-injected-message"
	DamagedMeta      = "damaged-meta-page" // a bbolt file's meta page is bad: its newest transaction may be lost
	UnfinishedImport = "unfinished-import" // a session holds the first part of a transcript only
)

// Violation is one broken rule found by Check, located at an event, or with
// an empty Stream, in the store's file (a damaged bbolt meta page). An
// unresolved intent or an unfinished restore is a violation only when
// another step follows it; at the end of an agent's log it is InProgress.
type Violation struct {
	Stream string
	Seq    uint64
	Kind   string
	Detail string
}

func (v Violation) String() string {
	if v.Stream == "" { // the store's file, not one stream
		return fmt.Sprintf("%s: %s", v.Kind, v.Detail)
	}
	return fmt.Sprintf("%s#%d: %s: %s", v.Stream, v.Seq, v.Kind, v.Detail)
}

// InProgress is a step an agent's log ends inside: a restore stopped
// between steps, or hooks started with no outcome recorded yet. It is not a
// violation: the process running it may still be at work, or it died and the
// next Engine.Agent call on the agent rolls the step forward.
type InProgress struct {
	Agent  string // the agent's id
	Stream string // the agent's stream
	Seq    uint64 // the stream's last event
	ID     string // the restore, Stop run or prompt run in flight
	State  string // the lifecycle state the log ends in, such as "starting"
	Detail string
}

func (p InProgress) String() string {
	return fmt.Sprintf("%s#%d: in progress: %s", p.Stream, p.Seq, p.Detail)
}

// Report is what Check found: counts, every violation, and the steps
// agents' logs end inside.
type Report struct {
	Events           int
	Sessions         int
	Agents           int
	Restores         int
	HooksRun         int
	HooksFailed      int // failed or panicked
	HooksCancelled   int // timed out or cancelled
	HooksInterrupted int
	Violations       []Violation
	InProgress       []InProgress // not violations; at most one per agent
}

// Check replays every agent stream through the lifecycle table and every
// session stream through the conversation projection, compares the
// per-stream reading of the log with its store-wide order, and reports each
// violation with its stream and sequence. A step that an agent's log ends
// inside is reported in InProgress, not as a violation. It reads only; an error means the
// store could not be read at all.
func Check(ctx context.Context, store eventlog.Store) (*Report, error) {
	a := &auditor{ctx: ctx, store: store, rep: &Report{}, digests: map[string]uint64{}, meta: map[string]map[string]bool{}}
	var streams []eventlog.StreamInfo
	if err := store.Streams(ctx, "", func(s eventlog.StreamInfo) error { streams = append(streams, s); return nil }); err != nil {
		return nil, err
	}
	if err := a.readVacuums(); err != nil {
		return nil, err
	}
	for _, s := range streams {
		if strings.HasPrefix(s.Name, "session/") {
			a.session(s)
		}
	}
	for _, s := range streams {
		if strings.HasPrefix(s.Name, "agent/") {
			a.agent(s)
		}
	}
	if err := a.positions(streams); err != nil {
		return nil, err
	}
	if mc, ok := store.(eventlog.MetaChecker); ok {
		damaged, err := mc.DamagedMeta(a.ctx)
		if err != nil {
			return nil, err
		}
		for _, d := range damaged {
			a.add("", 0, DamagedMeta, "%s", d)
		}
	}
	return a.rep, nil
}

type auditor struct {
	ctx     context.Context
	store   eventlog.Store
	rep     *Report
	digests map[string]uint64          // stream -> digest of its events read by stream
	meta    map[string]map[string]bool // session -> uuids of its meta messages
	vacuums vacuumed                   // the gaps vacuums explain
}

func (a *auditor) add(stream string, seq uint64, kind, format string, args ...any) {
	a.rep.Violations = append(a.rep.Violations, Violation{Stream: stream, Seq: seq, Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

// digest folds one event into a running digest of a stream.
func digest(d uint64, ev eventlog.Event) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%d|%s|%s|%d|", d, ev.Seq, ev.Type, ev.RestoreID, ev.Time)
	h.Write(ev.Payload)
	return h.Sum64()
}

// read folds stream s event by event into apply, keeping its digest. It
// records a violation and stops at the first event apply or the store
// refuses.
func (a *auditor) read(s eventlog.StreamInfo, apply func(eventlog.Event) error) bool {
	var d, last uint64
	err := a.store.ReadStream(a.ctx, s.Name, 1, func(ev eventlog.Event) error {
		if err := apply(ev); err != nil {
			return err
		}
		d, last = digest(d, ev), ev.Seq
		return nil
	})
	if err != nil {
		a.classify(s.Name, last+1, err)
		return false
	}
	if last != s.Head {
		a.add(s.Name, last, Projection, "stream head is %d but its events end at %d", s.Head, last)
		return false
	}
	a.digests[s.Name] = d
	return true
}

// Errors that mark what the agent fold found, for classify.
var (
	errRepeatedStep = errors.New("step already recorded for this restore")
	errUnresolved   = errors.New("hooks started with no outcome recorded")
	errUnfinished   = errors.New("stopped between steps")
)

// classify turns a read or fold error into a violation.
func (a *auditor) classify(stream string, seq uint64, err error) {
	var ee *eventlog.EventError
	if errors.As(err, &ee) {
		stream, seq = ee.Stream, ee.Seq
	}
	kind := Undecodable
	switch {
	case errors.Is(err, errRepeatedStep):
		kind = DoubleHookRun
	case errors.Is(err, errUnresolved):
		kind = Unresolved
	case errors.Is(err, errUnfinished):
		kind = Unfinished
	case errors.Is(err, fsm.ErrIllegalTransition):
		kind = OutOfOrder
	case strings.Contains(err.Error(), "sequence gap"):
		kind = SequenceGap
	case errors.Is(err, schema.ErrNewerVersion):
		kind = NewerVersion
	}
	a.add(stream, seq, kind, "%v", err)
}

func (a *auditor) session(s eventlog.StreamInfo) {
	a.rep.Sessions++
	id := strings.TrimPrefix(s.Name, "session/")
	conv := projection.NewConversation(id)
	first := true
	a.read(s, func(ev eventlog.Event) error {
		if first && ev.Seq != 1 && !a.vacuums.explains(a.vacuums.seqs[s.Name], 1, ev.Seq-1) {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "sequence gap: expected 1, and no vacuum removed %d to %d", 1, ev.Seq-1)
		}
		first = false
		return conv.Apply(ev)
	})
	if conv.Importing && !conv.Deleted {
		// Unlike a restore, nothing rolls an import forward: the session
		// stays partial until someone resumes it, so it is reported as a
		// violation even while an import may still be running.
		a.add(s.Name, conv.Head, UnfinishedImport, "the import into session %s started and did not finish: the session holds its first %d records; resuming the import from the same transcript finishes it",
			id, len(conv.Messages)+len(conv.Kept))
	}
	meta := map[string]bool{}
	for _, m := range conv.Messages {
		if m.IsMeta {
			meta[m.UUID] = true
		}
	}
	a.meta[id] = meta
}

func (a *auditor) agent(s eventlog.StreamInfo) {
	a.rep.Agents++
	id := strings.TrimPrefix(s.Name, "agent/")
	view := projection.NewAgent(id)
	apply := func(ev eventlog.Event) error {
		what, run := inFlight(view)
		state := view.State
		err := view.Apply(ev)
		repeated := view.Restore != nil && slices.Contains(view.Restore.Steps, ev.Type)
		switch {
		case err == nil:
			return nil
		case run != "" && ev.RestoreID != run && (errors.Is(err, fsm.ErrIllegalTransition) || errors.Is(err, eventlog.ErrCorrupt)):
			// Another step began while one was still in flight.
			cause := errUnfinished
			if hooksRunning(state) {
				cause = errUnresolved
			}
			return fmt.Errorf("%s %s left in state %s (%w), then %s began %q: %w", what, run, state, cause, ev.Type, ev.RestoreID, err)
		case errors.Is(err, fsm.ErrIllegalTransition) && repeated && strings.Contains(string(ev.Type), "Hook"):
			return fmt.Errorf("%w: %s in restore %s: %w", errRepeatedStep, ev.Type, view.Restore.ID, err)
		}
		return err
	}
	ok := a.read(s, apply)
	a.count(view)
	if !ok {
		return
	}
	if what, run := inFlight(view); run != "" {
		detail := fmt.Sprintf("%s %s stopped in state %s", what, run, view.State)
		if hooksRunning(view.State) {
			detail = fmt.Sprintf("%s %s: hooks started in state %s with no outcome recorded yet", what, run, view.State)
		}
		a.rep.InProgress = append(a.rep.InProgress, InProgress{Agent: id, Stream: s.Name, Seq: view.Head, ID: run, State: string(view.State), Detail: detail})
	}
	for _, r := range view.History {
		vacuumed := a.vacuums.seqs[projection.SessionStream(r.To)] != nil
		if r.InjectedUUID != "" && !a.meta[r.To][r.InjectedUUID] && !vacuumed {
			a.add(s.Name, view.Head, MissingInjected, "restore %s injected message %s, which %s does not hold", r.ID, r.InjectedUUID, r.To)
		}
	}
}

// inFlight names what view's agent has in flight, a restore, a Stop run or
// a prompt run, and its id; the id is "" when nothing is.
func inFlight(view *projection.Agent) (what, id string) {
	switch {
	case view.Restore != nil:
		return "restore", view.Restore.ID
	case view.Stop != nil:
		return "Stop run", view.Stop.ID
	case view.Prompt != nil:
		return "prompt run", view.Prompt.ID
	}
	return "", ""
}

// hooksRunning reports whether s is a state in which hooks may be running:
// their intent is recorded, their outcome not yet.
func hooksRunning(s fsm.State) bool {
	switch s {
	case fsm.Ending, fsm.Starting, fsm.Stopping, fsm.Prompting, fsm.PreCompacting:
		return true
	}
	return false
}

func (a *auditor) count(view *projection.Agent) {
	restores := view.History
	if view.Restore != nil {
		restores = append(slices.Clone(restores), *view.Restore)
	}
	for _, r := range restores {
		a.rep.Restores++
		for _, o := range append(slices.Clone(r.EndOutcomes), r.StartOutcomes...) {
			a.rep.HooksRun++
			switch o.Status {
			case schema.HookFailed, schema.HookPanicked:
				a.rep.HooksFailed++
			case schema.HookTimedOut, schema.HookCancelled:
				a.rep.HooksCancelled++
			case schema.HookInterrupted:
				a.rep.HooksInterrupted++
			}
		}
	}
}

// positions reads the whole log in store-wide order and checks that
// positions run 1, 2, 3... without gaps, that each stream's events come in
// sequence, and that this reading gives every stream the same events as
// reading it on its own.
func (a *auditor) positions(streams []eventlog.StreamInfo) error {
	digests := map[string]uint64{}
	seqs := map[string]uint64{}
	var pos uint64
	err := a.store.ReadAll(a.ctx, 1, func(ev eventlog.Event) error {
		a.rep.Events++
		pos++
		if ev.Position != pos && !a.vacuums.explains(a.vacuums.positions, pos, ev.Position-1) {
			a.add(ev.Stream, ev.Seq, SequenceGap, "position %d where %d was next", ev.Position, pos)
		}
		pos = ev.Position
		if next := seqs[ev.Stream] + 1; ev.Seq != next && (ev.Seq < next || !a.vacuums.explains(a.vacuums.seqs[ev.Stream], next, ev.Seq-1)) {
			a.add(ev.Stream, ev.Seq, SequenceGap, "in store order, seq %d follows %d", ev.Seq, seqs[ev.Stream])
		}
		seqs[ev.Stream] = ev.Seq
		digests[ev.Stream] = digest(digests[ev.Stream], ev)
		return nil
	})
	if err != nil {
		var ee *eventlog.EventError
		if !errors.As(err, &ee) {
			return err
		}
		a.classify(ee.Stream, ee.Seq, err)
		return nil // the stream reads already located what they could
	}
	for _, s := range streams {
		if d, ok := a.digests[s.Name]; ok && d != digests[s.Name] && seqs[s.Name] == s.Head {
			a.add(s.Name, s.Head, Projection, "reading the stream and reading the whole log give different events")
		}
	}
	return nil
}

// vacuumed holds the gaps that the Vacuumed events of a log explain: the
// positions they removed, and the sequences of each session stream.
type vacuumed struct {
	positions []schema.PositionRange
	seqs      map[string][]schema.PositionRange // by stream
}

// readVacuums reads the Vacuumed events of the store.
func (a *auditor) readVacuums() error {
	a.vacuums.seqs = map[string][]schema.PositionRange{}
	err := a.store.ReadStream(a.ctx, schema.VacuumStream, 1, func(ev eventlog.Event) error {
		p, err := schema.Decode(ev)
		if err != nil {
			return err
		}
		v, ok := p.(*schema.Vacuumed)
		if !ok {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "%s does not belong in %s", ev.Type, schema.VacuumStream)
		}
		a.vacuums.positions = append(a.vacuums.positions, v.Positions...)
		for _, s := range v.Sessions {
			stream := projection.SessionStream(s.ID)
			a.vacuums.seqs[stream] = append(a.vacuums.seqs[stream], schema.PositionRange{First: s.First, Last: s.Last})
		}
		return nil
	})
	var ee *eventlog.EventError
	if errors.As(err, &ee) {
		a.classify(ee.Stream, ee.Seq, err)
		return nil
	}
	return err
}

// explains reports whether ranges cover every number from first to last.
func (vacuumed) explains(ranges []schema.PositionRange, first, last uint64) bool {
	sorted := slices.Clone(ranges)
	slices.SortFunc(sorted, func(x, y schema.PositionRange) int { return cmp.Compare(x.First, y.First) })
	for _, r := range sorted {
		if r.First <= first && r.Last >= first {
			first = r.Last + 1
		}
		if first > last {
			return true
		}
	}
	return false
}
