package scenario

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
)

// agentOf opens the agent named by d's first argument, rolling forward a
// step left in flight; a failure there is the harness's.
func (w *World) agentOf(ctx context.Context, t *testing.T, d *datadriven.TestData) *reprise.Agent {
	t.Helper()
	a, err := w.e.Agent(ctx, w.arg(t, d, 0))
	if err != nil {
		t.Fatalf("%s: agent %s: %v", w.where, w.arg(t, d, 0), err)
	}
	return a
}

// agent opens an agent, rolling forward what a dead process left in
// flight, and prints its current session.
//
//	agent ide
func (w *World) agent(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	a, err := w.e.Agent(ctx, w.arg(t, d, 0))
	if err != nil {
		return nil, err
	}
	return []string{"current=" + a.Current()}, nil
}

// start is the startup restore of a session, with the host's first prompt
// for SessionStart hooks; resume=true makes it a resume at process start
// (source resume).
//
//	start ide a prompt=(fix the flaky test)
//	start ide a resume=true
func (w *World) start(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	opts := []reprise.ActionOption{reprise.WithInitialPrompt(opt(d, "prompt"))}
	if opt(d, "resume") == "true" {
		opts = append(opts, reprise.WithResume())
	}
	return restored(w.agentOf(ctx, t, d).Start(ctx, w.arg(t, d, 1), opts...))
}

// restore is the runtime restore from the agent's current session.
//
//	restore ide b
func (w *World) restore(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	return restored(w.agentOf(ctx, t, d).Restore(ctx, w.arg(t, d, 1)))
}

// newSession makes a fresh session with the given id current.
//
//	new ide n1 cwd=/src/other prompt=(write the release notes)
func (w *World) newSession(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	return restored(w.agentOf(ctx, t, d).New(ctx, w.arg(t, d, 1), cmp.Or(opt(d, "cwd"), w.cwd()),
		reprise.WithInitialPrompt(opt(d, "prompt"))))
}

// clear ends the current session and makes a fresh one current.
//
//	clear ide
func (w *World) clear(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	return restored(w.agentOf(ctx, t, d).Clear(ctx))
}

// fork makes a copy of a session, up to a message, current.
//
//	fork ide a upto=u3
func (w *World) fork(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	return restored(w.agentOf(ctx, t, d).Fork(ctx, w.arg(t, d, 1), opt(d, "upto")))
}

// compact compacts the current session; the input is the summary. With
// summarize=true the host makes it after the PreCompact hooks
// (CompactWith): its Summarizer is told the instructions and returns the
// input, or fails with it when summarize=fail.
//
//	compact ide trigger=auto instructions=(keep the decisions)
//	we discussed a question
func (w *World) compact(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	a := w.agentOf(ctx, t, d)
	opts := []reprise.ActionOption{reprise.WithTrigger(opt(d, "trigger")), reprise.WithInstructions(opt(d, "instructions"))}
	switch how := opt(d, "summarize"); how {
	case "":
		return restored(a.Compact(ctx, w.text(t, d), opts...))
	case "true", "fail":
		text := w.text(t, d)
		return restored(a.CompactWith(ctx, func(_ context.Context, instructions string) (string, error) {
			w.journal.add(fmt.Sprintf("  summarize instructions=%q", instructions))
			if how == "fail" {
				return "", errors.New(text)
			}
			return text, nil
		}, opts...))
	default:
		t.Fatalf("%s: summarize=%s: want true or fail", w.where, how)
		return nil, nil
	}
}

// end ends the current session for a reason.
//
//	end ide user_exit final=bye
func (w *World) end(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	return restored(w.agentOf(ctx, t, d).End(ctx, reprise.Reason(w.arg(t, d, 1)),
		reprise.EndOptions{FinalMessage: opt(d, "final"), Error: opt(d, "error")}))
}

// stop runs the Stop hooks at the end of a turn and prints what they
// decided.
//
//	stop ide reason=end_turn
func (w *World) stop(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	res, err := w.agentOf(ctx, t, d).Stop(ctx, reprise.WithStopReason(opt(d, "reason")))
	if err != nil {
		return nil, err
	}
	out := printf("blocked=%v capped=%v reason=%q", res.Blocked, res.Capped, res.Reason)
	if res.Context != "" {
		out[0] += fmt.Sprintf(" context=%q continues=%v", res.Context, res.Continues())
	}
	return out, nil
}

// prompt submits the input as the user's prompt and prints what the
// UserPromptSubmit hooks decided.
//
//	prompt ide
//	why does the test flake?
func (w *World) prompt(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	res, err := w.agentOf(ctx, t, d).Prompt(ctx, w.text(t, d))
	if err != nil {
		return nil, err
	}
	return printf("blocked=%v reason=%q context=%q", res.Blocked, res.Reason, res.Context), nil
}

// restored prints what the hooks of the agent's last restore returned for
// the host.
//
//	restored ide
func (w *World) restored(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	h := w.agentOf(ctx, t, d).History()
	if len(h) == 0 {
		return []string{"(no restore)"}, nil
	}
	r := h[len(h)-1]
	out := printf("config=%s suppress=%v prompt=%q", r.ModifiedConfig, r.SuppressOutput, r.InitialPrompt)
	if so := r.StartOutput; so.InitialUserMessage != "" || len(so.WatchPaths) > 0 || so.ReloadSkills {
		out = append(out, fmt.Sprintf("initial=%q message=%s watch=%q reload=%v", so.InitialUserMessage, r.InitialUUID, so.WatchPaths, so.ReloadSkills))
	}
	return out, nil
}

