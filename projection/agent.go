package projection

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/schema"
)

// Agent is the fold of one agent stream: its lifecycle state, its current
// session, the restore or stop in flight if any, and the restores it
// completed.
type Agent struct {
	ID      string
	Head    uint64
	State   fsm.State
	Current string      // the current session; "" before the first restore
	Restore *Transition // the restore in flight; nil unless State is one of a restore
	History []Transition

	Stop       *Stop            // the Stop hook run in flight; nil unless State is stopping
	LastStops  map[string]*Stop // by session, the last Stop hook run completed on it
	Stops      int              // Stop hook runs completed
	StopBlocks int              // consecutive stops that hooks blocked, since the last one they did not

	Prompt       *Prompt            // the UserPromptSubmit run in flight; nil unless State is prompting
	LastPrompts  map[string]*Prompt // by session, the last UserPromptSubmit run completed on it
	Prompts      int                // UserPromptSubmit runs completed
	LastPromptID string             // the prompt_id of the current session's last UserPromptSubmit run

	// Tools holds the agent's tool calls by tool_use id, Fires its fired
	// events by fire id; HooksInFlight counts the calls and fires whose
	// hooks may be running, which no lifecycle action may begin beside.
	Tools         map[string]*ToolCall
	Fires         map[string]*Fire
	HooksInFlight int
	// Replaced holds, by tool_use id, the calls of Tools whose result a
	// hook replaced (ToolCall.PostResult): what the model sees of them.
	Replaced map[string]*ToolCall
	// Cwds holds, by session, the working directory a CwdChanged fire
	// moved it to: where later hooks of the session run, and the cwd they
	// are told.
	Cwds map[string]string

	// Async holds, by id, the async hook runs that are running or whose
	// context the model has not had yet.
	Async map[string]*AsyncRun
}

// ToolCall is what the log says about one tool call.
type ToolCall struct {
	ID      string // the tool_use id
	Session string
	Tool    string
	State   fsm.State
	Began   int64 // UTC unix nanoseconds of its first step
	Ended   int64 // of its last, once done

	// The hooks before the decision: the intents, and what they answered.
	PreHooks           []string
	PreOutcomes        []schema.HookOutcome
	PreDecision        string
	PreReason          string
	PreInput           []byte
	PreContext         string
	PermissionAsked    bool
	PermissionHooks    []string
	PermissionOutcomes []schema.HookOutcome
	PermissionDecision string
	PermissionReason   string
	PermissionInput    []byte

	// The decision, once: allow, ask or deny, with the input the tool runs
	// with.
	Decision   string
	Reason     string
	Input      []byte
	Context    string
	ResultUUID string // the tool_result: the error of a deny, or the tool's

	// The result and the hooks after it.
	Resulted     bool
	Failed       bool
	PostHooks    []string
	PostOutcomes []schema.HookOutcome
	PostBlocked  bool
	PostReason   string
	PostContext  string
	PostResult   []byte // the result a hook gave instead of the tool's
	Interrupted  bool   // a run of its hooks was cut short by a dying process
}

// Prompt is what the log says about one prompt's UserPromptSubmit run.
type Prompt struct {
	ID          string
	Session     string
	Text        string
	PromptID    string
	Hooks       []string
	Outcomes    []schema.HookOutcome
	Context     string
	Blocked     bool
	Reason      string
	MessageUUID string
	ContextUUID string
	Interrupted bool
}

// Restore is Transition's former name.
//
// Deprecated: use Transition; New, Clear and End are no restores.
type Restore = Transition

