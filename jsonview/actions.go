package jsonview

import (
	"encoding/json"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
)

// Prompt is what `reprise prompt --json` prints, and the write API's
// prompt answers.
type Prompt struct {
	Agent          string `json:"agent"`
	Session        string `json:"session"`
	Blocked        bool   `json:"blocked"`
	Reason         string `json:"reason,omitempty"`
	Message        string `json:"message,omitempty"` // the prompt's uuid when kept
	Context        string `json:"context"`
	ContextMessage string `json:"context_message,omitempty"`
	// AsyncMessage is the uuid of the meta message that brought the
	// context of async hooks that ended since the model last heard from
	// them.
	AsyncMessage string    `json:"async_message,omitempty"`
	Hooks        []Outcome `json:"hooks"`
}

// NewPrompt describes res, agent's prompt on session.
func NewPrompt(agent, session string, res *reprise.PromptResult) Prompt {
	return Prompt{Agent: agent, Session: session, Blocked: res.Blocked, Reason: res.Reason,
		Message: messageUUID(res.Message), Context: res.Context, ContextMessage: messageUUID(res.ContextMessage),
		AsyncMessage: messageUUID(res.AsyncMessage), Hooks: NewOutcomes(hookexec.UserPromptSubmit, res.Outcomes)}
}

// Stop is what `reprise stop --json` prints.
type Stop struct {
	Blocked    bool      `json:"blocked"`
	Capped     bool      `json:"capped"`
	Reason     string    `json:"reason,omitempty"`
	StopReason string    `json:"stop_reason,omitempty"`
	Message    string    `json:"message,omitempty"`
	Hooks      []Outcome `json:"hooks"`
}

// NewStop describes res, a stop the host said ended for stopReason.
func NewStop(res *reprise.StopResult, stopReason string) Stop {
	return Stop{Blocked: res.Blocked, Capped: res.Capped, Reason: res.Reason, StopReason: stopReason,
		Message: messageUUID(res.Message), Hooks: NewOutcomes(hookexec.Stop, res.Outcomes)}
}

// Halt is a hook's "continue": false, in the answers of tool, tool-result
// and fire.
type Halt struct {
	Halted     bool   `json:"halted"`
	StopReason string `json:"stop_reason,omitempty"`
}

// ToolDecision is what `reprise tool --json` prints.
type ToolDecision struct {
	Decision     string          `json:"decision"`
	Reason       string          `json:"reason"`
	UpdatedInput json.RawMessage `json:"updated_input"`
	Context      string          `json:"context"`
	Interrupted  bool            `json:"interrupted"`
	Halt
}

// NewToolDecision describes d.
func NewToolDecision(d *reprise.ToolDecision) ToolDecision {
	return ToolDecision{Decision: d.Decision, Reason: d.Reason, UpdatedInput: d.Input, Context: d.Context,
		Interrupted: d.Interrupted, Halt: Halt{d.Halted, d.StopReason}}
}

// ToolFeedback is what `reprise tool-result --json` prints.
type ToolFeedback struct {
	AlreadyRecorded bool   `json:"already_recorded"`
	Context         string `json:"context"`
	// UpdatedOutput is what a PostToolUse hook gave in place of the
	// tool's result (updatedToolOutput): what the model is to get.
	UpdatedOutput json.RawMessage `json:"updated_output,omitempty"`
	Blocked       bool            `json:"blocked"`
	Reason        string          `json:"reason"`
	// AsyncMessage is as Prompt's: given with the last result of an answer.
	AsyncMessage string `json:"async_message,omitempty"`
	Halt
}

// NewToolFeedback describes f.
func NewToolFeedback(f *reprise.ToolFeedback) ToolFeedback {
	return ToolFeedback{AlreadyRecorded: f.AlreadyRecorded, Context: f.Context, UpdatedOutput: f.UpdatedResult, Blocked: f.Blocked,
		Reason: f.Reason, AsyncMessage: messageUUID(f.AsyncMessage), Halt: Halt{f.Halted, f.StopReason}}
}

// Fired is what `reprise fire --json` prints: reprise.Fired, field by
// field.
type Fired struct {
	ID              string          `json:"id"`
	Event           string          `json:"event"`
	AlreadyRecorded bool            `json:"already_recorded"`
	Interrupted     bool            `json:"interrupted"`
	Blocked         bool            `json:"blocked"`
	Reason          string          `json:"reason"`
	Feedback        string          `json:"feedback"`
	Context         string          `json:"context"`
	SystemMessage   string          `json:"system_message"`
	Specific        json.RawMessage `json:"specific"` // null when no hook gave any
	Env             string          `json:"env"`
	Hooks           []Outcome       `json:"hooks"`
	Halt
}

// NewFired describes f.
func NewFired(f *reprise.Fired) Fired {
	return Fired{ID: f.ID, Event: string(f.Event), AlreadyRecorded: f.AlreadyRecorded,
		Interrupted: f.Interrupted, Blocked: f.Blocked, Reason: f.Reason, Feedback: f.Feedback, Context: f.Context,
		SystemMessage: f.SystemMessage, Specific: f.Specific, Env: f.Env, Hooks: NewOutcomes(f.Event, f.Outcomes),
		Halt: Halt{f.Halted, f.StopReason}}
}

// Finish is what `reprise finish --json` prints.
type Finish struct {
	Agent    string   `json:"agent"`
	Finished bool     `json:"finished"`          // false when nothing was in progress
	State    string   `json:"state"`             // the state the log was in
	ID       string   `json:"id,omitempty"`      // the restore, Stop run or prompt run finished
	Restore  *Restore `json:"restore,omitempty"` // the restore finished, if it was one
}

// NewFinish describes what a finish did: before is the agent as its log
// stood, and a the agent once loaded, which rolled it forward. What it
// finished is what before had in flight, its words in what.
func NewFinish(before *projection.Agent, a *reprise.Agent) (out Finish, what string, finished *reprise.Transition) {
	out = Finish{Agent: before.ID, Finished: before.InFlight(), State: string(before.State)}
	switch {
	case before.Restore != nil:
		what, out.ID = "restore", before.Restore.ID
		if history := a.History(); len(history) > 0 && history[len(history)-1].ID == out.ID {
			finished = &history[len(history)-1]
			rj := NewRestore(before.ID, finished.To, finished)
			out.Restore = &rj
		}
	case before.Stop != nil:
		what, out.ID = "Stop run", before.Stop.ID
	case before.Prompt != nil:
		what, out.ID = "prompt run", before.Prompt.ID
	}
	return out, what, finished
}

// messageUUID returns m's uuid, "" for none.
func messageUUID(m *reprise.Message) string {
	if m == nil {
		return ""
	}
	return m.UUID
}
