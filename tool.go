package reprise

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// The decisions on a tool call, under their old names.
//
// Deprecated: use hookexec.Allow, hookexec.Deny and hookexec.Ask, the same
// strings: one set of names for what Go hooks return and what a call's
// decision says.
const (
	ToolAllow = hookexec.Allow
	ToolDeny  = hookexec.Deny
	ToolAsk   = hookexec.Ask
)

// ErrToolNotDecided is returned by PostToolUse for a call that PreToolUse
// did not decide.
var ErrToolNotDecided = lifecycle.ErrToolNotDecided

// ErrToolNotAllowed is returned by PostToolUse for the result of a call
// left to ask whose allow AnswerAsk did not record: nothing let it run.
var ErrToolNotAllowed = lifecycle.ErrToolNotAllowed

// ErrToolNotAsked is returned by AnswerAsk for a call with no decision
// recorded.
var ErrToolNotAsked = lifecycle.ErrToolNotAsked

// UserRefused is what the model is told, as the call's error tool_result,
// of a call the user refused when AnswerAsk is given no refusal of its
// own: Claude Code's words for a refusal at its permission prompt.
const UserRefused = userRejected + " STOP what you are doing and wait for the user to tell you how to proceed."

// userRejected opens both of Claude Code's texts for a refused call.
const userRejected = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file)."

// UserRefusedSaying is what the model is told of a call the user refused
// with words of their own, feedback, in Claude Code's words: the refusal,
// then "To tell you how to proceed, the user said:" and the feedback on
// the next line. Give it to AnswerAsk as the Refusal.
func UserRefusedSaying(feedback string) string {
	return userRejected + " To tell you how to proceed, the user said:\n" + feedback
}

// ErrBadTool is returned for a tool call without a name, with a tool_use
// id that is not an id (ValidateID: the Messages API's ids, toolu_... or
// call_..., are), with a permission that is none of the decisions, or
// with an input, output or response that is not JSON in UTF-8 (an input
// that is not an object).
var ErrBadTool = lifecycle.ErrBadTool

// ToolCall is a tool call the model asked for, as the host asks about it
// before running it.
type ToolCall struct {
	ID    string          // the tool_use id
	Name  string          // the tool, such as Bash
	Input json.RawMessage // the call's input, a JSON object
	// Permission is what the host's own permission rules say of the call:
	// hookexec.Allow, hookexec.Deny, hookexec.Ask, or "" when they say nothing. A deny
	// from the hooks or the rules wins, then an ask, then an allow, as
	// Claude Code weighs hooks and rules; a call nobody decides is hookexec.Ask.
	Permission string
	// AddToolUse records the call's tool_use, as an assistant message of
	// its own, when the agent's current session holds no answer with it.
	// Without it, PreToolUse refuses such a call with ErrToolUseNotFound:
	// record the model's answer (Engine.Append) before asking about its
	// calls.
	AddToolUse bool
}

// ToolDecision is what became of a tool call: hookexec.Allow (run it with
// Input), hookexec.Deny (do not run it: the model is told Reason, as an error
// tool_result already in the session) or hookexec.Ask (ask the user, and
// record the answer with AnswerAsk; run it once allowed).
type ToolDecision struct {
	Decision string
	Reason   string
	Input    json.RawMessage // the call's input, or what the hooks gave instead
	Context  string          // what PreToolUse hooks added for the model
	// Interrupted says the call was allowed before and has no result
	// recorded: a process that asked earlier may have run the tool.
	Interrupted bool
	// Resulted says the call's result is recorded already: it is not to
	// run again.
	Resulted bool
	// Outcomes are the call's PreToolUse and PermissionRequest hooks'
	// outcomes, in the order they ran.
	Outcomes []schema.HookOutcome
	Halt
}

// ToolResult is what a tool call gave: its Output, the tool_result's
// content the model reads (a JSON string or array of content blocks), or,
// when Error is set, its failure. Response is the result as the hooks get
// it, tool_response (Bash's {stdout, stderr, interrupted, isImage,
// noOutputExpected}, say); Output when empty. Refused says the user
// refused a call left to ask: Error is what the model is told, and no hook
// runs, as Claude Code runs none.
type ToolResult struct {
	ID        string
	Output    json.RawMessage
	Response  json.RawMessage
	Duration  time.Duration // how long the tool ran; 0 when unknown
	Error     string
	Interrupt bool // it failed because it was stopped
	// Refused says that the tool did not run: the turn stopped before it,
	// or the user refused it. To record the user's answer to a call left
	// to ask, allow or refusal, use AnswerAsk, which records it once.
	Refused bool
}

