package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reprise-dev/reprise/hookexec"
)

// Servers holds the MCP servers a host is connected to, each a client
// session under the name hooks call it by. Its Call is a
// hookexec.MCPCaller. A session given to Servers is Servers' to close:
// Remove, Close and an Add under the same name close it. A session whose
// connection ends, closed by the server or lost, leaves Servers by
// itself, and its name is not connected until another session is added.
//
// The zero value holds no server and is ready to use. Servers is safe
// for concurrent use.
type Servers struct {
	mu       sync.Mutex
	sessions map[string]*entry
}

// entry is one session of a Servers.
type entry struct {
	session *mcp.ClientSession
	ended   chan struct{} // closed when the session's connection has ended
}

// endedNow reports whether e's connection is known to have ended.
func (e *entry) endedNow() bool {
	select {
	case <-e.ended:
		return true
	default:
		return false
	}
}

// lost reports whether err, from a call on e's session, means that the
// connection has ended. A call in flight when the connection breaks
// fails with the transport's error (io.EOF, say), possibly before the
// session's Wait returns; a call made after that fails with
// mcp.ErrConnectionClosed, so a ping tells, unless the server itself
// answered with err.
func (e *entry) lost(ctx context.Context, err error) bool {
	if errors.Is(err, mcp.ErrConnectionClosed) || e.endedNow() {
		return true
	}
	var answer *jsonrpc.Error
	if errors.As(err, &answer) {
		return false
	}
	return errors.Is(e.session.Ping(ctx, nil), mcp.ErrConnectionClosed)
}

var _ hookexec.MCPCaller = (*Servers)(nil).Call

// Add makes s the session of the server named name, closing the session
// it replaces, if any. s must be connected (the result of
// mcp.Client.Connect).
func (ss *Servers) Add(name string, s *mcp.ClientSession) {
	e := &entry{session: s, ended: make(chan struct{})}
	ss.mu.Lock()
	if ss.sessions == nil {
		ss.sessions = map[string]*entry{}
	}
	old := ss.sessions[name]
	ss.sessions[name] = e
	ss.mu.Unlock()
	go ss.watch(name, e)
	if old != nil {
		_ = old.session.Close() // replaced: what it says on closing no longer matters
	}
}

// watch waits for the end of e's connection and then takes e out of ss,
// unless another session has taken its name since.
func (ss *Servers) watch(name string, e *entry) {
	_ = e.session.Wait() // how it ended: the session is gone either way
	close(e.ended)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.sessions[name] == e {
		delete(ss.sessions, name)
	}
}

// Connect connects to an MCP server over t, as a client named "reprise",
// and adds the session under name, as Add does.
func (ss *Servers) Connect(ctx context.Context, name string, t mcp.Transport) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "reprise", Version: version()}, nil)
	s, err := client.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("connecting to MCP server %q: %w", name, err)
	}
	ss.Add(name, s)
	return nil
}

// Remove closes the session of the server named name and forgets it. It
// returns what closing said, and nil for a name with no session or a
// session whose connection had already ended.
func (ss *Servers) Remove(name string) error {
	ss.mu.Lock()
	e := ss.sessions[name]
	delete(ss.sessions, name)
	ss.mu.Unlock()
	if e == nil {
		return nil
	}
	return closeEntry(name, e)
}

// Close closes every session and forgets them, returning what closing
// them said.
func (ss *Servers) Close() error {
	ss.mu.Lock()
	sessions := ss.sessions
	ss.sessions = nil
	ss.mu.Unlock()
	var errs []error
	for name, e := range sessions {
		errs = append(errs, closeEntry(name, e))
	}
	return errors.Join(errs...)
}

// closeEntry closes e's session, named name, and returns what closing it
// said if its connection was still up.
func closeEntry(name string, e *entry) error {
	err := e.session.Close()
	if err == nil || e.endedNow() {
		return nil
	}
	return fmt.Errorf("closing the session of MCP server %q: %w", name, err)
}

