package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
)

// toolBench is target 9: one tool call's steps without hooks, its decision
// (PreToolUse) and its result (PostToolUse), against one F1: two durable
// appends, and what reprise does around them.
var toolBench = Bench{
	Name: "tool-step",
	Rows: []Row{{Target: 9, Name: "tool-step", Figure: "tool call without hooks: decision and result",
		Floor: "F1: bbolt Update, 1 put, fsync", Unit: PerOp, What: "call", Limit: 2.3}},
	Reps: 200, QuickReps: 30,
	Open: openTool,
}

type toolRunner struct {
	dir     string
	e       *reprise.Engine
	store   *countingStore
	agent   *reprise.Agent
	session string
	floor   *rawDB
	value   []byte
	appends int64 // of the last call
	syncs   int64 // log syncs of the last call
	calls   int64
	commits int64 // bbolt commits over the calls
	n       int
}

func openTool(ctx context.Context, env *Env) (Runner, error) {
	dir, err := mkdir(env, "tool-step")
	if err != nil {
		return nil, err
	}
	r := &toolRunner{dir: dir}
	if err := r.setup(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *toolRunner) setup(ctx context.Context) (err error) {
	if r.e, r.store, err = engineAt(filepath.Join(r.dir, "reprise.db"), false, nil); err != nil {
		return err
	}
	if r.session, err = r.e.CreateSession(ctx, "", r.dir); err != nil {
		return err
	}
	if _, err := r.e.Append(ctx, r.session, message(0)); err != nil {
		return err
	}
	size, err := storedSize(ctx, r.e.Store(), r.session)
	if err != nil {
		return err
	}
	r.value = make([]byte, size)
	if r.floor, err = openRaw(filepath.Join(r.dir, "floor.db")); err != nil {
		return err
	}
	if r.agent, err = r.e.Agent(ctx, "bench"); err != nil {
		return err
	}
	_, err = r.agent.Start(ctx, r.session)
	return err
}

func (r *toolRunner) Close() error { return teardown(r.dir, r.e, r.floor) }

func (r *toolRunner) Run(ctx context.Context) ([]Sample, error) {
	return r.measure(ctx, func(id string) error {
		dec, err := r.agent.PreToolUse(ctx, reprise.ToolCall{ID: id, Name: "Bash", Input: json.RawMessage(`{"command":"make"}`), Permission: hookexec.Allow})
		if err == nil && dec.Decision != hookexec.Allow {
			err = fmt.Errorf("call %s: %s", id, dec.Decision)
		}
		if err == nil {
			_, err = r.agent.PostToolUse(ctx, reprise.ToolResult{ID: id, Output: json.RawMessage(`"built"`)})
		}
		return err
	}, "Bash", json.RawMessage(`{"command":"make"}`))
}

// measure times step, one call of tool with input each round, against
// one F1, alternating: the model's answer with the call is recorded
// before the step, outside it, and the step's appends and syncs counted.
func (r *toolRunner) measure(ctx context.Context, step func(id string) error, tool string, input json.RawMessage) ([]Sample, error) {
	var s Sample
	call := func() error {
		id := fmt.Sprintf("toolu_%06d", r.n)
		if _, err := r.e.Append(ctx, r.session, reprise.ToolUseMessage(id, tool, input)); err != nil {
			return err
		}
		before, syncs := r.store.appends.Load(), r.store.syncs()
		d, err := timed(func() error { return step(id) })
		r.appends = r.store.appends.Load() - before
		after := r.store.syncs()
		r.syncs = after.Log - syncs.Log
		r.calls++
		r.commits += after.BoltCommits - syncs.BoltCommits
		s.Reprise.Time = d
		return err
	}
	floor := func() error {
		d, err := r.floor.update(1, r.value)
		s.Floor.Time = d
		return err
	}
	if err := alternate(&r.n, floor, call); err != nil {
		return nil, err
	}
	s.Floor.Work, s.Reprise.Work = 1, 1
	return []Sample{s}, nil
}

func (r *toolRunner) Note(string) string {
	return "a call's " + syncNote(r.appends, r.syncs, float64(r.commits)/float64(max(r.calls, 1)))
}
