package web

import (
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// fireRun is what a fire's row shows besides its steps and hooks: the
// event, what its matchers selected on and its input, and what its hooks
// decided together. Its texts are those of the events as the agent page
// folds them, cut when an event is large.
type fireRun struct {
	Event, Value  string
	Fields        string // its input, as indented JSON
	Ran           bool   // its outcome is recorded
	Blocked       bool
	Reason        string
	Feedback      string
	SystemMessage string
	Halt          bool
	StopReason    string
	Specific      string // the hookSpecificOutput fields its hooks gave, as indented JSON
	Env           string // what its command hooks wrote to CLAUDE_ENV_FILE
	Session       string
	Message       string // the meta message that took its context to the model, if one did
	fields, spec  []byte // the same, as recorded, for the API
}

// fireJSON is, in the API's answer, what a fire's row shows.
type fireJSON struct {
	Event         string `json:"event"`
	Value         string `json:"value,omitempty"`
	Fields        any    `json:"fields,omitempty"`
	Ran           bool   `json:"ran"`
	Blocked       bool   `json:"blocked,omitempty"`
	Reason        string `json:"reason,omitempty"`
	Feedback      string `json:"feedback,omitempty"`
	SystemMessage string `json:"system_message,omitempty"`
	Halt          bool   `json:"halt,omitempty"`
	StopReason    string `json:"stop_reason,omitempty"`
	Specific      any    `json:"specific,omitempty"`
	Env           string `json:"env,omitempty"`
	Message       string `json:"message,omitempty"`
}

// fireKey is the key of the row of ev when it is a step of a fire, whose
// id may be a tool call's too (PermissionDenied's is the call's
// tool_use id): a fire's row is its own. For any other step it is ev's
// restore id.
func fireKey(ev eventlog.Event) string {
	if ev.Type == schema.TypeHookEventStarted || ev.Type == schema.TypeHookEventRan {
		return "fire/" + ev.RestoreID
	}
	return ev.RestoreID
}

// foldFire adds what p says to r when it is a step of a fire, with intent
// and ran as foldRun adds hooks.
func foldFire(r *run, p schema.Payload, intent func(schema.HookEvent),
	ran func(schema.HookEvent, []schema.HookOutcome, bool, string)) {
	fire := func(event schema.HookEvent, session, value string, fields []byte) *fireRun {
		r.Kind, r.To = "fire", session
		if r.Fire == nil {
			r.Fire = &fireRun{}
		}
		f := r.Fire
		f.Event, f.Session = string(event), session
		if f.fields == nil {
			f.Value, f.fields, f.Fields = value, fields, indentJSON(fields)
		}
		return f
	}
	switch p := p.(type) {
	case *schema.HookEventStarted:
		fire(p.Event, p.Session, p.Value, p.Fields)
		intent(p.Event)
		// The row shows the input itself; the hooks were given it.
		r.Hooks[len(r.Hooks)-1].Given = ""
	case *schema.HookEventRan:
		f := fire(p.Event, p.Session, p.Value, p.Fields)
		ran(p.Event, p.Outcomes, p.Interrupted, p.Context)
		f.Ran, f.Blocked, f.Reason, f.Feedback, f.SystemMessage = true, p.Blocked, p.Reason, p.Feedback, p.SystemMessage
		f.Halt, f.StopReason, f.Env, f.Message = p.Halt, p.StopReason, p.Env, p.MessageUUID
		f.spec, f.Specific = p.Specific, indentJSON(p.Specific)
	}
}

// fireStepLabel names the segment of a fire's step p: what happens until
// the next step. It is "" for any other step.
func fireStepLabel(p schema.Payload) string {
	switch p := p.(type) {
	case *schema.HookEventStarted:
		return string(p.Event) + " hooks"
	case *schema.HookEventRan:
		switch {
		case p.Interrupted:
			return string(p.Event) + " interrupted"
		case len(p.Outcomes) == 0:
			return string(p.Event) + ", no hook matched"
		case p.Blocked:
			return string(p.Event) + " blocked"
		}
		return string(p.Event) + " ran"
	}
	return ""
}

// newFireJSON describes f for the API.
func newFireJSON(f *fireRun) *fireJSON {
	return &fireJSON{Event: f.Event, Value: f.Value, Fields: jsonValue(f.fields), Ran: f.Ran, Blocked: f.Blocked,
		Reason: f.Reason, Feedback: f.Feedback, SystemMessage: f.SystemMessage, Halt: f.Halt, StopReason: f.StopReason,
		Specific: jsonValue(f.spec), Env: f.Env, Message: f.Message}
}

// fireBytes is what f's texts take of a page.
func fireBytes(f *fireRun) int {
	if f == nil {
		return 0
	}
	n := 0
	for _, s := range []string{f.Value, f.Fields, f.Reason, f.Feedback, f.SystemMessage, f.StopReason, f.Specific, f.Env} {
		n += escapedLen(s)
	}
	return n
}

// fireRunning reports whether the hooks of fire id of a may be running.
func fireRunning(a *projection.Agent, id string) bool {
	f := a.Fires[id]
	return f != nil && f.Running()
}