// ToolFeedback is what the hooks after a tool said: context for the
// model, a block whose Reason the model is told beside the result (both
// already in the session, after the tool_result), and a result that
// replaces the tool's for the host.
type ToolFeedback struct {
	// AlreadyRecorded says that the log held the call's result before
	// (recorded earlier, or the error result of its deny): the result
	// given was not kept, and the rest is what the log holds.
	AlreadyRecorded bool
	Context         string
	Blocked         bool
	Reason          string
	UpdatedResult   json.RawMessage
	Outcomes        []schema.HookOutcome // the PostToolUse (or PostToolUseFailure) hooks'
	// Batch is what the answer's PostToolBatch hooks decided, when this
	// result was the last of its answer (ToolBatch); nil otherwise. Their
	// block or halt halts the turn: Halt says so.
	Batch *Fired
	// AsyncMessage holds, as a meta message after the result and its
	// hooks' feedback, the context of the session's async hooks that ended
	// since the model last heard from them: given with the last result of
	// an answer, as Claude Code gives it in the next request. Nil when none
	// ended, or when calls of the answer still lack results.
	AsyncMessage *Message
	Halt
}

// PreToolUse asks, before the host runs a tool call, whether it may: the
// call's PreToolUse hooks run, with Claude Code's input, then, when the
// decision is still to ask, its PermissionRequest hooks, and the decision
// is recorded, once per tool_use id. Asked again about the same id, as a
// host that restarted does, it runs nothing and returns the recorded
// decision, Interrupted when the call was allowed and has no result.
//
// The call's tool_use must be in an answer the agent's current session
// holds, saved or buffered; else PreToolUse fails with ErrToolUseNotFound,
// unless call.AddToolUse asks for it to be recorded first, as an
// assistant message of its own (which the rules of Append apply to:
// ErrToolCallsOpen while calls of the answer before have no result).
// Calls of one answer may be
// decided at once, from several goroutines; lifecycle actions on the
// agent (Restore, Clear, Compact, End, ...) fail with ErrAgentBusy while
// a call's hooks run, and so does asking about a call whose hooks run, in
// this process or another one on the same store.
func (a *Agent) PreToolUse(ctx context.Context, call ToolCall) (*ToolDecision, error) {
	if err := checkPermission(call.Permission); err != nil {
		return nil, err
	}
	if err := checkToolID(call.ID); err != nil {
		return nil, err
	}
	if err := checkJSON("input", call.Input, true); err != nil {
		return nil, err
	}
	t := &lifecycle.ToolRequest{ID: call.ID, Name: call.Name, Input: jsonOr(call.Input, "{}"), Permission: call.Permission}
	rep, c, err := a.doTool(ctx, lifecycle.Action{Kind: lifecycle.PreToolUse, Tool: t}, func() error {
		if a.view.Tools[call.ID] != nil {
			return nil // decided before: its tool_use is recorded
		}
		var err error
		t.Use, err = a.toolUse(ctx, call)
		return err
	})
	if err != nil {
		return nil, err
	}
	if rep == nil {
		return nil, fmt.Errorf("agent %s: tool call %s was not decided", a.id, call.ID)
	}
	return decisionOf(rep, c), nil
}

// decisionOf is the decision rep reports on call c, with the outcomes of
// the hooks before it.
func decisionOf(rep *lifecycle.ToolReport, c projection.ToolCall) *ToolDecision {
	outcomes := slices.Concat(c.PreOutcomes, c.PermissionOutcomes)
	return &ToolDecision{Decision: rep.Decision, Reason: rep.Reason, Input: rep.Input, Context: rep.Context,
		Interrupted: rep.Interrupted, Resulted: rep.Resulted, Outcomes: outcomes, Halt: haltOf(outcomes)}
}