// Transition is what the log says about one change of the agent's
// current session, step by step: a startup, a restore, a new, clear,
// fork or compaction, or an End.
type Transition struct {
	ID     string
	Source schema.Source // SessionStart source: startup, resume, new, clear, fork, compact; "" for an End
	From   string        // the session current before; "" when there was none
	To     string        // the session current after; "" for an End
	Began  int64         // UTC unix nanoseconds of the first step
	Ended  int64         // of the last step; 0 while in flight
	Steps  []eventlog.Type

	Saved     int
	SaveError string

	EndReason      schema.Reason
	EndMessage     string // final message and error given to SessionEnd function hooks
	EndError       string
	EndHooks       []string // intent: the SessionEnd hooks about to run
	EndOutcomes    []schema.HookOutcome
	EndInterrupted bool

	// A compaction's PreCompact run, when it had hooks.
	Trigger               string // "manual" or "auto"
	Instructions          string
	Summary               string
	PreCompactHooks       []string
	PreCompactOutcomes    []schema.HookOutcome
	PreCompactBlocked     bool
	PreCompactReason      string
	PreCompactInterrupted bool
	// PreCompactInstructions is what the hooks added to Instructions; when
	// the host made the summary after them, Summary is the one it made.
	PreCompactInstructions string

	Boundary    string // compaction: uuid of the CompactBoundary
	SummaryUUID string // compaction: uuid of the summary message

	Loaded           bool // SessionLoaded was recorded
	Messages         int  // the target's message count when loaded
	InitialPrompt    string
	StartHooks       []string
	StartOutcomes    []schema.HookOutcome
	Context          string
	Env              string // what SessionStart hooks wrote to CLAUDE_ENV_FILE
	EnvFile          string // the CLAUDE_ENV_FILE of that run, "" when none
	StartInterrupted bool

	InjectedUUID string // the meta message, "" when there was no context
	// StartOutput is what the SessionStart hooks asked for beside their
	// context; InitialUUID the user message holding its
	// InitialUserMessage, when the restore appended one.
	StartOutput
	InitialUUID string

	// ModifiedConfig merges, key by key in hook order (a later hook wins a
	// key), the modifiedConfig objects SessionStart hooks returned; nil
	// when none did. SuppressOutput is set when a SessionEnd hook asked for
	// it.
	ModifiedConfig json.RawMessage
	SuppressOutput bool
}

// Stop is what the log says about one Stop hook run.
type Stop struct {
	ID          string
	Session     string
	Active      bool // stop_hook_active as the hooks saw it
	Hooks       []string
	Capped      bool
	Outcomes    []schema.HookOutcome
	Blocked     bool
	Reason      string
	StopReason  string // why the turn ended, as the host said
	Answer      string // the uuid of the assistant message the turn ended with
	Interrupted bool
	Context     string           // the hooks' additionalContext when none blocked: the agent goes on
	Event       schema.HookEvent // SubagentStop when its hooks were a subagent's; "" for Stop
}

// NewAgent returns the view of agent id before its first event.
func NewAgent(id string) *Agent { return &Agent{ID: id, State: fsm.Idle} }

// InFlight reports whether the agent's log ends inside a step: a restore,
// prompt, stop or compaction that the next action on the agent finishes.
func (a *Agent) InFlight() bool { return fsm.InFlight(a.State) }

// Compacting reports whether the step the agent's log ends inside is a
// compaction's.
func (a *Agent) Compacting() bool {
	return a.State == fsm.PreCompacting || a.State == fsm.PreCompacted
}

// Idle reports whether the agent has no current session: none yet, or
// the last one ended.
func (a *Agent) Idle() bool { return a.State == fsm.Idle }

// HooksRunning reports whether the call's hooks may be running: a step
// of it began and was not recorded as ended.
func (c *ToolCall) HooksRunning() bool { return fsm.ToolInFlight(c.State) }

// Decided reports whether the call may run and its result is not recorded
// yet.
func (c *ToolCall) Decided() bool { return c.State == fsm.ToolAllowed || c.State == fsm.ToolAsked }

// Done reports whether the call is over: denied, or its result and hooks
// recorded.
func (c *ToolCall) Done() bool { return c.State == fsm.ToolDone }

// Apply folds the next event of the agent's stream into a. A step the
// lifecycle table does not allow from the current state, or a step of a
// different restore than the one in flight, is an error and leaves a
// unchanged.
func (a *Agent) Apply(ev eventlog.Event) error {
	if err := checkNext(ev, AgentStream(a.ID), a.Head); err != nil {
		return err
	}
	p, err := schema.Decode(ev)
	if err != nil {
		return err
	}
	return a.apply(ev, p)
}

