package projection

import (
	"encoding/json"
	"path/filepath"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/schema"
)

// Fire is what the log says about one fired hook event: an event of the
// table without steps of its own, run once under its fire id.
type Fire struct {
	ID      string
	Event   schema.HookEvent
	Session string
	State   fsm.State
	Began   int64 // UTC unix nanoseconds of its first step
	Ended   int64 // of its last, once done
	Value   string
	Fields  []byte   // the event's own input, JSON
	Hooks   []string // the hooks its intent named
	Ran     *schema.HookEventRan
}

// Running reports whether f's hooks may be running: its intent is
// recorded and its outcome is not.
func (f *Fire) Running() bool { return f.State == fsm.FireHooks }

// applyFire folds the step of a fire labelled label into a: its fire,
// named by the event's restore id, moves as the fire table allows, and
// only while the agent is active, between lifecycle steps.
func (a *Agent) applyFire(ev eventlog.Event, p schema.Payload, label fsm.Event) error {
	if a.State != fsm.Active {
		return &eventlog.EventError{Stream: ev.Stream, Seq: ev.Seq, Err: &fsm.TransitionError{From: a.State, Event: label}}
	}
	f := a.Fires[ev.RestoreID]
	if f == nil {
		f = &Fire{ID: ev.RestoreID, State: fsm.NoFire, Began: ev.Time}
	}
	next, err := fsm.ApplyFire(f.State, label)
	if err != nil {
		return &eventlog.EventError{Stream: ev.Stream, Seq: ev.Seq, Err: err}
	}
	if a.Fires == nil {
		a.Fires = map[string]*Fire{}
	}
	a.Fires[f.ID] = f
	if f.State == fsm.FireHooks {
		a.HooksInFlight--
	}
	switch p := p.(type) {
	case *schema.HookEventStarted:
		f.Event, f.Session, f.Value, f.Fields, f.Hooks = p.Event, p.Session, p.Value, p.Fields, p.Hooks
		a.HooksInFlight++
	case *schema.HookEventRan:
		f.Event, f.Session, f.Ran = p.Event, p.Session, p
		if f.Fields == nil {
			f.Value, f.Fields = p.Value, p.Fields
		}
		f.Ended = ev.Time
		if p.Event == schema.HookCwdChanged && !p.Interrupted {
			a.moveCwd(f)
		}
	}
	f.State, a.Head = next, ev.Seq
	return nil
}

// BatchFireID is the fire id of the PostToolBatch of the answer whose
// tool_use ids are calls: one per answer, named by its first call. ""
// for an answer without calls.
func BatchFireID(calls []string) string {
	if len(calls) == 0 {
		return ""
	}
	return "batch-" + calls[0]
}

// batchHalted reports whether the PostToolBatch of the answer whose calls
// are uses blocked or halted the turn.
func (a *Agent) batchHalted(uses []ToolUse) bool {
	ids := make([]string, len(uses))
	for i, u := range uses {
		ids[i] = u.ID
	}
	f := a.Fires[BatchFireID(ids)]
	return f != nil && f.Ran != nil && (f.Ran.Blocked || f.Ran.Halt)
}

// StopFailureFireID is the fire id of the StopFailure that ended a turn
// whose model request failed after message last, the conversation's last:
// the turn is over there.
func StopFailureFireID(last string) string { return "stopfailure-" + last }

// moveCwd records where CwdChanged fire f moved its session.
func (a *Agent) moveCwd(f *Fire) {
	cwd := NewCwd(f.Fields)
	if cwd == "" {
		return
	}
	if a.Cwds == nil {
		a.Cwds = map[string]string{}
	}
	a.Cwds[f.Session] = cwd
}

// NewCwd is where the fields of a CwdChanged fire move the session: their
// new_cwd, when it is an absolute path; "" otherwise.
func NewCwd(fields []byte) string {
	var in struct {
		New string `json:"new_cwd"`
	}
	if json.Unmarshal(fields, &in) != nil || !filepath.IsAbs(in.New) {
		return ""
	}
	return in.New
}
