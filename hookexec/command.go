package hookexec

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/reprise-dev/reprise/schema"
)

// CommandEnv is what a command hook needs besides its stdin.
type CommandEnv struct {
	ProjectDir string // working directory and CLAUDE_PROJECT_DIR
	// Cwd, when set, is the working directory instead of ProjectDir: where
	// a CwdChanged moved the session (CLAUDE_PROJECT_DIR stays).
	Cwd       string
	EnvFile   string // CLAUDE_ENV_FILE, set only for SessionStart; "" to omit
	SpillDir  string // where context over MaxContextChars is saved
	SpillName string // base name for spilled context files, e.g. the session id
	// Spill, when set, saves context over MaxContextChars instead of
	// SpillDir and returns the path that names it.
	Spill func(text string) (path string, err error)
	// Now times hooks; nil means time.Now.
	Now func() time.Time
	// Extra is added to the environment of command hooks, after the rest
	// (so it wins): KEY=value pairs such as TRACEPARENT.
	Extra []string
	// Background, when set, takes the run's "async" and "asyncRewake"
	// command hooks: each is started and left running, and its step
	// records it with status schema.HookAsync. Nil waits for them as for
	// any other hook.
	Background Background

	evaluator      Evaluator        // Exec.Evaluator
	agentEvaluator Evaluator        // Exec.AgentEvaluator
	mcp            MCPCaller        // Exec.MCP
	messages       []schema.Message // the conversation, for the prompt hooks of Stop
	supervisor     string           // Exec.Supervisor: "" or NoSupervisor
	inherit        []string         // Exec.InheritEnv: nil for the whole environment
	session        string           // CLAUDE_CODE_SESSION_ID: the session the hooks run for
	effort         string           // CLAUDE_EFFORT: the input's effort level, "" when unknown
	log            *slog.Logger     // Exec.Logger: where warnings go; nil for slog.Default
	budget         time.Duration    // the time every command hook of the run has; 0 for each its own
}

// warn logs a warning of a hook run.
func (env CommandEnv) warn(msg string, args ...any) {
	log := env.log
	if log == nil {
		log = slog.Default()
	}
	log.Warn(msg, args...)
}

// dir is where hooks work: the session's current directory.
func (env CommandEnv) dir() string { return cmp.Or(env.Cwd, env.ProjectDir) }

// clock returns env's clock.
func (env CommandEnv) clock() func() time.Time {
	if env.Now == nil {
		return time.Now
	}
	return env.Now
}

// MaxContextChars is the longest context, in characters, a command hook
// returns inline. A longer one is saved to a file and replaced by a preview
// that names the file.
const MaxContextChars = 10000

// MaxCapture is how many bytes of a command hook's stdout, and of its
// stderr, are kept. Bytes beyond it are counted in HookOutcome.Dropped.
const MaxCapture = 1 << 20

const (
	// outputWaitDelay is how long a command hook's output is still read
	// after its main process exited or its process group was killed. A
	// background child that keeps the pipes open longer is left running,
	// but the hook is not waited for.
	outputWaitDelay = 2 * time.Second

	previewChars = 2000 // characters of a spilled context kept inline
	maxStderr    = 2000 // bytes of stderr kept in an outcome
)

// commandRun is what one execution of a command hook left behind.
// A hook of another type (http, mcp_tool, prompt, agent) that answered
// is read as a command that exited with code, its answer as stdout.
type commandRun struct {
	stdout, stderr capture
	ran            bool        // the hook ran to an exit: code and status hold
	code           int         // its exit code; 128 plus the signal's number when a signal ended it
	status         string      // how it ended, as a process state says it ("exit status 1")
	signaled       bool        // a signal ended it
	err            error       // from starting or waiting
	killed         atomic.Bool // its process group was killed

	// A prompt or agent hook's ok: false that ends the turn: Claude Code
	// sets "continue": false with the reason as its stopReason.
	halt       bool
	stopReason string
	request    string          // what a prompt, agent or mcp_tool hook asked
	answer     string          // what an http, prompt, agent or mcp_tool hook answered
	kind       schema.HookType // the hook's type; "" for a command
}

