package hookexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/reprise-dev/reprise/schema"
)

// MCPTool is the body of an mcp_tool hook: it calls Tool of the MCP
// server Server with Input, whose strings' ${path} placeholders are
// filled from the hook's input ("${tool_input.file_path}"); the tool's
// text is read as a command hook's stdout on exit 0.
type MCPTool struct {
	Server, Tool string
	Input        json.RawMessage // a JSON object, or nil for none
}

func (b MCPTool) runsOn(Event) bool { return b.Server != "" && b.Tool != "" }

// MCPCaller calls a tool of an MCP server the host is connected to and
// returns the tool's text. It returns an error wrapping
// ErrMCPNotConnected when the host has no such server connected; any
// other error, a tool's own error result included, is the hook's
// failure. It should return when ctx is done.
type MCPCaller func(ctx context.Context, server, tool string, input json.RawMessage) (text string, err error)

// ErrMCPNotConnected is what an MCPCaller's error wraps when the server
// an mcp_tool hook names is not connected.
var ErrMCPNotConnected = errors.New("MCP server not connected")

// placeholder is a ${path} of an mcp_tool hook's input.
var placeholder = regexp.MustCompile(`\$\{([a-zA-Z_][a-zA-Z0-9_.]*)\}`)

// fillInput returns input with every ${path} in its strings replaced by
// what path names in the hook's JSON input: a string as itself, any
// other value as JSON, a missing one or null by nothing.
func fillInput(input json.RawMessage, stdin []byte) (json.RawMessage, error) {
	if len(input) == 0 {
		return json.RawMessage("{}"), nil
	}
	var tree any
	if err := json.Unmarshal(input, &tree); err != nil {
		return nil, fmt.Errorf("mcp_tool hook: input: %w", err)
	}
	var from any
	_ = json.Unmarshal(stdin, &from) // the input is this package's own JSON
	lookup := func(path string) string {
		v := from
		for _, key := range strings.Split(path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return ""
			}
			v = m[key]
		}
		switch v := v.(type) {
		case nil:
			return ""
		case string:
			return v
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	var fill func(any) any
	fill = func(v any) any {
		switch v := v.(type) {
		case string:
			return placeholder.ReplaceAllStringFunc(v, func(m string) string { return lookup(m[2 : len(m)-1]) })
		case []any:
			for i := range v {
				v[i] = fill(v[i])
			}
		case map[string]any:
			for k := range v {
				v[k] = fill(v[k])
			}
		}
		return v
	}
	return json.Marshal(fill(tree))
}

// callTool runs the mcp_tool hook h through env's MCP caller.
func callTool(ctx context.Context, body MCPTool, stdin []byte, env CommandEnv) *commandRun {
	r := &commandRun{stdout: capture{limit: MaxCapture}, stderr: capture{limit: MaxCapture}, kind: schema.HookMCPTool}
	input, err := fillInput(body.Input, stdin)
	if err != nil {
		r.err = err
		return r
	}
	r.request = string(input)
	if env.mcp == nil {
		r.err = fmt.Errorf("MCP server '%s' not connected: the host gave no MCP caller", body.Server)
		return r
	}
	text, err := abandonable(ctx, func() (string, error) { return env.mcp(ctx, body.Server, body.Tool, input) })
	switch {
	case ctx.Err() != nil:
		return r // stopped: the caller reports it
	case errors.Is(err, ErrMCPNotConnected):
		r.err = fmt.Errorf("MCP server '%s' not connected", body.Server)
		return r
	case err != nil:
		r.err = fmt.Errorf("mcp_tool hook %s/%s: %w", body.Server, body.Tool, err)
		return r
	}
	_, _ = r.stdout.Write([]byte(text))
	r.answer = text
	r.ran, r.status = true, "answered"
	return r
}
