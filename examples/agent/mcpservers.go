package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	rpmcp "github.com/reprise-dev/reprise/adapters/mcp"
)

// mcpConnectTimeout bounds how long an MCP server may take to start and
// answer the first handshake.
const mcpConnectTimeout = 30 * time.Second

// mcpServer is one --mcp-server: the name hooks call it by, and the
// program and arguments that run it.
type mcpServer struct {
	name string
	argv []string
}

// mcpServerList is the repeatable --mcp-server flag.
type mcpServerList []mcpServer

func (l *mcpServerList) String() string {
	var s []string
	for _, m := range *l {
		s = append(s, m.name+"="+strings.Join(m.argv, " "))
	}
	return strings.Join(s, ",")
}

// Set reads NAME=COMMAND, COMMAND split on spaces, no shell.
func (l *mcpServerList) Set(v string) error {
	name, command, ok := strings.Cut(v, "=")
	argv := strings.Fields(command)
	if !ok || strings.TrimSpace(name) == "" || len(argv) == 0 {
		return errors.New("want NAME=COMMAND")
	}
	for _, m := range *l {
		if m.name == name {
			return fmt.Errorf("MCP server %q given twice", name)
		}
	}
	*l = append(*l, mcpServer{name: name, argv: argv})
	return nil
}

// connectServers starts each server as a stdio MCP server and connects it
// into servers under its name. On an error, the servers already
// connected are left in servers, for the caller to close.
func connectServers(ctx context.Context, servers *rpmcp.Servers, list mcpServerList) error {
	for _, m := range list {
		cmd := exec.Command(m.argv[0], m.argv[1:]...)
		asServer(cmd)
		// Close waits for the server; bound how long its pipes may be
		// held open by what it started.
		cmd.WaitDelay = time.Second
		cctx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
		err := servers.Connect(cctx, m.name, &mcp.CommandTransport{Command: cmd})
		cancel()
		if err != nil {
			if cmd.Process != nil {
				killServer(cmd)
			}
			return fmt.Errorf("--mcp-server %s (%s): %w", m.name, strings.Join(m.argv, " "), err)
		}
	}
	return nil
}