// ToolAnswer is the user's answer to a call left to ask: Allow, or a
// refusal, whose Refusal (UserRefused when empty) the model is told.
type ToolAnswer struct {
	ID      string // the tool_use id
	Allow   bool
	Refusal string
}

// AnswerAsk records, once, the user's answer to a call PreToolUse left to
// ask: an allow lets the host run the tool and report its result to
// PostToolUse, which refuses the result of an asked call that was not
// allowed (ErrToolNotAllowed); a refusal is recorded as the call's error
// tool_result, and no hook runs, as Claude Code runs none. It returns the
// call's decision as the log then holds it: answered again, it records
// nothing. A call with no decision recorded is ErrToolNotAsked.
func (a *Agent) AnswerAsk(ctx context.Context, ans ToolAnswer) (*ToolDecision, error) {
	if err := checkToolID(ans.ID); err != nil {
		return nil, err
	}
	t := &lifecycle.ToolRequest{ID: ans.ID, Answer: hookexec.Deny, Refusal: cmp.Or(ans.Refusal, UserRefused)}
	if ans.Allow {
		t.Answer, t.Refusal = hookexec.Allow, ""
	}
	rep, c, err := a.doTool(ctx, lifecycle.Action{Kind: lifecycle.PreToolUse, Tool: t}, func() error {
		if c := a.view.Tools[ans.ID]; c != nil {
			t.Name, t.Input = c.Tool, c.Input
			return nil
		}
		return fmt.Errorf("%w: %s has no decision recorded", ErrToolNotAsked, ans.ID)
	})
	if err != nil {
		return nil, err
	}
	if rep == nil {
		return nil, fmt.Errorf("agent %s: the answer to tool call %s was not recorded", a.id, ans.ID)
	}
	return decisionOf(rep, c), nil
}

