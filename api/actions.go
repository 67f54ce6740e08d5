package api

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
)

// action is one of an agent's actions: it decodes its body into a fresh
// value of its own and performs it on the agent.
type action struct {
	body func() any
	do   func(r *http.Request, a *reprise.Agent, body any) (any, error)
}

// act makes an action whose body is a B.
func act[B any](do func(r *http.Request, a *reprise.Agent, b *B) (any, error)) action {
	return action{
		body: func() any { return new(B) },
		do:   func(r *http.Request, a *reprise.Agent, b any) (any, error) { return do(r, a, b.(*B)) },
	}
}

// agentAction serves act on the agent the path names.
func (h *handler) agentAction(act action) func(*http.Request) (answer, error) {
	return func(r *http.Request) (answer, error) {
		body := act.body()
		if err := decode(r, body); err != nil {
			return answer{}, err
		}
		a, err := h.e.Agent(r.Context(), r.PathValue("agent"))
		if err != nil {
			return answer{}, err
		}
		out, err := act.do(r, a, body)
		if err != nil {
			return answer{}, busy(a, err)
		}
		return ok(out), nil
	}
}

// The bodies of the agents' actions, each field named as its command's
// flag.
type (
	startBody struct {
		Session string `json:"session"`
		Prompt  string `json:"prompt"`
		Resume  bool   `json:"resume"`
	}
	resumeBody struct {
		Session string `json:"session"`
	}
	newBody struct {
		ID     string `json:"id"`
		Cwd    string `json:"cwd"`
		Prompt string `json:"prompt"`
	}
	emptyBody struct{}
	forkBody  struct {
		Parent string `json:"parent"`
		At     string `json:"at"`
	}
	compactBody struct {
		Summary      string `json:"summary"`
		Instructions string `json:"instructions"`
		Trigger      string `json:"trigger"`
	}
	endBody struct {
		Reason       string `json:"reason"`
		FinalMessage string `json:"final_message"`
		Error        string `json:"error"`
	}
	stopBody struct {
		Reason string `json:"reason"`
	}
	promptBody struct {
		Text string `json:"text"`
	}
	toolBody struct {
		ID         string          `json:"tool_use_id"`
		Name       string          `json:"name"`
		Input      json.RawMessage `json:"input"`
		Permission string          `json:"permission"`
		AddToolUse bool            `json:"add_tool_use"`
		Answer     string          `json:"answer"`
		Refusal    string          `json:"refusal"`
		Feedback   string          `json:"feedback"`
	}
	toolResultBody struct {
		ID     string          `json:"tool_use_id"`
		Output json.RawMessage `json:"output"`
		Error  string          `json:"error"`
	}
	fireBody struct {
		Event  string          `json:"event"`
		ID     string          `json:"id"`
		Fields json.RawMessage `json:"fields"`
	}
)

// restored is a restore's answer: what reprise start and the other
// restores print with --json.
func restored(a *reprise.Agent, to string, r *reprise.Transition, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	if r != nil {
		to = r.To
	}
	return jsonview.NewRestore(a.ID(), to, r), nil
}

// required fails with bad_request naming field when value is empty.
func required(field, value string) error {
	if value == "" {
		return badRequest("%s is required", field)
	}
	return nil
}

