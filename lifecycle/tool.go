package lifecycle

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// The decisions on a tool call.
const (
	ToolAllow = "allow"
	ToolDeny  = "deny"
	ToolAsk   = "ask"
)

// ToolRequest is the tool call a PreToolUse or PostToolUse action is about.
type ToolRequest struct {
	ID    string // the tool_use id
	Name  string // the tool, such as Bash
	Input []byte // PreToolUse: the call's input, a JSON object
	// Permission is what the host's own rules say of the call (ToolAllow,
	// ToolDeny, ToolAsk), or "" when they say nothing; a deny from either
	// the hooks or the rules wins, then an ask, then an allow, as Claude
	// Code weighs them. A call nobody decides is left to ask.
	Permission string
	// Answer is, for a PreToolUse action on a call left to ask, the
	// user's answer to record: ToolAllow, or ToolDeny with Refusal, the
	// call's error tool_result the model is told. "" asks nothing of the
	// user.
	Answer  string
	Refusal string
	// Use is the assistant message holding the call's tool_use, recorded
	// with the call's first step when the session lacks it; nil when the
	// session holds it.
	Use *schema.Message
	// PostToolUse: the tool's result as the tool_result's content (JSON),
	// or, when Failed, the Error it failed with; Response is the result as
	// its hooks get it (tool_response), Duration how long the tool ran.
	// Refused says the user refused a call left to ask: its error is
	// recorded and no hook runs, as Claude Code runs none.
	Result    []byte
	Response  []byte
	Duration  int64 // nanoseconds
	Failed    bool
	Refused   bool
	Error     string
	Interrupt bool // PostToolUse: it failed because it was stopped
}

// ToolReport is what a tool action decided or recorded.
type ToolReport struct {
	ID       string
	Decision string // ToolAllow, ToolDeny or ToolAsk
	Reason   string
	Input    []byte // what the tool runs with: the hooks may have replaced the call's
	Context  string // what PreToolUse hooks added for the model
	// Interrupted says that the call was allowed earlier and has no
	// result: the process that asked may have run the tool, and died.
	Interrupted bool
	// AlreadyRecorded says, after the tool, that the log held the call's
	// result before this action (recorded earlier, or the call's deny):
	// the result the action gave was not kept.
	AlreadyRecorded bool
	// After the tool: what its hooks said.
	Resulted      bool
	Blocked       bool
	BlockReason   string
	PostContext   string
	UpdatedResult []byte
	// LastOfAnswer says that this step resolved the last call of its
	// answer: every call has its result, and none has hooks running. The
	// answer's PostToolBatch is due.
	LastOfAnswer bool
	// AsyncUUID is the meta message, after the result, with the context of
	// async hooks that ended since the model last heard from them; "" when
	// none did or calls of the answer still lack results.
	AsyncUUID string
}

// report is what the log holds of call c, for a call asked about again.
func report(c *projection.ToolCall) *ToolReport {
	return &ToolReport{ID: c.ID, Decision: c.Decision, Reason: c.Reason, Input: c.Input, Context: c.Context,
		Interrupted: c.Decision == ToolAllow && !c.Resulted, Resulted: c.Resulted, Blocked: c.PostBlocked,
		BlockReason: c.PostReason, PostContext: c.PostContext, UpdatedResult: c.PostResult}
}