// success reports whether the hook ran and exited 0.
func (r *commandRun) success() bool { return r.ran && r.code == 0 }

// runCommand runs the command hook h with stdin and returns its outcome and
// the context it contributes. The hook's whole process group is killed when
// timeout passes or ctx is done.
func runCommand(ctx context.Context, h Hook, stdin []byte, env CommandEnv, timeout time.Duration) (schema.HookOutcome, answer) {
	o, a := runCommandOnce(ctx, h, stdin, env, timeout)
	if h.OnFailure == OnFailureBlock && failureBlocks(h.Event) && (o.Status == schema.HookFailed || o.Status == schema.HookTimedOut) {
		// "onFailure": "block": the failure counts as exit 2. The outcome
		// keeps its status: the hook did fail.
		reason := cmp.Or(o.Stderr, o.Error, o.Status)
		a.reason, a.text = reason, reason
		a.decision, o.Decision = "block", "block"
		if h.Event == PreToolUse {
			a.decision, o.Decision = Deny, Deny
		}
		o.Reason = reason
	}
	return o, a
}

// isJSONObject reports whether stdout is one JSON object.
func isJSONObject(stdout []byte) bool {
	b := bytes.TrimSpace(stdout)
	return bytes.HasPrefix(b, []byte("{")) && json.Valid(b)
}

// wrongEventName says what is wrong when stdout is a JSON answer whose
// hookSpecificOutput.hookEventName names another event than event, and
// returns "" otherwise.
func wrongEventName(stdout []byte, event Event) string {
	b := bytes.TrimSpace(stdout)
	if !bytes.HasPrefix(b, []byte("{")) {
		return ""
	}
	var out struct {
		Specific struct {
			Event string `json:"hookEventName"`
		} `json:"hookSpecificOutput"`
	}
	if json.Unmarshal(b, &out) != nil || out.Specific.Event == "" || out.Specific.Event == string(event) {
		return ""
	}
	return fmt.Sprintf("hook returned incorrect event name: expected %q but got %q", event, out.Specific.Event)
}

// generic reports whether event is one of schema.Events whose hooks this
// package has no runner of its own for: RunEvent reads their answers
// from the table alone.
func generic(event Event) bool {
	_, known := schema.LookupEvent(event)
	return known && !slices.Contains(schema.HookEvents, event)
}

// OnFailureBlock, as a hook's "onFailure", makes its failure (it could
// not start, it timed out, it exited with a code other than 0 or 2) count
// as exit code 2, so that what the event guards is blocked.
const OnFailureBlock = "block"

// failureBlocks reports whether "onFailure": "block" applies on event:
// Claude Code ignores it on Stop, SubagentStop, TaskCompleted and
// TeammateIdle, where exit 2 keeps the agent going, and on the events
// whose exit 2 blocks nothing.
func failureBlocks(event Event) bool {
	spec, _ := schema.LookupEvent(event)
	return spec.ExitTwo == schema.ExitTwoBlocks || spec.ExitTwo == schema.ExitTwoBlocksUser
}

