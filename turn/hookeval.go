package turn

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
)

// ToolSpec declares a tool to a model: its name, what it does, and the
// JSON schema of its input.
type ToolSpec struct {
	Name, Description string
	InputSchema       json.RawMessage
}

// Models gives the Model that answers for the model named name ("" for
// the host's default), told system as its system prompt and offered
// tools (none when tools is empty). Prompt and agent hooks ask through
// it: a host gives one Models for both, over whatever API it uses.
type Models func(name, system string, tools []ToolSpec) Model

// PromptEvaluator answers prompt hooks (hookexec.Exec.Evaluator) with one
// request to the model the hook names: the Question's transcript, if any,
// then one user message with its prompt, under its system prompt, with
// no tools. The answer's text is the verdict hookexec reads; a model's
// error is a ModelError.
func PromptEvaluator(models Models) hookexec.Evaluator {
	return func(ctx context.Context, q hookexec.Question) (string, error) {
		model := models(q.Model, q.System, nil)
		if model == nil {
			return "", fmt.Errorf("turn: no model %q for prompt hooks", q.Model)
		}
		conv := make([]reprise.Message, 0, len(q.Transcript)+1)
		conv = append(conv, q.Transcript...)
		conv = append(conv, reprise.Text("user", q.Prompt))
		m, err := model(ctx, conv)
		if err != nil {
			return "", &ModelError{err}
		}
		return answerText(m), nil
	}
}

// AgentEvaluator answers agent hooks (hookexec.Exec.AgentEvaluator) with a
// turn of their own: a Runner drives it on an Engine over a memory store,
// with no hooks and no files, made for the one question and closed after
// it. The model the hook names gets the Question's transcript, if any,
// and its prompt, and may read the Question's directory with the Read,
// Grep and Glob tools, which refuse what lies outside it, in up to
// MaxTurns requests (DefaultMaxRequests when 0). The transcript is put
// before the session's messages in each request, not recorded. Its last
// answer's text is the verdict; a turn that reaches the limit still
// calling tools is an error.
func AgentEvaluator(models Models) hookexec.Evaluator {
	return func(ctx context.Context, q hookexec.Question) (string, error) {
		return agentHook(ctx, models, q)
	}
}

// agentVerdict closes an agent hook's system prompt: what its tools read
// and how it must end.
const agentVerdict = `You may read the files under %s with the Read, Grep and Glob tools; paths are relative to that directory. Read only what you need to decide. When you have decided, give your verdict as your last answer, without a tool call: the JSON object described above, and nothing else.`

// hookAgent and hookSession name the agent and the session of an agent
// hook's turn, in a store of its own.
const (
	hookAgent   = "agent-hook"
	hookSession = "agent-hook"
)

// agentHook runs the turn of agent hook q.
func agentHook(ctx context.Context, models Models, q hookexec.Question) (_ string, err error) {
	specs, tools := hookTools(q.Dir)
	system := q.System + "\n\n" + fmt.Sprintf(agentVerdict, cmp.Or(q.Dir, "(no directory)"))
	model := models(q.Model, system, specs)
	if model == nil {
		return "", fmt.Errorf("turn: no model %q for agent hooks", q.Model)
	}
	// Nothing of the turn outlives it: the store and the files are in
	// memory, and its registry of hooks is empty.
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Files: reprise.NewMemoryFiles(), AllowMissingCwd: true})
	defer func() {
		if cerr := e.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("turn: agent hook: close its store: %w", cerr)
		}
	}()
	agent, err := e.Agent(ctx, hookAgent)
	if err != nil {
		return "", fmt.Errorf("turn: agent hook: %w", err)
	}
	if _, err := agent.New(ctx, hookSession, cmp.Or(q.Dir, ".")); err != nil {
		return "", fmt.Errorf("turn: agent hook: start its session: %w", err)
	}
	transcript := q.Transcript
	var last *reprise.Message
	r := &Runner{
		Engine: e, Agent: agent, Tools: tools,
		Model: func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
			full := make([]reprise.Message, 0, len(transcript)+len(conv))
			return model(ctx, append(append(full, transcript...), conv...))
		},
		Permission:  func(Call) string { return hookexec.Allow }, // the tools only read
		MaxRequests: cmp.Or(q.MaxTurns, DefaultMaxRequests),
		OnEvent: func(ev Event) {
			if ev.Kind == Answered {
				last = ev.Answer
			}
		},
	}
	out, err := r.Run(ctx, q.Prompt)
	if err != nil {
		return "", fmt.Errorf("turn: agent hook: %w", err)
	}
	switch {
	case out.Limited:
		return "", fmt.Errorf("turn: agent hook: no verdict in %d turns: the model was still calling tools", r.MaxRequests)
	case out.Blocked || out.Halted || out.StopFailure != "":
		// No hook runs in the hook's own store: none of these can happen.
		return "", errors.New("turn: agent hook: the turn ended before an answer")
	case last == nil:
		return "", errors.New("turn: agent hook: the model gave no answer")
	}
	return answerText(*last), nil
}

// answerText is the text of m's text blocks, one after the other.
func answerText(m reprise.Message) string {
	var b strings.Builder
	for _, block := range m.Content {
		if block.Type == "text" {
			b.WriteString(block.Text)
		}
	}
	return b.String()
}