// toolStep is the next step of a PreToolUse or PostToolUse action on an
// active agent: each call, by its tool_use id, is decided once and has its
// result recorded once; asked again, the step records nothing and reports
// what the log holds.
func toolStep(in Input) (Ready, error) {
	t, a := in.Action.Tool, in.Agent
	if t == nil || t.ID == "" || t.Name == "" && in.Action.Kind == PreToolUse {
		return Ready{}, fmt.Errorf("%w: a tool action needs the call's tool_use id, and PreToolUse its tool's name", ErrBadTool)
	}
	if a.Current == "" {
		return Ready{}, fmt.Errorf("%w: agent %s", ErrNoCurrentSession, a.ID)
	}
	if err := deleted(in, a.Current); err != nil {
		return Ready{}, CurrentDeleted(a.ID, a.Current)
	}
	c := a.Tools[t.ID]
	state := fsm.NoTool
	if c != nil {
		state = c.State
	}
	if c != nil && in.Action.Kind == PreToolUse && t.Name != c.Tool {
		return Ready{}, fmt.Errorf("%w: tool call %s is a call of %s, not %s", ErrBadTool, t.ID, c.Tool, t.Name)
	}
	if t.Answer != "" && (c == nil || c.Decision == "") {
		// An answer is recorded once, on a call the log shows left to
		// ask; answered again, the call reports what the log holds.
		return Ready{}, fmt.Errorf("%w: %s has no decision recorded", ErrToolNotAsked, t.ID)
	}
	if in.Action.Kind == PostToolUse {
		if c == nil {
			return Ready{}, fmt.Errorf("%w: %s", ErrToolNotDecided, t.ID)
		}
		return postTool(in, c, state)
	}
	switch state {
	case fsm.NoTool:
		matched, ok := in.Outcome.(HooksMatched)
		if !ok {
			return Ready{Effect: MatchHooks{Event: schema.HookPreToolUse, Value: t.Name, Session: a.Current}}, nil
		}
		use, err := toolUse(in)
		if err != nil {
			return Ready{}, err
		}
		if matched.Event == schema.HookPreToolUse && len(matched.Hooks) > 0 {
			ready := withAgentStep(in, use, t.ID, &schema.ToolHookStarted{Event: schema.HookPreToolUse,
				Session: a.Current, ToolUseID: t.ID, Tool: t.Name, Hooks: matched.Hooks, Status: matched.Status})
			ready.Effect = RunHooks{Event: schema.HookPreToolUse, Session: a.Current, Hooks: matched.Hooks, Tool: t, ToolInput: t.Input,
				PromptID: a.LastPromptID}
			return ready, nil
		}
		return decide(in, nil, use)
	case fsm.ToolPreHooks, fsm.ToolPermissionHooks:
		if err := othersHooks(in, t.ID); err != nil {
			return Ready{}, err
		}
		event, names := schema.HookPreToolUse, c.PreHooks
		if state == fsm.ToolPermissionHooks {
			event, names = schema.HookPermissionRequest, c.PermissionHooks
		}
		ran, cut := hooksRan(in, names)
		return agentStep(in, t.ID, &schema.ToolHookRan{Event: event, Session: c.Session, ToolUseID: t.ID, Tool: c.Tool,
			Outcomes: ran.Outcomes, Interrupted: cut, Decision: ran.Decision, Reason: ran.Reason,
			Replacement: ran.Replacement, Context: ran.Context}), nil
	case fsm.ToolHooksRan:
		return decide(in, c, Ready{})
	case fsm.ToolAsked:
		if t.Answer != "" {
			return answer(in, c)
		}
	}
	return Ready{Report: Report{Tool: report(c)}}, nil
}

// answer records the user's answer to call c, left to ask: an allow lets
// the tool run; a refusal is the call's error tool_result, in the same
// append, and no hook runs, as Claude Code runs none.
func answer(in Input, c *projection.ToolCall) (Ready, error) {
	t := in.Action.Tool
	step := &schema.ToolDecided{Session: c.Session, ToolUseID: t.ID, Tool: c.Tool, Input: c.Input,
		Decision: ToolAllow, Context: c.Context}
	ready := Ready{}
	if t.Answer == ToolDeny {
		s := in.Sessions[c.Session]
		if s == nil {
			return Ready{}, fmt.Errorf("%w: %s", ErrSessionNotFound, c.Session)
		}
		msg := toolResult(in, t.ID, []byte(mustJSON(t.Refusal)), true)
		step.Decision, step.Reason, step.Input, step.ResultUUID = ToolDeny, t.Refusal, nil, msg.UUID
		// The PreToolUse hooks' context still reaches the model, after
		// the result, as it does beside a result the host reports.
		ready = after(messages(in.Now, s, &msg), c.Session, msg.UUID, feedback(in, c, schema.HookPostToolUseFailure, HooksRan{}))
	}
	ready = withAgentStep(in, ready, t.ID, step)
	ready.Report.Tool = &ToolReport{ID: t.ID, Decision: step.Decision, Reason: step.Reason, Input: step.Input, Context: c.Context}
	return ready, nil
}

