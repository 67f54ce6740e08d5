package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/projection"
)

// StepInput is what a host that runs the model and the tools itself (a
// host in another language, over the write API) brings to one step of a
// turn: what it did since the last step.
type StepInput struct {
	// Prompt starts a turn, as Run does; "" goes on with the turn the log
	// shows, as Resume does. A prompt goes alone: with Answer, Results or
	// Answers it is refused.
	Prompt string
	// Answer is the model's answer to the last step's Ask, for the
	// conversation whose last message is After: if the log moved on since
	// (another host answered), it is not recorded and the model is asked
	// again.
	Answer *reprise.Message
	After  string
	// Since is the After of an earlier ask whose messages the host
	// keeps: the next ask gives only the messages after that one, when
	// the conversation the model sees still holds it (its messages before
	// it are never rewritten), and the whole conversation otherwise (a
	// compaction, a clear, another session). "" asks for the whole.
	Since string
	// Results are the results of the calls the last step gave to run,
	// each by its tool_use id. A call given to run whose result is not
	// here is taken as cut off by a crash: it may have run, and unless its
	// tool is Repeatable its result says it was interrupted.
	Results []reprise.ToolResult
	// Answers are the user's answers to the calls the last step left to
	// ask: Refusal empty to run the call, else what the model is told.
	Answers []reprise.ToolAnswer
	// Permission is what the host's rules say of every call nothing else
	// decides: hookexec.Allow, Deny, Ask, or "" for nothing (the call is
	// then left to ask).
	Permission string
	// Repeatable names the tools that may run again after a crash cut a
	// call of theirs off before its result (Tool.Repeatable).
	Repeatable []string
	// Subagents starts, for each allowed call of the Agent tool (Task),
	// its subagent (Agent.StartSubagent), once: the call is given to run
	// with the subagent's agent in Call.Subagent, whose turn the host
	// drives with Step on that agent, and the subagent's final answer is
	// the result the host gives the call. Without it an Agent call is a
	// tool of the host's as any other.
	Subagents bool
}

// StepKind says what a step asks of the host.
type StepKind string

// The kinds of step.
const (
	StepAsk   StepKind = "ask"   // ask the model with Messages, and give its answer
	StepTools StepKind = "tools" // run Calls (already allowed), and ask the user about Asks; give their results and answers
	StepOver  StepKind = "over"  // the turn is over: Outcome says how
)

// PendingAsk is a call left to ask: the host asks its user, with the
// hooks' Reason, and gives the answer in the next step's Answers.
type PendingAsk struct {
	Call   Call
	Reason string
}

// StepResult is what the host is to do next.
type StepResult struct {
	Kind    StepKind
	Session string
	// Messages (StepAsk) is the conversation the model answers, as it
	// sees it, in answer order, or, when Since is set, its messages after
	// the one whose uuid Since is (StepInput.Since); After the uuid of
	// its last message.
	Messages []reprise.Message
	Since    string
	After    string
	Calls    []Call       // StepTools: the calls to run, in the answer's order
	Asks     []PendingAsk // StepTools: the calls to ask the user about
	Outcome  *Outcome     // how the turn, or this part of it, ended
}

// errPending ends a call, a question or a model request that the host
// performs itself, under Step: nothing is recorded for it.
var errPending = errors.New("turn: the host performs this step")

// external is what a Step's Runner knows of the host's side: what it
// brought, and what it is to do next.
type external struct {
	in         StepInput
	agent      *reprise.Agent
	subagents  sync.Map // tool_use id -> the agent of the subagent it started
	results    map[string]reprise.ToolResult
	answers    map[string]string
	answerUsed bool

	mu    sync.Mutex
	ask   []reprise.Message // set when the model is to be asked: what the host is given of the conversation
	since string            // the message ask follows, when the host has the conversation up to it
	after string            // the conversation's last message, the one the answer is to follow
	calls []Call
	asks  []PendingAsk
}

// hasResult reports whether the host brought call id's result; false
// outside Step.
func (x *external) hasResult(id string) bool {
	if x == nil {
		return false
	}
	_, found := x.results[id]
	return found
}

// answer returns the user's answer to call id, and whether the host
// brought one.
func (x *external) answer(id string) (refusal string, given bool) {
	refusal, given = x.answers[id]
	return refusal, given
}