// PostToolUse records what a tool call that PreToolUse decided gave, once
// per tool_use id, as the session's tool_result, then runs the call's
// PostToolUse hooks, or PostToolUseFailure when res.Error is set. Their
// context and the reason of a block are appended after the tool_result,
// where Claude Code puts them. The last result of an answer also brings
// the context of async hooks that ended meanwhile (AsyncMessage) and
// fires the answer's PostToolBatch (Batch). Asked again, it returns what
// the log holds.
func (a *Agent) PostToolUse(ctx context.Context, res ToolResult) (*ToolFeedback, error) {
	if err := checkToolID(res.ID); err != nil {
		return nil, err
	}
	if err := checkJSON("output", res.Output, false); err != nil {
		return nil, err
	}
	if err := checkJSON("response", res.Response, false); err != nil {
		return nil, err
	}
	t := &lifecycle.ToolRequest{ID: res.ID, Result: jsonOr(res.Output, `""`), Failed: res.Error != "" && !res.Refused,
		Refused: res.Refused, Error: res.Error, Interrupt: res.Interrupt, Duration: res.Duration.Nanoseconds()}
	t.Response = jsonOr(res.Response, string(t.Result))
	rep, c, err := a.doTool(ctx, lifecycle.Action{Kind: lifecycle.PostToolUse, Tool: t}, func() error {
		if c := a.view.Tools[res.ID]; c != nil {
			t.Name = c.Tool
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rep == nil {
		return nil, fmt.Errorf("%w: %s", ErrToolNotDecided, res.ID)
	}
	fb := &ToolFeedback{AlreadyRecorded: rep.AlreadyRecorded, Context: rep.PostContext, Blocked: rep.Blocked, Reason: rep.BlockReason,
		UpdatedResult: rep.UpdatedResult, Outcomes: c.PostOutcomes, Halt: haltOf(c.PostOutcomes)}
	if rep.AsyncUUID != "" {
		m, err := a.e.message(context.WithoutCancel(ctx), c.Session, rep.AsyncUUID)
		if err != nil {
			return nil, err
		}
		fb.AsyncMessage = &m
	}
	if rep.LastOfAnswer || rep.AlreadyRecorded {
		// AlreadyRecorded: a process that died after the result may not
		// have fired the batch.
		if fb.Batch, err = a.ToolBatch(ctx); err != nil {
			return nil, fmt.Errorf("agent %s: the result of %s is recorded; its answer's PostToolBatch: %w", a.id, res.ID, err)
		}
		if b := fb.Batch; b != nil && (b.Blocked || b.Halted) && !fb.Halted {
			fb.Halt = Halt{Halted: true, StopReason: cmp.Or(b.StopReason, b.Reason)}
		}
	}
	return fb, nil
}

// checkToolID refuses a tool_use id that is not an id: one that could
// name a path or forge a line where it is printed.
func checkToolID(id string) error {
	if err := ValidateID(id); err != nil {
		return fmt.Errorf("%w: tool_use id: %v", ErrBadTool, err)
	}
	return nil
}

// checkPermission refuses a permission that is none of the decisions.
func checkPermission(p string) error {
	if p != "" && p != hookexec.Allow && p != hookexec.Deny && p != hookexec.Ask {
		return fmt.Errorf("%w: permission %q is none of allow, deny, ask", ErrBadTool, p)
	}
	return nil
}

// checkJSON refuses raw, a call's what, unless it is empty or JSON text
// in UTF-8 (an object when object is set): encoding/json takes strings
// that are not UTF-8, but the hooks would read JSON that is not text,
// which they cannot parse, and a guard that cannot parse its input
// decides nothing.
func checkJSON(what string, raw json.RawMessage, object bool) error {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0:
		return nil
	case !json.Valid(t) || object && t[0] != '{':
		kind := "JSON"
		if object {
			kind = "a JSON object"
		}
		return fmt.Errorf("%w: the call's %s is not %s", ErrBadTool, what, kind)
	case !utf8.Valid(t):
		return fmt.Errorf("%w: the call's %s is not valid UTF-8", ErrBadTool, what)
	}
	return nil
}

// jsonObject reports whether raw is a JSON object.
func jsonObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// jsonOr returns raw when it is valid JSON, else otherwise.
func jsonOr(raw json.RawMessage, otherwise string) []byte {
	if len(bytes.TrimSpace(raw)) == 0 || !json.Valid(raw) {
		return []byte(otherwise)
	}
	return raw
}

// doTool performs the tool action act, with prepare run once the agent's
// log is read (doLane), and returns what the log holds of the call.
func (a *Agent) doTool(ctx context.Context, act lifecycle.Action, prepare func() error) (*lifecycle.ToolReport, projection.ToolCall, error) {
	var c projection.ToolCall
	rep, err := a.doLane(ctx, act, toolLane(act.Tool.ID), prepare, func() {
		if call := a.view.Tools[act.Tool.ID]; call != nil {
			c = *call
		}
	})
	return rep.Tool, c, err
}

// doLane performs act, a tool call's or a fire's, on lane, with prepare
// run once the agent's log is read: a lane's steps hold the agent only
// while they decide and append, never while hooks run, so the calls of
// one answer, and fires, go on at once; a second action on the same lane
// meanwhile is ErrAgentBusy. a.mu is taken and let go; read, when set,
// runs with it held once the action is done, to copy what the view holds.
func (a *Agent) doLane(ctx context.Context, act lifecycle.Action, l lane, prepare func() error, read func()) (lifecycle.Report, error) {
	ctx, release, err := a.lockLane(ctx, l)
	if err != nil {
		return lifecycle.Report{}, err
	}
	defer release()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lanes[l] {
		return lifecycle.Report{}, fmt.Errorf("%w: agent %s: %s", ErrAgentBusy, a.id, l)
	}
	if err := a.sync(ctx); err != nil {
		return lifecycle.Report{}, err
	}
	if err := prepare(); err != nil {
		return lifecycle.Report{}, err
	}
	a.lanes[l] = true
	defer delete(a.lanes, l)
	rep, err := a.step(ctx, act)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, eventlog.ErrLockLost) {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	if read != nil {
		read()
	}
	return rep, err
}

// laneAction reports whether act is a tool call's or a fire's.
func laneAction(act lifecycle.Action) bool {
	return act.Kind == lifecycle.PreToolUse || act.Kind == lifecycle.PostToolUse || act.Kind == lifecycle.Fire
}

// toolUse returns nil when the agent's current session, saved or
// buffered, holds call's tool_use; else, when call.AddToolUse asks for it,
// the assistant message to record it in, and else ErrToolUseNotFound.
// a.mu is held.
func (a *Agent) toolUse(ctx context.Context, call ToolCall) (*Message, error) {
	id := a.view.Current
	if id == "" {
		return nil, nil // the stepper says what no session means
	}
	s, err := a.e.session(ctx, id)
	if err != nil {
		return nil, nil // the stepper says what a missing session means
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if holds(s.pending, call.ID) || holds(s.conv.Messages, call.ID) {
		return nil, nil
	}
	if !call.AddToolUse {
		return nil, fmt.Errorf("%w: session %s holds no answer with tool_use %s; record the answer first, or ask for the tool_use to be added", ErrToolUseNotFound, id, call.ID)
	}
	m := ToolUseMessage(call.ID, call.Name, call.Input)
	m.UUID, m.Timestamp = a.e.newID(), a.e.stamp()
	if err := s.checkToolUses(m); err != nil {
		return nil, err
	}
	return &m, nil
}

// ToolUseBlock returns the tool_use block of a call of tool name with id
// and input, a JSON object ({} when input is empty or not JSON), as the
// Messages API writes it in an answer.
func ToolUseBlock(id, name string, input json.RawMessage) Block {
	raw, _ := json.Marshal(struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}{"tool_use", id, name, jsonOr(input, "{}")}) // the input is valid JSON: jsonOr checked it
	return Block{Type: "tool_use", Raw: raw}
}

// ToolUseMessage returns an answer that calls tool name with id and
// input: an assistant message of one ToolUseBlock.
func ToolUseMessage(id, name string, input json.RawMessage) Message {
	return Message{Role: "assistant", Content: []Block{ToolUseBlock(id, name, input)}}
}

// holds reports whether msgs hold the tool_use of call id. The call is
// most often in the last answer: msgs are read from the end, and a block
// is decoded only when it holds the id's text.
func holds(msgs []Message, id string) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, b := range msgs[i].Content {
			if b.Type != "tool_use" || !bytes.Contains(b.Raw, []byte(id)) {
				continue
			}
			var use struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(b.Raw, &use) == nil && use.ID == id {
				return true
			}
		}
	}
	return false
}

