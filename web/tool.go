package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// toolCall is what a tool call's row shows besides its steps and hooks:
// the call, its decision and its result. Its texts are those of the
// events as the agent page folds them, cut when an event is large.
type toolCall struct {
	Name, Session    string
	Decision, Reason string // "" until decided
	Input            string // the input the tool runs with, as indented JSON; "" when none is recorded (a denied call)
	Result           *toolResult
	Blocked          bool // by its PostToolUse hooks
	BlockReason      string
	UpdatedResult    string // the result its PostToolUse hooks gave instead, as indented JSON
	input, updated   []byte // the same, as recorded, for the API
}

// toolResult is the tool_result message of a call: the tool's output or
// failure, or the error a denied call's model is told.
type toolResult struct {
	Message     string // its uuid
	Failed      bool
	Interrupted bool   // the call was cut off before it: a dead process's, rolled forward
	Seq         uint64 // its sequence in the session's stream; 0 when it was not found
	Whole       string // the path that serves it whole, once found
	At          string // the path of the session's page at it, once found
	named       eventlog.Event
}

// toolJSON is, in the API's answer, what a tool call's row shows.
type toolJSON struct {
	Name          string          `json:"name"`
	ToolUse       string          `json:"tool_use"`
	Session       string          `json:"session"`
	Decision      string          `json:"decision,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	Input         any             `json:"input,omitempty"`
	Result        *toolResultJSON `json:"result,omitempty"`
	Blocked       bool            `json:"blocked,omitempty"`
	BlockReason   string          `json:"block_reason,omitempty"`
	UpdatedResult any             `json:"updated_result,omitempty"`
}

// toolResultJSON is a call's tool_result, with the path that serves it
// whole when it was found.
type toolResultJSON struct {
	Message     string `json:"message"`
	Failed      bool   `json:"failed,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
	Seq         uint64 `json:"seq,omitempty"`
	Whole       string `json:"whole,omitempty"`
}

// foldTool adds what event ev with payload p says to r when it is a step
// of a tool call, with intent and ran as foldRun adds hooks.
func foldTool(r *run, ev eventlog.Event, p schema.Payload, intent func(schema.HookEvent),
	ran func(schema.HookEvent, []schema.HookOutcome, bool, string)) {
	call := func(name, session string) *toolCall {
		r.Kind = "tool"
		if r.Tool == nil {
			r.Tool = &toolCall{}
		}
		r.Tool.Name, r.Tool.Session, r.To = name, session, session
		return r.Tool
	}
	switch p := p.(type) {
	case *schema.ToolHookStarted:
		call(p.Tool, p.Session)
		intent(p.Event)
	case *schema.ToolHookRan:
		c := call(p.Tool, p.Session)
		ran(p.Event, p.Outcomes, p.Interrupted, p.Context)
		if p.Event == schema.HookPostToolUse || p.Event == schema.HookPostToolUseFailure {
			c.Blocked, c.BlockReason = p.Decision == "block", p.Reason
			c.updated, c.UpdatedResult = p.Replacement, indentJSON(p.Replacement)
		}
	case *schema.ToolDecided:
		c := call(p.Tool, p.Session)
		c.Decision, c.Reason = p.Decision, p.Reason
		c.input, c.Input = p.Input, indentJSON(p.Input)
		if p.ResultUUID != "" {
			c.Result = &toolResult{Message: p.ResultUUID, Failed: true, named: ev}
		}
	case *schema.ToolResultRecorded:
		c := call(p.Tool, p.Session)
		c.Result = &toolResult{Message: p.MessageUUID, Failed: p.Failed, Interrupted: p.Interrupted, named: ev}
		if len(p.Hooks) > 0 {
			intent(postEvent(p.Failed))
		}
	}
}

// postEvent is the hook event that runs after a tool: PostToolUse, or
// PostToolUseFailure when it failed.
func postEvent(failed bool) schema.HookEvent {
	if failed {
		return schema.HookPostToolUseFailure
	}
	return schema.HookPostToolUse
}

// toolStepLabel names the segment of a tool call's step p: what happens
// until the next step. It is "" for any other step.
func toolStepLabel(p schema.Payload) string {
	switch p := p.(type) {
	case *schema.ToolHookStarted:
		return string(p.Event) + " hooks"
	case *schema.ToolHookRan:
		if p.Interrupted {
			return string(p.Event) + " interrupted"
		}
		return string(p.Event) + " ran"
	case *schema.ToolDecided:
		return "decided " + p.Decision
	case *schema.ToolResultRecorded:
		label := "result"
		switch {
		case p.Interrupted:
			label = "result (interrupted)"
		case p.Failed:
			label = "result (failed)"
		}
		if len(p.Hooks) > 0 {
			label += " · " + string(postEvent(p.Failed)) + " hooks"
		}
		return label
	}
	return ""
}

// jsonValue is raw in the API's answer: JSON as it is, or, when it is not
// (the start of a cut one), a string.
func jsonValue(raw []byte) any {
	switch {
	case raw == nil:
		return nil
	case json.Valid(raw):
		return json.RawMessage(raw)
	case utf8.Valid(raw):
		return string(raw)
	}
	return raw
}

// findResult looks up the sequence of c's tool_result in its session's
// stream. The message is appended with the event that names it, just
// before it: the event before that one in the log, when it is a message
// of the session appended at the same time, is it.
func (h *handler) findResult(ctx context.Context, c *toolCall) error {
	res := c.Result
	if res == nil || res.named.Position < 2 {
		return nil
	}
	stream := projection.SessionStream(c.Session)
	err := h.e.Store().ReadAll(ctx, res.named.Position-1, func(ev eventlog.Event) error {
		if ev.Stream == stream && ev.Type == schema.TypeMessageAppended && ev.Time == res.named.Time {
			res.Seq = ev.Seq
		}
		return errEnough
	})
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	if res.Seq != 0 {
		res.Whole = h.opts.Prefix + messagePath(c.Session, res.Seq)
		res.At = h.opts.Prefix + sessionAt(c.Session, res.Seq, res.Message)
	}
	return nil
}

// newToolJSON describes c, the call of run id, for the API.
func (h *handler) newToolJSON(id string, c *toolCall) *toolJSON {
	out := &toolJSON{Name: c.Name, ToolUse: id, Session: c.Session, Decision: c.Decision, Reason: c.Reason,
		Input: jsonValue(c.input), Blocked: c.Blocked, BlockReason: c.BlockReason, UpdatedResult: jsonValue(c.updated)}
	if res := c.Result; res != nil {
		out.Result = &toolResultJSON{Message: res.Message, Failed: res.Failed, Interrupted: res.Interrupted, Seq: res.Seq}
		if res.Seq != 0 {
			out.Result.Whole = h.opts.Prefix + "/api" + messagePath(c.Session, res.Seq)
		}
	}
	return out
}

// toolBytes is what c's texts take of a page.
func toolBytes(c *toolCall) int {
	if c == nil {
		return 0
	}
	return len(c.Reason) + len(c.Input) + len(c.BlockReason) + len(c.UpdatedResult)
}

// sessionAt is the path of session id's page from seq on, at message
// uuid.
func sessionAt(id string, seq uint64, uuid string) string {
	return "/sessions/" + url.PathEscape(id) + "?cursor=" + strconv.FormatUint(seq, 10) + "#m-" + url.PathEscape(uuid)
}
