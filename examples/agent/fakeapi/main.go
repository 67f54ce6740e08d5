// Command fakeapi is a stand-in for the Anthropic Messages API on
// 127.0.0.1, to run the agent without an API key. It prints the
// ANTHROPIC_BASE_URL to give the agent, then answers POST /v1/messages,
// in JSON or, when asked, as a stream of server-sent events, until it is
// interrupted.
//
// Usage:
//
//	fakeapi [--port N] [--subagents N]
//
// Its model says one thing: to a prompt, it answers with a Bash call
// that runs `echo hello`; to the call's result, it answers with what the
// command printed, read from the tool_result of the request, and ends the
// turn. With --subagents N, it answers a prompt with N calls of the Agent
// tool instead, each handing that Bash turn to a general-purpose
// subagent, and their results with what the subagents said. Each request
// is told on standard error.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/reprise-dev/reprise/examples/agent/internal/fakeapi"
)

// command is what the fake model asks Bash to run.
const command = "echo hello"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run serves until ctx is cancelled and returns the exit code: 0, 1 when
// it cannot listen, 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakeapi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 0, "the `PORT` to listen on, on 127.0.0.1 (default: one the system chooses)")
	subagents := fs.Int("subagents", 0, "answer a prompt with `N` calls of the Agent tool, each handing the Bash call to a subagent")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fakeapi [--port N]\n\nA fake Anthropic Messages API on 127.0.0.1 whose model runs `"+command+"` with Bash, then says what it printed.\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fakeapi: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(stderr, "fakeapi:", err)
		return 1
	}
	api := &fakeapi.Server{Answer: func(req *fakeapi.Request) (fakeapi.Answer, error) {
		a := answer(req, *subagents)
		fmt.Fprintf(stderr, "request %d (%d messages): %s\n", req.N, len(req.Messages), a.StopReason)
		return a, nil
	}}
	srv := &http.Server{Handler: api}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Fprintf(stdout, "ANTHROPIC_BASE_URL=http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "fakeapi:", err)
		return 1
	}
	return 0
}

// taskPrefix opens the prompt of each Agent call, which tells a
// subagent's requests from the main agent's.
const taskPrefix = "Subagent task "

// answer is the fake model: a request whose last message holds tool
// results gets what they say, and ends the turn; any other gets a Bash
// call, or with subagents N, unless it is a subagent's, N Agent calls.
// The calls' ids are random, as the API's are: reprise refuses an id the
// agent has seen in any session.
func answer(req *fakeapi.Request, subagents int) fakeapi.Answer {
	var results, said []string
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
		for _, b := range req.Messages[n-1].Content {
			if b["type"] == "tool_result" {
				results = append(results, resultText(b))
				said = append(said, contentText(b))
			}
		}
	}
	// The usage is a rough guess: about four bytes of the request a token.
	a := fakeapi.Answer{InputTokens: len(req.Body) / 4, OutputTokens: 20}
	first := ""
	if len(req.Messages) > 0 && len(req.Messages[0].Content) > 0 {
		first, _ = req.Messages[0].Content[0]["text"].(string)
	}
	main := subagents > 0 && !strings.HasPrefix(first, taskPrefix)
	if len(results) > 0 {
		a.Content = []fakeapi.Block{fakeapi.Text(strings.Join(results, "\n"))}
		if main {
			a.Content = []fakeapi.Block{fakeapi.Text("The subagents said: " + strings.Join(said, "; "))}
		}
		a.StopReason = "end_turn"
		return a
	}
	if main {
		a.Content = []fakeapi.Block{fakeapi.Text(fmt.Sprintf("I will hand `%s` to %d subagents.", command, subagents))}
		for i := 1; i <= subagents; i++ {
			a.Content = append(a.Content, fakeapi.ToolUse("toolu_"+rand.Text(), "Agent", map[string]any{
				"description":   fmt.Sprintf("echo hello %d", i),
				"prompt":        fmt.Sprintf("%s%d: run `%s` with Bash and say what it printed.", taskPrefix, i, command),
				"subagent_type": "general-purpose"}))
		}
		a.StopReason = "tool_use"
		return a
	}
	a.Content = []fakeapi.Block{
		fakeapi.Text("I will run `" + command + "` with the Bash tool."),
		fakeapi.ToolUse("toolu_"+rand.Text(), "Bash", map[string]any{"command": command}),
	}
	a.StopReason = "tool_use"
	return a
}

// resultText says what a tool_result block holds: its content, a string
// or text blocks, and whether it is an error.
func resultText(b fakeapi.Block) string {
	text := contentText(b)
	if b["is_error"] == true {
		return "Bash reported an error: " + text
	}
	if text == "" {
		return "The command printed nothing."
	}
	return "The command printed: " + text
}

// contentText returns the text a tool_result block holds, a string or
// text blocks.
func contentText(b fakeapi.Block) string {
	var text string
	switch c := b["content"].(type) {
	case string:
		text = c
	case []any:
		for _, part := range c {
			if p, ok := part.(map[string]any); ok && p["type"] == "text" {
				s, _ := p["text"].(string)
				text += s
			}
		}
	}
	return strings.TrimSpace(text)
}
