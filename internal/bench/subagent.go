package bench

import (
	"context"
	"encoding/json"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
)

// subagentBench is target 12: one subagent step without hooks, against
// F1: the parent's Agent call decided, its subagent started (its session
// with the prompt, its agent's start), the subagent's one answer and its
// stop, and the call's result, each a durable append as a tool step's
// are; informational, since a real subagent's model requests take a
// thousand times longer.
var subagentBench = Bench{
	Name: "subagent-step",
	Rows: []Row{{Target: 12, Name: "subagent-step", Figure: "Agent call: a subagent started, its answer and stop, the call's result",
		Floor: "F1: bbolt Update, 1 put, fsync", Unit: PerOp, What: "call", Limit: 12, Informational: true}},
	Reps: 100, QuickReps: 15,
	Open: openSubagent,
}

type subagentRunner struct {
	toolRunner
}

func openSubagent(ctx context.Context, env *Env) (Runner, error) {
	dir, err := mkdir(env, "subagent-step")
	if err != nil {
		return nil, err
	}
	r := &subagentRunner{toolRunner{dir: dir}}
	if err := r.setup(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *subagentRunner) Run(ctx context.Context) ([]Sample, error) {
	input := json.RawMessage(`{"description":"look","prompt":"Say what is here.","subagent_type":"general-purpose"}`)
	return r.measure(ctx, func(id string) error {
		if _, err := r.agent.PreToolUse(ctx, reprise.ToolCall{ID: id, Name: "Agent", Input: input, Permission: hookexec.Allow}); err != nil {
			return err
		}
		child, err := r.agent.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: id, Prompt: "Say what is here."})
		if err != nil {
			return err
		}
		if _, err := r.e.Append(ctx, child.ID(), reprise.Text("assistant", "Two files.")); err != nil {
			return err
		}
		if _, err := child.Stop(ctx); err != nil {
			return err
		}
		_, err = r.agent.PostToolUse(ctx, reprise.ToolResult{ID: id, Output: json.RawMessage(`"Two files."`)})
		return err
	}, "Agent", input)
}

func (r *subagentRunner) Note(string) string {
	return "a subagent step's " + syncNote(r.appends, r.syncs, float64(r.commits)/float64(max(r.calls, 1)))
}