// runCommandOnce is runCommand without the hook's onFailure.
func runCommandOnce(ctx context.Context, h Hook, stdin []byte, env CommandEnv, timeout time.Duration) (schema.HookOutcome, answer) {
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	now := env.clock()
	began := now()
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r := execute(hctx, h, stdin, env)

	o := schema.HookOutcome{Name: h.Name, Source: h.Source, Type: string(r.kind), Request: opening(r.request), Answer: opening(r.answer)}
	o.Halt, o.StopReason = r.halt, r.stopReason
	o.Dropped = r.stdout.dropped + r.stderr.dropped
	var a answer // what it gives, as its event reads it
	switch {
	case r.stoppedBy(hctx):
		o.Status, o.Error = stopped(ctx, timeout)
		o.Stderr = excerpt(r.stderr.buf)
	case !r.ran:
		o.Status, o.Error = schema.HookFailed, r.err.Error()
	case r.success() && wrongEventName(r.stdout.buf, h.Event) != "":
		// As in Claude Code: an answer meant for another event is an
		// error, and nothing of it is used.
		o.Status, o.Error = schema.HookFailed, wrongEventName(r.stdout.buf, h.Event)
	case generic(h.Event):
		spec, _ := schema.LookupEvent(h.Event)
		a = commandEventAnswer(&o, spec, r, env)
		o.Duration = now().Sub(began).Nanoseconds()
		return o, a
	case toolEvent(h.Event):
		a = toolAnswer(&o, h.Event, r, env)
		readControl(&o, h, r)
		o.Duration = now().Sub(began).Nanoseconds()
		return o, a
	case mayBlock(h.Event) && r.code == 2:
		// Exit 2 is how a hook blocks: its stderr is the reason.
		o.Status, o.ExitCode, o.Decision = schema.HookOK, 2, "block"
		o.Reason = excerpt(r.stderr.buf)
		a.text = o.Reason
	case !r.success():
		o.Status, o.ExitCode, o.Error = schema.HookFailed, r.code, r.status
		o.Stderr = excerpt(r.stderr.buf)
		// As in Claude Code, a JSON answer is honoured whatever the exit
		// code; plain text is not.
		switch {
		case !isJSONObject(r.stdout.buf):
		case mayBlock(h.Event) && blockAnswer(r.stdout.buf):
			o.Decision = "block"
			_, o.Reason = ParseStopOutput(r.stdout.buf)
			a.text = o.Reason
		case h.Event != Stop && h.Event != PreCompact:
			a.text, _ = limitContext(ParseOutput(r.stdout.buf), env)
		}
	case r.err != nil && !errors.Is(r.err, exec.ErrWaitDelay):
		o.Status, o.Error = schema.HookFailed, r.err.Error()
		o.Stderr = excerpt(r.stderr.buf)
	case mayBlock(h.Event) && blockAnswer(r.stdout.buf):
		o.Status, o.Decision = schema.HookOK, "block"
		_, o.Reason = ParseStopOutput(r.stdout.buf)
		a.text = o.Reason
	case h.Event == Stop:
		// Its additionalContext is feedback; plain stdout is nothing.
		o.Status = schema.HookOK
		if isJSONObject(r.stdout.buf) {
			a.context, _ = limitContext(ParseOutput(r.stdout.buf), env)
		}
	case h.Event == PreCompact:
		o.Status = schema.HookOK
		a.instructions = compactInstructions(h, r.stdout.buf)
	default:
		var err error
		o.Status = schema.HookOK
		a.text, err = limitContext(ParseOutput(r.stdout.buf), env)
		if err != nil {
			o.Error = err.Error()
		}
	}
	if o.Status == schema.HookOK {
		readControl(&o, h, r)
	}
	o.Duration = now().Sub(began).Nanoseconds()
	o.ContextLen = len(a.text) + len(a.context)
	return o, a
}

// compactInstructions is what a PreCompact hook's stdout adds to the
// compaction's instructions, as Claude Code takes it: trimmed, and cut at
// MaxContextChars characters with a line that says so.
func compactInstructions(h Hook, stdout []byte) string {
	text := strings.TrimSpace(strings.ToValidUTF8(string(stdout), "\uFFFD"))
	if n := utf8.RuneCountInString(text); n > MaxContextChars {
		text = firstChars(text, MaxContextChars) + fmt.Sprintf("\n[PreCompact hook [%s] output cut: %d characters is over the %d-character limit]", h.Name, n, MaxContextChars)
	}
	return text
}

