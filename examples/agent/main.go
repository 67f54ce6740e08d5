// Command agent is a small agent host on the Anthropic Messages API that
// keeps every turn in reprise: a loop on standard input whose conversation
// lives in a reprise event log, whose model may call Bash, Read and Write
// tools, whose Claude Code hooks (SessionStart, UserPromptSubmit,
// PreToolUse, PostToolUse, Stop, SessionEnd, ...) and permission rules
// apply as Claude Code applies them, and whose sessions can be resumed by
// id in a later process.
//
// Usage:
//
//	agent [--store PATH] [--session ID] [--model MODEL] [--base-url URL]
//	      [--stream] [--parallel] [--allowed-tools RULES] [--disallowed-tools RULES]
//	      [--mcp-server NAME=COMMAND ...]
//
// Each line read from standard input is a prompt. The turn it begins is
// driven by reprise's turn runner (package turn):
//
//  1. the prompt goes through Agent.Prompt, which runs the
//     UserPromptSubmit hooks: a hook that blocks it has its reason
//     printed, and the next line is read; a hook's context is kept as a
//     <system-reminder> meta message;
//  2. the conversation, rebuilt from the log, is turned into request
//     messages (adapters/anthropic.MessageParams) and sent, with the
//     tools, with the SDK's Messages.New or, with --stream,
//     Messages.NewStreaming; the answer, every block and its usage, is
//     recorded before anything is done with it, and its text printed;
//  3. each tool call of the answer goes through Agent.PreToolUse, with
//     what the settings' permission rules and --allowed-tools say of it; a
//     call still undecided is asked about on the terminal; the ones
//     allowed run, and each result, or refusal, goes to
//     Agent.PostToolUse; then back to 2;
//  4. once an answer calls no tool, the turn ends with Agent.Stop, which
//     runs the Stop hooks: a hook that blocks queues its reason as the
//     next user message, and the agent goes back to 2, until no hook
//     blocks or reprise's cap of consecutive blocks is reached.
//
// Every step is in the log before the next begins, so an agent killed in
// the middle of a turn loses nothing: `agent --session ID` finishes the
// unfinished turn first (and says so on stderr), without asking for a
// recorded answer again, running a call whose result is recorded again,
// or running a hook twice; a Bash or Write call that was allowed but has
// no result is reported to the model as interrupted (it may have run), a
// Read call runs again.
//
// The model may also call the Agent tool (or Task, its former name) with
// a description, a prompt and a subagent_type, as Claude Code's model
// does: the call, once PreToolUse allows it, starts a subagent of that
// type (only general-purpose, with Bash, Read and Write, and the Agent
// tool itself), a child session of its own whose SubagentStart hooks run,
// whose turn runs as the agent's do (its tool calls through the same
// hooks and rules, its hooks told the parent's session_id and
// transcript_path and the subagent's agent_id and agent_type), and whose
// SubagentStop hooks end it; its last answer is the call's result. With
// --parallel, the calls of one answer, subagents included, run at once. A
// subagent cut off by a kill goes on where its log stands when the
// session is resumed: it is not started twice.
//
// At the end of input the session is ended with reason user_exit (its
// SessionEnd hooks get prompt_input_exit) and the agent prints the command
// that resumes it.
//
// Without --session, the first prompt starts a new session (Agent.New,
// with the prompt as the SessionStart hooks' initialPrompt) in the current
// directory, which is the session's project: its .claude/settings.json and
// .claude/settings.local.json hooks and rules apply, besides those of
// ~/.claude/settings.json, and its tools run there. With --session ID, the
// agent resumes that session at once (Agent.Start with WithResume: its
// SessionStart hooks get source "resume", as Claude Code's --resume gives
// them): the next prompt is sent with every earlier turn.
//
// The store is a bbolt file: --store, else $REPRISE_STORE, else
// $XDG_STATE_HOME/reprise/reprise.db, else
// ~/.local/state/reprise/reprise.db, the reprise command's default, so
// that `reprise sessions`, `reprise log` and `reprise replay` show what the
// agent did, even while it runs (it serves reads to them: ServeReads).
// Transcripts that hooks read are kept in a directory beside it, named
// after it (reprise.DefaultTranscriptDir).
//
// The API key is $ANTHROPIC_API_KEY; without it the SDK's other
// credential sources apply ($ANTHROPIC_AUTH_TOKEN, profiles). --base-url
// (else $ANTHROPIC_BASE_URL) points the client at another server.
//
// Prompt and agent hooks in the settings ask a model too, over the same
// API (--base-url, else $ANTHROPIC_BASE_URL), with $ANTHROPIC_API_KEY or
// $ANTHROPIC_AUTH_TOKEN: the model the hook names, else
// $ANTHROPIC_SMALL_FAST_MODEL, else claude-haiku-4-5 (package
// turn's PromptEvaluator and AgentEvaluator, over internal/messages).
package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/reprise-dev/reprise"
	rpanthropic "github.com/reprise-dev/reprise/adapters/anthropic"
	rpmcp "github.com/reprise-dev/reprise/adapters/mcp"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/search"
	"github.com/reprise-dev/reprise/turn"
)

