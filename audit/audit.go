package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
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
	Projection       = "projection-mismatch" // the store's stream heads and its store-wide order disagree
	MissingInjected  = "missing-injected-message"
	DamagedMeta      = "damaged-meta-page"     // a bbolt file's meta page is bad: its newest transaction may be lost
	UnfinishedImport = "unfinished-import"     // a session holds the first part of a transcript only
	OrphanSubagent   = "subagent-without-call" // a subagent's session whose parent holds no Agent call of its id
	// The kinds of Report.Unsendable: a session the Messages API would
	// refuse, which older builds let a host write: an answer while calls
	// of the answer before have no tool_result (two answers in a row among
	// them), a tool_use id used twice, a tool_use without an id.
	AnswerBeforeResults = "answer-before-results"
	DuplicateToolUse    = "duplicate-tool-use"
	ToolUseWithoutID    = "tool-use-without-id"
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
// between steps, or hooks started with no outcome recorded yet, of a
// lifecycle step, a tool call or a fire. It is not a violation: the
// process running it may still be at work, or it died and the next
// Engine.Agent call on the agent rolls the step forward, or closes the
// hooks of the call or fire as interrupted.
type InProgress struct {
	Agent  string // the agent's id
	Stream string // the agent's stream
	Seq    uint64 // the stream's last event
	ID     string // the restore, Stop run or prompt run in flight; the tool_use id or fire id
	// Lane is "tool" for a tool call's hooks, "fire" for a fire's,
	// "subagent" for a subagent that finished and whose answer its
	// parent's call has not recorded, and "" for a lifecycle step.
	Lane   string
	State  string // the state the log ends in, such as "starting", or the call's or fire's
	Detail string
}

func (p InProgress) String() string {
	return fmt.Sprintf("%s#%d: in progress: %s", p.Stream, p.Seq, p.Detail)
}

// Report is what Check found: counts, every violation, and the steps
// agents' logs end inside.
type Report struct {
	Events           int
	Sessions         int // the sessions the store holds, deleted ones left out
	Subagents        int // of Sessions, those of subagents
	DeletedSessions  int
	Agents           int
	Restores         int
	HooksRun         int // every hook run the agents' logs record, restores' and turns'
	HooksFailed      int // failed or panicked
	HooksCancelled   int // timed out or cancelled
	HooksInterrupted int
	// Interrupted names where the interrupted hooks were (at most
	// MaxInterrupted of them, in log order): a run whose hooks a dying
	// process cut short and the next one closed, never running them again.
	Interrupted []Run
	// Fires counts the fired events the agents' logs record as run, by
	// event in name order; their hooks count in HooksRun too.
	Fires      []FireCount
	Violations []Violation
	// InProgress are not violations: at most one lifecycle step per
	// agent, and each of its tool calls and fires whose hooks have no
	// outcome.
	InProgress []InProgress
	// Unsendable are the messages that make a session one the Messages
	// API refuses (AnswerBeforeResults, DuplicateToolUse,
	// ToolUseWithoutID): the log is whole, but the session cannot be sent
	// to the model as it is. Append refuses such messages; older builds
	// took them.
	Unsendable []Violation
}

// The lanes of InProgress and Run: the hooks of a tool call, or of a fire;
// "" is a lifecycle step's.
const (
	LaneTool     = "tool"
	LaneFire     = "fire"
	LaneSubagent = "subagent"
)

// Run names one step of an agent that ran hooks: a restore, Stop run or
// prompt run (Lane ""), a tool call ("tool") or a fire ("fire"), by its id.
type Run struct {
	Agent, ID, Lane string
}

// MaxInterrupted bounds Report.Interrupted.
const MaxInterrupted = 100

// FireCount is what the agents' logs record of the fires of one event:
// how many ran, how many its hooks blocked, how many a dying process cut
// short, and how its hooks ended, by status.
type FireCount struct {
	Event       schema.HookEvent
	Fired       int
	Blocked     int
	Interrupted int
	Hooks       map[string]int // by status: ok, failed, timeout, interrupted...
}

