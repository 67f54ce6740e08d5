package lifecycle

import (
	"fmt"

	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// FireRequest is the hook event a Fire action fires: one of the table's
// events without steps of its own, on the agent's current session, run
// once under ID.
type FireRequest struct {
	ID    string // the fire's id: asked again, nothing runs
	Event schema.HookEvent
	// Value is what the event's matchers select on (its row's MatchOn
	// field, FileChanged's base name); Fields the event's own input, a JSON
	// object the shell checked against the row.
	Value  string
	Fields []byte
	// Inject asks for the hooks' context to reach the model: a meta
	// message after the session's last one, in the same append as the
	// outcome.
	Inject bool
	// OnlyWithHooks records nothing when no hook matches: the lifecycle's
	// own fires (PostToolBatch) then cost no append. The report is then a
	// FireReport without Ran.
	OnlyWithHooks bool
}

// FireReport is what a Fire recorded, or found recorded before.
type FireReport struct {
	Ran *schema.HookEventRan // nil when nothing was recorded (OnlyWithHooks)
	// AlreadyRecorded says that the log held the fire before this action:
	// nothing ran, and Ran is what the log holds.
	AlreadyRecorded bool
}

// fireStep is the next step of a Fire on an active agent: the intent,
// when hooks match, then what they decided, once per fire id.
func fireStep(in Input) (Ready, error) {
	r, a := in.Action.Fire, in.Agent
	if r == nil || r.ID == "" || r.Event == "" {
		return Ready{}, fmt.Errorf("%w: a fire needs its id and event", ErrBadFire)
	}
	f := a.Fires[r.ID]
	if f != nil && f.Event != r.Event {
		return Ready{}, fmt.Errorf("%w: fire %s is a %s, not a %s", ErrBadFire, r.ID, f.Event, r.Event)
	}
	state := fsm.NoFire
	if f != nil {
		state = f.State
	}
	switch state {
	case fsm.FireDone:
		return Ready{Report: Report{Fire: &FireReport{Ran: f.Ran, AlreadyRecorded: true}}}, nil
	case fsm.FireHooks:
		if _, ok := in.Outcome.(HooksRan); !ok {
			return Ready{}, fmt.Errorf("%w: agent %s: the hooks of fire %s are running in another process", ErrAgentBusy, a.ID, r.ID)
		}
		ran, _ := hooksRan(in, f.Hooks)
		return fired(in, f.Session, ran, false), nil
	}
	if a.Current == "" {
		return Ready{}, fmt.Errorf("%w: agent %s", ErrNoCurrentSession, a.ID)
	}
	if err := deleted(in, a.Current); err != nil {
		return Ready{}, CurrentDeleted(a.ID, a.Current)
	}
	matched, ok := in.Outcome.(HooksMatched)
	if !ok {
		return Ready{Effect: MatchHooks{Event: r.Event, Value: r.Value, Session: a.Current}}, nil
	}
	switch {
	case len(matched.Hooks) == 0 && r.OnlyWithHooks:
		return Ready{Report: Report{Fire: &FireReport{}}}, nil
	case len(matched.Hooks) == 0:
		return fired(in, a.Current, HooksRan{}, false), nil
	}
	ready := withAgentStep(in, Ready{}, r.ID, &schema.HookEventStarted{Event: r.Event, Session: a.Current, ID: r.ID,
		Value: r.Value, Fields: r.Fields, Hooks: matched.Hooks, Status: matched.Status})
	ready.Effect = RunHooks{Event: r.Event, Session: a.Current, Hooks: matched.Hooks, Fire: r, PromptID: a.LastPromptID}
	return ready, nil
}

// fired is the step that records what the hooks of the fire in flight
// decided (ran), on session; cut says they were cut off by a dying
// process.
func fired(in Input, session string, ran HooksRan, cut bool) Ready {
	r := in.Action.Fire
	step := &schema.HookEventRan{Event: r.Event, Session: session, ID: r.ID, Outcomes: ran.Outcomes, Interrupted: cut,
		Blocked: ran.Blocked, Reason: ran.Reason, Feedback: ran.Feedback, Context: ran.Context, Halt: ran.Halt,
		StopReason: ran.StopReason, SystemMessage: ran.SystemMessage, Specific: ran.Specific, Env: ran.Env}
	if f := in.Agent.Fires[r.ID]; f == nil {
		step.Value, step.Fields = r.Value, r.Fields // no intent holds them
	}
	ready := Ready{}
	if s := in.Sessions[session]; r.Inject && ran.Context != "" && s != nil && !s.Deleted {
		msg := schema.Message{UUID: in.NewID(), Role: "user", IsMeta: true, Timestamp: in.Now,
			Content: []schema.Block{{Type: "text", Text: Reminder(r.Event, ran.Context)}}}
		step.MessageUUID = msg.UUID
		ready = messages(in.Now, s, &msg)
	}
	ready = withAgentStep(in, ready, r.ID, step)
	ready.Report.Fire = &FireReport{Ran: step}
	return ready
}

// orphanFire is the step of a Continue that closes, as interrupted, fire
// f, whose hooks a dead process was running.
func orphanFire(in Input, f *projection.Fire) Ready {
	ran, _ := hooksRan(Input{}, f.Hooks)
	return agentStep(in, f.ID, &schema.HookEventRan{Event: f.Event, Session: f.Session, ID: f.ID,
		Outcomes: ran.Outcomes, Interrupted: true})
}
