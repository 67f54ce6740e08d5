package reprise

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reprise-dev/reprise/deletion"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// Transition is the log's record of one change of the agent's current
// session, step by step: what Start, Restore, New, Clear, Fork, Compact
// and End return.
type Transition = projection.Transition

// Restore is Transition's former name.
//
// Deprecated: use Transition; New, Clear and End are no restores.
type Restore = Transition

// Source says how a session became current: what SessionStart hooks get.
type Source = schema.Source

// The sources SessionStart hooks get.
const (
	SourceStartup = schema.SourceStartup // the host process started (Start)
	SourceResume  = schema.SourceResume  // switched to an existing session (Restore)
	SourceNew     = schema.SourceNew     // a fresh session (New)
	SourceClear   = schema.SourceClear   // a fresh session replacing a cleared one (Clear)
	SourceCompact = schema.SourceCompact // the same session, compacted (Compact)
	SourceFork    = schema.SourceFork    // a copy of another session (Fork)
)

// Reason says why a session stopped being current: what SessionEnd hooks
// get. Restore and Fork end the current session with ReasonResume, New and
// Clear with ReasonClear; End takes any of the others.
type Reason = schema.Reason

// The reasons SessionEnd hooks get.
const (
	ReasonResume          = schema.ReasonResume
	ReasonClear           = schema.ReasonClear
	ReasonComplete        = schema.ReasonComplete
	ReasonError           = schema.ReasonError
	ReasonAbort           = schema.ReasonAbort
	ReasonTimeout         = schema.ReasonTimeout
	ReasonUserExit        = schema.ReasonUserExit
	ReasonLogout          = schema.ReasonLogout
	ReasonPromptInputExit = schema.ReasonPromptInputExit
	ReasonOther           = schema.ReasonOther
)

// Agent is one agent host's lifecycle: at most one current session, and the
// restores that switch it. Get one with Engine.Agent. Methods are safe for
// concurrent use; restores of one agent never overlap.
type Agent struct {
	e      *Engine
	id     string
	stream string

	mu     sync.Mutex  // held for the whole of a restore, and while a tool call's step decides
	loaded atomic.Bool // set under mu once the log is read; read without it by load
	first  sync.Mutex  // held by load until the log is first read
	view   *projection.Agent
	lanes  map[lane]bool // the tool calls and fires this process has a step of in flight

	// The async hooks this process runs for the agent (ids), the ends
	// not recorded yet, and how many of their recorders may hold mu.
	running   sync.Map
	asyncMu   sync.Mutex
	ended     []endedRun
	recording atomic.Int32
	// acting holds, while a lifecycle action (a restore, prompt, stop or
	// compaction) holds the agent, what it is, in words: a Fire then fails
	// with ErrAgentBusy rather than wait for it, and ErrAgentBusy names it.
	acting atomic.Pointer[string]
}