// reopen closes the Engine, if it did not crash, and opens a new one over
// the same store and files, as a new process would; stopcap sets its cap
// of consecutive blocked stops.
//
//	reopen stopcap=2
func (w *World) reopen(_ context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	if w.e != nil {
		if err := w.e.Close(); err != nil {
			return nil, err
		}
	}
	if limit := opt(d, "stopcap"); limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil {
			t.Fatalf("%s: stopcap: %v", w.where, err)
		}
		w.stopCap = n
	}
	w.open()
	return nil, nil
}

// tool asks the agent whether the call ID of TOOL may run, with the host's
// own rules saying permission (allow, deny, ask), and prints the decision;
// the input is the call's input, JSON.
//
//	tool ide Bash t1 permission=allow
//	{"command":"rm -rf build"}
func (w *World) tool(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	call := reprise.ToolCall{Name: w.arg(t, d, 1), ID: w.arg(t, d, 2), Input: []byte(d.Input), Permission: opt(d, "permission"), AddToolUse: true}
	dec, err := w.agentOf(ctx, t, d).PreToolUse(ctx, call)
	if err != nil {
		return nil, err
	}
	return printf("decision=%s reason=%q input=%s context=%q interrupted=%v", dec.Decision, dec.Reason, dec.Input,
		dec.Context, dec.Interrupted), nil
}

// subagent starts the subagent of the Agent call ID of the agent's
// current session, with the input as its prompt, and prints the agent
// that drives it, which later commands name.
//
//	subagent ide t1 type=Explore
//	list the files
func (w *World) subagent(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	call := reprise.SubagentCall{ToolUseID: w.arg(t, d, 1), Type: opt(d, "type"), Prompt: w.text(t, d)}
	child, err := w.agentOf(ctx, t, d).StartSubagent(ctx, call)
	if err != nil {
		return nil, err
	}
	return []string{"agent=" + child.ID()}, nil
}

// toolAnswer records the user's answer, allow or refuse, to the call ID
// left to ask, and prints the call's decision.
//
//	tool-answer ide t1 refuse refusal=no
func (w *World) toolAnswer(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	ans := reprise.ToolAnswer{ID: w.arg(t, d, 1), Allow: w.arg(t, d, 2) == "allow", Refusal: opt(d, "refusal")}
	dec, err := w.agentOf(ctx, t, d).AnswerAsk(ctx, ans)
	if err != nil {
		return nil, err
	}
	return printf("decision=%s reason=%q input=%s", dec.Decision, dec.Reason, dec.Input), nil
}

// toolResult tells the agent what the call ID gave, its output as input
// (JSON), or that it failed with error, and prints what the hooks after
// it said: the last result of an answer also prints what its
// PostToolBatch hooks decided, as fire does.
//
//	tool-result ide t1
//	"done"
func (w *World) toolResult(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	res := reprise.ToolResult{ID: w.arg(t, d, 1), Output: []byte(d.Input), Error: opt(d, "error")}
	f, err := w.agentOf(ctx, t, d).PostToolUse(ctx, res)
	if err != nil {
		return nil, err
	}
	out := printf("blocked=%v reason=%q context=%q", f.Blocked, f.Reason, f.Context)
	if f.Halted {
		out[0] += fmt.Sprintf(" halted stop=%q", f.StopReason)
	}
	if f.Batch != nil {
		out = append(out, firedLine(f.Batch))
	}
	return out, nil
}

// fire runs the hooks of EVENT, an event without steps of its own, on the
// agent's current session, once under the fire id ID; the input is the
// event's own fields, a JSON object. It prints what Fire returned.
//
//	fire ide Notification n1
//	{"message": "Claude needs your permission", "notification_type": "permission_prompt"}
func (w *World) fire(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	return fired(w.agentOf(ctx, t, d).Fire(ctx, hookexec.Event(w.arg(t, d, 1)), w.arg(t, d, 2), json.RawMessage(d.Input)))
}

// toolBatch fires the PostToolBatch of the agent's last answer, as a host
// does before the next model request, and prints what it returned:
// "(nothing to do)" when the answer's calls lack results or no hook
// matches.
//
//	tool-batch ide
func (w *World) toolBatch(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	return fired(w.agentOf(ctx, t, d).ToolBatch(ctx))
}

// fired prints what a fire returned: whether it was recorded before or
// cut off, the hooks' outcomes and what they decided, and what else they
// gave when they gave it.
func fired(f *reprise.Fired, err error) ([]string, error) {
	switch {
	case err != nil:
		return nil, err
	case f == nil:
		return []string{"(nothing to do)"}, nil
	}
	return []string{firedLine(f)}, nil
}

// firedLine is the line fired prints of f.
func firedLine(f *reprise.Fired) string {
	hooks := make([]string, len(f.Outcomes))
	for i, o := range f.Outcomes {
		hooks[i] = o.Name + ":" + o.Status
	}
	line := fmt.Sprintf("fired %s %s already=%v interrupted=%v [%s] blocked=%v reason=%q context=%q", f.Event, f.ID,
		f.AlreadyRecorded, f.Interrupted, strings.Join(hooks, " "), f.Blocked, f.Reason, f.Context)
	for _, extra := range []struct{ key, value string }{{"feedback", f.Feedback}, {"system", f.SystemMessage},
		{"specific", string(f.Specific)}, {"env", f.Env}, {"stop", f.StopReason}} {
		if extra.value != "" {
			line += fmt.Sprintf(" %s=%q", extra.key, extra.value)
		}
	}
	if f.Halted {
		line += " halted"
	}
	return line
}
