package reprise

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// ErrBadFire is returned by Fire for an id that is not an id, an event
// that is not one of schema.Events or has steps of its own (SessionStart,
// PreToolUse, Stop, ...: call their Agent methods), input that is not a
// JSON object or lacks a field the event's row requires, and an id an
// earlier fire of another event holds.
var ErrBadFire = lifecycle.ErrBadFire

// Fired is what the hooks of a fired event decided together, as the
// event's row of schema.Events reads their answers.
type Fired struct {
	ID    string
	Event hookexec.Event
	// AlreadyRecorded says that the log held the fire before: nothing ran,
	// and the rest is what the log holds. Interrupted says the process
	// that ran its hooks died first; they were not run again.
	AlreadyRecorded bool
	Interrupted     bool
	Outcomes        []schema.HookOutcome
	// Blocked says a hook blocked what the event guards (a "decision":
	// "block" where the row honours it, an exit 2 where it blocks or keeps
	// the agent going), for Reason.
	Blocked bool
	Reason  string
	// Feedback is what goes to the model after the fact (exit 2 where the
	// row says so); Context the hooks' additionalContext, and plain stdout
	// where the row takes it; SystemMessage their warnings for the user.
	Feedback      string
	Context       string
	SystemMessage string
	// Specific merges the hookSpecificOutput fields the event honours
	// (retry, watchPaths, worktreePath, action, ...), a later hook winning:
	// a JSON object, nil when none gave one.
	Specific json.RawMessage
	// Env is what command hooks wrote to CLAUDE_ENV_FILE, on the events
	// that give them one (Setup, CwdChanged, FileChanged).
	Env string
	Halt
}

// Fire runs the hooks of event, any event of schema.Events without steps
// of its own (Setup, PermissionDenied, PostToolBatch, Notification,
// CwdChanged, FileChanged, ...), on the agent's current session, with
// Claude Code's stdin: the common fields and fields, the event's own input
// as a JSON object holding every field its row requires. What its hooks
// decide is read as the row says and recorded once under id, the host's:
// fired again with the same id, nothing runs and the recorded result
// comes back (AlreadyRecorded). A process killed while the hooks run
// leaves them recorded as interrupted by the next process that loads the
// agent, never run again.
//
// Fire goes on beside tool calls and other fires, holding the agent only
// while it decides and appends; it fails with ErrAgentBusy during a
// restore, prompt, stop or compaction, and while another fire of the same
// id runs. MessageDisplay, which Claude Code fires for every streamed
// delta, runs and is not recorded: its id is not kept.
func (a *Agent) Fire(ctx context.Context, event hookexec.Event, id string, fields json.RawMessage, opts ...FireOption) (*Fired, error) {
	req, spec, err := fireRequest(event, id, fields)
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(req)
	}
	if !spec.Recorded {
		return a.display(ctx, req)
	}
	return a.fire(ctx, req)
}

// fire performs req on its lane.
func (a *Agent) fire(ctx context.Context, req *lifecycle.FireRequest) (*Fired, error) {
	if a.Doing() != "" {
		return nil, a.busy()
	}
	rep, err := a.doLane(ctx, lifecycle.Action{Kind: lifecycle.Fire, Fire: req}, fireLane(req.ID), func() error { return nil }, nil)
	if err != nil {
		return nil, err
	}
	switch {
	case rep.Fire == nil:
		return nil, fmt.Errorf("agent %s: fire %s was not decided", a.id, req.ID)
	case rep.Fire.Ran == nil:
		return nil, nil // no hook, and req.OnlyWithHooks
	}
	return firedOf(rep.Fire.Ran, rep.Fire.AlreadyRecorded), nil
}

