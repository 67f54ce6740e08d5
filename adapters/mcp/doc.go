// Package mcp runs the mcp_tool hooks of reprise's hookexec on the MCP
// servers a host is connected to, through
// github.com/modelcontextprotocol/go-sdk.
//
// It is a nested module, so that users of reprise whose hooks call no
// MCP tool never download the SDK. Its package name is the name of its
// directory, mcp, like the SDK's; a program that imports both gives one
// of them another name:
//
//	import (
//		"github.com/modelcontextprotocol/go-sdk/mcp"
//		rpmcp "github.com/reprise-dev/reprise/adapters/mcp"
//	)
//
// A host keeps its sessions in a Servers, under the names its hooks use
// for them, and gives its Call to hookexec:
//
//	var servers rpmcp.Servers
//	defer servers.Close()
//	err := servers.Connect(ctx, "policy", &mcp.CommandTransport{Command: exec.Command("policy-server")})
//	x := hookexec.Exec{MCP: servers.Call}
//
// An mcp_tool hook then calls its tool as Claude Code does: the result's
// text is read as a command hook's standard output, a result marked
// isError fails the hook, and a server with no session, or whose
// connection has ended, fails it as not connected.
package mcp