// ApplyDecoded is Apply for an event whose payload p the caller already
// has, as the Engine does for a step it has just encoded: it saves
// decoding it again. p becomes part of a.
func (a *Agent) ApplyDecoded(ev eventlog.Event, p schema.Payload) error {
	if err := checkNext(ev, AgentStream(a.ID), a.Head); err != nil {
		return err
	}
	return a.apply(ev, p)
}

func (a *Agent) apply(ev eventlog.Event, p schema.Payload) error {
	if p == nil { // registered as ignorable
		a.Head = ev.Seq
		return nil
	}
	if a.applyAsync(ev, p) {
		return nil
	}
	if err := a.applyStep(ev, p); err != nil {
		return err
	}
	a.noteAsync(ev, p)
	return nil
}

func (a *Agent) applyStep(ev eventlog.Event, p schema.Payload) error {
	if label, ok := fsm.ToolEventOf(p); ok {
		return a.applyTool(ev, p, label)
	}
	if label, ok := fsm.FireEventOf(p); ok {
		return a.applyFire(ev, p, label)
	}
	step, ok := fsm.EventOf(p)
	if !ok {
		return eventlog.Corruptf(ev.Stream, ev.Seq, "%s does not belong in an agent stream", ev.Type)
	}
	next, err := fsm.Apply(a.State, step)
	if err == nil && a.HooksInFlight > 0 {
		// No lifecycle step begins while the hooks of a tool call may run.
		err = &fsm.TransitionError{From: a.State, Event: step}
	}
	if err != nil {
		return &eventlog.EventError{Stream: ev.Stream, Seq: ev.Seq, Err: err}
	}
	if step == fsm.StopHookStarted || step == fsm.StopHookRan || step == fsm.PromptHookStarted || step == fsm.PromptHookRan {
		if err := a.foldRun(ev, p); err != nil {
			return err
		}
		a.State, a.Head = next, ev.Seq
		return nil
	}
	r := a.Restore
	if r == nil {
		r = &Transition{ID: ev.RestoreID, From: a.Current, Began: ev.Time}
	} else if r.ID != ev.RestoreID {
		return eventlog.Corruptf(ev.Stream, ev.Seq, "step of restore %q inside restore %q", ev.RestoreID, r.ID)
	}
	r.Steps = append(r.Steps, ev.Type)
	a.fold(r, p)
	a.State, a.Head = next, ev.Seq
	if !fsm.InFlight(next) {
		r.Ended = ev.Time
		a.History = append(a.History, *r)
		a.Restore = nil
	} else {
		a.Restore = r
	}
	return nil
}

// fold copies the step's facts into r and a. The step is already known to
// be legal.
func (a *Agent) fold(r *Transition, p schema.Payload) {
	switch p := p.(type) {
	case *schema.SaveAttempted:
		r.Source, r.From, r.To = orResume(p.Source, schema.SourceResume), p.From, p.To
		r.EndReason = orResume(p.Reason, schema.ReasonResume)
		if p.To == "" {
			r.Source = ""
		}
		r.Saved, r.SaveError = p.Saved, p.Error
		r.EndMessage, r.EndError, r.InitialPrompt = p.FinalMessage, p.EndError, p.Prompt
	case *schema.SessionEndHookStarted:
		r.EndHooks = p.Hooks
	case *schema.SessionEndHookRan:
		r.EndOutcomes, r.EndInterrupted = p.Outcomes, p.Interrupted
		r.SuppressOutput = slices.ContainsFunc(p.Outcomes, func(o schema.HookOutcome) bool { return o.Suppress })
	case *schema.SessionLoaded:
		r.Source, r.To, r.Loaded, r.Messages, r.InitialPrompt = p.Source, p.Session, true, p.Messages, p.Prompt
		a.Current, a.StopBlocks, a.LastPromptID = p.Session, 0, ""
	case *schema.PreCompactHookStarted:
		r.Source, r.From, r.To = schema.SourceCompact, p.Session, p.Session
		r.Trigger, r.Instructions, r.Summary, r.PreCompactHooks = p.Trigger, p.Instructions, p.Summary, p.Hooks
	case *schema.PreCompactHookRan:
		r.PreCompactOutcomes, r.PreCompactBlocked, r.PreCompactReason = p.Outcomes, p.Blocked, p.Reason
		r.PreCompactInterrupted, r.PreCompactInstructions = p.Interrupted, p.Instructions
		if p.Summary != "" {
			r.Summary = p.Summary
		}
	case *schema.SessionCompacted:
		r.Source, r.From, r.To, r.Loaded = schema.SourceCompact, p.Session, p.Session, true
		r.Boundary, r.SummaryUUID = p.Boundary, p.SummaryUUID
		if p.Trigger != "" {
			r.Trigger = p.Trigger
		}
		a.StopBlocks = 0
	case *schema.SessionClosed:
		a.Current, a.StopBlocks = "", 0
	case *schema.SessionStartHookStarted:
		r.StartHooks = p.Hooks
	case *schema.SessionStartHookRan:
		r.StartOutcomes, r.Context, r.Env, r.StartInterrupted = p.Outcomes, p.Context, p.Env, p.Interrupted
		r.EnvFile = p.EnvFile
		r.ModifiedConfig = MergeConfig(p.Outcomes)
		r.StartOutput = startOutput(p.Outcomes)
	case *schema.ContextInjected:
		r.InjectedUUID, r.InitialUUID = p.MessageUUID, p.Initial
	}
}