// ToolBatch fires PostToolBatch, once, for the last answer of the agent's
// current session, when every call of the answer has its result and none
// has hooks running: Claude Code fires it there, before the next model
// request, with each call's name, input, id and the result the model sees
// (tool_calls). The hooks' additionalContext reaches the model as a meta
// message after the results, in the same append as their outcome; a block
// or a "continue": false stops the turn (Fired.Blocked, Fired.Halted).
//
// PostToolUse calls it when it records the last result of an answer, so
// a host seldom needs to: call it before the next model request after a
// crash, which it rolls forward (turn.Runner does). Asked again, it runs
// nothing and returns the recorded result. It returns nil, nil when the
// answer calls no tool, calls are unresolved, or no PostToolBatch hook
// matches: then nothing is recorded.
func (a *Agent) ToolBatch(ctx context.Context) (*Fired, error) {
	id := a.Current()
	if id == "" {
		return nil, nil
	}
	s, err := a.e.session(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	view := s.conv.Messages[s.conv.ViewStart:]
	calls, open, from := projection.LastCalls(view, s.pending)
	var fields []byte
	if len(calls) > 0 && len(open) == 0 {
		// The answer and what follows it: where its calls and results are.
		fields = batchFields(slices.Concat(view[min(from, len(view)):], s.pending[max(from-len(view), 0):]), calls)
	}
	s.mu.Unlock()
	fireID := projection.BatchFireID(calls)
	if fields == nil || a.callsRunning(calls) || ValidateID(fireID) != nil {
		return nil, nil
	}
	return a.fire(ctx, &lifecycle.FireRequest{ID: fireID, Event: schema.HookPostToolBatch, Fields: fields,
		Inject: true, OnlyWithHooks: true})
}

// callsRunning reports whether hooks of any of calls may be running.
func (a *Agent) callsRunning(calls []string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.ContainsFunc(calls, func(id string) bool {
		c := a.view.Tools[id]
		return c != nil && fsm.ToolInFlight(c.State)
	})
}

// batchFields is PostToolBatch's input for calls, the calls of the answer
// msgs begin with: tool_calls, each call's tool_name, tool_input,
// tool_use_id and tool_response, the content of its tool_result as the
// model sees it (a string as it is, other content as its JSON text).
func batchFields(msgs []Message, calls []string) []byte {
	type call struct {
		Name     string          `json:"tool_name"`
		Input    json.RawMessage `json:"tool_input"`
		ID       string          `json:"tool_use_id"`
		Response *string         `json:"tool_response,omitempty"`
	}
	byID := map[string]*call{}
	for _, id := range calls {
		byID[id] = &call{ID: id, Input: json.RawMessage("{}")}
	}
	for _, m := range msgs {
		for _, u := range projection.ToolUses(m) {
			if c := byID[u.ID]; c != nil && m.Role == "assistant" {
				c.Name, c.Input = u.Name, jsonOr(u.Input, "{}")
			}
		}
		for _, b := range m.Content {
			var r struct {
				ID      string          `json:"tool_use_id"`
				Content json.RawMessage `json:"content"`
			}
			if b.Type != "tool_result" || json.Unmarshal(b.Raw, &r) != nil || byID[r.ID] == nil {
				continue
			}
			text := string(r.Content)
			_ = json.Unmarshal(r.Content, &text) // a string's text; other content stays JSON
			byID[r.ID].Response = &text
		}
	}
	out := struct {
		Calls []*call `json:"tool_calls"`
	}{}
	for _, id := range calls {
		out.Calls = append(out.Calls, byID[id])
	}
	b, _ := json.Marshal(out) // strings and valid JSON always marshal
	return b
}

// FireOption sets an optional part of a Fire.
type FireOption func(*lifecycle.FireRequest)

// FireOnlyWithHooks makes a Fire that no hook matches record nothing, and
// return nil, nil: for events fired often whose absence of hooks is not
// worth an append (turn.Runner's Notification). Fired again after hooks
// were added, the same id then runs them.
func FireOnlyWithHooks() FireOption {
	return func(r *lifecycle.FireRequest) { r.OnlyWithHooks = true }
}

// fireRequest checks what Fire was given and makes the stepper's request.
func fireRequest(event hookexec.Event, id string, fields json.RawMessage) (*lifecycle.FireRequest, schema.EventSpec, error) {
	if err := ValidateID(id); err != nil {
		return nil, schema.EventSpec{}, fmt.Errorf("%w: fire id: %v", ErrBadFire, err)
	}
	spec, ok := schema.LookupEvent(event)
	if !ok {
		return nil, spec, fmt.Errorf("%w: %q is none of Claude Code's hook events", ErrBadFire, event)
	}
	if slices.Contains(schema.HookEvents, event) {
		return nil, spec, fmt.Errorf("%w: %s has steps of its own: the Agent's methods run it", ErrBadFire, event)
	}
	if t := bytes.TrimSpace(fields); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		fields = json.RawMessage("{}")
	}
	// The common fields are the session's, filled in when the hooks run.
	probe := hookexec.EventInput{SessionID: "s", TranscriptPath: "t", Cwd: "c", Fields: fields}
	if err := hookexec.CheckEventInput(event, probe); err != nil {
		return nil, spec, fmt.Errorf("%w: %w", ErrBadFire, err)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, fields) // CheckEventInput read it as an object
	return &lifecycle.FireRequest{ID: id, Event: event, Value: matchValue(spec, fields), Fields: compact.Bytes()}, spec, nil
}

// matchValue is what the matchers of spec's event select on in fields:
// its MatchOn field as a string, FileChanged's file's base name.
func matchValue(spec schema.EventSpec, fields json.RawMessage) string {
	if spec.MatchOn == "" {
		return ""
	}
	var all map[string]json.RawMessage
	_ = json.Unmarshal(fields, &all) // an object: fireRequest checked it
	var v string
	if json.Unmarshal(all[spec.MatchOn], &v) != nil {
		return ""
	}
	if spec.Event == schema.HookFileChanged {
		return filepath.Base(v)
	}
	return v
}