// othersHooks refuses a step on call id whose hooks the log shows running
// when this action did not run them: another process is running them, or
// died doing so after this one read the log. Closing them here could let
// the call past a guard that is about to deny it; the process that opens
// the agent next closes a dead one's as interrupted (Continue).
func othersHooks(in Input, id string) error {
	if _, ok := in.Outcome.(HooksRan); ok {
		return nil
	}
	return fmt.Errorf("%w: agent %s: the hooks of tool call %s are running in another process", ErrAgentBusy, in.Agent.ID, id)
}

// toolUse is the Ready that records the call's tool_use, when the host
// gave the assistant message holding it because the session lacks it.
func toolUse(in Input) (Ready, error) {
	t := in.Action.Tool
	if t.Use == nil {
		return Ready{}, nil
	}
	s := in.Sessions[in.Agent.Current]
	if s == nil {
		return Ready{}, fmt.Errorf("%w: %s", ErrSessionNotFound, in.Agent.Current)
	}
	return messages(in.Now, s, t.Use), nil
}

// decide takes the call's decision: the hooks' before it and the host's
// rules, deny over ask over allow; a call left to ask asks its
// PermissionRequest hooks first, once. base holds what the step records
// besides (the tool_use). A deny appends its error tool_result.
func decide(in Input, c *projection.ToolCall, base Ready) (Ready, error) {
	t, a := in.Action.Tool, in.Agent
	decision, reason, input, context := weigh(c, t)
	asked := c != nil && c.PermissionAsked
	if decision == ToolAsk && !asked {
		matched, ok := in.Outcome.(HooksMatched)
		if !ok || matched.Event != schema.HookPermissionRequest {
			return Ready{Effect: MatchHooks{Event: schema.HookPermissionRequest, Value: t.Name, Session: a.Current}}, nil
		}
		if len(matched.Hooks) > 0 {
			ready := withAgentStep(in, base, t.ID, &schema.ToolHookStarted{Event: schema.HookPermissionRequest,
				Session: a.Current, ToolUseID: t.ID, Tool: t.Name, Hooks: matched.Hooks, Status: matched.Status})
			ready.Effect = RunHooks{Event: schema.HookPermissionRequest, Session: a.Current, Hooks: matched.Hooks, Tool: t, ToolInput: input,
				PromptID: in.Agent.LastPromptID}
			return ready, nil
		}
	}
	step := &schema.ToolDecided{Session: a.Current, ToolUseID: t.ID, Tool: t.Name, Input: input,
		Decision: decision, Reason: reason, Context: context}
	if t.Use != nil {
		step.UseUUID = t.Use.UUID
	}
	ready := base
	if decision == ToolDeny {
		s := in.Sessions[a.Current]
		if s == nil {
			return Ready{}, fmt.Errorf("%w: %s", ErrSessionNotFound, a.Current)
		}
		msg := toolResult(in, t.ID, []byte(mustJSON(reason)), true)
		step.ResultUUID = msg.UUID
		if len(base.Records) > 0 { // after the tool_use this step records, in its append
			msg.ParentUUID = t.Use.UUID
			ready = add(ready, projection.SessionStream(a.Current), &schema.MessageAppended{Message: msg}, in.Now, "")
		} else {
			ready = messages(in.Now, s, &msg)
		}
	}
	ready = withAgentStep(in, ready, t.ID, step)
	ready.Report.Tool = &ToolReport{ID: t.ID, Decision: decision, Reason: reason, Input: input, Context: context}
	return ready, nil
}