// Agent returns agent id, reading its lifecycle from the log on first use.
// If the log ends inside a restore (the process that ran it died, or an
// action was interrupted with ErrInterrupted), the restore is rolled
// forward first: its remaining steps run, and hooks whose intent was
// recorded without an outcome are closed as interrupted, never run again.
func (e *Engine) Agent(ctx context.Context, id string) (*Agent, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	e.mu.Lock()
	a := e.agents[id]
	if a == nil {
		a = &Agent{e: e, id: id, stream: projection.AgentStream(id), view: projection.NewAgent(id), lanes: map[lane]bool{}}
		e.agents[id] = a
	}
	e.mu.Unlock()
	due, err := a.load(ctx)
	if err != nil {
		return nil, err
	}
	if due != nil {
		// A compaction whose process died before its PostCompact ran.
		if _, err := a.postCompact(ctx, due); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// load reads a's log on first use, rolling forward what a dead process
// left (see Engine.Agent), and returns the compaction whose PostCompact is
// still due, for the caller to fire once a.mu is let go.
func (a *Agent) load(ctx context.Context) (due *Transition, err error) {
	if !a.loaded.Load() {
		// First reads one at a time, under a lock no action holds: a
		// caller that waits here waits for a read, never for an action
		// that another caller began once the read was done.
		a.first.Lock()
		defer a.first.Unlock()
	}
	if !a.mu.TryLock() {
		if a.loaded.Load() {
			// An action of this process holds the agent: what is in
			// flight is its own, not a dead process's. The caller's
			// action gets ErrAgentBusy, rather than wait behind it.
			return nil, nil
		}
		a.mu.Lock()
	}
	defer a.mu.Unlock()
	if a.loaded.Load() && !fsm.InFlight(a.view.State) {
		return nil, nil
	}
	release, err := a.lockStream(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := a.sync(ctx); err != nil {
		return nil, err
	}
	first := !a.loaded.Load()
	if first {
		if err := a.closeOrphans(ctx); err != nil {
			return nil, err
		}
		if err := a.closeAsyncOrphans(ctx); err != nil {
			return nil, err
		}
	}
	a.loaded.Store(true)
	if n := len(a.view.History); n > 0 && a.view.State == fsm.Active {
		// Compacted: a blocked compaction has no SessionCompacted.
		if r := a.view.History[n-1]; r.Source == schema.SourceCompact && r.SummaryUUID != "" && a.view.Fires[postCompactID(r.ID)] == nil {
			return &r, nil
		}
	}
	return nil, nil
}

// lockStream takes the agent's lock in a store shared between processes;
// for other stores the in-process lock is enough. a.mu must be held.
func (a *Agent) lockStream(ctx context.Context) (release func(), err error) {
	locker, ok := a.e.store.(eventlog.StreamLocker)
	if !ok {
		return func() {}, nil
	}
	release, err = locker.TryLock(ctx, a.stream)
	if errors.Is(err, eventlog.ErrBusy) {
		return nil, fmt.Errorf("%w: agent %s: %w", ErrAgentBusy, a.id, err)
	}
	return release, err
}

// lockLane takes the lock of the tool call or fire lane (toolLane, fireLane)
// of the agent in a store that has locks, and fails with ErrAgentBusy
// while another holder has it: a process holds it from before it records
// the lane's hooks as started until it has recorded how they ended, so
// that another one can tell the hooks of a live process from a dead one's.
// It must be taken before a.mu, because a store may wait for a free lock
// slot while the lanes of this process that hold the others need a.mu to
// end. The context it returns ends if the lock is lost (eventlog.Hold):
// the lane's hooks are then cancelled, as when the caller gives up, since
// another process may close them.
func (a *Agent) lockLane(ctx context.Context, l lane) (held context.Context, release func(), err error) {
	locker, ok := a.e.store.(eventlog.StreamLocker)
	if !ok {
		return ctx, func() {}, nil
	}
	held, release, err = eventlog.Hold(ctx, locker, l.kind+"/"+a.id+"/"+l.id)
	if errors.Is(err, eventlog.ErrBusy) {
		return nil, nil, fmt.Errorf("%w: agent %s: %s: %w", ErrAgentBusy, a.id, l, err)
	}
	return held, release, err
}

// lane is a tool call or a fire by its id: the two name spaces are apart,
// so a fire may take a tool call's id.
type lane struct{ kind, id string }

// toolLane and fireLane are the lanes of tool call id and fire id.
func toolLane(id string) lane { return lane{"tool", id} }
func fireLane(id string) lane { return lane{"fire", id} }

// String names l for people: "tool call ID" or "fire ID".
func (l lane) String() string {
	if l.kind == "fire" {
		return "fire " + l.id
	}
	return "tool call " + l.id
}

// closeOrphans closes, as interrupted, the tool calls whose hooks the log
// shows running in a process that is gone: those whose lock it can take.
// The calls of a process that is alive, whose locks it holds, are left to
// it. a.mu must be held, and no call of this process may be running on
// the agent: a new Agent's first read.
func (a *Agent) closeOrphans(ctx context.Context) error {
	var dead []lane
	for _, l := range a.orphanLanes() {
		_, release, err := a.lockLane(ctx, l)
		if errors.Is(err, ErrAgentBusy) {
			continue
		}
		if err != nil {
			return err
		}
		defer release()
		dead = append(dead, l)
	}
	if len(dead) == 0 {
		return nil
	}
	// A live process may have ended a lane's hooks, and let its lock go,
	// after the log was read.
	if err := a.sync(ctx); err != nil {
		return err
	}
	for {
		act := lifecycle.Action{Kind: lifecycle.Continue}
		for _, l := range dead {
			if l.kind == "fire" {
				if f := a.view.Fires[l.id]; f != nil && f.State == fsm.FireHooks {
					act.OrphanFires = append(act.OrphanFires, l.id)
				}
			} else if c := a.view.Tools[l.id]; c != nil && fsm.ToolInFlight(c.State) {
				act.Orphans = append(act.Orphans, l.id)
			}
		}
		if len(act.Orphans)+len(act.OrphanFires) == 0 {
			return nil
		}
		if _, err := a.step(ctx, act); err != nil {
			return err
		}
	}
}

// take locks the agent for an action, or reports false when another
// action holds it. The recording of an async hook's end holds it only for
// its append: take waits for that.
func (a *Agent) take() bool {
	if a.mu.TryLock() {
		return true
	}
	if a.recording.Load() > 0 {
		a.mu.Lock()
		return true
	}
	return a.mu.TryLock()
}

// Doing says what lifecycle action (a restore, prompt, stop or
// compaction) holds the agent in this process, in words, such as
// "resume to s2"; "" when none does.
func (a *Agent) Doing() string {
	if p := a.acting.Load(); p != nil {
		return *p
	}
	return ""
}

// busy is the ErrAgentBusy of an action that found the agent held,
// naming what holds it when that is known.
func (a *Agent) busy() error {
	if doing := a.Doing(); doing != "" {
		return fmt.Errorf("%w: agent %s: %s in progress", ErrAgentBusy, a.id, doing)
	}
	return fmt.Errorf("%w: agent %s", ErrAgentBusy, a.id)
}

// ID returns the agent's id.
func (a *Agent) ID() string { return a.id }

// Current returns the agent's current session, "" before its first restore.
func (a *Agent) Current() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.view.Current
}

// History returns the agent's completed restores, oldest first.
func (a *Agent) History() []Transition {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Transition(nil), a.view.History...)
}

// readNew folds into the agent's view what other writers appended to its
// stream since. a.mu is held.
func (a *Agent) readNew(ctx context.Context) error {
	return a.e.store.ReadStream(ctx, a.stream, a.view.Head+1, a.view.Apply)
}

// sync applies what other writers appended to the agent's stream and rolls
// forward a step left in flight. a.mu must be held.
func (a *Agent) sync(ctx context.Context) error {
	if err := a.readNew(ctx); err != nil {
		return fmt.Errorf("read agent %s: %w", a.id, err)
	}
	if !fsm.InFlight(a.view.State) {
		return nil
	}
	id := ""
	if a.view.Restore != nil {
		id = a.view.Restore.ID
	} else if a.view.Stop != nil {
		id = a.view.Stop.ID
	}
	a.e.log.Warn("rolling forward an interrupted step", "agent", a.id, "id", id, "state", a.view.State)
	_, err := a.step(ctx, lifecycle.Action{Kind: lifecycle.Continue})
	return err
}

// do takes the agent for act, or fails if another action is running, in
// this process or, on a shared store, in another; it rolls forward a step
// left in flight, runs prepare (which names the session act creates, and
// writes nothing), then performs act. It returns the restore act
// completed, nil when it changed nothing, and what the action decided.
func (a *Agent) do(ctx context.Context, act lifecycle.Action, prepare func(context.Context, *lifecycle.Action) error) (r *Transition, out lifecycle.Report, err error) {
	if !a.take() {
		return nil, lifecycle.Report{}, a.busy()
	}
	defer a.mu.Unlock()
	what := act.Kind.String()
	if act.To != "" {
		what += " to " + act.To
	}
	a.acting.Store(&what)
	defer a.acting.Store(nil)
	if obs := a.e.observer; obs != nil {
		session := act.To
		if session == "" {
			session = a.view.Current
		}
		var end func(*Transition, error)
		ctx, end = obs.Action(ctx, a.id, act.Kind.String(), session)
		defer func() { end(r, err) }()
	}
	release, err := a.lockStream(ctx)
	if err != nil {
		return nil, lifecycle.Report{}, err
	}
	defer release()
	if err := a.sync(ctx); err != nil {
		return nil, lifecycle.Report{}, err
	}
	if prepare != nil {
		// The stepper refuses to leave a deleted session; say so before
		// prepare reads it.
		if err := a.currentDeleted(ctx); err != nil {
			return nil, lifecycle.Report{}, err
		}
		if err = prepare(ctx, &act); err != nil {
			return nil, lifecycle.Report{}, err
		}
	}
	// Another process may have deleted a session this Engine has cached:
	// the stepper must see the tombstone before it begins.
	if err := a.e.seeTombstones(ctx, a.view.Current, act.To); err != nil {
		return nil, lifecycle.Report{}, err
	}
	before := len(a.view.History)
	out, err = a.step(ctx, act)
	if err == nil && out.Blocked != "" {
		err = fmt.Errorf("%w: %s", ErrCompactionBlocked, out.Blocked)
		if cause := ctx.Err(); cause != nil {
			err = fmt.Errorf("%w: %w", err, cause)
		}
	}
	if len(a.view.History) == before {
		return nil, out, err
	}
	done := a.view.History[len(a.view.History)-1]
	return &done, out, err
}

// step is the shell around lifecycle.Step: a lifecycle.Driver decides
// each step, and step appends the records it decided, performs the effect
// it asked for and feeds the outcome back, until the action is finished.
// Hooks get ctx; once a step is in flight, appends no longer stop when ctx
// is cancelled, so a step that has begun always ends recorded. a.mu must
// be held.
//
// When ctx is done the loop stops at the next step boundary: the outcome
// of hooks that were running is still recorded (under recordTimeout), but
// no new step starts, and a step left in flight makes the error
// ErrInterrupted.
func (a *Agent) step(ctx context.Context, act lifecycle.Action) (lifecycle.Report, error) {
	wctx := context.WithoutCancel(ctx)
	a.flushAsync(wctx) // before the step decides: a prompt hands their context on
	d := lifecycle.NewDriver(a.view, act, a.e.newID, a.e.stopCap)
	var matched []hookexec.Hook // what the last MatchHooks found, for the RunHooks that follows
	for !d.Done() {
		if err := ctx.Err(); err != nil && !d.RecordsHooks() {
			return d.Report(), a.interrupted(err)
		}
		ready, err := a.decide(ctx, wctx, d, act)
		if err != nil {
			return d.Report(), err
		}
		if ready.Effect == nil {
			continue
		}
		if eff, ok := ready.Effect.(lifecycle.MatchHooks); ok {
			matched = a.e.HooksFor(wctx, eff.Event, eff.Value, eff.Session)
			d.Performed(lifecycle.HooksMatched{Event: eff.Event, Hooks: hookexec.Names(matched), Status: statusMessages(matched)})
			continue
		}
		cwd := ""
		if eff, ok := ready.Effect.(lifecycle.RunHooks); ok {
			cwd = a.view.Cwds[eff.Session]
			if eff.Fire != nil && eff.Fire.Event == schema.HookCwdChanged {
				// Claude Code fires it from the directory it moved to.
				cwd = cmp.Or(projection.NewCwd(eff.Fire.Fields), cwd)
			}
		}
		if laneAction(act) {
			// The hooks of one tool call do not hold the agent: the calls
			// of one answer run theirs at once.
			a.mu.Unlock()
			outcome := a.perform(ctx, wctx, ready.Effect, matched, cwd)
			a.mu.Lock()
			d.Performed(outcome)
			continue
		}
		d.Performed(a.perform(ctx, wctx, ready.Effect, matched, cwd))
	}
	return d.Report(), nil
}

// decide asks d for the next step of act, with the sessions it may use
// read and locked, and appends its records. A failed append on a session's
// stream is given to d, which decides what follows; any other failure is
// the action's.
func (a *Agent) decide(ctx, wctx context.Context, d *lifecycle.Driver, act lifecycle.Action) (lifecycle.Ready, error) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	switch {
	case ctx.Err() != nil:
		actx, cancel = context.WithTimeout(wctx, recordTimeout)
	case fsm.InFlight(a.view.State):
		actx = wctx
	}
	defer cancel()
	if a.onCurrent() {
		// Another process may have deleted the session after this action
		// checked it and before its intent was recorded: the stepper must
		// see the tombstone to end the step without writing to the session.
		if err := a.e.seeTombstones(actx, a.view.Current); err != nil {
			return lifecycle.Ready{}, err
		}
	}
	views, err := a.views(actx, act)
	if err != nil {
		return lifecycle.Ready{}, err
	}
	defer views.unlock()
	ready, err := d.Ready(views.sessions, a.e.stamp())
	if why := views.unreadable[act.To]; why != nil && errors.Is(err, ErrSessionNotFound) {
		// The target exists but cannot be read: say why.
		err = fmt.Errorf("%w: %w", ErrSessionNotFound, why)
	}
	if err != nil {
		return lifecycle.Ready{}, err
	}
	if ready.Report.Warning != "" {
		a.e.log.Warn(ready.Report.Warning, "agent", a.id, "state", a.view.State)
	}
	if len(ready.Records) > 0 {
		err = a.append(actx, d, act, ready, views)
	}
	var failed *appendError
	if errors.As(err, &failed) {
		d.AppendFailed(failed.err)
		return lifecycle.Ready{}, nil
	}
	return ready, err
}

