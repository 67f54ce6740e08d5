package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/reprise-dev/reprise"
	rpanthropic "github.com/reprise-dev/reprise/adapters/anthropic"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/turn"
)

// refusedByUser is what the model is told of a call the user refused.
const refusedByUser = "The user denied this tool call."

// noTerminal is the refusal of a call that needed the user's word when
// standard input is not a terminal to ask on.
func noTerminal(tool string) string {
	return "Permission to use " + tool + " was not granted: the agent has no terminal to ask on. " +
		"Allow it with --allowed-tools or a permissions rule in the settings."
}

// runner is the turn runner that takes the agent's turns through reprise:
// it records each answer before acting on it, takes each tool call
// through PreToolUse (with what the settings' and the flags' permission
// rules say of it), the tool and PostToolUse, and ends each turn through
// the Stop hooks; a turn a killed process left is resumed from the log.
func (h *host) runner() *turn.Runner {
	tool := func(name string, repeatable bool) turn.Tool {
		return turn.Tool{Repeatable: repeatable, Run: func(ctx context.Context, c turn.Call) (reprise.ToolResult, error) {
			out, err := runTool(ctx, name, c.Input, h.cwd)
			var failed *toolError
			if errors.As(err, &failed) {
				return reprise.ToolResult{Error: failed.msg, Interrupt: failed.interrupted}, nil
			}
			if err != nil {
				return reprise.ToolResult{}, err
			}
			// The model reads the output as text; the hooks get it as the
			// tool gave it, as Claude Code's tool_response.
			return reprise.ToolResult{Output: modelText(out), Response: out}, nil
		}}
	}
	return &turn.Runner{
		Engine: h.e,
		Agent:  h.agent,
		Model:  h.model,
		// Read changes nothing: a call a crash cut runs again.
		Tools: map[string]turn.Tool{"Bash": tool("Bash", false), "Read": tool("Read", true), "Write": tool("Write", false)},
		Permission: func(c turn.Call) string {
			rs := loadRules(h.home, h.cwd, h.cfg.allowedTools, h.cfg.disallowedTools, h.errw)
			perm, _ := rs.permission(call{tool: c.Name, input: c.Input, cwd: h.cwd, home: h.home})
			return perm
		},
		Ask: func(ctx context.Context, c turn.Call, reason string) string {
			return h.confirm(ctx, c.Name, c.Input, reason)
		},
		Subagents:   subagents(h),
		Parallel:    h.cfg.parallel,
		MaxRequests: h.cfg.maxTurns,
		OnEvent:     h.show,
	}
}

// subagents are the subagent types the Agent tool starts, each asking the
// same model through the same client, with its own system prompt and
// tools.
func subagents(h *host) map[string]turn.Subagent {
	types := map[string]turn.Subagent{}
	for name, typ := range subagentTypes {
		types[name] = turn.Subagent{Model: h.modelWith(typ.system, subagentToolDefinitions(typ)), Tools: typ.tools}
	}
	return types
}

// model sends the session's conversation to the model, with --system and
// every tool, and returns its answer, as the transcript line reprise
// keeps.
func (h *host) model(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
	return h.modelWith(h.cfg.system, toolDefinitions())(ctx, conv)
}

// modelWith is the model asked with system as its system prompt and tools
// as the tools it may call. Its answers' transcript lines name the current
// session, a subagent's too, as Claude Code's subagent transcripts name
// their parent's.
func (h *host) modelWith(system string, tools []anthropic.ToolUnionParam) turn.Model {
	return func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
		return h.answer(ctx, conv, system, tools)
	}
}

func (h *host) answer(ctx context.Context, conv []reprise.Message, system string, tools []anthropic.ToolUnionParam) (reprise.Message, error) {
	resp, err := h.send(ctx, conv, system, tools)
	if err != nil {
		return reprise.Message{}, err
	}
	parent := ""
	if len(conv) > 0 {
		parent = conv[len(conv)-1].UUID
	}
	return rpanthropic.FromResponse(resp, rpanthropic.Line{Session: h.session, Cwd: h.cwd, Parent: parent})
}

