package projection

import (
	"encoding/json"
	"slices"

	"github.com/reprise-dev/reprise/schema"
)

// TurnPhase says what is left to do of the turn on a session.
type TurnPhase int

// The phases of a turn, as the log leaves it.
const (
	// TurnOver: no turn is open, or the last one ended (its Stop hooks ran
	// and did not send the model back to work, or a hook halted it).
	TurnOver TurnPhase = iota
	// TurnAsk: a prompt, the results of the last answer's tool calls or a
	// Stop hook's reason wait for the model's answer.
	TurnAsk
	// TurnTools: calls of the last answer have no result yet.
	TurnTools
	// TurnStop: the last answer called no tool and its Stop hooks have
	// not run.
	TurnStop
)

var phaseNames = [...]string{"over", "ask", "tools", "stop"}

func (p TurnPhase) String() string {
	if p < 0 || int(p) >= len(phaseNames) {
		return "unknown"
	}
	return phaseNames[p]
}

// ToolUse is one tool call of an answer: a tool_use block.
type ToolUse struct {
	ID    string
	Name  string
	Input json.RawMessage
	// Decided says, in a Turn, that the log holds the call's decision.
	Decided bool
	// Block is the index of the call's tool_use in its message's Content.
	Block int
}

// Turn is where the turn on one session stands.
type Turn struct {
	Session string
	Phase   TurnPhase
	Answer  string // the uuid of the model's last answer; "" when it has none
	// Calls are, in TurnTools, the answer's tool calls that have no result,
	// in the answer's order.
	Calls []ToolUse
	// Halted says, in TurnTools, that a hook of the turn said "continue":
	// false: the calls left get an error result without running, and the
	// turn ends.
	Halted bool
}

// TurnOf says where the turn on session id stands, from its messages as
// the model sees them (Conversation.View) and the fold of the agent whose
// session it is. It reads only what the log holds: what a process that
// died meant to do next is not in it.
func TurnOf(id string, msgs []schema.Message, a *Agent) Turn {
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" {
			last = i
			break
		}
	}
	after := msgs[last+1:]
	var uses []ToolUse
	turn := Turn{Session: id}
	if last >= 0 {
		turn.Answer = msgs[last].UUID
		uses = ToolUses(msgs[last])
	}
	halted := slices.ContainsFunc(uses, func(u ToolUse) bool { return a.Tools[u.ID].halted() })
	results := resultIDs(after)
	for _, u := range uses {
		if !results[u.ID] {
			u.Decided = a.Tools[u.ID] != nil && a.Tools[u.ID].Decision != ""
			turn.Calls = append(turn.Calls, u)
		}
	}
	prompt := -1
	for i, m := range after {
		if isPrompt(m) {
			prompt = i
		}
	}
	switch {
	case len(turn.Calls) > 0:
		turn.Phase, turn.Halted = TurnTools, halted
	case prompt >= 0:
		// The prompt's own hooks may have halted the turn it began.
		if p := a.LastPrompts[id]; p == nil || p.MessageUUID != after[prompt].UUID || !haltIn(p.Outcomes) {
			turn.Phase = TurnAsk
		}
	case len(uses) > 0:
		// A PostToolBatch hook's block or halt ends the turn, as in
		// Claude Code it stops the agentic loop.
		if !halted && !a.batchHalted(uses) {
			turn.Phase = TurnAsk
		}
	case last >= 0:
		turn.Phase = TurnStop
		stop := a.Stop // one a process died in: its hooks do not run again
		if stop == nil || stop.Session != id {
			stop = a.LastStops[id]
		}
		if stop != nil && stop.Session == id && stop.Answer == turn.Answer {
			turn.Phase = TurnOver
			if (stop.Blocked || stop.Context != "") && !haltIn(stop.Outcomes) {
				turn.Phase = TurnAsk
			}
		}
	}
	if turn.Phase == TurnAsk && len(msgs) > 0 && a.Fires[StopFailureFireID(msgs[len(msgs)-1].UUID)] != nil {
		turn.Phase = TurnOver // the model failed there, and StopFailure ended the turn
	}
	return turn
}

// ToolUses returns the tool calls of m that have an id, in order.
func ToolUses(m schema.Message) []ToolUse {
	uses := ToolUsesWithEmpty(m)
	return slices.DeleteFunc(uses, func(u ToolUse) bool { return u.ID == "" })
}

// ToolUsesWithEmpty returns every tool call of m, in order, those without
// an id among them.
func ToolUsesWithEmpty(m schema.Message) []ToolUse {
	var uses []ToolUse
	for i, b := range m.Content {
		if b.Type != "tool_use" {
			continue
		}
		var u struct {
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		_ = json.Unmarshal(b.Raw, &u) // a block that is not one has no id
		uses = append(uses, ToolUse{ID: u.ID, Name: u.Name, Input: u.Input, Block: i})
	}
	return uses
}

// ToolResults returns the tool_use ids of m's tool_result blocks, in
// order.
func ToolResults(m schema.Message) []string {
	var ids []string
	for _, b := range m.Content {
		if b.Type != "tool_result" {
			continue
		}
		var r struct {
			ID string `json:"tool_use_id"`
		}
		if json.Unmarshal(b.Raw, &r) == nil {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// resultIDs returns the tool_use ids that msgs hold a tool_result of.
func resultIDs(msgs []schema.Message) map[string]bool {
	ids := map[string]bool{}
	for _, m := range msgs {
		for _, id := range ToolResults(m) {
			ids[id] = true
		}
	}
	return ids
}

// isPrompt reports whether m is a prompt the user gave: a user message,
// not meta, that holds text and no tool_result.
func isPrompt(m schema.Message) bool {
	if m.Role != "user" || m.IsMeta {
		return false
	}
	text := false
	for _, b := range m.Content {
		switch b.Type {
		case "tool_result":
			return false
		case "text":
			text = true
		}
	}
	return text
}

// halted reports whether a hook of call c said "continue": false.
func (c *ToolCall) halted() bool {
	return c != nil && (haltIn(c.PreOutcomes) || haltIn(c.PermissionOutcomes) || haltIn(c.PostOutcomes))
}

func haltIn(outcomes []schema.HookOutcome) bool {
	return slices.ContainsFunc(outcomes, func(o schema.HookOutcome) bool { return o.Halt })
}

// SubagentCalls returns the calls of the Agent tool (and of Task, its
// former name) that msgs hold, in order: each starts one subagent.
func SubagentCalls(msgs []schema.Message) []ToolUse {
	var calls []ToolUse
	for _, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		for _, u := range ToolUses(m) {
			if u.Name == "Agent" || u.Name == "Task" {
				calls = append(calls, u)
			}
		}
	}
	return calls
}