// orphanLanes returns the lanes (tool calls and fires) whose hooks the
// log shows running but that no step of this process runs: those of a
// process that died. a.mu is held.
func (a *Agent) orphanLanes() []lane {
	var lanes []lane
	for id, c := range a.view.Tools {
		if fsm.ToolInFlight(c.State) && !a.lanes[toolLane(id)] {
			lanes = append(lanes, toolLane(id))
		}
	}
	for id, f := range a.view.Fires {
		if f.State == fsm.FireHooks && !a.lanes[fireLane(id)] {
			lanes = append(lanes, fireLane(id))
		}
	}
	return lanes
}

// runToolHooks runs the hooks of a tool event for eff with in, through the
// Engine's runner when it runs tool hooks, and says what they did.
func (a *Agent) runToolHooks(ctx context.Context, eff lifecycle.RunHooks, hooks []hookexec.Hook, in hookexec.ToolInput, env hookexec.CommandEnv) lifecycle.HooksRan {
	e := a.e
	runner, ok := e.runner.(hookexec.ToolRunner)
	if !ok {
		runner = hookexec.Exec{}
	}
	t := eff.Tool
	in.PermissionMode, in.ToolName, in.ToolUseID, in.ToolInput = e.permissionMode, t.Name, t.ID, eff.ToolInput
	in.Response, in.Error, in.Interrupt, in.Duration = t.Response, t.Error, t.Interrupt, time.Duration(t.Duration)
	var (
		outcomes []schema.HookOutcome
		ran      lifecycle.HooksRan
	)
	switch eff.Event {
	case hookexec.PreToolUse, hookexec.PermissionRequest:
		var d hookexec.ToolDecision
		if eff.Event == hookexec.PreToolUse {
			outcomes, d = runner.PreToolUse(ctx, hooks, in, env)
		} else {
			outcomes, d = runner.PermissionRequest(ctx, hooks, in, env)
		}
		ran = lifecycle.HooksRan{Decision: d.Decision, Reason: d.Reason, Replacement: d.UpdatedInput, Context: d.Context}
		if len(d.UpdatedInput) > 0 && !jsonObject(d.UpdatedInput) {
			// A tool's input is an object, as the CLI's --input must be.
			e.log.Warn("a hook's updatedInput is not a JSON object: the call keeps its input", "event", eff.Event,
				"tool", t.Name, "tool_use_id", t.ID, "updatedInput", projection.Clip(string(d.UpdatedInput), 200))
			ran.Replacement = nil
		}
		if ctx.Err() != nil && d.Decision == "" {
			// The caller gave up before the hooks answered: what they
			// guard does not happen.
			ran.Decision, ran.Reason = hookexec.Deny, "cancelled before the hooks answered"
		}
	default:
		var f hookexec.ToolFeedback
		if eff.Event == hookexec.PostToolUse {
			outcomes, f = runner.PostToolUse(ctx, hooks, in, env)
		} else {
			outcomes, f = runner.PostToolUseFailure(ctx, hooks, in, env)
		}
		ran = lifecycle.HooksRan{Context: f.Context, Blocked: f.Blocked, Reason: f.Reason, Replacement: f.UpdatedResult}
	}
	ran.Outcomes = e.scoped.Settle(in.SessionID, hooks, outcomes)
	return ran
}