// storeEnv names the environment variable that chooses the store when
// --store is not given, as for the reprise command.
const storeEnv = "REPRISE_STORE"

// stopBlockCap is how many consecutive times Stop hooks may send the agent
// back to work in one turn before reprise stops asking them.
const stopBlockCap = reprise.DefaultStopBlockCap

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is what the flags say.
type config struct {
	store           string
	session         string
	agent           string
	model           string
	maxTokens       int64
	system          string
	baseURL         string
	stream          bool
	parallel        bool
	maxTurns        int
	allowedTools    toolList
	disallowedTools toolList
	mcpServers      mcpServerList
}

// defaultMaxTurns bounds the requests one prompt leads to: answers that
// call tools, and Stop hooks' continuations.
const defaultMaxTurns = 50

// run is the whole command: it parses args, reads prompts from stdin until
// its end (or until ctx is cancelled), writes the model's answers to stdout
// and everything else to stderr, and returns the exit code: 0, 1 on an
// error, 2 on a usage error.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var cfg config
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.store, "store", "", "the bbolt `PATH` of the session store (default $"+storeEnv+", else $XDG_STATE_HOME/reprise/reprise.db, else ~/.local/state/reprise/reprise.db)")
	fs.StringVar(&cfg.session, "session", "", "resume the session with this `ID` instead of starting a new one")
	fs.StringVar(&cfg.agent, "agent", "example-agent", "the reprise agent `NAME` whose lifecycle the log records")
	fs.StringVar(&cfg.model, "model", string(anthropic.ModelClaudeSonnet5_5), "the `MODEL` to ask")
	fs.Int64Var(&cfg.maxTokens, "max-tokens", 4096, "the most tokens (`N`) an answer may have")
	fs.StringVar(&cfg.system, "system", "", "a system prompt `TEXT`")
	fs.StringVar(&cfg.baseURL, "base-url", "", "the Messages API's base `URL` (default $ANTHROPIC_BASE_URL, else Anthropic's)")
	fs.BoolVar(&cfg.stream, "stream", false, "ask for answers as a stream of server-sent events, printed as they come")
	fs.BoolVar(&cfg.parallel, "parallel", false, "run the tool calls of one answer at once, its subagents' turns included")
	fs.IntVar(&cfg.maxTurns, "max-turns", defaultMaxTurns, "the most requests (`N`) one prompt may lead to, tool calls and Stop hooks' continuations included")
	fs.Var(&cfg.allowedTools, "allowed-tools", "permission `RULES` that allow tool calls without asking, as in settings' permissions.allow (\"Bash(git log *),Read\"; repeatable)")
	fs.Var(&cfg.disallowedTools, "disallowed-tools", "permission `RULES` that deny tool calls, as in settings' permissions.deny (repeatable)")
	fs.Var(&cfg.mcpServers, "mcp-server", "start `NAME=COMMAND` as a stdio MCP server that mcp_tool hooks call by NAME; COMMAND is split on spaces into a program and its arguments, with no shell (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agent [flags] < prompts\n\nAn agent on the Anthropic Messages API, with Bash, Read, Write and Agent tools, whose sessions live in reprise.\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent: unexpected argument %q (prompts are read from standard input)\n", fs.Arg(0))
		return 2
	}
	if cfg.maxTurns < 1 {
		fmt.Fprintln(stderr, "agent: --max-turns must be at least 1")
		return 2
	}
	if err := runLoop(ctx, cfg, stdin, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "agent:", err)
		return 1
	}
	return 0
}

