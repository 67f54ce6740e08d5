package projection

import (
	"cmp"
	"slices"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
)

// AsyncRun is an async hook's run, as the agent's log tells it: started
// by a step (an outcome of status schema.HookAsync), ended on its own
// (AsyncHookEnded), and its context taken to the model with the session's
// next prompt (AsyncContextInjected). Runs that are over, and whose
// context, if any, the model has, are dropped from Agent.Async.
type AsyncRun struct {
	ID      string // the outcome's Async
	Session string
	Event   schema.HookEvent
	Hook    string // its name
	Step    string // the restore id of the step that started it
	Started bool   // its step's outcome is folded
	Ended   bool
	Outcome schema.HookOutcome // how it ended, once Ended
	Context string
	Rewake  bool
	EndSeq  uint64 // of its end, which orders the contexts
}

// Running reports whether the log shows r started and not ended.
func (r *AsyncRun) Running() bool { return r.Started && !r.Ended }

// run returns the run of id, made when the log has not named it yet.
func (a *Agent) run(id string) *AsyncRun {
	if a.Async == nil {
		a.Async = map[string]*AsyncRun{}
	}
	r := a.Async[id]
	if r == nil {
		r = &AsyncRun{ID: id}
		a.Async[id] = r
	}
	return r
}

// applyAsync folds an event of an async hook, if p is one, and reports
// whether it was.
func (a *Agent) applyAsync(ev eventlog.Event, p schema.Payload) bool {
	switch p := p.(type) {
	case *schema.AsyncHookEnded:
		r := a.run(p.Outcome.Async)
		r.Session, r.Event, r.Hook, r.Step = p.Session, p.Event, p.Outcome.Name, ev.RestoreID
		r.Ended, r.Outcome, r.Context, r.Rewake, r.EndSeq = true, p.Outcome, p.Context, p.Rewake, ev.Seq
		if r.Started && r.Context == "" {
			delete(a.Async, r.ID)
		}
	case *schema.AsyncContextInjected:
		for _, id := range p.Runs {
			delete(a.Async, id)
		}
	default:
		return false
	}
	a.Head = ev.Seq
	return true
}

// noteAsync notes the async runs a folded step, ev, started.
func (a *Agent) noteAsync(ev eventlog.Event, p schema.Payload) {
	session, event, outcomes := ranOutcomes(p)
	for _, o := range outcomes {
		if o.Status != schema.HookAsync || o.Async == "" {
			continue
		}
		r := a.run(o.Async)
		r.Started = true
		if r.Ended {
			if r.Context == "" {
				delete(a.Async, r.ID)
			}
			continue
		}
		r.Session, r.Event, r.Hook, r.Step = session, event, o.Name, ev.RestoreID
	}
}

// ranOutcomes returns the session, event and hook outcomes of a step that
// records hooks' outcomes.
func ranOutcomes(p schema.Payload) (string, schema.HookEvent, []schema.HookOutcome) {
	switch p := p.(type) {
	case *schema.SessionStartHookRan:
		return p.Session, schema.HookSessionStart, p.Outcomes
	case *schema.SessionEndHookRan:
		return p.Session, schema.HookSessionEnd, p.Outcomes
	case *schema.StopHookRan:
		return p.Session, schema.HookStop, p.Outcomes
	case *schema.PromptHookRan:
		return p.Session, schema.HookUserPromptSubmit, p.Outcomes
	case *schema.PreCompactHookRan:
		return p.Session, schema.HookPreCompact, p.Outcomes
	case *schema.ToolHookRan:
		return p.Session, p.Event, p.Outcomes
	}
	return "", "", nil
}

// PendingAsync returns the ended async runs of session whose context the
// model has not had, in the order they ended.
func (a *Agent) PendingAsync(session string) []*AsyncRun {
	var out []*AsyncRun
	for _, r := range a.Async {
		if r.Ended && r.Context != "" && r.Session == session {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(x, y *AsyncRun) int { return cmp.Compare(x.EndSeq, y.EndSeq) })
	return out
}