// Turn is where the turn on a session stands; TurnPhase what is left of
// it; ToolUse a tool call of an answer.
type (
	Turn      = projection.Turn
	TurnPhase = projection.TurnPhase
	ToolUse   = projection.ToolUse
)

// The phases of a turn.
const (
	TurnOver  = projection.TurnOver
	TurnAsk   = projection.TurnAsk
	TurnTools = projection.TurnTools
	TurnStop  = projection.TurnStop
)

// Turn says where the turn on the agent's current session stands, from
// what the log holds: a host that restarts learns from it what is left of
// a turn a dead process began (package turn drives turns with it). Like
// every action, it first rolls forward a step left in flight. With no
// current session the turn is over. It waits for an action of this process
// on the agent to end.
func (a *Agent) Turn(ctx context.Context) (Turn, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	release, err := a.lockStream(ctx)
	if err != nil {
		return Turn{}, err
	}
	defer release()
	if err := a.sync(ctx); err != nil {
		return Turn{}, err
	}
	id := a.view.Current
	if id == "" {
		return Turn{}, nil
	}
	s, err := a.e.session(ctx, id)
	if err != nil {
		return Turn{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := a.e.catchUp(ctx, s); err != nil {
		return Turn{}, fmt.Errorf("read session %s: %w", id, err)
	}
	return projection.TurnOf(id, s.conv.View(), a.view), nil
}

// ModelView returns a copy of the messages of the agent's current session
// as the model is to get them: Engine.Conversation's, with the tool_result
// of each call whose PostToolUse hooks gave updatedToolOutput (or
// updatedMCPToolOutput) holding that output instead of the tool's, as
// Claude Code sends it. The session's log keeps what the tool gave. With
// no current session it returns nothing. Hand it, not
// Engine.Conversation, to the model adapters.
func (a *Agent) ModelView(ctx context.Context) ([]Message, error) {
	var out []Message
	err := a.ReadModelView(ctx, func(conv []Message) error {
		if conv != nil {
			out = projection.CloneMessages(conv)
		}
		return nil
	})
	return out, err
}

// ReadModelView calls read with the messages ModelView returns, without
// copying them, and returns read's error. The messages, and every byte
// in them, are the session's own: valid only until read returns, and
// never to be changed. read runs with the session locked, so it must not
// call the Engine or the Agent. It is for a look at a long conversation
// (its last message, the ids it holds) that ModelView's copy would cost
// more than. With no current session read gets no messages.
func (a *Agent) ReadModelView(ctx context.Context, read func(conv []Message) error) error {
	a.mu.Lock()
	if err := a.sync(ctx); err != nil {
		a.mu.Unlock()
		return err
	}
	id := a.view.Current
	outputs := map[string][]byte{}
	for callID, c := range a.view.Replaced {
		if c.Session == id {
			outputs[callID] = c.PostResult
		}
	}
	a.mu.Unlock()
	if id == "" {
		return read(nil)
	}
	s, err := a.e.session(ctx, id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return read(projection.WithToolOutputs(s.conv.View(), outputs))
}
