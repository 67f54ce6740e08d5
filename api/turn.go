package api

import (
	"encoding/json"
	"net/http"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/turn"
)

// turnBody is the body of POST /api/agents/{agent}/turn: what the host
// did since the last step.
type turnBody struct {
	Prompt string `json:"prompt"`
	Answer *struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"answer"`
	After   string `json:"after"`
	Since   string `json:"since"`
	Results []struct {
		ID     string          `json:"tool_use_id"`
		Output json.RawMessage `json:"output"`
		Error  string          `json:"error"`
	} `json:"results"`
	Answers []struct {
		ID      string `json:"tool_use_id"`
		Allow   bool   `json:"allow"`
		Refusal string `json:"refusal"`
	} `json:"answers"`
	Permission string   `json:"permission"`
	Repeatable []string `json:"repeatable"`
	Subagents  bool     `json:"subagents"`
}

// turnStep is the answer of a turn step: the TurnStep schema.
type turnStep struct {
	Step     turn.StepKind      `json:"step"`
	Agent    string             `json:"agent"`
	Session  string             `json:"session"`
	Messages []jsonview.Message `json:"messages,omitempty"`
	Since    string             `json:"since,omitempty"`
	After    string             `json:"after,omitempty"`
	Calls    []turnCall         `json:"calls,omitempty"`
	Asks     []turnAsk          `json:"asks,omitempty"`
	Outcome  *turnOutcome       `json:"outcome,omitempty"`
}

type turnCall struct {
	ID       string          `json:"tool_use_id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Again    bool            `json:"again"`
	Cwd      string          `json:"cwd,omitempty"`
	Subagent string          `json:"subagent,omitempty"`
}

type turnAsk struct {
	ID     string          `json:"tool_use_id"`
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input"`
	Reason string          `json:"reason"`
}

type turnOutcome struct {
	Resumed    bool   `json:"resumed"`
	Requests   int    `json:"requests,omitempty"`
	Blocked    bool   `json:"blocked"`
	Reason     string `json:"reason,omitempty"`
	Capped     bool   `json:"capped"`
	Limited    bool   `json:"limited,omitempty"`
	Halted     bool   `json:"halted"`
	StopReason string `json:"stop_reason,omitempty"`
}

// orEmpty is raw, or {} when it is empty: a call's input is always an
// object.
func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// turnStep takes one step of the agent's turn (turn.Step).
func (h *handler) turnStep(r *http.Request) (answer, error) {
	var b turnBody
	if err := decode(r, &b); err != nil {
		return answer{}, err
	}
	in := turn.StepInput{Prompt: b.Prompt, After: b.After, Since: b.Since, Permission: b.Permission, Repeatable: b.Repeatable, Subagents: b.Subagents}
	switch b.Permission {
	case "", "allow", "deny", "ask":
	default:
		return answer{}, badRequest("permission must be allow, deny or ask, not %q", b.Permission)
	}
	if b.Answer != nil {
		if b.Answer.Role != "" && b.Answer.Role != "assistant" {
			return answer{}, badRequest("the answer's role is assistant, not %q", b.Answer.Role)
		}
		blocks, valid := projection.Content(b.Answer.Content)
		if !valid {
			return answer{}, badRequest("the answer's content must be a string or an array of content blocks")
		}
		if b.After == "" {
			return answer{}, badRequest("an answer goes with after: the after of the ask it answers")
		}
		in.Answer = &reprise.Message{Role: "assistant", Content: blocks}
	}
	for _, res := range b.Results {
		if (res.Output == nil) == (res.Error == "") {
			return answer{}, badRequest("the result of %s needs one of output and error", res.ID)
		}
		in.Results = append(in.Results, reprise.ToolResult{ID: res.ID, Output: res.Output, Error: res.Error})
	}
	for _, a := range b.Answers {
		in.Answers = append(in.Answers, reprise.ToolAnswer{ID: a.ID, Allow: a.Allow, Refusal: a.Refusal})
	}
	agent, err := h.e.Agent(r.Context(), r.PathValue("agent"))
	if err != nil {
		return answer{}, err
	}
	res, err := turn.Step(r.Context(), h.e, agent, in)
	if err != nil {
		return answer{}, busy(agent, err)
	}
	out := turnStep{Step: res.Kind, Agent: agent.ID(), Session: res.Session, Since: res.Since, After: res.After}
	for _, m := range res.Messages {
		out.Messages = append(out.Messages, jsonview.NewMessage(m))
	}
	for _, c := range res.Calls {
		out.Calls = append(out.Calls, turnCall{ID: c.ID, Name: c.Name, Input: orEmpty(c.Input), Again: c.Again, Cwd: c.Cwd, Subagent: c.Subagent})
	}
	for _, a := range res.Asks {
		out.Asks = append(out.Asks, turnAsk{ID: a.Call.ID, Name: a.Call.Name, Input: orEmpty(a.Call.Input), Reason: a.Reason})
	}
	if o := res.Outcome; o != nil {
		out.Outcome = &turnOutcome{Resumed: o.Resumed, Requests: o.Requests, Blocked: o.Blocked, Reason: o.Reason,
			Capped: o.Capped, Limited: o.Limited, Halted: o.Halted, StopReason: o.StopReason}
	}
	return ok(out), nil
}