// onCurrent reports whether the agent's step in flight is a Prompt, Stop
// or Compact whose hooks' outcome is next: a step on the current session
// whose intent a deletion by another process may have preceded.
func (a *Agent) onCurrent() bool {
	s := a.view.State
	return s == fsm.Prompting || s == fsm.Stopping || s == fsm.PreCompacting
}

// recordTimeout bounds the append that records what hooks cut short by a
// cancelled context did: the caller has given up, but the log must say
// how the hooks ended.
const recordTimeout = 5 * time.Second

// interrupted is the error of an action stopped because its context ended
// with cause: ErrInterrupted when it left a step in flight, cause alone
// when it had not begun.
func (a *Agent) interrupted(cause error) error {
	if !fsm.InFlight(a.view.State) {
		return cause
	}
	return fmt.Errorf("%w: agent %s stopped in state %s (%w); the next call on agent %s finishes the restore",
		ErrInterrupted, a.id, a.view.State, cause, a.id)
}

// sessionViews are the sessions a step may read or write, locked, with
// what the stepper sees of them.
type sessionViews struct {
	byID       map[string]*session
	sessions   map[string]*lifecycle.Session
	locked     []*session
	unreadable map[string]error // why a session that exists could not be read
}

func (v *sessionViews) unlock() {
	for _, s := range v.locked {
		s.mu.Unlock()
	}
}

