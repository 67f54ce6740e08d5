package projection

import (
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
)

// Agent is the fold of one agent stream: its lifecycle state, its current
// session, the restore in flight if any, and the restores it completed.
type Agent struct {
	ID      string
	Head    uint64
	State   fsm.State
	Current string   // the current session; "" before the first restore
	Restore *Restore // the restore in flight; nil when State is idle or active
	History []Restore
}

// Restore is what the log says about one restore, step by step.
type Restore struct {
	ID     string
	Source string // "startup" or "resume"
	From   string // the session current before; "" at first startup
	To     string
	Began  int64 // UTC unix nanoseconds of the first step
	Ended  int64 // of ContextInjected; 0 while in flight
	Steps  []eventlog.Type

	Saved     int
	SaveError string

	EndReason      string
	EndHooks       []string // intent: the SessionEnd hooks about to run
	EndOutcomes    []eventlog.HookOutcome
	EndInterrupted bool

	Loaded           bool // SessionLoaded was recorded
	Messages         int  // the target's message count when loaded
	StartHooks       []string
	StartOutcomes    []eventlog.HookOutcome
	Context          string
	Env              string // what SessionStart hooks wrote to CLAUDE_ENV_FILE
	StartInterrupted bool

	InjectedUUID string // the meta message, "" when there was no context
}

// NewAgent returns the view of agent id before its first event.
func NewAgent(id string) *Agent { return &Agent{ID: id, State: fsm.Idle} }

// Apply folds the next event of the agent's stream into a. A step the
// lifecycle table does not allow from the current state, or a step of a
// different restore than the one in flight, is an error and leaves a
// unchanged.
func (a *Agent) Apply(ev eventlog.Event) error {
	if err := checkNext(ev, AgentStream(a.ID), a.Head); err != nil {
		return err
	}
	p, err := eventlog.Decode(ev)
	if err != nil {
		return err
	}
	if p == nil { // registered as ignorable
		a.Head = ev.Seq
		return nil
	}
	step, ok := fsm.EventOf(p)
	if !ok {
		return eventlog.Corruptf(ev.Stream, ev.Seq, "%s does not belong in an agent stream", ev.Type)
	}
	next, err := fsm.Apply(a.State, step)
	if err != nil {
		return &eventlog.EventError{Stream: ev.Stream, Seq: ev.Seq, Err: err}
	}
	r := a.Restore
	if r == nil {
		r = &Restore{ID: ev.RestoreID, From: a.Current, Began: ev.Time}
	} else if r.ID != ev.RestoreID {
		return eventlog.Corruptf(ev.Stream, ev.Seq, "step of restore %q inside restore %q", ev.RestoreID, r.ID)
	}
	r.Steps = append(r.Steps, ev.Type)
	a.fold(r, p)
	a.State, a.Head = next, ev.Seq
	if next == fsm.Active {
		r.Ended = ev.Time
		a.History = append(a.History, *r)
		a.Restore = nil
	} else {
		a.Restore = r
	}
	return nil
}

// fold copies the step's facts into r and a. The step is already known to
// be legal.
func (a *Agent) fold(r *Restore, p eventlog.Payload) {
	switch p := p.(type) {
	case *eventlog.SaveAttempted:
		r.Source, r.From, r.To = "resume", p.From, p.To
		r.Saved, r.SaveError = p.Saved, p.Error
	case *eventlog.SessionEndHookStarted:
		r.EndReason, r.EndHooks = p.Reason, p.Hooks
	case *eventlog.SessionEndHookRan:
		r.EndOutcomes, r.EndInterrupted = p.Outcomes, p.Interrupted
	case *eventlog.SessionLoaded:
		r.Source, r.To, r.Loaded, r.Messages = p.Source, p.Session, true, p.Messages
		a.Current = p.Session
	case *eventlog.SessionStartHookStarted:
		r.StartHooks = p.Hooks
	case *eventlog.SessionStartHookRan:
		r.StartOutcomes, r.Context, r.Env, r.StartInterrupted = p.Outcomes, p.Context, p.Env, p.Interrupted
	case *eventlog.ContextInjected:
		r.InjectedUUID = p.MessageUUID
	}
}