// readControl records what a hook that exited 0 with a JSON object on
// stdout says to every event, as Claude Code reads it: "continue": false
// stops the agent after the hooks, whatever they decided, with
// "stopReason" shown to the user (not the model); "systemMessage" is a
// warning for the user. The fields of its hookSpecificOutput that h's
// event honours and no other field records go in Specific, for the host.
func readControl(o *schema.HookOutcome, h Hook, r *commandRun) {
	if !r.success() {
		return
	}
	var out struct {
		Continue      *bool  `json:"continue"`
		StopReason    string `json:"stopReason"`
		SystemMessage string `json:"systemMessage"`
	}
	if json.Unmarshal(bytes.TrimSpace(r.stdout.buf), &out) != nil {
		return
	}
	if out.Continue != nil && !*out.Continue {
		o.Halt, o.StopReason = true, strings.ToValidUTF8(out.StopReason, "\uFFFD")
	}
	o.SystemMessage = strings.ToValidUTF8(out.SystemMessage, "\uFFFD")
	o.Specific = specificOutput(h.Event, r.stdout.buf)
}

// recordedElsewhere are the hookSpecificOutput fields that outcomes and
// steps record in fields of their own: a context, a tool decision, an
// input or output replaced.
var recordedElsewhere = []string{"hookEventName", "additionalContext", "permissionDecision", "permissionDecisionReason",
	"updatedInput", "updatedToolOutput", "updatedMCPToolOutput", "decision"}

// maxSpecific is the largest Specific an outcome keeps, in bytes.
const maxSpecific = 64 << 10

// specificOutput returns, as a JSON object, the fields of stdout's
// hookSpecificOutput that event honours and that no other field of an
// outcome records; nil when there are none, or when they are larger than
// maxSpecific.
func specificOutput(event Event, stdout []byte) []byte {
	spec, ok := schema.LookupEvent(event)
	if !ok {
		return nil
	}
	var out struct {
		Specific map[string]json.RawMessage `json:"hookSpecificOutput"`
	}
	if json.Unmarshal(bytes.TrimSpace(stdout), &out) != nil {
		return nil
	}
	return honoured(spec, out.Specific, recordedElsewhere)
}

// honoured returns, as a JSON object, the fields of a hookSpecificOutput
// that spec's event honours, but for those in except; nil when there are
// none, or when they are larger than maxSpecific.
func honoured(spec schema.EventSpec, fields map[string]json.RawMessage, except []string) []byte {
	kept := make(map[string]json.RawMessage)
	for k, v := range fields {
		if slices.Contains(spec.Output, k) && !slices.Contains(except, k) {
			kept[k] = v
		}
	}
	if len(kept) == 0 {
		return nil
	}
	data, err := json.Marshal(kept) // keys sorted: the same answer records the same bytes
	if err != nil || len(data) > maxSpecific {
		return nil
	}
	return data
}

// mayBlock reports whether hooks of event can block what follows them.
func mayBlock(event Event) bool {
	return event == Stop || event == UserPromptSubmit || event == PreCompact
}

// blockAnswer reports whether stdout is a JSON answer that blocks.
func blockAnswer(stdout []byte) bool {
	block, _ := ParseStopOutput(stdout)
	return block
}

// stopped returns the status and error of a hook stopped because ctx ended
// or its timeout passed.
func stopped(ctx context.Context, timeout time.Duration) (status, msg string) {
	if err := ctx.Err(); err != nil {
		return schema.HookCancelled, err.Error()
	}
	return schema.HookTimedOut, fmt.Sprintf("timed out after %s", timeout)
}

// stoppedBy reports whether the hook was stopped, or never started, because
// ctx was done.
func (r *commandRun) stoppedBy(ctx context.Context) bool {
	if !r.ran {
		return ctx.Err() != nil
	}
	return r.killed.Load() && r.signaled
}

