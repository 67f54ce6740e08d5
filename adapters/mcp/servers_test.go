package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	rpmcp "github.com/reprise-dev/reprise/adapters/mcp"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// denyRm is what the policy server's check tool answers for an rm command.
const denyRm = `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"policy: no rm"}}`

// policy is an in-process MCP server with the tools the tests call.
type policy struct {
	name string
	mu   sync.Mutex
	seen []string       // the cmd of each check call
	wire mcp.Connection // the server's end of the connection, for hangup
}

// keepWire is a server's transport that gives p the connection it makes.
type keepWire struct {
	mcp.Transport
	p *policy
}

func (k keepWire) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := k.Transport.Connect(ctx)
	k.p.mu.Lock()
	k.p.wire = c
	k.p.mu.Unlock()
	return c, err
}

// server returns p as an MCP server with its tools:
//   - check denies a cmd that runs rm, and says nothing to any other;
//   - broken answers with an error result;
//   - echo answers with its arguments as it got them;
//   - who answers with p's name;
//   - mixed answers with a content of each kind;
//   - slow answers when its call is cancelled;
//   - hangup cuts the connection, as a server that dies mid-call does.
func (p *policy) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: p.name, Version: "v1"}, nil)
	type checkIn struct {
		Cmd string `json:"cmd"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "check"}, func(ctx context.Context, req *mcp.CallToolRequest, in checkIn) (*mcp.CallToolResult, any, error) {
		p.mu.Lock()
		p.seen = append(p.seen, in.Cmd)
		p.mu.Unlock()
		answer := ""
		if in.Cmd == "rm" || strings.HasPrefix(in.Cmd, "rm ") {
			answer = denyRm
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer}}}, nil, nil
	})
	object := json.RawMessage(`{"type":"object"}`)
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	s.AddTool(&mcp.Tool{Name: "broken", InputSchema: object}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: text("policy store unreachable")}, nil
	})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: object}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text(string(req.Params.Arguments))}, nil
	})
	s.AddTool(&mcp.Tool{Name: "who", InputSchema: object}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text(p.name)}, nil
	})
	s.AddTool(&mcp.Tool{Name: "mixed", InputSchema: object}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "first"},
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
			&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
			&mcp.ResourceLink{URI: "file:///a.txt", Name: "a"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b.txt", Text: "b"}},
			&mcp.TextContent{Text: "last"},
		}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: object}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s.AddTool(&mcp.Tool{Name: "hangup", InputSchema: object}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p.mu.Lock()
		wire := p.wire
		p.mu.Unlock()
		if wire == nil {
			return nil, errors.New("no wire to cut")
		}
		_ = wire.Close()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return s
}

// seenCmds returns the cmds check has been called with.
func (p *policy) seenCmds() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// connect connects p as a server over in-memory transports, returning
// both ends' sessions; the test's end closes them both.
func connect(t *testing.T, p *policy) (*mcp.ServerSession, *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := p.server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return ss, cs
}

// serve starts p and connects servers to it under name with Connect.
func serve(t *testing.T, servers *rpmcp.Servers, name string, p *policy) *mcp.ServerSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := p.server().Connect(context.Background(), keepWire{st, p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	if err := servers.Connect(context.Background(), name, ct); err != nil {
		t.Fatal(err)
	}
	return ss
}

// newServers returns an empty Servers that the test closes at its end.
func newServers(t *testing.T) *rpmcp.Servers {
	servers := new(rpmcp.Servers)
	t.Cleanup(func() { _ = servers.Close() })
	return servers
}

// waitEnded fails t unless wait returns within a few seconds.
func waitEnded(t *testing.T, what string, wait func() error) {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the connection did not end", what)
	}
}

// checkHook is an mcp_tool PreToolUse hook that asks policy's check tool
// about a Bash command.
var checkHook = hookexec.Hook{Event: hookexec.PreToolUse, Name: "policy-check", Source: "test",
	Body: hookexec.MCPTool{Server: "policy", Tool: "check", Input: json.RawMessage(`{"cmd":"${tool_input.command}"}`)}}

// bash is a PreToolUse input for a Bash call of command.
func bash(command string) hookexec.ToolInput {
	in, _ := json.Marshal(map[string]string{"command": command})
	return hookexec.ToolInput{SessionID: "s1", TranscriptPath: "/t/s1.jsonl", Cwd: "/src/app",
		ToolName: "Bash", ToolInput: in, ToolUseID: "toolu_1"}
}

// preToolUse runs hook through hookexec with servers as its MCP caller.
func preToolUse(t *testing.T, servers *rpmcp.Servers, hook hookexec.Hook, in hookexec.ToolInput) (schema.HookOutcome, hookexec.ToolDecision) {
	t.Helper()
	env := hookexec.CommandEnv{ProjectDir: t.TempDir(), SpillDir: t.TempDir(), SpillName: "s1"}
	outcomes, d := hookexec.Exec{MCP: servers.Call}.PreToolUse(context.Background(), []hookexec.Hook{hook}, in, env)
	if len(outcomes) != 1 {
		t.Fatalf("%d outcomes, want 1: %+v", len(outcomes), outcomes)
	}
	return outcomes[0], d
}

// TestPreToolUseDeniedByAnMCPTool runs an mcp_tool hook end to end: hookexec
// fills the tool's input from the call, Servers calls the tool on the
// server, and the tool's deny denies the call; a command the tool has no
// word on goes through.
func TestPreToolUseDeniedByAnMCPTool(t *testing.T) {
	servers := newServers(t)
	p := &policy{name: "policy"}
	serve(t, servers, "policy", p)

	out, d := preToolUse(t, servers, checkHook, bash("rm -rf build"))
	if d.Decision != hookexec.Deny || d.Reason != "policy: no rm" {
		t.Errorf("rm: decision %+v, want the tool's deny", d)
	}
	if out.Type != string(schema.HookMCPTool) || out.Status != schema.HookOK || out.Error != "" {
		t.Errorf("rm: outcome %+v", out)
	}

	out, d = preToolUse(t, servers, checkHook, bash("ls -l"))
	if d.Decision != "" || out.Status != schema.HookOK {
		t.Errorf("ls: decision %+v, outcome %+v; want no decision", d, out)
	}
	if got := p.seenCmds(); len(got) != 2 || got[0] != "rm -rf build" || got[1] != "ls -l" {
		t.Errorf("check saw %q, want the two commands", got)
	}
}

// TestToolErrorResult checks that a result marked isError is an error
// with the result's text, and fails the hook without deciding, and that
// a tool the server does not have is an error of its own.
func TestToolErrorResult(t *testing.T) {
	servers := newServers(t)
	serve(t, servers, "policy", &policy{name: "policy"})

	_, err := servers.Call(context.Background(), "policy", "broken", json.RawMessage(`{}`))
	var te *rpmcp.ToolError
	if !errors.As(err, &te) || te.Text != "policy store unreachable" || errors.Is(err, hookexec.ErrMCPNotConnected) {
		t.Fatalf("Call = %v, want a ToolError with the tool's text", err)
	}

	_, err = servers.Call(context.Background(), "policy", "nosuch", nil)
	if err == nil || errors.Is(err, hookexec.ErrMCPNotConnected) || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("unknown tool: Call = %v, want the server's error", err)
	}

	hook := checkHook
	hook.Body = hookexec.MCPTool{Server: "policy", Tool: "broken"}
	out, d := preToolUse(t, servers, hook, bash("rm -rf build"))
	if out.Status != schema.HookFailed || !strings.Contains(out.Error, "policy store unreachable") || d.Decision != "" {
		t.Errorf("outcome %+v, decision %+v; want a failed hook with the tool's text", out, d)
	}
}

// TestUnknownServerIsNotConnected checks a name with no session.
func TestUnknownServerIsNotConnected(t *testing.T) {
	servers := newServers(t)
	serve(t, servers, "other", &policy{name: "other"})

	_, err := servers.Call(context.Background(), "policy", "check", json.RawMessage(`{}`))
	if !errors.Is(err, hookexec.ErrMCPNotConnected) {
		t.Errorf("Call = %v, want not connected", err)
	}
	out, d := preToolUse(t, servers, checkHook, bash("rm -rf build"))
	if out.Status != schema.HookFailed || out.Error != "MCP server 'policy' not connected" || d.Decision != "" {
		t.Errorf("outcome %+v, decision %+v", out, d)
	}
}

// TestEndedSessionIsNotConnected checks that a session is not connected
// once its server closes it, and once the host removes it, and that
// Remove closes it.
func TestEndedSessionIsNotConnected(t *testing.T) {
	t.Run("server closed", func(t *testing.T) {
		servers := newServers(t)
		ss, cs := connect(t, &policy{name: "policy"})
		servers.Add("policy", cs)
		if _, err := servers.Call(context.Background(), "policy", "who", nil); err != nil {
			t.Fatalf("before closing: %v", err)
		}
		if err := ss.Close(); err != nil {
			t.Fatal(err)
		}
		waitEnded(t, "client", cs.Wait)
		_, err := servers.Call(context.Background(), "policy", "who", nil)
		if !errors.Is(err, hookexec.ErrMCPNotConnected) {
			t.Errorf("Call = %v, want not connected", err)
		}
		out, d := preToolUse(t, servers, checkHook, bash("rm -rf build"))
		if out.Status != schema.HookFailed || out.Error != "MCP server 'policy' not connected" || d.Decision != "" {
			t.Errorf("outcome %+v, decision %+v", out, d)
		}
	})
	t.Run("server closed during the call", func(t *testing.T) {
		servers := newServers(t)
		serve(t, servers, "policy", &policy{name: "policy"})
		_, err := servers.Call(context.Background(), "policy", "hangup", nil)
		if !errors.Is(err, hookexec.ErrMCPNotConnected) {
			t.Errorf("Call = %v, want not connected", err)
		}
	})
	t.Run("removed", func(t *testing.T) {
		servers := newServers(t)
		ss, cs := connect(t, &policy{name: "policy"})
		servers.Add("policy", cs)
		if err := servers.Remove("policy"); err != nil {
			t.Fatalf("Remove = %v", err)
		}
		waitEnded(t, "server", ss.Wait)
		if _, err := servers.Call(context.Background(), "policy", "who", nil); !errors.Is(err, hookexec.ErrMCPNotConnected) {
			t.Errorf("Call = %v, want not connected", err)
		}
		if err := servers.Remove("policy"); err != nil {
			t.Errorf("second Remove = %v, want nil", err)
		}
	})
}

// TestAddReplacesTheSession checks that Add under a name that has a
// session closes that session and sends calls to the new one.
func TestAddReplacesTheSession(t *testing.T) {
	servers := newServers(t)
	ssA, csA := connect(t, &policy{name: "a"})
	_, csB := connect(t, &policy{name: "b"})
	servers.Add("policy", csA)
	servers.Add("policy", csB)
	waitEnded(t, "replaced session", ssA.Wait)
	// The replaced session's end must not take the new one out.
	time.Sleep(50 * time.Millisecond)
	text, err := servers.Call(context.Background(), "policy", "who", nil)
	if err != nil || text != "b" {
		t.Errorf("Call = %q, %v; want b's answer", text, err)
	}
}

// TestCallText checks how Call writes each kind of content.
func TestCallText(t *testing.T) {
	servers := newServers(t)
	serve(t, servers, "policy", &policy{name: "policy"})
	text, err := servers.Call(context.Background(), "policy", "mixed", nil)
	want := "first\n[image image/png]\n[audio audio/wav]\n[resource link file:///a.txt]\n[resource file:///b.txt]\nlast"
	if err != nil || text != want {
		t.Errorf("Call = %q, %v; want %q", text, err, want)
	}
}

// TestInput checks that the input reaches the tool as written, numbers
// too, and that input that is not one JSON object is refused before any
// call.
func TestInput(t *testing.T) {
	servers := newServers(t)
	serve(t, servers, "policy", &policy{name: "policy"})
	in := `{"n":12345678901234567890,"f":0.1,"s":"x","l":[1,{"k":null}]}`
	text, err := servers.Call(context.Background(), "policy", "echo", json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("echo answered %q: %v", text, err)
	}
	_ = json.Unmarshal([]byte(in), &want)
	if fmt.Sprint(got) != fmt.Sprint(want) || !strings.Contains(text, "12345678901234567890") {
		t.Errorf("the tool got %s, want %s", text, in)
	}

	for _, bad := range []string{`[1]`, `null`, `"x"`, `3`, `{"a":1} {}`, `{"a":`} {
		_, err := servers.Call(context.Background(), "policy", "echo", json.RawMessage(bad))
		if err == nil || errors.Is(err, hookexec.ErrMCPNotConnected) || !strings.Contains(err.Error(), "not a JSON object") {
			t.Errorf("input %s: Call = %v, want it refused", bad, err)
		}
	}
}

// TestCallStopsWithItsContext checks that a call to a tool that does not
// answer returns when its context is done.
func TestCallStopsWithItsContext(t *testing.T) {
	servers := newServers(t)
	serve(t, servers, "policy", &policy{name: "policy"})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := servers.Call(ctx, "policy", "slow", nil)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, hookexec.ErrMCPNotConnected) {
		t.Errorf("Call = %v, want the deadline", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Call took %v after its deadline", took)
	}
	// The session outlives a cancelled call.
	if text, err := servers.Call(context.Background(), "policy", "who", nil); err != nil || text != "policy" {
		t.Errorf("after the cancelled call: Call = %q, %v", text, err)
	}
}

// TestConcurrentUse calls one server from several goroutines while
// another name is added and removed; each call must get its own answer.
func TestConcurrentUse(t *testing.T) {
	servers := newServers(t)
	serve(t, servers, "policy", &policy{name: "policy"})
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, cs := connect(t, &policy{name: "other"})
			servers.Add("other", cs)
			_, _ = servers.Call(context.Background(), "other", "who", nil)
			if err := servers.Remove("other"); err != nil {
				t.Errorf("Remove = %v", err)
			}
		}
	})
	var calls sync.WaitGroup
	for g := range 8 {
		calls.Go(func() {
			for i := range 20 {
				in := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				text, err := servers.Call(context.Background(), "policy", "echo", json.RawMessage(in))
				if err != nil || text != in {
					t.Errorf("Call(%s) = %q, %v", in, text, err)
					return
				}
			}
		})
	}
	calls.Wait()
	close(stop)
	churn.Wait()
}