// Check reads the log once, in store-wide order, which every store serves
// as one snapshot, so writers appending meanwhile change nothing it finds.
// It checks that positions run 1, 2, 3... and that each stream's events
// come in sequence, replays every agent stream through the lifecycle table
// and every session stream through the conversation projection, checks
// that the stream heads the store lists agree with where that order ends
// each stream, and reports each violation with its stream and sequence. A
// step that an agent's log ends inside is reported in InProgress, not as a
// violation. It reads only; an error means the store could not be read at
// all.
func Check(ctx context.Context, store eventlog.Store) (*Report, error) {
	a := &auditor{ctx: ctx, store: store, rep: &Report{}, streams: map[string]*stream{}}
	// A stream's head only grows, so the heads listed before the reading
	// and after it bound where the reading may end each stream.
	before, err := listStreams(ctx, store)
	if err != nil {
		return nil, err
	}
	refused, err := a.readAll()
	if err != nil {
		return nil, err
	}
	after, err := listStreams(ctx, store)
	if err != nil {
		return nil, err
	}
	if refused {
		if err := a.readRest(after); err != nil {
			return nil, err
		}
	}
	a.checkHeads(before, after)
	a.finish()
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

// listStreams returns every stream of store, in name order.
func listStreams(ctx context.Context, store eventlog.Store) ([]eventlog.StreamInfo, error) {
	var streams []eventlog.StreamInfo
	err := store.Streams(ctx, "", func(s eventlog.StreamInfo) error { streams = append(streams, s); return nil })
	return streams, err
}

// auditor holds what Check keeps while it reads: for each stream, its
// fold without the text it folded (see stream); the gaps the log explains
// only at its end; and the report. Of the payloads, only the event being
// folded is held.
type auditor struct {
	ctx     context.Context
	store   eventlog.Store
	rep     *Report
	streams map[string]*stream
	fires   map[schema.HookEvent]*FireCount
	at      Run      // the run whose hooks are being counted
	pos     uint64   // the last position read
	gaps    []gap    // gaps that only the vacuums the log holds can explain
	vacuums vacuumed // the gaps the vacuums read so far explain
}

// stream is what the audit keeps of one stream while it reads.
type stream struct {
	name    string
	last    uint64 // the last sequence read
	failed  bool   // its fold stopped at a violation
	refused bool   // the store refused one of its events: the reading of it stopped there

	conv    *projection.Conversation // a session's fold, its messages dropped as they are folded
	records int                      // the messages and transcript records conv folded
	meta    map[string]bool          // the uuids of a session's meta messages
	tools   projection.ToolUseLedger // a session's tool calls, as the model sees them
	// agentCalls are a session's calls of the Agent tool, each true once
	// its tool_result is folded; lastAnswer the uuid of its last answer.
	agentCalls map[string]bool
	lastAnswer string

	agent    *projection.Agent // an agent's fold, its finished restores dropped as they are counted
	injected []injection       // the agent's finished restores and fires that injected a message
}

// injection is a restore or a fire that injected a meta message into a
// session; what names it, as "restore ID" or "fire ID".
type injection struct {
	what, session, uuid string
}

// gap is a run of positions (stream "") or of a stream's sequences that
// the reading skipped, located at the event after it.
type gap struct {
	stream      string
	at          event
	first, last uint64
	detail      string
}

// event names an event of the log.
type event struct {
	stream string
	seq    uint64
}

func (a *auditor) add(stream string, seq uint64, kind, format string, args ...any) {
	a.rep.Violations = append(a.rep.Violations, Violation{Stream: stream, Seq: seq, Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

// stream returns what the audit keeps of stream name, made on first use.
func (a *auditor) stream(name string) *stream {
	st := a.streams[name]
	if st == nil {
		st = &stream{name: name}
		switch {
		case strings.HasPrefix(name, "session/"):
			st.conv = projection.NewConversation(strings.TrimPrefix(name, "session/"))
		case strings.HasPrefix(name, "agent/"):
			a.rep.Agents++
			st.agent = projection.NewAgent(strings.TrimPrefix(name, "agent/"))
		}
		a.streams[name] = st
	}
	return st
}

// readAll reads the whole log in store-wide order. When the store refuses
// an event, it records why and reports refused: the reading stopped there.
func (a *auditor) readAll() (refused bool, err error) {
	err = a.store.ReadAll(a.ctx, 1, func(ev eventlog.Event) error {
		a.position(ev)
		a.event(ev)
		return nil
	})
	var ee *eventlog.EventError
	if err == nil || !errors.As(err, &ee) {
		return false, err
	}
	a.classify(ee.Stream, ee.Seq, err)
	if ee.Stream != "" {
		a.stream(ee.Stream).refused = true
	}
	return true, nil
}

// readRest reads on, stream by stream, from where the store-wide reading
// stopped at an event the store refused, up to the heads listed after it,
// so that one damaged event does not hide what the rest of the log holds.
// These readings come after the snapshot; the log only grows meanwhile,
// so they end each stream where a later snapshot would.
func (a *auditor) readRest(streams []eventlog.StreamInfo) error {
	errEnd := errors.New("past the listed head")
	for _, s := range streams {
		st := a.streams[s.Name]
		if st != nil && (st.refused || st.last >= s.Head) {
			continue
		}
		st = a.stream(s.Name)
		err := a.store.ReadStream(a.ctx, s.Name, st.last+1, func(ev eventlog.Event) error {
			if ev.Seq > s.Head {
				return errEnd
			}
			a.event(ev)
			return nil
		})
		var ee *eventlog.EventError
		switch {
		case err == nil, errors.Is(err, errEnd):
		case errors.As(err, &ee):
			a.classify(ee.Stream, ee.Seq, err)
			st.refused = true
		default:
			return err
		}
	}
	return nil
}

// position checks that ev's position follows the last one read.
func (a *auditor) position(ev eventlog.Event) {
	next := a.pos + 1
	switch {
	case ev.Position < next:
		a.add(ev.Stream, ev.Seq, SequenceGap, "position %d where %d was next", ev.Position, next)
		return
	case ev.Position > next:
		a.gaps = append(a.gaps, gap{at: event{ev.Stream, ev.Seq}, first: next, last: ev.Position - 1,
			detail: fmt.Sprintf("position %d where %d was next", ev.Position, next)})
	}
	a.pos = ev.Position
}

// event checks that ev follows the last event read of its stream and folds
// it. An event that repeats one already read is reported and not folded
// again.
func (a *auditor) event(ev eventlog.Event) {
	a.rep.Events++
	st := a.stream(ev.Stream)
	next := st.last + 1
	switch {
	case ev.Seq < next:
		a.add(ev.Stream, ev.Seq, SequenceGap, "in store order, seq %d follows %d", ev.Seq, st.last)
		return
	case ev.Seq > next:
		a.gaps = append(a.gaps, gap{stream: ev.Stream, at: event{ev.Stream, ev.Seq}, first: next, last: ev.Seq - 1,
			detail: fmt.Sprintf("in store order, seq %d follows %d", ev.Seq, st.last)})
	}
	st.last = ev.Seq
	if st.failed {
		return
	}
	var err error
	switch {
	case st.conv != nil:
		err = a.session(st, ev)
	case st.agent != nil:
		err = a.agent(st, ev)
	case ev.Stream == schema.VacuumStream:
		err = a.vacuums.read(ev)
	}
	if err != nil {
		st.failed = true
		a.classify(ev.Stream, ev.Seq, err)
	}
}

// checkHeads checks that the reading ended each stream between the heads
// listed before it and after it: not before a head the store already
// listed, not past one it listed later, and only streams the store lists.
// A stream whose reading stopped at an event the store refused is left
// out: that event is reported already.
func (a *auditor) checkHeads(before, after []eventlog.StreamInfo) {
	last := func(name string) (uint64, bool) {
		st := a.streams[name]
		if st == nil {
			return 0, true
		}
		return st.last, !st.refused
	}
	listed := map[string]bool{}
	for _, s := range after {
		listed[s.Name] = true
		if read, ok := last(s.Name); ok && read > s.Head {
			a.add(s.Name, read, Projection, "the store-wide order holds the stream up to %d but its head is %d", read, s.Head)
		}
	}
	for _, s := range before {
		read, ok := last(s.Name)
		switch {
		case !ok:
		case !listed[s.Name]:
			a.add(s.Name, s.Head, Projection, "the store listed the stream, with head %d, then no longer did", s.Head)
		case read < s.Head:
			a.add(s.Name, read, Projection, "stream head is %d but the store-wide order ends the stream at %d", s.Head, read)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(a.streams)) {
		if read, ok := last(name); ok && !listed[name] {
			a.add(name, read, Projection, "the store-wide order holds events of a stream the store does not list")
		}
	}
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

// session folds the next event of a session stream. It keeps the uuids of
// meta messages and a count of what it folded, then drops the messages and
// records themselves: nothing the audit checks reads them again.
func (a *auditor) session(st *stream, ev eventlog.Event) error {
	conv := st.conv
	err := conv.Apply(ev)
	if ev.Type == schema.TypeCompactBoundary {
		st.tools = projection.ToolUseLedger{} // the model's view starts again
	}
	for _, m := range conv.Messages {
		a.checkToolUses(st, ev, m)
		st.foldAgentCalls(m)
		if m.IsMeta {
			if st.meta == nil {
				st.meta = map[string]bool{}
			}
			st.meta[m.UUID] = true
		}
	}
	st.records += len(conv.Messages) + len(conv.Kept)
	clear(conv.Messages)
	clear(conv.Kept)
	conv.Messages, conv.Kept, conv.ViewStart = conv.Messages[:0], conv.Kept[:0], 0
	return err
}

// agent folds the next event of an agent stream, naming what a refused
// step means for the audit. It counts each restore as it finishes, keeps
// the ones that injected a message, and drops them; of a fire, once its
// outcome is folded, it keeps its state and decision, not its texts.
func (a *auditor) agent(st *stream, ev eventlog.Event) error {
	view := st.agent
	what, run := inFlight(view)
	state := view.State
	fire := view.Fires[ev.RestoreID]
	fireStep := ev.Type == schema.TypeHookEventStarted || ev.Type == schema.TypeHookEventRan
	err := view.Apply(ev)
	if err == nil {
		a.at = runOf(view.ID, ev)
		a.countTurnHooks(ev)
		if f := view.Fires[ev.RestoreID]; fireStep && f != nil && f.State == fsm.FireDone {
			if f.Ran != nil && f.Ran.MessageUUID != "" {
				st.injected = append(st.injected, injection{what: "fire " + projection.Word(f.ID), session: f.Session, uuid: f.Ran.MessageUUID})
			}
			slimFire(f)
		}
	}
	repeated := view.Restore != nil && slices.Contains(view.Restore.Steps, ev.Type)
	for _, r := range view.History {
		a.at = Run{Agent: view.ID, ID: r.ID}
		a.count(r)
		if r.InjectedUUID != "" {
			st.injected = append(st.injected, injection{what: "restore " + r.ID, session: r.To, uuid: r.InjectedUUID})
		}
	}
	clear(view.History)
	view.History = view.History[:0]
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
	case errors.Is(err, fsm.ErrIllegalTransition) && fireStep && fire != nil && state == fsm.Active:
		// A fire's hooks run once: its intent, then its outcome.
		return fmt.Errorf("%w: %s of fire %s, in state %s: %w", errRepeatedStep, ev.Type, projection.Word(fire.ID), fire.State, err)
	case errors.Is(err, fsm.ErrIllegalTransition) && view.HooksInFlight > 0 && !laneStep(ev.Type):
		// A lifecycle step began while the hooks of a call or fire ran.
		var open []string
		for _, l := range openLanes(view) {
			open = append(open, l.what)
		}
		return fmt.Errorf("%s left with hooks started (%w), then %s began: %w", strings.Join(open, ", "), errUnresolved, ev.Type, err)
	}
	return err
}

// slimFire drops the texts of f, a fire whose outcome is folded: no
// later step of the log may add to it, and what the fold may still read of
// it is its decision, not its texts.
func slimFire(f *projection.Fire) {
	f.Fields, f.Hooks = nil, nil
	if r := f.Ran; r != nil {
		f.Ran = &schema.HookEventRan{Event: r.Event, Session: r.Session, ID: r.ID, Interrupted: r.Interrupted,
			Blocked: r.Blocked, Halt: r.Halt, MessageUUID: r.MessageUUID}
	}
}

// laneStep reports whether t is a step of a tool call or a fire, which
// go on beside each other, not a lifecycle step.
func laneStep(t eventlog.Type) bool {
	switch t {
	case schema.TypeToolHookStarted, schema.TypeToolHookRan, schema.TypeToolDecided, schema.TypeToolResultRecorded,
		schema.TypeHookEventStarted, schema.TypeHookEventRan:
		return true
	}
	return false
}

// openLane is a tool call or a fire whose hooks may be running.
type openLane struct {
	lane, id string // "tool" or "fire", and its id
	state    fsm.State
	what     string // it in words, on one line: "fire n1 (Notification)"
}

// openLanes returns view's tool calls, then its fires, whose hooks may be
// running, each in id order.
func openLanes(view *projection.Agent) []openLane {
	var out []openLane
	for _, id := range slices.Sorted(maps.Keys(view.Tools)) {
		if c := view.Tools[id]; c.HooksRunning() {
			out = append(out, openLane{LaneTool, id, c.State, fmt.Sprintf("tool call %s (%s)", projection.Word(id), projection.Word(c.Tool))})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(view.Fires)) {
		if f := view.Fires[id]; f.State == fsm.FireHooks {
			out = append(out, openLane{LaneFire, id, f.State, fmt.Sprintf("fire %s (%s)", projection.Word(id), projection.Word(string(f.Event)))})
		}
	}
	return out
}

// finish checks, once the whole log is read, what only its end tells: the
// gaps its vacuums explain, the imports left unfinished, the steps agents'
// logs end inside, and the messages restores and fires injected; and it
// lists the fires counted.
func (a *auditor) finish() {
	a.checkGaps()
	for _, event := range slices.Sorted(maps.Keys(a.fires)) {
		a.rep.Fires = append(a.rep.Fires, *a.fires[event])
	}
	for _, name := range slices.Sorted(maps.Keys(a.streams)) {
		st := a.streams[name]
		switch {
		case st.conv != nil:
			a.finishSession(st)
		case st.agent != nil:
			a.finishAgent(st)
		}
	}
}

// checkGaps reports the gaps that no vacuum of the log explains. A gap in
// a stream that its fold reported already is not reported twice.
func (a *auditor) checkGaps() {
	folded := map[event]bool{}
	for _, v := range a.rep.Violations {
		if v.Kind == SequenceGap {
			folded[event{v.Stream, v.Seq}] = true
		}
	}
	for _, g := range a.gaps {
		ranges := a.vacuums.positions
		if g.stream != "" {
			ranges = a.vacuums.seqs[g.stream]
		}
		if !a.vacuums.explains(ranges, g.first, g.last) && (g.stream == "" || !folded[g.at]) {
			a.add(g.at.stream, g.at.seq, SequenceGap, "%s", g.detail)
		}
	}
}

// checkToolUses reports message m, of ev, when it makes st's session
// one the Messages API refuses, and folds it into the session's ledger.
func (a *auditor) checkToolUses(st *stream, ev eventlog.Event, m schema.Message) {
	if err := st.tools.Check(m); err != nil {
		kind := AnswerBeforeResults
		switch {
		case errors.Is(err, projection.ErrDuplicateToolUse):
			kind = DuplicateToolUse
		case errors.Is(err, projection.ErrEmptyToolUseID):
			kind = ToolUseWithoutID
		}
		a.rep.Unsendable = append(a.rep.Unsendable, Violation{Stream: ev.Stream, Seq: ev.Seq, Kind: kind,
			Detail: fmt.Sprintf("message %s: %v", m.UUID, err)})
	}
	st.tools.Add(m)
}

// foldAgentCalls notes m's calls of the Agent tool, the results of those
// calls it holds, and, of an answer, its uuid.
func (st *stream) foldAgentCalls(m schema.Message) {
	if m.Role == "assistant" {
		st.lastAnswer = m.UUID
		for _, u := range projection.SubagentCalls([]schema.Message{m}) {
			if st.agentCalls == nil {
				st.agentCalls = map[string]bool{}
			}
			if _, ok := st.agentCalls[u.ID]; !ok {
				st.agentCalls[u.ID] = false // no result yet
			}
		}
		return
	}
	for _, id := range projection.ToolResults(m) {
		if _, ok := st.agentCalls[id]; ok {
			st.agentCalls[id] = true
		}
	}
}

// checkSubagent reports subagent session st when no session holds the
// Agent call that started it, and lists it in progress when it finished
// (its last answer's SubagentStop let it stop) but its parent's call has
// no result yet: the parent's next Resume records it.
func (a *auditor) checkSubagent(st *stream) {
	link := st.conv.Subagent
	a.rep.Subagents++
	parent := a.streams["session/"+link.Session]
	resulted, called := false, false
	if parent != nil && parent.conv != nil && !parent.conv.Deleted {
		resulted, called = parent.agentCalls[link.ToolUseID]
	}
	if !called {
		a.add(st.name, 1, OrphanSubagent, "session %s is the subagent of call %s of session %s, which holds no such Agent call",
			st.conv.ID, link.ToolUseID, link.Session)
		return
	}
	child := a.streams["agent/"+st.conv.ID]
	if resulted || child == nil || child.agent == nil {
		return
	}
	if stop := child.agent.LastStops[st.conv.ID]; stop != nil && stop.Answer == st.lastAnswer && st.lastAnswer != "" && !stop.Blocked && stop.Context == "" {
		a.rep.InProgress = append(a.rep.InProgress, InProgress{Agent: st.conv.ID, Stream: child.name, Seq: child.last,
			ID: link.ToolUseID, Lane: LaneSubagent, State: "finished",
			Detail: fmt.Sprintf("subagent %s finished, and call %s of session %s has no result yet: the parent's next Resume records its answer", link.AgentID, link.ToolUseID, link.Session)})
	}
}

func (a *auditor) finishSession(st *stream) {
	if st.conv.Deleted {
		a.rep.DeletedSessions++
	} else {
		a.rep.Sessions++
		if st.conv.Subagent != nil {
			a.checkSubagent(st)
		}
	}
	if conv := st.conv; conv.Importing && !conv.Deleted {
		// Unlike a restore, nothing rolls an import forward: the session
		// stays partial until someone resumes it, so it is reported as a
		// violation even while an import may still be running.
		a.add(st.name, conv.Head, UnfinishedImport, "the import into session %s started and did not finish: the session holds its first %d records; resuming the import from the same transcript finishes it",
			conv.ID, st.records)
	}
}

func (a *auditor) finishAgent(st *stream) {
	view := st.agent
	if view.Restore != nil {
		a.at = Run{Agent: view.ID, ID: view.Restore.ID}
		a.count(*view.Restore)
	}
	if st.failed || st.refused {
		return
	}
	if what, run := inFlight(view); run != "" {
		detail := fmt.Sprintf("%s %s stopped in state %s", what, run, view.State)
		if hooksRunning(view.State) {
			detail = fmt.Sprintf("%s %s: hooks started in state %s with no outcome recorded yet", what, run, view.State)
		}
		a.rep.InProgress = append(a.rep.InProgress, InProgress{Agent: view.ID, Stream: st.name, Seq: view.Head, ID: run, State: string(view.State), Detail: detail})
	}
	for _, l := range openLanes(view) {
		detail := l.what + ": hooks started with no outcome recorded yet"
		if l.lane == LaneTool { // which of its hooks: the state says
			detail = fmt.Sprintf("%s: hooks started in state %s with no outcome recorded yet", l.what, l.state)
		}
		a.rep.InProgress = append(a.rep.InProgress, InProgress{Agent: view.ID, Stream: st.name, Seq: view.Head, ID: l.id, Lane: l.lane,
			State: string(l.state), Detail: detail})
	}
	for _, in := range st.injected {
		target := projection.SessionStream(in.session)
		held := a.streams[target] != nil && a.streams[target].meta[in.uuid]
		if !held && a.vacuums.seqs[target] == nil {
			a.add(st.name, view.Head, MissingInjected, "%s injected message %s, which %s does not hold", in.what, in.uuid, in.session)
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

// count counts restore r and the hooks it ran.
func (a *auditor) count(r projection.Transition) {
	a.rep.Restores++
	a.countOutcomes(r.EndOutcomes)
	a.countOutcomes(r.StartOutcomes)
}

// countTurnHooks counts the hooks that ev, a step of a turn (a prompt, a
// tool call, a stop, a compaction), records as run.
func (a *auditor) countTurnHooks(ev eventlog.Event) {
	switch ev.Type {
	case schema.TypeStopHookRan, schema.TypePromptHookRan, schema.TypePreCompactHookRan, schema.TypeToolHookRan, schema.TypeAsyncHookEnded,
		schema.TypeHookEventRan:
	default:
		return
	}
	p, err := schema.Decode(ev)
	if err != nil {
		return // Apply decoded it; this cannot happen
	}
	switch p := p.(type) {
	case *schema.StopHookRan:
		a.countOutcomes(p.Outcomes)
	case *schema.PromptHookRan:
		a.countOutcomes(p.Outcomes)
	case *schema.PreCompactHookRan:
		a.countOutcomes(p.Outcomes)
	case *schema.ToolHookRan:
		a.countOutcomes(p.Outcomes)
	case *schema.AsyncHookEnded:
		// Its step counted it as run; how it ended counts here.
		a.countEnd(p.Outcome)
	case *schema.HookEventRan:
		a.countOutcomes(p.Outcomes)
		a.countFire(p)
	}
}

// countFire counts fire p by its event: that it ran, whether its hooks
// blocked or a dying process cut them short, and how each ended.
func (a *auditor) countFire(p *schema.HookEventRan) {
	c := a.fires[p.Event]
	if c == nil {
		if a.fires == nil {
			a.fires = map[schema.HookEvent]*FireCount{}
		}
		c = &FireCount{Event: p.Event, Hooks: map[string]int{}}
		a.fires[p.Event] = c
	}
	c.Fired++
	if p.Blocked {
		c.Blocked++
	}
	if p.Interrupted {
		c.Interrupted++
	}
	for _, o := range p.Outcomes {
		c.Hooks[o.Status]++
	}
}

// countOutcomes counts hook outcomes by status.
func (a *auditor) countOutcomes(outcomes []schema.HookOutcome) {
	for _, o := range outcomes {
		a.rep.HooksRun++
		a.countEnd(o)
	}
}

// countEnd counts how one hook ended, by status.
func (a *auditor) countEnd(o schema.HookOutcome) {
	switch o.Status {
	case schema.HookFailed, schema.HookPanicked:
		a.rep.HooksFailed++
	case schema.HookTimedOut, schema.HookCancelled:
		a.rep.HooksCancelled++
	case schema.HookInterrupted:
		a.rep.HooksInterrupted++
		if n := len(a.rep.Interrupted); n < MaxInterrupted && (n == 0 || a.rep.Interrupted[n-1] != a.at) {
			a.rep.Interrupted = append(a.rep.Interrupted, a.at)
		}
	}
}

// runOf names the run that ev, a step of agent, belongs to.
func runOf(agent string, ev eventlog.Event) Run {
	r := Run{Agent: agent, ID: ev.RestoreID}
	switch ev.Type {
	case schema.TypeToolHookStarted, schema.TypeToolHookRan, schema.TypeToolDecided, schema.TypeToolResultRecorded:
		r.Lane = LaneTool
	case schema.TypeHookEventStarted, schema.TypeHookEventRan:
		r.Lane = LaneFire
	}
	return r
}

// vacuumed holds the gaps that the Vacuumed events of a log explain: the
// positions they removed, and the sequences of each session stream.
type vacuumed struct {
	positions []schema.PositionRange
	seqs      map[string][]schema.PositionRange // by stream
}

// read folds the next event of the vacuum stream.
func (v *vacuumed) read(ev eventlog.Event) error {
	p, err := schema.Decode(ev)
	if err != nil {
		return err
	}
	vac, ok := p.(*schema.Vacuumed)
	if !ok {
		return eventlog.Corruptf(ev.Stream, ev.Seq, "%s does not belong in %s", ev.Type, schema.VacuumStream)
	}
	if v.seqs == nil {
		v.seqs = map[string][]schema.PositionRange{}
	}
	v.positions = append(v.positions, vac.Positions...)
	for _, s := range vac.Sessions {
		stream := projection.SessionStream(s.ID)
		v.seqs[stream] = append(v.seqs[stream], schema.PositionRange{First: s.First, Last: s.Last})
	}
	return nil
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