// weigh combines what decides call c: the PreToolUse hooks' answer, the
// host's rules, then, for a call still left to ask, the PermissionRequest
// hooks' answer. It returns the decision, its reason as the model or user
// is told it, the input the tool runs with, and the hooks' context.
func weigh(c *projection.ToolCall, t *ToolRequest) (decision, reason string, input []byte, context string) {
	pre, preReason := "", ""
	input = t.Input
	if c != nil {
		pre, preReason, context = c.PreDecision, c.PreReason, c.PreContext
		if c.PreInput != nil && pre != ToolDeny {
			input = c.PreInput
		}
	}
	switch {
	case pre == ToolDeny:
		return ToolDeny, "PreToolUse:" + t.Name + " hook error: " + preReason, nil, context
	case t.Permission == ToolDeny:
		return ToolDeny, "Permission to use " + t.Name + " was denied.", nil, context
	case pre == ToolAsk || t.Permission == ToolAsk || pre == "" && t.Permission == "":
		decision, reason = ToolAsk, preReason
	default:
		decision, reason = ToolAllow, preReason
	}
	if c != nil && c.PermissionAsked {
		switch c.PermissionDecision {
		case ToolAllow:
			decision, reason = ToolAllow, c.PermissionReason
			if c.PermissionInput != nil {
				input = c.PermissionInput
			}
		case ToolDeny:
			return ToolDeny, "PermissionRequest:" + t.Name + " hook error: " + c.PermissionReason, nil, context
		}
	}
	return decision, reason, input, context
}

// postTool records the result of call c, decided earlier, and runs its
// PostToolUse (or PostToolUseFailure) hooks, once.
func postTool(in Input, c *projection.ToolCall, state fsm.State) (Ready, error) {
	t := in.Action.Tool
	if state == fsm.ToolAsked && !t.Refused {
		return Ready{}, fmt.Errorf("%w: %s was left to ask; record the user's answer first", ErrToolNotAllowed, t.ID)
	}
	switch state {
	case fsm.ToolAllowed, fsm.ToolAsked:
		event := schema.HookPostToolUse
		if t.Failed || t.Refused {
			event = schema.HookPostToolUseFailure
		}
		matched, ok := in.Outcome.(HooksMatched)
		if !ok && !t.Refused {
			return Ready{Effect: MatchHooks{Event: event, Value: c.Tool, Session: c.Session}}, nil
		}
		s := in.Sessions[c.Session]
		if s == nil {
			return Ready{}, fmt.Errorf("%w: %s", ErrSessionNotFound, c.Session)
		}
		content := t.Result
		if t.Failed || t.Refused {
			content = []byte(mustJSON(t.Error))
		}
		msg := toolResult(in, t.ID, content, t.Failed || t.Refused)
		if !t.Failed && !t.Refused && json.Valid(t.Response) {
			msg.ToolUseResult = t.Response // the transcript's toolUseResult
		}
		var msgs []schema.Message
		var injected *injection
		last := len(matched.Hooks) == 0 && lastOfAnswer(in, s, t.ID)
		if len(matched.Hooks) == 0 {
			// The PreToolUse hooks' context, beside the result.
			msgs, injected = feedback(in, c, event, HooksRan{}), batchEnd(in, s, last)
		}
		ready := withMessages(in, s, append([]schema.Message{msg}, msgs...), injected)
		ready = withAgentStep(in, ready, t.ID, &schema.ToolResultRecorded{Session: c.Session,
			ToolUseID: t.ID, Tool: c.Tool, MessageUUID: msg.UUID, Failed: t.Failed || t.Refused, Interrupted: t.Interrupt,
			Hooks: matched.Hooks, Status: matched.Status})
		if len(matched.Hooks) > 0 {
			ready.Effect = RunHooks{Event: event, Session: c.Session, Hooks: matched.Hooks, Tool: t, ToolInput: c.Input,
				PromptID: in.Agent.LastPromptID}
			return ready, nil
		}
		ready.Report.Tool = &ToolReport{ID: t.ID, Decision: c.Decision, Input: c.Input, Resulted: true, LastOfAnswer: last}
		return withInjected(in, ready, injected), nil
	case fsm.ToolPostHooks:
		if err := othersHooks(in, t.ID); err != nil {
			return Ready{}, err
		}
		ran, cut := hooksRan(in, c.PostHooks)
		event := schema.HookPostToolUse
		if c.Failed {
			event = schema.HookPostToolUseFailure
		}
		step := &schema.ToolHookRan{Event: event, Session: c.Session, ToolUseID: t.ID, Tool: c.Tool, Outcomes: ran.Outcomes,
			Interrupted: cut, Context: ran.Context, Replacement: ran.Replacement}
		if ran.Blocked {
			step.Decision, step.Reason = "block", ran.Reason
		}
		s := in.Sessions[c.Session]
		if s == nil {
			return Ready{}, fmt.Errorf("%w: %s", ErrSessionNotFound, c.Session)
		}
		last := lastOfAnswer(in, s, t.ID)
		msgs, injected := feedback(in, c, event, ran), batchEnd(in, s, last)
		if len(msgs) > 0 {
			step.MessageUUID = msgs[0].UUID
		}
		ready := withAgentStep(in, withMessages(in, s, msgs, injected), t.ID, step)
		ready.Report.Tool = &ToolReport{ID: t.ID, Decision: c.Decision, Input: c.Input, Resulted: true,
			Blocked: ran.Blocked, BlockReason: ran.Reason, PostContext: ran.Context, UpdatedResult: ran.Replacement,
			LastOfAnswer: last}
		return withInjected(in, ready, injected), nil
	case fsm.ToolDone:
		rep := report(c)
		rep.AlreadyRecorded = true
		return Ready{Report: Report{Tool: rep}}, nil
	}
	return Ready{}, fmt.Errorf("%w: %s", ErrToolNotDecided, t.ID)
}