// execute starts h in its own process group, held by the process's
// supervisor unless env says NoSupervisor, and waits for it. When ctx is
// done the group is killed with SIGKILL. On a system without process
// groups it starts nothing and fails with ErrUnsupportedPlatform.
func execute(ctx context.Context, h Hook, stdin []byte, env CommandEnv) *commandRun {
	switch body := h.Body.(type) {
	case HTTP:
		return post(ctx, body, stdin, env)
	case MCPTool:
		return callTool(ctx, body, stdin, env)
	case Prompt:
		return evaluate(ctx, h, body, stdin, env.messages, env)
	}
	r := &commandRun{stdout: capture{limit: MaxCapture}, stderr: capture{limit: MaxCapture}}
	if err := commandPlatform(); err != nil {
		r.err = err
		return r
	}
	body, _ := h.Body.(Command)
	if body.Unrunnable != "" {
		r.err = errors.New(body.Unrunnable)
		return r
	}
	shell, err := shellPath(body.Shell)
	if err != nil {
		r.err = err
		return r
	}
	if body.PluginData != "" {
		// Claude Code makes a plugin's data directory before its hooks run.
		if err := os.MkdirAll(body.PluginData, 0o700); err != nil {
			r.err = fmt.Errorf("plugin data directory: %w", err)
			return r
		}
	}
	if env.ProjectDir == "" {
		// Never reprise's own working directory: a hook belongs to a project.
		r.err = errors.New("no working directory: the session has none")
		return r
	}
	dir := env.dir()
	{
		// exec reports a missing directory as if the shell were missing.
		info, err := os.Stat(dir)
		if err == nil && !info.IsDir() {
			err = fmt.Errorf("%s is not a directory", dir)
		}
		if err != nil {
			r.err = fmt.Errorf("working directory: %w", err)
			return r
		}
	}
	cmd := exec.CommandContext(ctx, shell, commandArgs(body, env.ProjectDir)...)
	cmd.Dir = dir
	cmd.Env = commandEnviron(h, env)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
	inOwnGroup(cmd, r)
	s, err := supervise(cmd, env.supervisor)
	if err != nil {
		r.err = err
		return r
	}
	cmd.WaitDelay = outputWaitDelay
	if err := s.start(cmd); err != nil {
		r.err = fmt.Errorf("start %s: %w", cmd.Path, err)
		return r
	}
	r.err = cmd.Wait()
	if err := s.ended(); err != nil {
		// The hook's shell exited without running its line.
		r.err = err
		return r
	}
	r.ran, r.code, r.status = true, exitCode(cmd.ProcessState), cmd.ProcessState.String()
	r.signaled = !cmd.ProcessState.Exited()
	return r
}

// execScript is the shell line of a hook that runs a program without a
// shell of its own (exec form, or a powershell hook): /bin/sh only replaces
// itself with its arguments, untouched, so that the supervisor's gate goes
// before it as before any command line.
const execScript = `exec "$0" "$@"`

// powershell is the program that runs hooks whose shell is "powershell".
const powershell = "pwsh"

// commandArgs returns the arguments after the shell of the hook body runs
// with, in project: "-c" and its line, or for a program run without a
// shell, execScript and the program's words, ${CLAUDE_PROJECT_DIR} in them
// replaced by project.
func commandArgs(body Command, project string) []string {
	switch {
	case body.Args != nil:
		words := append([]string{"-c", execScript, body.Line}, body.Args...)
		for i := 2; i < len(words); i++ {
			words[i] = strings.ReplaceAll(words[i], projectDirVar, project)
		}
		return words
	case body.Shell == "powershell":
		return []string{"-c", execScript, powershell, "-NoProfile", "-NonInteractive", "-Command", body.Line}
	}
	return []string{"-c", body.Line}
}

// projectDirVar is replaced by the project directory in exec-form hooks,
// which no shell expands.
const projectDirVar = "${CLAUDE_PROJECT_DIR}"

// shellPath returns the shell that runs a hook whose shell is name.
func shellPath(name string) (string, error) {
	switch name {
	case "", "sh", "powershell":
		return "/bin/sh", nil
	case "bash":
		path, err := exec.LookPath("bash")
		if err != nil {
			return "", fmt.Errorf("find bash: %w", err)
		}
		return path, nil
	}
	return "", fmt.Errorf("unsupported shell %q", name)
}

