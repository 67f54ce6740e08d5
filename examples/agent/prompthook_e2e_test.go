package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/examples/agent/internal/fakeapi"
)

// hookJudge is the model prompt hooks ask in these tests, by
// $ANTHROPIC_SMALL_FAST_MODEL: the fake API tells their requests from
// the agent's by it.
const hookJudge = "hook-judge"

// TestPromptHookGatesBash runs a turn whose Bash call a prompt hook in
// the user's settings judges, through the fake Messages API: with a
// model that says no, the call does not run and the turn stops with the
// model's reason; with one that says yes, it runs and the turn goes on.
// Either way the hook's request carries its prompt with the call's input,
// the hook system prompt, and the hooks' model.
func TestPromptHookGatesBash(t *testing.T) {
	for _, ok := range []bool{false, true} {
		name := map[bool]string{false: "deny", true: "allow"}[ok]
		t.Run(name, func(t *testing.T) {
			ev := setup(t)
			t.Setenv("ANTHROPIC_SMALL_FAST_MODEL", hookJudge)
			marker := filepath.Join(filepath.Dir(ev.home), "ran")
			writeJSON(t, filepath.Join(ev.home, ".claude", "settings.json"), map[string]any{
				"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{
					map[string]any{"type": "prompt", "prompt": "Refuse touching files: $ARGUMENTS"}}}}},
			})
			writeJSON(t, filepath.Join(ev.project, ".claude", "settings.json"), map[string]any{})
			verdict := `{"ok": false, "reason": "no touching"}`
			if ok {
				verdict = `{"ok": true, "reason": "a harmless touch"}`
			}
			agentAnswers := []fakeapi.Answer{
				{StopReason: "tool_use", Content: []fakeapi.Block{
					fakeapi.ToolUse("toolu_01", "Bash", map[string]any{"command": "touch '" + marker + "'"})}},
				{StopReason: "end_turn", Content: []fakeapi.Block{fakeapi.Text("Touched.")}},
			}
			api := &fakeapi.Server{Answer: func(req *fakeapi.Request) (fakeapi.Answer, error) {
				if req.Model == hookJudge {
					return fakeapi.Answer{StopReason: "end_turn", Content: []fakeapi.Block{fakeapi.Text(verdict)}}, nil
				}
				// The agent's n-th request holds n-1 answers.
				n := 0
				for _, m := range req.Messages {
					if m.Role == "assistant" {
						n++
					}
				}
				if n >= len(agentAnswers) {
					return fakeapi.Answer{}, fmt.Errorf("no answer %d", n)
				}
				return agentAnswers[n], nil
			}}
			url := serveFake(t, api)
			var stdout, stderr bytes.Buffer
			args := []string{"--store", ev.store, "--base-url", url, "--model", "claude-test", "--allowed-tools", "Bash"}
			if code := run(context.Background(), args, strings.NewReader("Touch it.\n"), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			_, err := os.Stat(marker)
			if ran := err == nil; ran != ok {
				t.Errorf("the call ran: %v, want %v (%v)", ran, ok, err)
			}
			wantOut := "[stopped by a hook: no touching]\n"
			if ok {
				wantOut = "Touched.\n"
			}
			if !strings.Contains(stdout.String(), wantOut) {
				t.Errorf("stdout:\n%s\nwant it to hold %q\nstderr:\n%s", stdout.String(), wantOut, stderr.String())
			}
			var hooks []*fakeapi.Request
			agentRequests := 0
			for _, r := range api.Requests() {
				if r.Model == hookJudge {
					hooks = append(hooks, r)
				} else {
					agentRequests++
				}
			}
			if wantAgent := map[bool]int{false: 1, true: 2}[ok]; len(hooks) != 1 || agentRequests != wantAgent {
				t.Fatalf("%d hook requests and %d of the agent, want 1 and %d", len(hooks), agentRequests, wantAgent)
			}
			var body struct {
				System   string `json:"system"`
				Messages []struct {
					Role    string `json:"role"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(hooks[0].Body, &body); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(body.System, "evaluating a hook") || len(body.Messages) != 1 || body.Messages[0].Role != "user" ||
				len(body.Messages[0].Content) != 1 || !strings.HasPrefix(body.Messages[0].Content[0].Text, "Refuse touching files: {") ||
				!strings.Contains(body.Messages[0].Content[0].Text, `"tool_name":"Bash"`) || hooks[0].Header.Get("X-Api-Key") != "test-key" {
				t.Errorf("the hook's request: %s; headers %v", hooks[0].Body, hooks[0].Header)
			}
		})
	}
}