// session returns the session of the server named name, or an error
// wrapping hookexec.ErrMCPNotConnected.
func (ss *Servers) session(name string) (*entry, error) {
	ss.mu.Lock()
	e := ss.sessions[name]
	ss.mu.Unlock()
	switch {
	case e == nil:
		return nil, fmt.Errorf("%w: no session named %q", hookexec.ErrMCPNotConnected, name)
	case e.endedNow():
		return nil, fmt.Errorf("%w: the connection to %q has ended", hookexec.ErrMCPNotConnected, name)
	}
	return e, nil
}

// Call calls tool of the server named server with input, a JSON object
// (empty for none), and returns the text of the result: its contents,
// one a line, text as itself and any other kind said in brackets
// ("[image image/png]"). A result marked as an error is a *ToolError
// with that text. A server with no session, or whose connection has
// ended, is an error wrapping hookexec.ErrMCPNotConnected.
func (ss *Servers) Call(ctx context.Context, server, tool string, input json.RawMessage) (string, error) {
	args, err := arguments(input)
	if err != nil {
		return "", err
	}
	e, err := ss.session(server)
	if err != nil {
		return "", err
	}
	res, err := e.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return "", fmt.Errorf("calling tool %q: %w", tool, context.Cause(ctx))
	case e.lost(ctx, err):
		return "", fmt.Errorf("%w: calling tool %q: %w", hookexec.ErrMCPNotConnected, tool, err)
	default:
		return "", fmt.Errorf("calling tool %q: %w", tool, err)
	}
	if res.NeedsInput() {
		return "", fmt.Errorf("calling tool %q: it asks the client for input, which a hook cannot give", tool)
	}
	text := Text(res.Content)
	if res.IsError {
		return "", &ToolError{Text: text}
	}
	return text, nil
}

// ToolError is a tool's result marked as an error (isError), with the
// result's text.
type ToolError struct {
	Text string
}

// Error says that the tool failed, and its text.
func (e *ToolError) Error() string {
	if e.Text == "" {
		return "the tool returned an error"
	}
	return "the tool returned an error: " + e.Text
}

// arguments decodes input, a JSON object, into the arguments of a tool
// call, its numbers kept as they are written.
func arguments(input json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(input)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var args map[string]any
	err := dec.Decode(&args)
	if err == nil && args == nil {
		err = errors.New("null")
	}
	if err == nil && dec.Decode(new(json.RawMessage)) != io.EOF {
		err = errors.New("data after the object")
	}
	if err != nil {
		return nil, fmt.Errorf("the tool's input is not a JSON object: %w", err)
	}
	return args, nil
}

// Text returns contents as Call reads them: one content a line, text as
// itself, anything else as what it is in brackets.
func Text(contents []mcp.Content) string {
	lines := make([]string, 0, len(contents))
	for _, c := range contents {
		lines = append(lines, contentText(c))
	}
	return strings.Join(lines, "\n")
}

// contentText is the line of Text for c.
func contentText(c mcp.Content) string {
	bracket := func(words ...string) string {
		var kept []string
		for _, w := range words {
			if w != "" {
				kept = append(kept, w)
			}
		}
		return "[" + strings.Join(kept, " ") + "]"
	}
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return bracket("image", c.MIMEType)
	case *mcp.AudioContent:
		return bracket("audio", c.MIMEType)
	case *mcp.ResourceLink:
		return bracket("resource link", c.URI)
	case *mcp.EmbeddedResource:
		if c.Resource == nil {
			return bracket("resource")
		}
		return bracket("resource", c.Resource.URI)
	case nil:
		return bracket("no content")
	}
	return bracket(fmt.Sprintf("%T", c))
}

// version is this module's version as the running program was built
// with it, or "devel".
func version() string {
	const path = "github.com/reprise-dev/reprise/adapters/mcp"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	mods := append([]*debug.Module{&info.Main}, info.Deps...)
	for _, m := range mods {
		if m.Path == path && m.Version != "" && m.Version != "(devel)" {
			return m.Version
		}
	}
	return "devel"
}