// batchEnd is the context of session s's async hooks that ended since the
// model last heard from them, when the step resolves the last call of its
// answer (last, lastOfAnswer's): Claude Code hands that context on in the
// next request, and the last result of an answer ends the next request's
// messages. Nil when there is none, or calls are still open.
func batchEnd(in Input, s *Session, last bool) *injection {
	if !last {
		return nil
	}
	return asyncContext(in, s.ID, "")
}

// lastOfAnswer reports whether, once call id's step is recorded, every
// call of the answer holding it is resolved: each has its result, and
// none but id has hooks running after it.
func lastOfAnswer(in Input, s *Session, id string) bool {
	other := func(o string) bool { return o != id }
	if slices.ContainsFunc(s.OpenCalls, other) {
		return false
	}
	return !slices.ContainsFunc(s.Calls, func(o string) bool {
		c := in.Agent.Tools[o]
		return o != id && c != nil && fsm.ToolInFlight(c.State)
	})
}

// withMessages is the Ready that appends msgs, then injected's message
// when there is one, to session s, each the parent of the next; empty
// when there are none.
func withMessages(in Input, s *Session, msgs []schema.Message, injected *injection) Ready {
	if injected != nil {
		msgs = append(msgs, injected.msg.Message)
	}
	if len(msgs) == 0 {
		return Ready{}
	}
	ready := messages(in.Now, s, &msgs[0])
	return after(ready, s.ID, msgs[0].UUID, msgs[1:])
}

// withInjected adds to ready, a call's last step, the record that
// injected's message took its async runs' context to the model.
func withInjected(in Input, ready Ready, injected *injection) Ready {
	if injected == nil {
		return ready
	}
	ready.Report.Tool.AsyncUUID = injected.msg.Message.UUID
	return add(ready, projection.AgentStream(in.Agent.ID), injected.step, in.Now, "")
}

// feedback is what the model is told beside call c's result, as Claude
// Code puts it in the next request: the PreToolUse hooks' context, the
// context of event's hooks, and the reason of their block, each its own
// meta message. A context message carries the attachment record Claude
// Code keeps it as in the transcript.
func feedback(in Input, c *projection.ToolCall, event schema.HookEvent, ran HooksRan) []schema.Message {
	var msgs []schema.Message
	if c.Context != "" {
		msgs = append(msgs, hookContext(in, schema.HookPreToolUse, c, c.Context))
	}
	if ran.Context != "" {
		msgs = append(msgs, hookContext(in, event, c, ran.Context))
	}
	if ran.Blocked {
		msgs = append(msgs, contextMessage(in, string(event)+":"+c.Tool+" hook blocking error: "+ran.Reason))
	}
	return msgs
}

