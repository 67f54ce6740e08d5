// Command policyserver is a stdio MCP server for the agent's tests: its
// check tool answers a PreToolUse hook, denying any command that
// contains "rm".
package main

import (
	"context"
	"encoding/json"
	"log"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Reason is what a denial says.
const Reason = "policy: no rm"

type checkInput struct {
	Cmd string `json:"cmd"`
}

func check(_ context.Context, _ *mcp.CallToolRequest, in checkInput) (*mcp.CallToolResult, any, error) {
	if !strings.Contains(in.Cmd, "rm") {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}}, nil, nil
	}
	out := map[string]any{"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": Reason}
	text, err := json.Marshal(map[string]any{"hookSpecificOutput": out})
	if err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}, nil, nil
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "policyserver", Version: "test"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "check", Description: "Deny commands that contain rm."}, check)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
