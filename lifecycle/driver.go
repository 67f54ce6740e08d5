package lifecycle

import (
	"cmp"
	"fmt"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// Driver carries one action through Step, as every shell does: it holds
// the Input from one step to the next, checks each decided step against
// the lifecycle table, folds what the shell appended into the agent, keeps
// the outcome of the shell's effect for the next step and gathers the
// steps' reports. It does no I/O: the shell reads the sessions, appends,
// keeps the sessions it appended to up to date, and performs effects. A
// Driver is used by one goroutine.
//
// The shell's loop:
//
//	for !d.Done() {
//		ready, err := d.Ready(sessions, now)
//		// on err: stop
//		// if ready has records: append them, conditional on ready.Expect;
//		// on a failed append: d.AppendFailed(err) and go round;
//		// else d.Appended(ready, events), stopping on its error
//		// if ready.Effect is not nil: d.Performed(outcome of the effect)
//	}
type Driver struct {
	agent   *projection.Agent
	action  Action
	newID   func() string
	stopCap int

	outcome Outcome // for the next Step
	given   Outcome // what the last Step was given, for the step that follows a failed append
	tries   int     // consecutive failed appends of one step
	report  Report
	done    bool
}

// NewDriver returns a Driver of act on agent. The Driver folds the steps
// appended to the agent's stream into agent, which it changes. Ids come
// from newID; stopCap bounds consecutive blocked stops.
func NewDriver(agent *projection.Agent, act Action, newID func() string, stopCap int) *Driver {
	return &Driver{agent: agent, action: act, newID: newID, stopCap: stopCap}
}

// Ready decides the next step from sessions (those the step may use, as
// Input.Sessions), stamping its records with now (UTC unix nanoseconds).
// It refuses a step the lifecycle table does not allow from the agent's
// state, before anything is written. A Ready without records needs no
// Appended.
func (d *Driver) Ready(sessions map[string]*Session, now int64) (Ready, error) {
	ready, err := Step(d.Input(sessions, now))
	if err != nil {
		return Ready{}, err
	}
	if err := d.check(ready); err != nil {
		return Ready{}, err
	}
	d.given = d.outcome
	if failed, ok := d.outcome.(AppendFailed); ok {
		d.given = failed.Outcome
	}
	d.outcome = nil
	if len(ready.Records) == 0 {
		return ready, d.advance(ready)
	}
	return ready, nil
}

// check refuses ready when the lifecycle table, or the tool table for a
// tool call's step, does not allow one of its steps on the agent's stream.
func (d *Driver) check(ready Ready) error {
	state, stream := d.agent.State, projection.AgentStream(d.agent.ID)
	tools, fires := map[string]fsm.State{}, map[string]fsm.State{}
	for i, rec := range ready.Records {
		if rec.Stream != stream {
			continue
		}
		p := ready.Payloads[i]
		var err error
		if _, ok := p.(*schema.AsyncContextInjected); ok {
			continue // an async hook's record, no step of the table
		}
		if label, ok := fsm.ToolEventOf(p); ok {
			logged := fsm.NoTool
			if c := d.agent.Tools[rec.RestoreID]; c != nil {
				logged = c.State
			}
			err = laneStep(state, tools, rec.RestoreID, logged, label, fsm.ApplyTool)
		} else if label, ok := fsm.FireEventOf(p); ok {
			logged := fsm.NoFire
			if f := d.agent.Fires[rec.RestoreID]; f != nil {
				logged = f.State
			}
			err = laneStep(state, fires, rec.RestoreID, logged, label, fsm.ApplyFire)
		} else {
			step, _ := fsm.EventOf(p)
			state, err = fsm.Apply(state, step)
		}
		if err != nil {
			return fmt.Errorf("agent %s: %w", d.agent.ID, err)
		}
	}
	return nil
}

// laneStep applies label to the tool call or fire id, in states when an
// earlier record of the same Ready moved it, else as the log has it
// (logged); such steps need the agent, in state, to be active.
func laneStep(state fsm.State, states map[string]fsm.State, id string, logged fsm.State, label fsm.Event,
	apply func(fsm.State, fsm.Event) (fsm.State, error)) error {
	if state != fsm.Active {
		return &fsm.TransitionError{From: state, Event: label}
	}
	from, seen := states[id]
	if !seen {
		from = logged
	}
	next, err := apply(from, label)
	states[id] = next
	return err
}

// Appended folds evs, the events the shell appended for ready's records,
// in order, into the agent. It returns CurrentDeleted when the step ended
// an action whose session another process deleted.
func (d *Driver) Appended(ready Ready, evs []eventlog.Event) error {
	stream := projection.AgentStream(d.agent.ID)
	for i, ev := range evs {
		if ev.Stream != stream {
			continue
		}
		if err := d.agent.ApplyDecoded(ev, ready.Payloads[i]); err != nil {
			return err
		}
	}
	d.tries = 0
	return d.advance(ready)
}

// AppendFailed says that the append of the last Ready failed with err on a
// session's stream; the next Step decides what follows. A failure on the
// agent's own stream means another writer moved the agent: the shell ends
// the action itself.
func (d *Driver) AppendFailed(err error) {
	d.tries++
	d.outcome = AppendFailed{Err: err, Tries: d.tries, Outcome: d.given}
}

// Performed gives the outcome of the last Ready's effect to the next Step.
func (d *Driver) Performed(o Outcome) { d.outcome = o }

// Input is what the next Ready steps from.
func (d *Driver) Input(sessions map[string]*Session, now int64) Input {
	return Input{Agent: d.agent, Action: d.action, Sessions: sessions, Outcome: d.outcome,
		Now: now, NewID: d.newID, StopCap: d.stopCap}
}

// advance takes in what ready reports and whether the action is done: no
// effect left to perform and no step in flight.
func (d *Driver) advance(ready Ready) error {
	r := ready.Report
	d.report.Stopped = cmp.Or(r.Stopped, d.report.Stopped)
	d.report.Prompted = cmp.Or(r.Prompted, d.report.Prompted)
	d.report.Blocked = cmp.Or(r.Blocked, d.report.Blocked)
	d.report.Tool = cmp.Or(r.Tool, d.report.Tool)
	d.report.Fire = cmp.Or(r.Fire, d.report.Fire)
	if r.Deleted != "" && d.action.Kind != Continue {
		d.done = true
		return CurrentDeleted(d.agent.ID, r.Deleted)
	}
	d.done = ready.Effect == nil && !fsm.InFlight(d.agent.State)
	switch d.action.Kind {
	case PreToolUse, PostToolUse:
		d.done = ready.Effect == nil && r.Tool != nil // a tool action ends on the step that reports the call
	case Fire:
		d.done = ready.Effect == nil && r.Fire != nil
	}
	return nil
}

// Done reports whether the action is finished.
func (d *Driver) Done() bool { return d.done }

// Report is what the action decided, gathered from its steps' reports;
// each step's warning comes with its Ready.
func (d *Driver) Report() Report { return d.report }

// RecordsHooks reports whether the next step records what hooks did: a
// step the shell carries out even when its caller has given up, so that
// the log says how the hooks ended.
func (d *Driver) RecordsHooks() bool {
	o := d.outcome
	if failed, ok := o.(AppendFailed); ok {
		o = failed.Outcome
	}
	_, ok := o.(HooksRan)
	return ok
}