// storePath returns the store file: --store, else $REPRISE_STORE, else
// reprise/reprise.db under the XDG state directory, as the reprise command
// chooses it.
func storePath(flagValue string) (string, error) {
	path := flagValue
	if path == "" {
		path = os.Getenv(storeEnv)
	}
	if path == "" {
		// The XDG base directory specification says to ignore relative paths.
		if dir := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
			path = filepath.Join(dir, "reprise", "reprise.db")
		} else {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("no store: give --store or set %s: %w", storeEnv, err)
			}
			path = filepath.Join(home, ".local", "state", "reprise", "reprise.db")
		}
	}
	if strings.Contains(path, "://") {
		return "", fmt.Errorf("store %s: this example opens bbolt files only", path)
	}
	return filepath.Abs(path)
}

// host is one run of the agent: the Engine over the store, the reprise
// agent whose current session the prompts go to, and the API client.
type host struct {
	cfg     config
	store   string
	e       *reprise.Engine
	agent   *reprise.Agent
	client  anthropic.Client
	out     io.Writer
	errw    io.Writer
	session string // the current session, "" until the first prompt of a new one
	cwd     string // the current session's project, where tools run
	home    string // the user's home, whose ~/.claude/settings.json has rules
	// lines are standard input's lines: prompts, and the answers to
	// permission questions when interactive (standard input a terminal).
	lines       <-chan string
	interactive bool
}

func runLoop(ctx context.Context, cfg config, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	store, err := storePath(cfg.store)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(store), 0o700); err != nil {
		return err
	}
	models := hookModels(cfg)
	// The MCP servers mcp_tool hooks call, up before the first hook and
	// closed after the store, when no hook runs any more.
	var servers rpmcp.Servers
	defer func() {
		if cerr := servers.Close(); cerr != nil {
			slog.Warn("closing MCP servers", "err", cerr)
		}
	}()
	if err := connectServers(ctx, &servers, cfg.mcpServers); err != nil {
		return err
	}
	e, err := reprise.OpenContext(ctx, store, reprise.Options{
		// Run the hooks of ~/.claude/settings.json and of each session's
		// project's .claude/settings.json and settings.local.json, and
		// of the plugins they enable, as Claude Code would.
		ClaudeSettings: true,
		// Let the reprise command read the store while the agent holds
		// it: sessions, log and audit read through the agent's socket,
		// and the web view's searches ask the index the agent keeps.
		ServeReads:   true,
		ServeSearch:  search.Served(store),
		StopBlockCap: stopBlockCap,
		Logger:       slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		// Prompt and agent hooks ask a model over the same API as the
		// agent.
		Runner: hookexec.Exec{Evaluator: turn.PromptEvaluator(models), AgentEvaluator: turn.AgentEvaluator(models), MCP: servers.Call},
	})
	if err != nil {
		return fmt.Errorf("open store %s: %w", store, err)
	}
	defer func() {
		if cerr := e.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close store: %w", cerr)
		}
	}()
	agent, err := e.Agent(ctx, cfg.agent)
	if err != nil {
		return err
	}
	opts := []option.RequestOption{}
	if key := os.Getenv("ANTHROPIC_API_KEY"); key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	if cfg.baseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.baseURL))
	}
	h := &host{cfg: cfg, store: store, e: e, agent: agent, client: anthropic.NewClient(opts...), out: stdout, errw: stderr}
	h.home, _ = os.UserHomeDir()

	if cfg.session != "" {
		if err := h.resume(ctx, cfg.session); err != nil {
			return err
		}
		if err := h.finish(ctx); err != nil {
			return err
		}
	}
	lines, stopReading := readLines(stdin)
	defer stopReading()
	h.lines, h.interactive = lines, isTerminal(stdin)
	for {
		if h.interactive {
			fmt.Fprint(stdout, "> ")
		}
		var text string
		var ok bool
		select {
		case <-ctx.Done():
			h.end(context.WithoutCancel(ctx), reprise.ReasonAbort)
			return ctx.Err()
		case text, ok = <-lines:
		}
		if !ok {
			break
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		if h.session == "" {
			if err := h.start(ctx, text); err != nil {
				return err
			}
		}
		if err := h.turn(ctx, text); err != nil {
			var apiErr *apiError
			if ctx.Err() == nil && errors.As(err, &apiErr) {
				// The prompt is kept: the next one is sent with it.
				fmt.Fprintln(stderr, "agent:", err)
				continue
			}
			reason := reprise.ReasonError
			if ctx.Err() != nil {
				reason = reprise.ReasonAbort
			}
			h.end(context.WithoutCancel(ctx), reason)
			return err
		}
	}
	return h.end(ctx, reprise.ReasonUserExit)
}

