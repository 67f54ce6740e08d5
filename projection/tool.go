package projection

import (
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/schema"
)

// applyTool folds the step of a tool call labelled label into a: its call,
// named by the event's restore id, moves as the tool table allows, and
// only while the agent is active, between lifecycle steps.
func (a *Agent) applyTool(ev eventlog.Event, p schema.Payload, label fsm.Event) error {
	if a.State != fsm.Active {
		return &eventlog.EventError{Stream: ev.Stream, Seq: ev.Seq, Err: &fsm.TransitionError{From: a.State, Event: label}}
	}
	c := a.Tools[ev.RestoreID]
	if c == nil {
		c = &ToolCall{ID: ev.RestoreID, State: fsm.NoTool, Began: ev.Time}
	}
	next, err := fsm.ApplyTool(c.State, label)
	if err != nil {
		return &eventlog.EventError{Stream: ev.Stream, Seq: ev.Seq, Err: err}
	}
	if a.Tools == nil {
		a.Tools = map[string]*ToolCall{}
	}
	a.Tools[c.ID] = c
	if fsm.ToolInFlight(c.State) {
		a.HooksInFlight--
	}
	if fsm.ToolInFlight(next) {
		a.HooksInFlight++
	}
	c.fold(p)
	if len(c.PostResult) > 0 {
		if a.Replaced == nil {
			a.Replaced = map[string]*ToolCall{}
		}
		a.Replaced[c.ID] = c
	} else {
		delete(a.Replaced, c.ID)
	}
	c.State, a.Head = next, ev.Seq
	if next == fsm.ToolDone {
		c.Ended = ev.Time
	}
	return nil
}

// fold copies what step p says into c.
func (c *ToolCall) fold(p schema.Payload) {
	switch p := p.(type) {
	case *schema.ToolHookStarted:
		c.Session, c.Tool = p.Session, p.Tool
		if p.Event == schema.HookPermissionRequest {
			c.PermissionAsked, c.PermissionHooks = true, p.Hooks
		} else {
			c.PreHooks = p.Hooks
		}
	case *schema.ToolHookRan:
		c.Interrupted = c.Interrupted || p.Interrupted
		switch p.Event {
		case schema.HookPreToolUse:
			c.PreOutcomes, c.PreDecision, c.PreReason, c.PreInput, c.PreContext = p.Outcomes, p.Decision, p.Reason, p.Replacement, p.Context
		case schema.HookPermissionRequest:
			c.PermissionOutcomes, c.PermissionDecision, c.PermissionReason, c.PermissionInput = p.Outcomes, p.Decision, p.Reason, p.Replacement
		default:
			c.PostOutcomes, c.PostBlocked, c.PostReason, c.PostContext, c.PostResult = p.Outcomes, p.Decision == "block", p.Reason, p.Context, p.Replacement
		}
	case *schema.ToolDecided:
		c.Session, c.Tool = p.Session, p.Tool
		c.Decision, c.Reason, c.Input, c.Context, c.ResultUUID = p.Decision, p.Reason, p.Input, p.Context, p.ResultUUID
	case *schema.ToolResultRecorded:
		c.Resulted, c.Failed, c.ResultUUID, c.PostHooks = true, p.Failed, p.MessageUUID, p.Hooks
	}
}
