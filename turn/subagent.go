package turn

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/projection"
)

// AgentTool is the name of the tool the model hands work to a subagent
// with; TaskTool is its former name, which the Runner answers too.
const (
	AgentTool = "Agent"
	TaskTool  = "Task"
)

// Subagent is a type of subagent a Runner may start for a call of the
// Agent tool.
type Subagent struct {
	// Model asks the model for the subagent's answers: the host's
	// closure over the type's system prompt and model. Nil: the Runner's
	// Model.
	Model Model
	// Tools names the Runner's Tools the subagent may call; nil gives it
	// all of them. It has the Agent tool as the Runner has it: a subagent
	// may start subagents of its own, down to the Engine's
	// MaxSubagentDepth, past which a call of it fails with
	// reprise.ErrNestedSubagent's words.
	Tools []string
}

// tool returns the tool a call of name runs: the Runner's subagents for
// the Agent tool, when it has any, else its Tools.
func (r *Runner) tool(name string) (Tool, bool) {
	if r.external != nil {
		return r.external.tool(name), true
	}
	if r.Subagents != nil && (name == AgentTool || name == TaskTool) {
		// The subagent's turn resumes where its log stands, so a call cut
		// off by a crash runs again rather than being reported
		// interrupted: nothing it recorded is done twice.
		return Tool{Run: r.runSubagent, Repeatable: true}, true
	}
	t, ok := r.Tools[name]
	return t, ok
}

// subagentInput is the Agent tool's input, as Claude Code defines it.
type subagentInput struct {
	Description string `json:"description"`
	Prompt      string `json:"prompt"`
	Type        string `json:"subagent_type"`
}

// runSubagent runs the subagent of Agent call c to the end of its turn
// and returns its final answer as the call's result. Run again for the
// same call, after a crash, it goes on with the subagent's turn where its
// log stands.
func (r *Runner) runSubagent(ctx context.Context, c Call) (reprise.ToolResult, error) {
	var in subagentInput
	if err := json.Unmarshal(c.Input, &in); err != nil || strings.TrimSpace(in.Prompt) == "" {
		return reprise.ToolResult{}, fmt.Errorf("the %s tool needs a prompt: %s", c.Name, c.Input)
	}
	in.Type = cmp.Or(in.Type, reprise.DefaultSubagentType)
	typ, ok := r.Subagents[in.Type]
	if !ok {
		names := make([]string, 0, len(r.Subagents))
		for name := range r.Subagents {
			names = append(names, name)
		}
		slices.Sort(names)
		//lint:ignore ST1005 the model reads these words, Claude Code's
		return reprise.ToolResult{}, fmt.Errorf("Agent type '%s' not found. Available agents: %s", in.Type, strings.Join(names, ", "))
	}
	child, err := r.Agent.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: c.ID, Type: in.Type, Description: in.Description, Prompt: in.Prompt})
	if err != nil {
		return reprise.ToolResult{}, err
	}
	tools := r.Tools
	if typ.Tools != nil {
		tools = map[string]Tool{}
		for _, name := range typ.Tools {
			if t, ok := r.Tools[name]; ok {
				tools[name] = t
			}
		}
	}
	agentID := reprise.SubagentID(r.Agent.Current(), c.ID)
	model := typ.Model
	if model == nil {
		model = r.Model
	}
	sub := &Runner{Engine: r.Engine, Agent: child, Model: model, Tools: tools,
		Permission: r.Permission, Parallel: r.Parallel, MaxRequests: r.MaxRequests, ModelTries: r.ModelTries,
		Subagents: r.Subagents, subagent: true}
	if r.Ask != nil {
		sub.Ask = func(ctx context.Context, call Call, reason string) string {
			r.mu.Lock() // one question at a time, across the subagents of an answer
			defer r.mu.Unlock()
			return r.Ask(ctx, call, reason)
		}
	}
	if r.OnEvent != nil {
		sub.OnEvent = func(ev Event) {
			ev.Subagent = agentID
			r.emit(ev)
		}
	}
	out, err := sub.Resume(ctx)
	if err != nil {
		return reprise.ToolResult{}, fmt.Errorf("subagent %s: %w", agentID, err)
	}
	if out.Failure != nil {
		return reprise.ToolResult{}, fmt.Errorf("subagent %s: %w", agentID, out.Failure)
	}
	msgs, err := r.Engine.Conversation(ctx, child.ID())
	if err != nil {
		return reprise.ToolResult{}, err
	}
	answer := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" {
			answer = projection.FirstText(msgs[i])
			break
		}
	}
	output, _ := json.Marshal(answer) // a string always marshals
	return reprise.ToolResult{Output: output}, nil
}