// resume makes session id current as the process starts: its SessionStart
// hooks run with source "resume" and their context is injected.
func (h *host) resume(ctx context.Context, id string) error {
	r, err := h.agent.Start(ctx, id, reprise.WithResume())
	if errors.Is(err, reprise.ErrSessionNotFound) {
		return fmt.Errorf("no session %s in %s", id, h.store)
	}
	if err != nil {
		return fmt.Errorf("resume %s: %w", id, err)
	}
	h.session = id
	info, _ := h.e.Session(ctx, id)
	h.cwd = info.Cwd
	fmt.Fprintf(h.errw, "resumed session %s (%d messages, project %s)\n", id, r.Messages, info.Cwd)
	h.reportHooks("SessionStart", r.StartOutcomes, r.Context)
	return nil
}

// start makes a new session current, in the current directory, with prompt
// as the SessionStart hooks' initialPrompt.
func (h *host) start(ctx context.Context, prompt string) error {
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	r, err := h.agent.New(ctx, "", cwd, reprise.WithInitialPrompt(prompt))
	if err != nil {
		return fmt.Errorf("new session: %w", err)
	}
	h.session, h.cwd = r.To, cwd
	fmt.Fprintf(h.errw, "session %s (project %s)\n", h.session, cwd)
	h.reportHooks("SessionStart", r.StartOutcomes, r.Context)
	return nil
}

// apiError is a failed request to the Messages API: the turn is given up,
// but the loop goes on.
type apiError struct{ err error }

func (e *apiError) Error() string { return "messages API: " + e.err.Error() }
func (e *apiError) Unwrap() error { return e.err }

// turn is one prompt, driven by the runner to the turn's end: through
// UserPromptSubmit, the model's answers and their tool calls, and the Stop
// hooks, until no hook sends the model back to work.
func (h *host) turn(ctx context.Context, text string) error {
	out, err := h.runner().Run(ctx, text)
	var modelErr *turn.ModelError
	if errors.As(err, &modelErr) {
		return &apiError{modelErr.Err}
	}
	if err != nil {
		return err
	}
	h.ended(out)
	return nil
}

// finish finishes the turn a killed process (or an API error, or
// --max-turns) left in the current session, from where the log shows it: no answer is asked for again, no tool that
// has a result runs again, no hook runs twice.
func (h *host) finish(ctx context.Context) error {
	t, err := h.agent.Turn(ctx)
	if err != nil {
		return err
	}
	if t.Phase == reprise.TurnOver {
		return nil
	}
	fmt.Fprintf(h.errw, "the last turn of session %s was left unfinished (%s): finishing it\n", h.session, phaseWords[t.Phase])
	out, err := h.runner().Resume(ctx)
	var modelErr *turn.ModelError
	if errors.As(err, &modelErr) {
		fmt.Fprintln(h.errw, "agent:", &apiError{modelErr.Err})
		return nil
	}
	if err != nil {
		return fmt.Errorf("finish the cut-off turn: %w", err)
	}
	h.ended(out)
	return nil
}