// tool is the host's tool name: it returns the result the host brought,
// or errPending; under Subagents, a call of the Agent tool starts its
// subagent first, which a call cut off by a crash does again, doing
// nothing twice.
func (x *external) tool(name string) Tool {
	subagent := x.in.Subagents && (name == AgentTool || name == TaskTool)
	return Tool{Repeatable: subagent || slices.Contains(x.in.Repeatable, name), Run: func(ctx context.Context, c Call) (reprise.ToolResult, error) {
		if res, found := x.results[c.ID]; found {
			return res, nil
		}
		if subagent {
			var in subagentInput
			if err := json.Unmarshal(c.Input, &in); err != nil || strings.TrimSpace(in.Prompt) == "" {
				return reprise.ToolResult{}, fmt.Errorf("the %s tool needs a prompt: %s", c.Name, c.Input)
			}
			child, err := x.agent.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: c.ID, Type: in.Type, Description: in.Description, Prompt: in.Prompt})
			if err != nil {
				return reprise.ToolResult{}, err
			}
			x.subagents.Store(c.ID, child.ID())
		}
		return reprise.ToolResult{}, errPending
	}}
}

// model answers with the host's answer when it is for conv, else asks
// the host, with the messages after since when conv holds since. conv is
// the session's own (Runner.answer reads it in place): what the host is
// given is copied, and only that.
func (x *external) model(_ context.Context, conv []reprise.Message) (reprise.Message, error) {
	if len(conv) == 0 {
		return reprise.Message{}, errors.New("nothing to ask the model about")
	}
	x.after = conv[len(conv)-1].UUID
	if x.in.Answer != nil && !x.answerUsed && x.after == x.in.After {
		x.answerUsed = true
		return *x.in.Answer, nil
	}
	given := conv
	if x.in.Since != "" {
		// The host's last ask is near the end: look from there.
		for i := len(conv) - 1; i >= 0; i-- {
			if conv[i].UUID == x.in.Since {
				given, x.since = conv[i+1:], x.in.Since
				break
			}
		}
	}
	x.ask = projection.CloneMessages(given)
	return reprise.Message{}, errPending
}

// wait notes that call c is the host's to run, or with reason to ask
// about.
func (x *external) wait(c Call, reason string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if reason != "" {
		x.asks = append(x.asks, PendingAsk{Call: c, Reason: reason})
		return
	}
	if child, found := x.subagents.Load(c.ID); found {
		c.Subagent = child.(string)
	}
	x.calls = append(x.calls, c)
}

// waiting reports whether a call waits on the host.
func (x *external) waiting() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.calls)+len(x.asks) > 0
}

// Step takes one step of agent's turn for a host that runs the model and
// the tools itself: it records what in brings (a prompt, the model's
// answer, tool results, the user's answers), then goes on as Run and
// Resume do, every hook run and every step recorded by the same code,
// until the host has something to do: ask the model, run calls or ask
// the user about some, or nothing, the turn being over. Each step is
// decided from the log (Next), so a host killed anywhere, or the process
// that serves Step, goes on by calling Step again: no recorded answer is
// asked for again, no call with a recorded result runs again, no hook
// runs twice. Calls of one answer are given to the host together; an
// Agent call is a tool of the host's, as any other. It fails with
// reprise.ErrAgentBusy while a Runner or another Step drives the turn.
func Step(ctx context.Context, e *reprise.Engine, agent *reprise.Agent, in StepInput) (*StepResult, error) {
	if in.Prompt != "" && (in.Answer != nil || len(in.Results) > 0 || len(in.Answers) > 0) {
		return nil, fmt.Errorf("%w: a prompt starts a turn: it goes without an answer, results or answers", ErrBadStep)
	}
	x := &external{in: in, agent: agent, results: map[string]reprise.ToolResult{}, answers: map[string]string{}}
	for _, res := range in.Results {
		if _, dup := x.results[res.ID]; dup {
			return nil, fmt.Errorf("%w: two results of call %s", ErrBadStep, res.ID)
		}
		x.results[res.ID] = res
	}
	for _, a := range in.Answers {
		refusal := a.Refusal
		if !a.Allow && refusal == "" {
			refusal = reprise.UserRefused
		}
		if a.Allow {
			refusal = ""
		}
		x.answers[a.ID] = refusal
	}
	r := &Runner{Engine: e, Agent: agent, Model: x.model, external: x,
		Permission: func(Call) string { return in.Permission }}
	var (
		out *Outcome
		err error
	)
	if in.Prompt != "" {
		out, err = r.Run(ctx, in.Prompt)
	} else {
		out, err = r.Resume(ctx)
	}
	var failed *ModelError
	switch {
	case errors.As(err, &failed) && errors.Is(failed.Err, errPending):
		err = nil
	case err != nil:
		return nil, err
	}
	res := &StepResult{Kind: StepOver, Session: agent.Current(), Outcome: out}
	switch {
	case x.waiting():
		// The Runner takes the calls one at a time, in the answer's
		// order (it is not Parallel): they are noted in that order.
		res.Kind, res.Calls, res.Asks = StepTools, x.calls, x.asks
	case x.ask != nil:
		res.Kind, res.Messages, res.Since, res.After = StepAsk, x.ask, x.since, x.after
	}
	return res, nil
}

// ErrBadStep is returned by Step for an input that cannot be one step.
var ErrBadStep = errors.New("turn: bad step")
