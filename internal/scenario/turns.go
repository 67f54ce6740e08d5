package scenario

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/turn"
)

// turnState prints where the turn on the agent's current session stands,
// as a process that starts reads it from the log: its phase, the last
// answer, and in the tools phase the calls without a result.
//
//	turn ide
func (w *World) turnState(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	tn, err := w.agentOf(ctx, t, d).Turn(ctx)
	if err != nil {
		return nil, err
	}
	line := fmt.Sprintf("phase=%s answer=%s", tn.Phase, tn.Answer)
	for _, c := range tn.Calls {
		line += " " + c.Name + ":" + c.ID
		if c.Decided {
			line += "(decided)"
		}
	}
	if tn.Halted {
		line += " halted"
	}
	return []string{line}, nil
}

// runTurn drives the agent's turn with the turn runner: with prompt, a new
// turn (Run); without, the turn the log shows unfinished (Resume). The
// input is the model's answers, a line for each request this command
// makes: words of text, and "use:ID:TOOL" for a tool call. The tools Bash,
// Read, Write and Edit run and give "ran ID"; those in repeat are safe to
// repeat; the
// host's rules allow every call unless permission says otherwise; ask
// (allow or refuse) answers the calls left to ask; tries is the Runner's
// ModelTries. A line "fail" is a failed request, "fail:KIND" a
// turn.FinalError of KIND. Model requests, questions and tool runs are
// journaled where they happen.
//
//	run-turn ide prompt=(fix the build) repeat=Read
//	use:t1:Bash use:t2:Read
//	all done
func (w *World) runTurn(ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error) {
	answers := strings.Split(strings.TrimSpace(d.Input), "\n")
	if d.Input == "" {
		answers = nil
	}
	requests := 0
	model := func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
		if requests >= len(answers) {
			w.journal.add(fmt.Sprintf("  model request %d: no answer in the script", requests+1))
			return reprise.Message{}, fmt.Errorf("the script has %d answers", len(answers))
		}
		line := answers[requests]
		requests++
		w.journal.add(fmt.Sprintf("  model request %d: %s", requests, line))
		if kind, ok := strings.CutPrefix(line, "fail"); ok {
			err := fmt.Errorf("model request %d failed", requests)
			if kind, ok = strings.CutPrefix(kind, ":"); ok {
				return reprise.Message{}, &turn.FinalError{Kind: kind, Err: err}
			}
			return reprise.Message{}, err
		}
		m := reprise.Message{Role: "assistant"}
		var text []string
		for _, word := range strings.Fields(line) {
			use, ok := strings.CutPrefix(word, "use:")
			if !ok {
				text = append(text, word)
				continue
			}
			id, name, _ := strings.Cut(use, ":")
			raw, err := json.Marshal(map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]string{}})
			if err != nil {
				return m, err
			}
			m.Content = append(m.Content, reprise.Block{Type: "tool_use", Raw: raw})
		}
		if len(text) > 0 {
			m.Content = append([]reprise.Block{{Type: "text", Text: strings.Join(text, " ")}}, m.Content...)
		}
		return m, nil
	}
	repeat := strings.Split(opt(d, "repeat"), ",")
	tools := map[string]turn.Tool{}
	run := func(ctx context.Context, c turn.Call) (reprise.ToolResult, error) {
		again := ""
		if c.Again {
			again = " again"
		}
		w.journal.add(fmt.Sprintf("  tool %s %s%s", c.Name, c.ID, again))
		out, _ := json.Marshal("ran " + c.ID)
		return reprise.ToolResult{Output: out}, nil
	}
	for _, name := range []string{"Bash", "Read", "Write", "Edit"} {
		tools[name] = turn.Tool{Run: run, Repeatable: slices.Contains(repeat, name)}
	}
	permission := cmp.Or(opt(d, "permission"), hookexec.Allow)
	r := &turn.Runner{Engine: w.e, Agent: w.agentOf(ctx, t, d), Model: model, Tools: tools,
		Permission: func(turn.Call) string { return permission }}
	if ask := opt(d, "ask"); ask != "" {
		r.Ask = func(_ context.Context, c turn.Call, _ string) string {
			w.journal.add(fmt.Sprintf("  asked about %s %s: %s", c.Name, c.ID, ask))
			if ask == "allow" {
				return ""
			}
			return "the user said no"
		}
	}
	if tries := opt(d, "tries"); tries != "" {
		n, err := strconv.Atoi(tries)
		if err != nil {
			return nil, fmt.Errorf("tries=%q is not a number", tries)
		}
		r.ModelTries = n
	}
	var (
		out *turn.Outcome
		err error
	)
	if prompt := opt(d, "prompt"); prompt != "" {
		out, err = r.Run(ctx, prompt)
	} else {
		out, err = r.Resume(ctx)
	}
	if err != nil {
		return nil, err
	}
	line := fmt.Sprintf("requests=%d resumed=%v halted=%v capped=%v", out.Requests, out.Resumed, out.Halted, out.Capped)
	if out.StopFailure != "" {
		line += " stopfailure=" + out.StopFailure
	}
	return printf("%s", line), nil
}