// commandEnviron returns the environment of h as Claude Code gives it: the
// process's own (only the variables env.inherit names, when it is not
// nil), without the variables Claude Code sets itself when inherited and
// without OTEL_* (the host's telemetry settings are not a hook's), plus
// CLAUDECODE=1, CLAUDE_CODE_SESSION_ID, CLAUDE_PROJECT_DIR, a plugin's
// CLAUDE_PLUGIN_ROOT, CLAUDE_PLUGIN_DATA and CLAUDE_PLUGIN_OPTION_*, the
// CLAUDE_ENV_FILE of the events that have one, and env.Extra last.
func commandEnviron(h Hook, env CommandEnv) []string {
	c, _ := h.Body.(Command)
	vars := make([]string, 0, len(os.Environ())+6+len(c.PluginEnv)+len(env.Extra))
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if setForHooks(name) || strings.HasPrefix(name, "OTEL_") {
			continue
		}
		if env.inherit == nil || slices.Contains(env.inherit, name) {
			vars = append(vars, kv)
		}
	}
	// CLAUDE_PID is the process running the hooks, as Claude Code gives
	// its own.
	vars = append(vars, "CLAUDECODE=1", "CLAUDE_PROJECT_DIR="+env.ProjectDir, "CLAUDE_PID="+strconv.Itoa(os.Getpid()))
	if env.effort != "" {
		vars = append(vars, "CLAUDE_EFFORT="+env.effort)
	}
	if env.session != "" {
		vars = append(vars, "CLAUDE_CODE_SESSION_ID="+env.session)
	}
	if c.PluginRoot != "" {
		vars = append(vars, "CLAUDE_PLUGIN_ROOT="+c.PluginRoot)
	}
	if c.PluginData != "" {
		vars = append(vars, "CLAUDE_PLUGIN_DATA="+c.PluginData)
	}
	vars = append(vars, c.PluginEnv...)
	if env.EnvFile != "" {
		vars = append(vars, "CLAUDE_ENV_FILE="+env.EnvFile)
	}
	return append(vars, env.Extra...)
}

// setForHooks reports whether name is a variable commandEnviron sets, or
// leaves unset, itself: an inherited value would say something of the
// host, not of the hook.
func setForHooks(name string) bool {
	switch name {
	case "CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PID", "CLAUDE_EFFORT", "CLAUDE_PROJECT_DIR", "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA", "CLAUDE_ENV_FILE":
		return true
	}
	return strings.HasPrefix(name, "CLAUDE_PLUGIN_OPTION_")
}

// exitCode returns the exit code of a finished hook; a hook killed by a
// signal gets 128 plus the signal number, as a shell reports it.
func exitCode(s *os.ProcessState) int {
	if ws, ok := s.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return s.ExitCode()
}

// capture is an io.Writer that keeps the first limit bytes written to it
// and counts the rest.
type capture struct {
	buf     []byte
	limit   int
	dropped int64
}