// views loads and locks the sessions the next step of act may need: the
// agent's current one, act's target and those of the step in flight. A
// session that cannot be read is left out; the stepper says what that
// means. Locks are taken in id order, so two agents never wait on each
// other.
func (a *Agent) views(ctx context.Context, act lifecycle.Action) (*sessionViews, error) {
	ids := []string{a.view.Current, act.To}
	if r := a.view.Restore; r != nil {
		ids = append(ids, r.From, r.To)
	}
	if st := a.view.Stop; st != nil {
		ids = append(ids, st.Session)
	}
	if pr := a.view.Prompt; pr != nil {
		ids = append(ids, pr.Session)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	v := &sessionViews{byID: map[string]*session{}, sessions: map[string]*lifecycle.Session{}, unreadable: map[string]error{}}
	for _, id := range ids {
		if id == "" {
			continue
		}
		s, err := a.e.load(ctx, id)
		if err != nil && ctx.Err() != nil {
			v.unlock()
			return nil, ctx.Err()
		}
		if err != nil {
			if !errors.Is(err, ErrSessionNotFound) {
				v.unreadable[id] = err
			}
			continue
		}
		s.mu.Lock()
		v.locked = append(v.locked, s)
		v.byID[id] = s
		v.sessions[id] = s.view()
	}
	return v, nil
}

// appendError is an append that failed on a session's stream rather than
// on the agent's: the stepper decides what follows.
type appendError struct{ err error }

func (e *appendError) Error() string { return e.err.Error() }

// append writes ready's records, a step of act, and folds them into the
// agent and the sessions. A moved agent stream means another process won
// the agent, ErrAgentBusy, unless act is a tool call's and the agent is
// still between actions: the other process stepped another call of the
// answer, and the stepper decides again from what it wrote. The sessions
// of views must be locked.
func (a *Agent) append(ctx context.Context, d *lifecycle.Driver, act lifecycle.Action, ready lifecycle.Ready, views *sessionViews) error {
	for _, rec := range ready.Records {
		if s := views.byID[projection.SessionID(rec.Stream)]; s != nil && s.conv.Deleted {
			// Nothing follows a tombstone, whatever a stale step decided.
			return deletion.Deleted(s.conv.ID)
		}
	}
	evs, err := a.e.appendTimed(ctx, ready.Expect, ready.Records)
	var conflict *eventlog.ConflictError
	switch {
	case errors.As(err, &conflict) && conflict.Stream == a.stream:
		if laneAction(act) {
			if rerr := a.readNew(ctx); rerr != nil {
				return errors.Join(err, rerr)
			}
			if !fsm.InFlight(a.view.State) {
				return &appendError{err: err}
			}
		}
		return fmt.Errorf("%w: agent %s moved: %w", ErrAgentBusy, a.id, err)
	case err != nil:
		if errors.As(err, &conflict) {
			if s := views.byID[projection.SessionID(conflict.Stream)]; s != nil {
				if cerr := a.e.catchUp(ctx, s); cerr != nil {
					return errors.Join(err, cerr)
				}
			}
		}
		return &appendError{err: err}
	}
	for i, ev := range evs {
		if s := views.byID[projection.SessionID(ev.Stream)]; s != nil && ev.Stream != a.stream {
			if err := s.fold(ev, ready.Payloads[i]); err != nil {
				return err
			}
		}
	}
	for _, saved := range ready.Saves {
		if s := views.byID[saved.Session]; s != nil {
			s.dropPending(saved.N)
		}
	}
	// Sessions this append wrote messages to: their transcript files, when
	// hooks have been given them, must hold the messages at once.
	var wrote *session
	for _, ev := range evs {
		if s := views.byID[projection.SessionID(ev.Stream)]; s != nil && s != wrote {
			wrote = s
			a.e.keepTranscript(s, false)
		}
	}
	if err := d.Appended(ready, evs); err != nil {
		return err
	}
	if a.e.observer != nil {
		for _, ev := range evs {
			if ev.Stream == a.stream {
				a.e.observer.Step(ctx, ev)
			}
		}
	}
	return nil
}

// perform carries out effect and returns its outcome for the stepper.
func (a *Agent) perform(ctx, wctx context.Context, effect lifecycle.Effect, matched []hookexec.Hook, cwd string) lifecycle.Outcome {
	switch eff := effect.(type) {
	case lifecycle.DropSessionHooks:
		a.e.scoped.Drop(eff.Session)
		return nil
	case lifecycle.RunHooks:
		if !slices.Equal(hookexec.Names(matched), eff.Hooks) {
			panic(fmt.Sprintf("reprise: RunHooks of %q follows a MatchHooks that found %q", eff.Hooks, hookexec.Names(matched)))
		}
		ran := a.runHooks(ctx, wctx, eff, matched, cwd)
		for _, o := range ran.Outcomes {
			if o.Status != schema.HookOK {
				a.e.log.Warn("hook did not succeed", "agent", a.id, "event", eff.Event,
					"hook", o.Name, "status", o.Status, "error", o.Error)
			}
		}
		return ran
	}
	panic(fmt.Sprintf("reprise: unknown effect %T", effect))
}

// runHooks runs eff's hooks through the Engine's runner, with the session's
// transcript brought up to date and, for SessionStart command hooks, an
// empty CLAUDE_ENV_FILE whose content is returned; cwd, when set, is
// where a CwdChanged moved the session.
func (a *Agent) runHooks(ctx, wctx context.Context, eff lifecycle.RunHooks, hooks []hookexec.Hook, cwd string) lifecycle.HooksRan {
	e := a.e
	id := eff.Session
	env := hookexec.CommandEnv{Now: e.now, Spill: func(text string) (string, error) { return e.spill(id, text) },
		Background: a.background(id, eff.Event, a.stepID(eff)), Cwd: cwd}
	if obs := e.observer; obs != nil {
		var end func([]schema.HookOutcome)
		ctx, env.Extra, end = obs.Hooks(ctx, eff.Event, id, hookValue(eff), hooks)
		var ran lifecycle.HooksRan
		defer func() { end(ran.Outcomes) }()
		ran = a.runHooksIn(ctx, wctx, eff, hooks, env)
		return ran
	}
	return a.runHooksIn(ctx, wctx, eff, hooks, env)
}

// statusMessages is the statusMessage of each of hooks, on one line and
// at most maxStatus characters, nil when none has one.
func statusMessages(hooks []hookexec.Hook) []string {
	if !slices.ContainsFunc(hooks, func(h hookexec.Hook) bool { return h.StatusMessage != "" }) {
		return nil
	}
	out := make([]string, len(hooks))
	for i, h := range hooks {
		out[i] = projection.OneLine(h.StatusMessage, maxStatus)
	}
	return out
}

// maxStatus is how many characters of a hook's statusMessage its intent
// records.
const maxStatus = 200

// stepID is the id of the step whose hooks eff runs: the tool call's, or
// that of the restore, prompt or stop in flight. a.mu is held, or eff is
// a tool call's.
func (a *Agent) stepID(eff lifecycle.RunHooks) string {
	v := a.view
	switch {
	case eff.Tool != nil:
		return eff.Tool.ID
	case eff.Fire != nil:
		return eff.Fire.ID
	case v.Prompt != nil:
		return v.Prompt.ID
	case v.Stop != nil:
		return v.Stop.ID
	case v.Restore != nil:
		return v.Restore.ID
	}
	return ""
}

// gate is the answer of hooks that may block what follows them: when the
// caller cancelled while they ran, they did not all answer, so what they
// guard does not happen.
func gate(ctx context.Context, blocked bool, reason string) (bool, string) {
	if ctx.Err() != nil && !blocked {
		return true, "cancelled before the hooks answered"
	}
	return blocked, reason
}

// hookValue is what eff's hooks match on: its source, reason, trigger or
// tool.
func hookValue(eff lifecycle.RunHooks) string {
	if eff.Tool != nil {
		return eff.Tool.Name
	}
	if eff.Fire != nil {
		return eff.Fire.Value
	}
	switch eff.Event {
	case hookexec.SessionStart:
		return string(eff.Source)
	case hookexec.SessionEnd:
		return string(eff.Reason)
	case hookexec.PreCompact:
		return eff.Trigger
	}
	return ""
}

// runHooksIn is runHooks with its command environment set.
func (a *Agent) runHooksIn(ctx, wctx context.Context, eff lifecycle.RunHooks, hooks []hookexec.Hook, env hookexec.CommandEnv) lifecycle.HooksRan {
	e := a.e
	id := eff.Session
	var msgs []Message
	var sub *schema.Subagent
	transcript := e.TranscriptPath(id)
	if s, err := e.session(wctx, id); err == nil {
		s.mu.Lock()
		env.ProjectDir, sub = s.conv.Cwd, s.conv.Subagent
		msgs = s.conv.Messages[:len(s.conv.Messages):len(s.conv.Messages)] // appends never touch these
		if len(hooks) > 0 {
			_, err = e.syncTranscript(s)
		}
		s.mu.Unlock()
		if err != nil {
			e.log.Warn("transcript not updated before hooks", "session", id, "error", err)
		}
		if errors.Is(err, ErrNotPrivate) {
			// What another user may have planted there is not handed on.
			transcript = ""
		}
	}
	now := e.now().UnixMilli()
	cwd := cmp.Or(env.Cwd, env.ProjectDir) // what the hooks are told
	// Inside a subagent, hooks are told the parent's session and
	// transcript, and the subagent's agent_id and agent_type, as Claude
	// Code tells them; its own transcript is SubagentStop's
	// agent_transcript_path.
	told, own, agentID, agentType := id, transcript, "", ""
	if sub != nil {
		told, transcript, agentID, agentType = sub.Session, e.TranscriptPath(sub.Session), sub.AgentID, sub.Type
		eff.PromptID = cmp.Or(eff.PromptID, sub.PromptID) // the parent's turn's
	}
	if eff.Fire != nil {
		return a.runFire(ctx, eff, hooks, hookexec.EventInput{SessionID: told, TranscriptPath: transcript, Cwd: cwd,
			PromptID: eff.PromptID, PermissionMode: e.permissionMode, AgentID: agentID, AgentType: agentType,
			Fields: eff.Fire.Fields, Messages: msgs}, env)
	}
	if eff.Tool != nil {
		return a.runToolHooks(ctx, eff, hooks, hookexec.ToolInput{SessionID: told, TranscriptPath: transcript,
			Cwd: cwd, Timestamp: now, PromptID: eff.PromptID, AgentID: agentID, AgentType: agentType, Messages: msgs}, env)
	}
	switch eff.Event {
	case schema.HookSubagentStart, schema.HookSubagentStop:
		return a.runSubagentHooks(ctx, eff, sub, hooks, hookexec.EventInput{SessionID: told, TranscriptPath: transcript,
			Cwd: cwd, PromptID: eff.PromptID, PermissionMode: e.permissionMode, Messages: msgs}, own, env)
	case hookexec.SessionEnd:
		outcomes := e.runner.SessionEnd(ctx, hooks, hookexec.SessionEndInput{
			SessionID: id, TranscriptPath: transcript, Timestamp: now, Cwd: cwd,
			Reason: eff.Reason, FinalMessage: eff.FinalMessage, Error: eff.Error, Messages: msgs}, env)
		return lifecycle.HooksRan{Outcomes: e.scoped.Settle(id, hooks, outcomes)}
	case hookexec.Stop:
		outcomes, blocked, reason, context := e.runner.Stop(ctx, hooks, hookexec.StopInput{
			SessionID: id, TranscriptPath: transcript, Cwd: cwd, StopHookActive: eff.StopActive,
			StopReason: eff.StopReason, LastAssistantMessage: eff.FinalMessage, PromptID: eff.PromptID,
			PermissionMode: e.permissionMode, Messages: msgs}, env)
		return lifecycle.HooksRan{Outcomes: e.scoped.Settle(id, hooks, outcomes), Blocked: blocked, Reason: reason, Context: context}
	case hookexec.UserPromptSubmit:
		outcomes, blocked, reason, text := e.runner.Prompt(ctx, hooks, hookexec.PromptInput{
			SessionID: id, TranscriptPath: transcript, Cwd: cwd, Prompt: eff.Prompt, PromptID: eff.PromptID,
			PermissionMode: e.permissionMode, Messages: msgs}, env)
		blocked, reason = gate(ctx, blocked, reason)
		return lifecycle.HooksRan{Outcomes: e.scoped.Settle(id, hooks, outcomes), Blocked: blocked, Reason: reason, Context: text}
	case hookexec.PreCompact:
		outcomes, blocked, reason, instructions := e.runner.PreCompact(ctx, hooks, hookexec.PreCompactInput{
			SessionID: id, TranscriptPath: transcript, Cwd: cwd, Trigger: eff.Trigger,
			CustomInstructions: eff.Instructions, Messages: msgs}, env)
		blocked, reason = gate(ctx, blocked, reason)
		ran := lifecycle.HooksRan{Outcomes: e.scoped.Settle(id, hooks, outcomes), Blocked: blocked, Reason: reason, Instructions: instructions}
		if eff.Summarize && !blocked {
			ran.Summary, ran.Blocked, ran.Reason = summarize(ctx, hookexec.AppendInstructions(eff.Instructions, instructions))
		}
		return ran
	}
	run := ""
	if r := a.view.Restore; r != nil { // always, while SessionStart hooks run; a.mu is held
		run = r.ID
	} else {
		run = e.newID()
	}
	envName, envFile := e.newEnvFile(id, run, hooks)
	env.EnvFile = envFile
	outcomes, text := e.runner.SessionStart(ctx, hooks, hookexec.SessionStartInput{
		SessionID: id, TranscriptPath: transcript, Timestamp: now, Cwd: cwd, Source: eff.Source,
		InitialPrompt: eff.InitialPrompt, Messages: msgs}, env)
	ran := lifecycle.HooksRan{Outcomes: e.scoped.Settle(id, hooks, outcomes), Context: text, EnvFile: env.EnvFile}
	if envName != "" {
		ran.Env = e.takeEnvFile(id, envName)
	}
	return ran
}

// envFileName returns the name, in the Engine's Files, of the
// CLAUDE_ENV_FILE of the SessionStart run of session id in restore run:
// <id>.env-<run>. Each run has its own file, so that two agents starting
// one session at once never share one, and the run's record names it. The
// file is removed once its content is recorded.
func envFileName(id, run string) string { return id + ".env-" + run }

// spill saves hook output too long to inject, for session id, and returns
// the path that names it.
func (e *Engine) spill(id, text string) (string, error) {
	name := id + "-hook-" + e.newID() + ".txt"
	if err := e.files.Replace(name, func(w io.Writer) error {
		_, err := io.WriteString(w, text)
		return err
	}); err != nil {
		return "", fmt.Errorf("spill context: %w", err)
	}
	return e.files.Path(name), nil
}

// Start is the startup restore: it makes session id current and runs the
// SessionStart hooks with source "startup", without any SessionEnd. Use it
// when the host process starts, including to resume the session the log
// already has as current. A host that reopens a stored session at its
// start, as Claude Code's --resume does, passes WithResume, and the hooks
// get source "resume". An empty id is a no-op that returns nil, nil.
func (a *Agent) Start(ctx context.Context, id string, opts ...ActionOption) (*Transition, error) {
	r, _, err := a.do(ctx, action(lifecycle.Action{Kind: lifecycle.Start, To: id}, opts), nil)
	return r, err
}

// ActionOption sets an optional input of a lifecycle action.
type ActionOption func(*lifecycle.Action)

// WithInitialPrompt gives Start or New the first prompt of the session,
// which SessionStart hooks receive as initialPrompt. It is recorded, so a
// restore finished after a crash passes the same value.
func WithInitialPrompt(prompt string) ActionOption {
	return func(a *lifecycle.Action) { a.Prompt = prompt }
}

// WithResume makes Start a resume at process start: SessionStart hooks get
// source "resume", as Claude Code's --resume and --continue give them,
// rather than "startup".
func WithResume() ActionOption {
	return func(a *lifecycle.Action) { a.Resume = true }
}

// WithStopReason tells Stop why the turn ended (e.g. "end_turn"); it is
// recorded and Stop function hooks receive it as StopReason.
func WithStopReason(reason string) ActionOption {
	return func(a *lifecycle.Action) { a.StopReason = reason }
}

// WithTrigger tells Compact what started it, "manual" (the default) or
// "auto"; PreCompact hooks receive it and match on it.
func WithTrigger(trigger string) ActionOption {
	return func(a *lifecycle.Action) { a.Trigger = trigger }
}

// WithInstructions gives Compact the user's custom instructions, which
// PreCompact hooks receive.
func WithInstructions(text string) ActionOption {
	return func(a *lifecycle.Action) { a.Instructions = text }
}

func action(act lifecycle.Action, opts []ActionOption) lifecycle.Action {
	for _, o := range opts {
		o(&act)
	}
	return act
}

// Restore is the runtime restore from the current session to session id:
// save the current session, run its SessionEnd hooks (reason "resume"),
// load the target, run its SessionStart hooks (source "resume") and inject
// their context as a meta user message. Each step is recorded durably
// before the next side effect.
//
// An empty id or the current session is a no-op that returns nil, nil. A
// target that does not exist or cannot be read returns ErrSessionNotFound
// before anything is recorded or run. A failed save or a failed hook is
// logged and recorded, and the restore goes on. Cancelling ctx cancels the
// hooks that are running, records their outcome and stops at that step
// boundary with ErrInterrupted; the next call on the agent finishes the
// restore.
func (a *Agent) Restore(ctx context.Context, id string) (*Transition, error) {
	r, _, err := a.do(ctx, lifecycle.Action{Kind: lifecycle.Restore, To: id}, nil)
	return r, err
}