// firedOf is what ran records, for the host.
func firedOf(ran *schema.HookEventRan, already bool) *Fired {
	return &Fired{ID: ran.ID, Event: ran.Event, AlreadyRecorded: already, Interrupted: ran.Interrupted,
		Outcomes: ran.Outcomes, Blocked: ran.Blocked, Reason: ran.Reason, Feedback: ran.Feedback, Context: ran.Context,
		SystemMessage: ran.SystemMessage, Specific: ran.Specific, Env: ran.Env,
		Halt: Halt{Halted: ran.Halt, StopReason: ran.StopReason}}
}

// display runs the hooks of req, an event that is not recorded, on the
// agent's current session.
func (a *Agent) display(ctx context.Context, req *lifecycle.FireRequest) (*Fired, error) {
	session := a.Current()
	if session == "" {
		return nil, fmt.Errorf("%w: agent %s", ErrNoCurrentSession, a.id)
	}
	hooks := a.e.HooksFor(ctx, req.Event, req.Value, session)
	eff := lifecycle.RunHooks{Event: req.Event, Session: session, Hooks: hookexec.Names(hooks), Fire: req}
	a.mu.Lock()
	cwd := a.view.Cwds[session]
	a.mu.Unlock()
	ran := a.runHooks(ctx, context.WithoutCancel(ctx), eff, hooks, cwd)
	return firedOf(&schema.HookEventRan{Event: req.Event, Session: session, ID: req.ID, Outcomes: ran.Outcomes,
		Blocked: ran.Blocked, Reason: ran.Reason, Feedback: ran.Feedback, Context: ran.Context, Halt: ran.Halt,
		StopReason: ran.StopReason, SystemMessage: ran.SystemMessage, Specific: ran.Specific, Env: ran.Env}, false), nil
}

// runFire runs the hooks of the fired event eff with in, through the
// Engine's runner when it runs any event, with a CLAUDE_ENV_FILE where the
// event gives one, and says what they decided.
func (a *Agent) runFire(ctx context.Context, eff lifecycle.RunHooks, hooks []hookexec.Hook, in hookexec.EventInput, env hookexec.CommandEnv) lifecycle.HooksRan {
	return a.runEvent(ctx, eff.Event, "fire-"+eff.Fire.ID, eff.Session, hooks, in, env)
}

// runEvent runs hooks of event, as RunEvent reads them, for run (which
// names its CLAUDE_ENV_FILE, when the event has one) on session id; in
// is what they are told.
func (a *Agent) runEvent(ctx context.Context, event hookexec.Event, run, id string, hooks []hookexec.Hook, in hookexec.EventInput, env hookexec.CommandEnv) lifecycle.HooksRan {
	e := a.e
	runner, ok := e.runner.(hookexec.EventRunner)
	if !ok {
		runner = hookexec.Exec{}
	}
	envName := ""
	if spec, _ := schema.LookupEvent(event); spec.EnvFile {
		envName, env.EnvFile = e.newEnvFile(id, run, hooks)
	}
	outcomes, res, err := runner.Event(ctx, hooks, event, in, env)
	if err != nil {
		// Fire checked the input: only a Runner of the host's refuses it.
		outcomes = make([]schema.HookOutcome, len(hooks))
		for i, h := range hooks {
			outcomes[i] = schema.HookOutcome{Name: h.Name, Source: h.Source, Status: schema.HookFailed, Error: err.Error()}
		}
	}
	ran := lifecycle.HooksRan{Outcomes: e.scoped.Settle(id, hooks, outcomes), Blocked: res.Blocked,
		Reason: res.Reason, Feedback: res.Feedback, Context: res.Context, Halt: res.Halt, StopReason: res.StopReason,
		SystemMessage: res.SystemMessage, Specific: res.Specific}
	if envName != "" {
		ran.Env = e.takeEnvFile(id, envName)
	}
	return ran
}

// newEnvFile makes the empty CLAUDE_ENV_FILE of run on session id when
// hooks hold a command hook, and returns its name in the Engine's Files
// and its path; "" for none.
func (e *Engine) newEnvFile(id, run string, hooks []hookexec.Hook) (name, path string) {
	if !slices.ContainsFunc(hooks, hookexec.Hook.IsCommand) {
		return "", ""
	}
	name = envFileName(id, run)
	if err := e.files.Replace(name, func(io.Writer) error { return nil }); err != nil {
		e.log.Warn("no CLAUDE_ENV_FILE for hooks", "session", id, "error", err)
		return "", ""
	}
	return name, e.files.Path(name)
}

// takeEnvFile returns what hooks wrote to the CLAUDE_ENV_FILE name of
// session id, and removes it: what it held is recorded, and the file
// itself would only pile up, one for every run.
func (e *Engine) takeEnvFile(id, name string) string {
	written, err := e.files.Read(name)
	if err != nil {
		e.log.Warn("CLAUDE_ENV_FILE not read", "session", id, "error", err)
	}
	if err := e.files.Remove(name); err != nil {
		e.log.Warn("CLAUDE_ENV_FILE not removed", "session", id, "error", err)
	}
	return string(written)
}