// show tells the user what the runner did: the model's text, the calls and
// what became of them, and what the hooks said; a subagent's, after its
// agent_id in brackets.
func (h *host) show(ev turn.Event) {
	who := ""
	if ev.Subagent != "" {
		who = "[" + ev.Subagent + "] "
	}
	switch ev.Kind {
	case turn.Prompted:
		h.reportHooks("UserPromptSubmit", ev.Prompt.Outcomes, ev.Prompt.Context)
	case turn.Answered:
		if h.cfg.stream { // a stream printed it as it came
			return
		}
		for _, b := range ev.Answer.Content {
			if b.Type == "text" {
				fmt.Fprintln(h.out, who+b.Text)
			}
		}
	case turn.Decided:
		d := ev.Decision
		h.reportHooks("PreToolUse", d.Outcomes, "")
		if d.Context != "" {
			fmt.Fprintf(h.errw, "[PreToolUse hooks added context (%d characters)]\n", len(d.Context))
		}
		switch {
		case d.Decision == hookexec.Deny:
			fmt.Fprintf(h.out, "%s[%s denied: %s]\n", who, ev.Call.Name, d.Reason)
		case d.Interrupted && isAgentTool(ev.Call.Name):
			fmt.Fprintf(h.errw, "%s[%s was allowed before the agent stopped: its subagent goes on where it stood]\n", who, ev.Call.Name)
		case d.Interrupted && ev.Call.Again:
			fmt.Fprintf(h.errw, "%s[%s was allowed before the agent stopped: it runs again]\n", who, ev.Call.Name)
		case d.Interrupted:
			fmt.Fprintf(h.errw, "%s[%s was allowed before the agent stopped, and may have run]\n", who, ev.Call.Name)
		case !d.Resulted:
			fmt.Fprintf(h.errw, "%s[%s %s]\n", who, ev.Call.Name, d.Input)
		}
	case turn.Ran:
		fb := ev.Feedback
		if ev.Result.Refused {
			fmt.Fprintf(h.out, "%s[%s not run: %s]\n", who, ev.Call.Name, ev.Result.Error)
		}
		h.reportHooks("PostToolUse", fb.Outcomes, "")
		if fb.Context != "" {
			fmt.Fprintf(h.errw, "[PostToolUse hooks added context (%d characters)]\n", len(fb.Context))
		}
		if fb.Blocked {
			fmt.Fprintf(h.out, "[a PostToolUse hook objects to %s: %s]\n", ev.Call.Name, fb.Reason)
		}
	case turn.Stopped:
		st := ev.Stop
		h.reportHooks("Stop", st.Outcomes, "")
		if st.Capped {
			fmt.Fprintf(h.errw, "Stop hooks blocked %d times in a row: not asked again this turn\n", stopBlockCap)
		}
		if st.Blocked && !st.Halted {
			// The reason is already the session's next user message.
			fmt.Fprintf(h.out, "[a Stop hook asks to continue: %s]\n", st.Reason)
		}
	}
}

// ended tells the user how a turn ended, when it did not end as turns do.
func (h *host) ended(out *turn.Outcome) {
	switch {
	case out.Blocked:
		fmt.Fprintf(h.out, "[prompt blocked by a UserPromptSubmit hook: %s]\n", out.Reason)
	case out.Halted:
		h.halted(out.Halt)
	case out.Limited:
		fmt.Fprintf(h.errw, "the turn reached --max-turns (%d requests) and ends here\n", h.cfg.maxTurns)
	}
}

// modelText is what the model reads of a tool's output: Bash's stdout and
// stderr as one text, any other output as it is.
func modelText(out json.RawMessage) json.RawMessage {
	var bash struct {
		Stdout *string `json:"stdout"`
		Stderr string  `json:"stderr"`
	}
	if json.Unmarshal(out, &bash) != nil || bash.Stdout == nil {
		return out
	}
	text := strings.TrimSpace(strings.TrimSpace(*bash.Stdout) + "\n" + strings.TrimSpace(bash.Stderr))
	data, _ := json.Marshal(text) // a string always marshals
	return data
}

// confirm asks the user, on the terminal, whether the call may run, and
// returns "" when it may, else the refusal the model is told. Without a
// terminal, nobody can be asked: the call is refused, as Claude Code
// refuses it in print mode.
func (h *host) confirm(ctx context.Context, tool string, input json.RawMessage, reason string) string {
	if !h.interactive {
		return noTerminal(tool)
	}
	if reason != "" {
		fmt.Fprintf(h.errw, "(%s)\n", reason)
	}
	fmt.Fprintf(h.errw, "Allow %s %s? [y/N] ", tool, input)
	select {
	case <-ctx.Done():
		return refusedByUser
	case line, ok := <-h.lines:
		if ok && yes(line) {
			return ""
		}
	}
	return refusedByUser
}

// yes tells whether an answer to a question says yes.
func yes(answer string) bool {
	a := strings.ToLower(strings.TrimSpace(answer))
	return a == "y" || a == "yes"
}