// hookContext is the meta message that tells the model what the hooks of
// event on call c added, and its attachment.
func hookContext(in Input, event schema.HookEvent, c *projection.ToolCall, context string) schema.Message {
	name := string(event) + ":" + c.Tool
	m := contextMessage(in, name+" hook additional context: "+context)
	m.Attachment, _ = json.Marshal(struct { // strings always marshal
		Type      string   `json:"type"`
		Content   []string `json:"content"`
		HookName  string   `json:"hookName"`
		ToolUseID string   `json:"toolUseID"`
		HookEvent string   `json:"hookEvent"`
	}{"hook_additional_context", []string{context}, name, c.ID, string(event)})
	return m
}

// after adds msgs to ready, in session id after message parent, each the
// parent of the next.
func after(ready Ready, id, parent string, msgs []schema.Message) Ready {
	for _, m := range msgs {
		m.ParentUUID, parent = parent, m.UUID
		ready = add(ready, projection.SessionStream(id), &schema.MessageAppended{Message: m}, m.Timestamp, "")
	}
	return ready
}

// contextMessage is the meta user message that tells the model text
// beside a tool's result.
func contextMessage(in Input, text string) schema.Message {
	return schema.Message{UUID: in.NewID(), Role: "user", IsMeta: true, Timestamp: in.Now,
		Content: []schema.Block{{Type: "text", Text: text}}}
}

// toolResult is the user message holding the tool_result of call id.
func toolResult(in Input, id string, content []byte, isError bool) schema.Message {
	if !json.Valid(content) {
		content = []byte(mustJSON(string(content)))
	}
	raw, _ := json.Marshal(struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error,omitempty"`
	}{"tool_result", id, content, isError}) // content is valid JSON: checked above
	return schema.Message{UUID: in.NewID(), Role: "user", Timestamp: in.Now,
		Content: []schema.Block{{Type: "tool_result", Raw: raw}}}
}

// mustJSON is s as a JSON string.
func mustJSON(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// orphans is the step of a Continue that closes, as interrupted, the first
// of the tool calls the shell named whose hooks the log shows running: a
// dead process's. Nothing when there is none.
func orphans(in Input) (Ready, bool) {
	a := in.Agent
	fires := slices.Clone(in.Action.OrphanFires)
	slices.Sort(fires)
	for _, id := range fires {
		if f := a.Fires[id]; f != nil && f.State == fsm.FireHooks {
			return orphanFire(in, f), true
		}
	}
	ids := slices.Clone(in.Action.Orphans)
	slices.Sort(ids)
	for _, id := range ids {
		c := a.Tools[id]
		if c == nil || !fsm.ToolInFlight(c.State) {
			continue
		}
		switch c.State {
		case fsm.ToolPostHooks:
			event := schema.HookPostToolUse
			if c.Failed {
				event = schema.HookPostToolUseFailure
			}
			ran, _ := hooksRan(Input{}, c.PostHooks)
			step := &schema.ToolHookRan{Event: event, Session: c.Session, ToolUseID: id, Tool: c.Tool,
				Outcomes: ran.Outcomes, Interrupted: true}
			ready := Ready{}
			if s := in.Sessions[c.Session]; s != nil && c.Context != "" {
				// The PreToolUse hooks' context, which would have come
				// with the PostToolUse hooks', still reaches the model.
				msgs := feedback(in, c, event, HooksRan{})
				step.MessageUUID = msgs[0].UUID
				ready = messages(in.Now, s, &msgs[0])
			}
			return withAgentStep(in, ready, id, step), true
		case fsm.ToolPermissionHooks:
			ran, _ := hooksRan(Input{}, c.PermissionHooks)
			return agentStep(in, id, &schema.ToolHookRan{Event: schema.HookPermissionRequest, Session: c.Session, ToolUseID: id,
				Tool: c.Tool, Outcomes: ran.Outcomes, Interrupted: true}), true
		default:
			ran, _ := hooksRan(Input{}, c.PreHooks)
			return agentStep(in, id, &schema.ToolHookRan{Event: schema.HookPreToolUse, Session: c.Session, ToolUseID: id,
				Tool: c.Tool, Outcomes: ran.Outcomes, Interrupted: true}), true
		}
	}
	return Ready{}, false
}