// orResume returns v, or resume when v is empty, as older steps left it.
func orResume[T ~string](v, resume T) T {
	if v == "" {
		return resume
	}
	return v
}

// foldRun folds a step of a Stop or UserPromptSubmit run; the step is
// already known to be legal.
func (a *Agent) foldRun(ev eventlog.Event, p schema.Payload) error {
	switch p := p.(type) {
	case *schema.PromptHookStarted:
		a.Prompt = &Prompt{ID: ev.RestoreID, Session: p.Session, Text: p.Prompt, PromptID: p.PromptID, Hooks: p.Hooks}
		a.LastPromptID = p.PromptID
	case *schema.PromptHookRan:
		pr := a.Prompt
		if pr.ID != ev.RestoreID {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "outcome of prompt %q inside prompt %q", ev.RestoreID, pr.ID)
		}
		pr.Outcomes, pr.Context, pr.Blocked, pr.Reason = p.Outcomes, p.Context, p.Blocked, p.Reason
		pr.MessageUUID, pr.ContextUUID, pr.Interrupted = p.MessageUUID, p.ContextUUID, p.Interrupted
		if a.LastPrompts == nil {
			a.LastPrompts = map[string]*Prompt{}
		}
		a.Prompt, a.LastPrompts[pr.Session] = nil, pr
		a.Prompts++
	case *schema.StopHookStarted:
		a.Stop = &Stop{ID: ev.RestoreID, Session: p.Session, Active: p.Active, Hooks: p.Hooks, Capped: p.Capped,
			StopReason: p.StopReason, Answer: p.Answer, Event: p.Event}
	case *schema.StopHookRan:
		if a.Stop.ID != ev.RestoreID {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "outcome of stop %q inside stop %q", ev.RestoreID, a.Stop.ID)
		}
		a.Stop.Outcomes, a.Stop.Blocked, a.Stop.Reason, a.Stop.Interrupted = p.Outcomes, p.Blocked, p.Reason, p.Interrupted
		a.Stop.Context = p.Context
		a.Stops++
		if p.Blocked || p.Context != "" { // the agent goes on either way
			a.StopBlocks++
		} else {
			a.StopBlocks = 0
		}
		if a.LastStops == nil {
			a.LastStops = map[string]*Stop{}
		}
		a.LastStops[a.Stop.Session] = a.Stop
		a.Stop = nil
	}
	return nil
}

// MergeConfig merges the modifiedConfig objects of outcomes, in order, key
// by key: a later hook wins a key. It returns nil when no outcome has one,
// and skips one that is not a JSON object.
func MergeConfig(outcomes []schema.HookOutcome) json.RawMessage {
	var merged map[string]json.RawMessage
	for _, o := range outcomes {
		if len(o.Config) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(o.Config, &obj) != nil {
			continue
		}
		if merged == nil {
			merged = map[string]json.RawMessage{}
		}
		maps.Copy(merged, obj)
	}
	if merged == nil {
		return nil
	}
	out, _ := json.Marshal(merged) // raw values of a decoded object always encode
	return out
}
