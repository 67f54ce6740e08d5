package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/examples/agent/internal/fakeapi"
)

// policyReason is what internal/policyserver's check tool says when it
// denies a command.
const policyReason = "policy: no rm"

// buildPolicyServer builds internal/policyserver into a temporary
// directory and returns the program's path.
func buildPolicyServer(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build policyserver: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "policyserver")
	if out, err := exec.Command(goCmd, "build", "-o", bin, "./internal/policyserver").CombinedOutput(); err != nil {
		t.Fatalf("go build ./internal/policyserver: %v\n%s", err, out)
	}
	return bin
}

// TestMCPToolHook runs turns whose Bash call a PreToolUse mcp_tool hook
// judges through a real stdio MCP server given with --mcp-server: a
// command with rm is denied with the tool's reason and does not run, one
// without runs; a hook naming a server not given fails as not connected
// and the call goes ahead.
func TestMCPToolHook(t *testing.T) {
	bin := buildPolicyServer(t)
	for _, tc := range []struct {
		name, server, command string
		denied                bool
	}{
		{"deny", "policy", "rm -f victim", true},
		{"allow", "policy", "echo fine > ran", false},
		{"not connected", "x", "rm -f victim", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := setup(t)
			victim := filepath.Join(ev.project, "victim")
			if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
			writeJSON(t, filepath.Join(ev.home, ".claude", "settings.json"), map[string]any{
				"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{
					map[string]any{"type": "mcp_tool", "server": tc.server, "tool": "check",
						"input": map[string]any{"cmd": "${tool_input.command}"}}}}}},
			})
			writeJSON(t, filepath.Join(ev.project, ".claude", "settings.json"), map[string]any{})
			api := newScriptedAPI(t,
				fakeapi.Answer{StopReason: "tool_use", Content: []fakeapi.Block{
					fakeapi.ToolUse("toolu_01", "Bash", map[string]any{"command": tc.command})}},
				fakeapi.Answer{StopReason: "end_turn", Content: []fakeapi.Block{fakeapi.Text("Done.")}})
			args := []string{"--store", ev.store, "--base-url", api.url, "--model", "claude-test", "--allowed-tools", "Bash",
				"--mcp-server", "policy=" + bin}
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, strings.NewReader("Clean up.\n"), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			_, err := os.Stat(victim)
			if kept := err == nil; kept != (tc.denied || tc.name == "allow") {
				t.Errorf("victim kept: %v (%v); stdout:\n%s\nstderr:\n%s", kept, err, stdout.String(), stderr.String())
			}
			if tc.name == "allow" {
				if _, err := os.Stat(filepath.Join(ev.project, "ran")); err != nil {
					t.Errorf("the allowed call did not run: %v", err)
				}
			}
			reqs := api.requests(t)
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			last := reqs[1].Messages[len(reqs[1].Messages)-1].Content
			denial := "PreToolUse:Bash hook error: " + policyReason
			if tc.denied {
				checkBlocks(t, "the denied call's result", last, []map[string]any{
					{"type": "tool_result", "tool_use_id": "toolu_01", "content": denial, "is_error": true}})
			} else if len(last) == 0 || last[0]["is_error"] == true {
				t.Errorf("the call's result: %v", last)
			}
			notConnected := "MCP server 'x' not connected"
			if got := strings.Contains(stderr.String(), notConnected); got != (tc.server == "x") {
				t.Errorf("stderr says %q: %v, want %v:\n%s", notConnected, got, tc.server == "x", stderr.String())
			}
		})
	}
}

// TestMCPServerFailsToStart checks that a server that cannot start is an
// error naming it, before any request.
func TestMCPServerFailsToStart(t *testing.T) {
	ev := setup(t)
	missing := filepath.Join(t.TempDir(), "no-such-server")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), ev.args("--mcp-server", "policy="+missing+" --flag"), strings.NewReader("Hi.\n"), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "--mcp-server policy ("+missing+" --flag)") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if n := len(ev.api.Requests()); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}