// ReadFrom reads r to its end into c, as Write would take it, without
// the 32 KiB buffer io.Copy would make for each hook's answer.
func (c *capture) ReadFrom(r io.Reader) (int64, error) {
	var n int64
	for {
		if len(c.buf) == cap(c.buf) {
			if len(c.buf) >= c.limit {
				m, err := io.Copy(io.Discard, r) // counted, not kept
				c.dropped += m
				return n + m, err
			}
			c.buf = append(make([]byte, 0, min(max(2*cap(c.buf), 512), c.limit)), c.buf...)
		}
		m, err := r.Read(c.buf[len(c.buf):min(cap(c.buf), c.limit)])
		c.buf = c.buf[:len(c.buf)+m]
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	if room := c.limit - len(c.buf); room > 0 {
		keep := min(room, len(p))
		if len(c.buf)+keep > cap(c.buf) {
			// Double, but never past the limit.
			size := min(max(2*cap(c.buf), len(c.buf)+keep, 4096), c.limit)
			c.buf = append(make([]byte, 0, size), c.buf...)
		}
		c.buf = append(c.buf, p[:keep]...)
		p = p[keep:]
	}
	c.dropped += int64(len(p))
	return n, nil
}

// excerpt returns the end of stderr, trimmed and valid UTF-8, in at most
// maxStderr bytes.
func excerpt(stderr []byte) string {
	const mark = "…"
	b := bytes.TrimSpace(stderr)
	cut := len(b) > maxStderr
	if cut {
		b = b[len(b)-maxStderr:]
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if !cut && len(s) <= maxStderr {
		return s
	}
	i := max(len(s)-(maxStderr-len(mark)), 0)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return mark + s[i:]
}

// ParseOutput returns the context of a hook that exited 0 with stdout.
// Stdout that is a JSON object gives its hookSpecificOutput.additionalContext,
// else its additionalContext, else its additional_context, else nothing.
// Any other stdout, including text that starts with "{" but is not JSON, is
// the context itself, trimmed. Invalid UTF-8 is replaced by U+FFFD.
func ParseOutput(stdout []byte) string {
	text := strings.ToValidUTF8(string(bytes.TrimSpace(stdout)), "\uFFFD")
	if !strings.HasPrefix(text, "{") {
		return text
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(text), &obj); err != nil {
		return text
	}
	if specific, ok := obj["hookSpecificOutput"].(map[string]any); ok {
		if s, ok := specific["additionalContext"].(string); ok && s != "" {
			return s
		}
	}
	for _, key := range []string{"additionalContext", "additional_context"} {
		if s, ok := obj[key].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// ParseStopOutput reads the answer of a Stop hook that exited 0: a JSON
// object with "decision": "block" blocks the stop, with its "reason".
// Anything else lets the agent stop.
func ParseStopOutput(stdout []byte) (block bool, reason string) {
	var out struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}
	if json.Unmarshal(bytes.TrimSpace(stdout), &out) != nil || out.Decision != "block" {
		return false, ""
	}
	return true, strings.ToValidUTF8(out.Reason, "\uFFFD")
}

// limitContext returns text, or when it is longer than MaxContextChars, a
// preview of it naming the file in env.SpillDir that holds all of it. If the
// file cannot be written, the preview says so and the error is returned.
func limitContext(text string, env CommandEnv) (string, error) {
	n := utf8.RuneCountInString(text)
	if n <= MaxContextChars {
		return text, nil
	}
	preview := firstChars(text, previewChars)
	spillText := env.Spill
	if spillText == nil {
		spillText = func(text string) (string, error) { return spill(text, env) }
	}
	path, err := spillText(text)
	if err != nil {
		return fmt.Sprintf("%s\n... [output truncated: %d characters, the rest could not be saved]", preview, n), err
	}
	return fmt.Sprintf("%s\n... [full output: %d characters, saved to %s]", preview, n, path), nil
}

// spill writes text to a new file in env.SpillDir and returns its path.
func spill(text string, env CommandEnv) (string, error) {
	if env.SpillDir == "" {
		return "", errors.New("spill context: no spill directory")
	}
	if err := os.MkdirAll(env.SpillDir, 0o700); err != nil {
		return "", fmt.Errorf("spill context: %w", err)
	}
	name := strings.ReplaceAll(env.SpillName, string(os.PathSeparator), "_")
	if name == "" {
		name = "session"
	}
	f, err := os.CreateTemp(env.SpillDir, name+"-hook-*.txt")
	if err != nil {
		return "", fmt.Errorf("spill context: %w", err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("spill context: %w", err)
	}
	return f.Name(), nil
}

// firstChars returns the first n characters of s.
// opening returns the start of text, trimmed and valid UTF-8, in at most
// maxStderr bytes, marked when cut: what a prompt asked or a server
// answered says most in its first lines.
func opening(text string) string {
	const mark = "…"
	s := strings.ToValidUTF8(strings.TrimSpace(text), "\uFFFD")
	if len(s) <= maxStderr {
		return s
	}
	i := maxStderr - len(mark)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + mark
}

func firstChars(s string, n int) string {
	count := 0
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}
