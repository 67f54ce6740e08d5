package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	rpmcp "github.com/reprise-dev/reprise/adapters/mcp"
	"github.com/reprise-dev/reprise/hookexec"
)

// A host connects to its MCP servers, here one in this process, and
// gives hookexec the Servers' Call: an mcp_tool hook of PreToolUse then
// asks the server's tool whether a Bash call may run.
func ExampleServers() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "policy", Version: "v1"}, nil)
	type in struct {
		Cmd string `json:"cmd"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "check"}, func(ctx context.Context, req *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
		answer := "" // no word on it
		if strings.HasPrefix(in.Cmd, "rm ") {
			answer = `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no rm here"}}`
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer}}}, nil, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Close()

	var servers rpmcp.Servers
	defer servers.Close()
	if err := servers.Connect(ctx, "policy", ct); err != nil {
		panic(err)
	}

	hook := hookexec.Hook{Event: hookexec.PreToolUse, Name: "policy-check", Source: "example",
		Body: hookexec.MCPTool{Server: "policy", Tool: "check", Input: json.RawMessage(`{"cmd":"${tool_input.command}"}`)}}
	call := hookexec.ToolInput{SessionID: "s1", ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"rm -rf build"}`)}
	_, d := hookexec.Exec{MCP: servers.Call}.PreToolUse(ctx, []hookexec.Hook{hook}, call, hookexec.CommandEnv{})
	fmt.Println(d.Decision, d.Reason)
	// Output: deny no rm here
}