// actions are the agents' actions by the last segment of their path.
var actions = map[string]action{
	"start": act(func(r *http.Request, a *reprise.Agent, b *startBody) (any, error) {
		if err := required("session", b.Session); err != nil {
			return nil, err
		}
		opts := []reprise.ActionOption{reprise.WithInitialPrompt(b.Prompt)}
		if b.Resume {
			opts = append(opts, reprise.WithResume())
		}
		t, err := a.Start(r.Context(), b.Session, opts...)
		return restored(a, b.Session, t, err)
	}),
	"resume": act(func(r *http.Request, a *reprise.Agent, b *resumeBody) (any, error) {
		if err := required("session", b.Session); err != nil {
			return nil, err
		}
		t, err := a.Restore(r.Context(), b.Session)
		return restored(a, b.Session, t, err)
	}),
	"new": act(func(r *http.Request, a *reprise.Agent, b *newBody) (any, error) {
		if err := required("cwd", b.Cwd); err != nil {
			return nil, err
		}
		t, err := a.New(r.Context(), b.ID, b.Cwd, reprise.WithInitialPrompt(b.Prompt))
		return restored(a, b.ID, t, err)
	}),
	"clear": act(func(r *http.Request, a *reprise.Agent, _ *emptyBody) (any, error) {
		t, err := a.Clear(r.Context())
		return restored(a, "", t, err)
	}),
	"fork": act(func(r *http.Request, a *reprise.Agent, b *forkBody) (any, error) {
		if err := required("parent", b.Parent); err != nil {
			return nil, err
		}
		t, err := a.Fork(r.Context(), b.Parent, b.At)
		return restored(a, "", t, err)
	}),
	"compact": act(func(r *http.Request, a *reprise.Agent, b *compactBody) (any, error) {
		if err := required("summary", b.Summary); err != nil {
			return nil, err
		}
		opts := []reprise.ActionOption{reprise.WithInstructions(b.Instructions)}
		if b.Trigger != "" {
			opts = append(opts, reprise.WithTrigger(b.Trigger))
		}
		t, err := a.Compact(r.Context(), b.Summary, opts...)
		return restored(a, a.Current(), t, err)
	}),
	"end": act(func(r *http.Request, a *reprise.Agent, b *endBody) (any, error) {
		if err := required("reason", b.Reason); err != nil {
			return nil, err
		}
		t, err := a.End(r.Context(), reprise.Reason(b.Reason), reprise.EndOptions{FinalMessage: b.FinalMessage, Error: b.Error})
		return restored(a, "", t, err)
	}),
	"stop": act(func(r *http.Request, a *reprise.Agent, b *stopBody) (any, error) {
		res, err := a.Stop(r.Context(), reprise.WithStopReason(b.Reason))
		if err != nil {
			return nil, err
		}
		return jsonview.NewStop(res, b.Reason), nil
	}),
	"prompt": act(func(r *http.Request, a *reprise.Agent, b *promptBody) (any, error) {
		if err := required("text", b.Text); err != nil {
			return nil, err
		}
		session := a.Current()
		res, err := a.Prompt(r.Context(), b.Text)
		if err != nil {
			return nil, err
		}
		return jsonview.NewPrompt(a.ID(), session, res), nil
	}),
	"tool": act(func(r *http.Request, a *reprise.Agent, b *toolBody) (any, error) {
		if err := required("tool_use_id", b.ID); err != nil {
			return nil, err
		}
		var (
			d   *reprise.ToolDecision
			err error
		)
		switch {
		case b.Answer != "":
			if b.Name != "" || b.Input != nil || b.Permission != "" || b.AddToolUse {
				return nil, badRequest("answer takes the call from the log: give it no name, input, permission or add_tool_use")
			}
			if b.Answer != "allow" && b.Answer != "refuse" {
				return nil, badRequest("answer must be allow or refuse, not %q", b.Answer)
			}
			if (b.Refusal != "" || b.Feedback != "") && b.Answer != "refuse" || b.Refusal != "" && b.Feedback != "" {
				return nil, badRequest("refusal or feedback, one of them, go with answer refuse")
			}
			refusal := b.Refusal
			if b.Feedback != "" {
				refusal = reprise.UserRefusedSaying(b.Feedback)
			}
			d, err = a.AnswerAsk(r.Context(), reprise.ToolAnswer{ID: b.ID, Allow: b.Answer == "allow", Refusal: refusal})
		default:
			if err := required("name", b.Name); err != nil {
				return nil, err
			}
			if b.Refusal != "" || b.Feedback != "" {
				return nil, badRequest("refusal and feedback go with answer refuse")
			}
			input := b.Input
			if input == nil {
				input = json.RawMessage("{}")
			}
			d, err = a.PreToolUse(r.Context(), reprise.ToolCall{ID: b.ID, Name: b.Name, Input: input,
				Permission: b.Permission, AddToolUse: b.AddToolUse})
		}
		if err != nil {
			return nil, err
		}
		return jsonview.NewToolDecision(d), nil
	}),
	"tool-result": act(func(r *http.Request, a *reprise.Agent, b *toolResultBody) (any, error) {
		if err := required("tool_use_id", b.ID); err != nil {
			return nil, err
		}
		if (b.Output == nil) == (b.Error == "") {
			return nil, badRequest("give one of output and error")
		}
		f, err := a.PostToolUse(r.Context(), reprise.ToolResult{ID: b.ID, Output: b.Output, Error: b.Error})
		if err != nil {
			return nil, err
		}
		return jsonview.NewToolFeedback(f), nil
	}),
	"fire": act(func(r *http.Request, a *reprise.Agent, b *fireBody) (any, error) {
		if err := required("event", b.Event); err != nil {
			return nil, err
		}
		if err := required("id", b.ID); err != nil {
			return nil, err
		}
		fields := b.Fields
		if fields == nil {
			fields = json.RawMessage("{}")
		}
		f, err := a.Fire(r.Context(), hookexec.Event(b.Event), b.ID, fields)
		if err != nil {
			return nil, err
		}
		return jsonview.NewFired(f), nil
	}),
}

// finish rolls forward what the agent's log ends inside, and says what
// that was, as reprise finish --json does.
func (h *handler) finish(r *http.Request) (answer, error) {
	if err := decode(r, &emptyBody{}); err != nil {
		return answer{}, err
	}
	name := r.PathValue("agent")
	if err := reprise.ValidateID(name); err != nil {
		return answer{}, err
	}
	before := projection.NewAgent(name)
	if err := h.e.Store().ReadStream(r.Context(), projection.AgentStream(name), 1, before.Apply); err != nil {
		return answer{}, err
	}
	if before.Head == 0 {
		return answer{}, &apiError{status: http.StatusNotFound, code: "agent_not_found", msg: "no agent " + name}
	}
	a, err := h.e.Agent(r.Context(), name)
	if err != nil {
		return answer{}, err
	}
	after := projection.NewAgent(name)
	if err := h.e.Store().ReadStream(r.Context(), projection.AgentStream(name), 1, after.Apply); err != nil {
		return answer{}, err
	}
	if after.InFlight() {
		// Loading rolled nothing forward: an action of this process
		// holds the agent, and what is in flight is its own.
		return answer{}, &apiError{status: http.StatusConflict, code: "agent_busy", busy: cmp.Or(a.Doing(), jsonview.AgentNow(after)),
			msg: fmt.Sprintf("agent %s is busy: %s; finish it once that ends", name, jsonview.AgentNow(after))}
	}
	out, _, _ := jsonview.NewFinish(before, a)
	return ok(out), nil
}
