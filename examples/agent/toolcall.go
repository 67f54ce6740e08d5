package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/reprise-dev/reprise"
)

// Texts the model is told, as the call's error tool_result, when a call
// that needed the user's word did not get it.
const (
	refusedByUser = "The user denied this tool call."
	interrupted   = "The tool call was interrupted before its result was recorded: it may have run."
	stoppedByHook = "Not run: a hook stopped the turn."
)

// noTerminal is the refusal of a call that needed the user's word when
// standard input is not a terminal to ask on.
func noTerminal(tool string) string {
	return "Permission to use " + tool + " was not granted: the agent has no terminal to ask on. " +
		"Allow it with --allowed-tools or a permissions rule in the settings."
}

// useTool takes one tool call of an answer through reprise and runs it
// when it may: the settings' and the flags' permission rules say what they
// say (Permission), reprise runs the PreToolUse hooks and weighs both,
// deny over ask over allow; a call left to ask is asked about on the
// terminal; then the tool runs with the input the hooks left, and its
// result, or the refusal, goes to PostToolUse, which records it as the
// call's tool_result and runs the PostToolUse hooks. A denied call's
// error tool_result is already recorded by PreToolUse.
//
// The Halt it returns is a hook's "continue": false, which ends the turn.
func (h *host) useTool(ctx context.Context, use anthropic.ContentBlockUnion) (reprise.Halt, error) {
	var halt reprise.Halt
	input := json.RawMessage(use.Input)
	rs := loadRules(h.home, h.cwd, h.cfg.allowedTools, h.cfg.disallowedTools, h.errw)
	perm, _ := rs.permission(call{tool: use.Name, input: input, cwd: h.cwd, home: h.home})
	d, err := h.agent.PreToolUse(ctx, reprise.ToolCall{ID: use.ID, Name: use.Name, Input: input, Permission: perm})
	if err != nil {
		return halt, fmt.Errorf("PreToolUse of %s: %w", use.Name, err)
	}
	h.reportHooks("PreToolUse", d.Outcomes, "")
	if d.Context != "" {
		fmt.Fprintf(h.errw, "[PreToolUse hooks added context (%d characters)]\n", len(d.Context))
	}
	switch {
	case d.Decision == reprise.ToolDeny:
		fmt.Fprintf(h.out, "[%s denied: %s]\n", use.Name, d.Reason)
		return d.Halt, nil
	case d.Halted:
		// Not run: the turn ends here.
		return d.Halt, h.toolDone(ctx, use.Name, reprise.ToolResult{ID: use.ID, Error: stoppedByHook, Refused: true}, &halt)
	case d.Interrupted:
		// Allowed by an earlier process, which may have run it: it is not
		// run twice.
		return halt, h.toolDone(ctx, use.Name, reprise.ToolResult{ID: use.ID, Error: interrupted, Interrupt: true}, &halt)
	case d.Decision == reprise.ToolAsk:
		if refusal := h.confirm(ctx, use.Name, d.Input, d.Reason); refusal != "" {
			fmt.Fprintf(h.out, "[%s not run: %s]\n", use.Name, refusal)
			return halt, h.toolDone(ctx, use.Name, reprise.ToolResult{ID: use.ID, Error: refusal, Refused: true}, &halt)
		}
	}
	fmt.Fprintf(h.errw, "[%s %s]\n", use.Name, d.Input)
	began := time.Now()
	out, err := runTool(ctx, use.Name, d.Input, h.cwd)
	// The model reads the output as text; the hooks get it as the tool
	// gave it, as Claude Code's tool_response.
	res := reprise.ToolResult{ID: use.ID, Output: modelText(out), Response: out, Duration: time.Since(began)}
	var failed *toolError
	if errors.As(err, &failed) {
		res = reprise.ToolResult{ID: use.ID, Error: failed.msg, Interrupt: failed.interrupted}
	} else if err != nil {
		return halt, err
	}
	return halt, h.toolDone(ctx, use.Name, res, &halt)
}

// notReached gives the calls a halted turn did not reach their error
// tool_results, in one user message, so that the session stays one the
// model can be sent again; no hook runs for them.
func (h *host) notReached(ctx context.Context, uses []anthropic.ContentBlockUnion) error {
	if len(uses) == 0 {
		return nil
	}
	m := reprise.Message{Role: "user"}
	for _, use := range uses {
		raw, err := json.Marshal(map[string]any{"type": "tool_result", "tool_use_id": use.ID, "content": stoppedByHook, "is_error": true})
		if err != nil {
			return err
		}
		m.Content = append(m.Content, reprise.Block{Type: "tool_result", Raw: raw})
	}
	if _, err := h.e.Append(ctx, h.session, m); err != nil {
		return fmt.Errorf("record the calls not run: %w", err)
	}
	return nil
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

// toolDone gives PostToolUse the call's result and reports what its hooks
// said, their halt in halt; reprise has put their context and block
// reason in the session.
func (h *host) toolDone(ctx context.Context, tool string, res reprise.ToolResult, halt *reprise.Halt) error {
	fb, err := h.agent.PostToolUse(ctx, res)
	if err != nil {
		return fmt.Errorf("PostToolUse of %s: %w", tool, err)
	}
	h.reportHooks("PostToolUse", fb.Outcomes, "")
	*halt = fb.Halt
	if fb.Context != "" {
		fmt.Fprintf(h.errw, "[PostToolUse hooks added context (%d characters)]\n", len(fb.Context))
	}
	if fb.Blocked {
		fmt.Fprintf(h.out, "[a PostToolUse hook objects to %s: %s]\n", tool, fb.Reason)
	}
	return nil
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