// phaseWords say what a cut-off turn was waiting for.
var phaseWords = map[reprise.TurnPhase]string{
	reprise.TurnAsk:   "waiting for the model's answer",
	reprise.TurnTools: "in the middle of its tool calls",
	reprise.TurnStop:  "before its Stop hooks",
}

// send sends conv, a conversation rebuilt from the log, to the model, with
// system as its system prompt and the tools it may call, and returns the
// answer, streamed with --stream.
func (h *host) send(ctx context.Context, conv []reprise.Message, system string, tools []anthropic.ToolUnionParam) (*anthropic.Message, error) {
	msgs, err := rpanthropic.MessageParams(conv)
	if err != nil {
		return nil, err
	}
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(h.cfg.model),
		MaxTokens: h.cfg.maxTokens,
		Messages:  msgs,
		Tools:     tools,
	}
	if system != "" {
		params.System = []anthropic.TextBlockParam{{Text: system}}
	}
	if !h.cfg.stream {
		return h.client.Messages.New(ctx, params)
	}
	return h.receive(h.client.Messages.NewStreaming(ctx, params))
}

// receive reads a streamed answer to its message_stop, printing its text
// as it comes, and returns the whole message, its JSON included, as
// Messages.New would.
func (h *host) receive(stream *ssestream.Stream[anthropic.MessageStreamEventUnion]) (*anthropic.Message, error) {
	defer stream.Close()
	var msg anthropic.Message
	stopped, printed := false, false
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, fmt.Errorf("stream: %w", err)
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" {
				fmt.Fprint(h.out, ev.Delta.Text)
				printed = true
			}
		case "content_block_stop":
			if printed {
				fmt.Fprintln(h.out)
				printed = false
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	if !stopped {
		return nil, errors.New("stream: the answer ended before its message_stop")
	}
	return &msg, nil
}

// end ends the current session for reason, running its SessionEnd hooks,
// and says how to resume it.
func (h *host) end(ctx context.Context, reason reprise.Reason) error {
	if h.session == "" {
		return nil
	}
	r, err := h.agent.End(ctx, reason, reprise.EndOptions{})
	if err != nil {
		return fmt.Errorf("end session %s: %w", h.session, err)
	}
	h.reportHooks("SessionEnd", r.EndOutcomes, "")
	fmt.Fprintf(h.errw, "session %s saved in %s\nresume it with: agent --store %s --session %s\n", h.session, h.store, h.store, h.session)
	h.session = ""
	return nil
}

// reportHooks tells, on stderr, which hooks of event did not succeed and
// whether they added context.
func (h *host) reportHooks(event string, outcomes []schema.HookOutcome, added string) {
	for _, o := range outcomes {
		if o.SystemMessage != "" {
			fmt.Fprintf(h.errw, "%s hook %q: %s\n", event, o.Name, o.SystemMessage)
		}
		if o.Status == "ok" {
			continue
		}
		if o.Decision == "block" {
			continue // the caller prints the reason
		}
		detail := o.Error
		if o.Stderr != "" {
			detail = strings.TrimSpace(o.Stderr)
		}
		fmt.Fprintf(h.errw, "%s hook %q (%s): %s %s\n", event, o.Name, o.Source, o.Status, detail)
	}
	if added != "" {
		fmt.Fprintf(h.errw, "[%s hooks added context (%d characters)]\n", event, len(added))
	}
}

// halted reports whether a hook's "continue": false stops the turn, and
// says so to the user with its stopReason, as Claude Code does; the model
// is not told.
func (h *host) halted(halt reprise.Halt) bool {
	if halt.Halted {
		fmt.Fprintf(h.out, "[stopped by a hook: %s]\n", cmp.Or(halt.StopReason, "no reason given"))
	}
	return halt.Halted
}

// readLines sends the lines of r, then closes the channel. stop lets the
// reading goroutine go when the caller returns early.
func readLines(r io.Reader) (lines <-chan string, stop func()) {
	ch := make(chan string)
	done := make(chan struct{})
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			select {
			case ch <- sc.Text():
			case <-done:
				return
			}
		}
	}()
	return ch, func() { close(done) }
}
