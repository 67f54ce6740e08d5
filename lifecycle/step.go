package lifecycle

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// Kind names what a host asked an agent to do.
type Kind int

// The kinds of action. Continue asks only for the step in flight, if any,
// to be finished: it is how a restore left by a dead process rolls
// forward.
const (
	Continue    Kind = iota
	Start            // startup restore of To
	Restore          // runtime restore from the current session to To
	New              // make the fresh session To current, source "new"
	Clear            // end the current session, make the fresh session To current, source "clear"
	Fork             // make the forked session To current, source "fork"
	Compact          // compact the current session with Summary
	End              // end the current session with Reason
	Stop             // run the Stop hooks at the end of a turn
	Prompt           // run the UserPromptSubmit hooks on Prompt and keep it
	PreToolUse       // decide on the tool call Tool: its PreToolUse (and PermissionRequest) hooks, once
	PostToolUse      // record the result of the tool call Tool and run its PostToolUse hooks, once
	Fire             // run the hooks of the event Fire, once
)

// String names the action, lower case, as hosts and traces say it.
func (k Kind) String() string {
	names := [...]string{"continue", "start", "restore", "new", "clear", "fork", "compact", "end", "stop", "prompt", "pre-tool-use", "post-tool-use", "fire"}
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Action is what the host asked for. The shell passes the same Action to
// every Step of it.
type Action struct {
	Kind Kind
	To   string // the session to make current
	// End: why the session ends, and what its function hooks receive.
	Reason       schema.Reason
	FinalMessage string
	Error        string
	// Compact: the summary that replaces the conversation so far, what
	// started it ("manual" or "auto") and the user's instructions, for
	// PreCompact hooks.
	Summary      string
	Trigger      string
	Instructions string
	// Compact: the host makes the summary once the PreCompact hooks have
	// run, from the user's instructions and theirs; Summary is empty. The
	// RunHooks effect asks for it (RunHooks.Summarize).
	Summarize bool
	// Start, New, Fork: the first prompt, for SessionStart hooks. Prompt:
	// the prompt submitted.
	Prompt string
	// Stop: why the turn ended, as the host says.
	StopReason string
	// Start: the host process reopens a stored session, as Claude Code's
	// --resume and --continue do; SessionStart gets source "resume"
	// rather than "startup".
	Resume bool
	// New, Clear, Fork: the session To to create, in the action's first
	// append; nil when To exists already.
	Create *Creation
	// PreToolUse, PostToolUse: the tool call.
	Tool *ToolRequest
	// Fire: the event to fire.
	Fire *FireRequest
	// Continue: tool calls, and fires, whose hooks the log shows running
	// but that no step of the caller's process runs: a dead process's,
	// closed as interrupted. The shell names them; the stepper cannot
	// know.
	Orphans     []string
	OrphanFires []string
}

// Creation is a session an action creates: its working directory and, for
// a fork, the session and message it was forked from and the copied
// conversation, whose messages the session starts with.
type Creation struct {
	Cwd       string
	Parent    string
	ForkPoint string
	Messages  []schema.Message
}

// Session is what the stepper needs to know of one conversation: what the
// log holds and what the host buffered but has not saved. Pending is only
// read.
type Session struct {
	ID       string
	Cwd      string
	Head     uint64 // the session stream's head sequence
	Messages int    // saved messages
	ViewLen  int    // saved messages the model sees, after a compaction
	LastUUID string // of the last saved message, "" when there is none
	// LastAssistant is the text of the last saved assistant message: the
	// final message SessionEnd hooks get when the host gives none.
	LastAssistant string
	LastAnswer    string // the uuid of that message
	Pending       []schema.Message
	// Calls are the tool_use ids of the last answer, saved or pending;
	// OpenCalls those of them that have no tool_result yet.
	Calls, OpenCalls []string
	// Deleted says that the session's stream ends with its tombstone: no
	// action may use it.
	Deleted bool
	// Importing says that the session's import started and did not
	// finish: no agent may start or restore it.
	Importing bool
	// Subagent, in a subagent's session, names the call that started it:
	// SubagentStart hooks start it and SubagentStop hooks stop it, in
	// place of SessionStart's and Stop's.
	Subagent *schema.Subagent
}

// startEvent is the event whose hooks run when session s starts, and the
// value its matchers select on: SessionStart on its source, or, in a
// subagent's session, SubagentStart on the subagent's type.
func startEvent(s *Session, source schema.Source) (schema.HookEvent, string) {
	if s != nil && s.Subagent != nil {
		return schema.HookSubagentStart, s.Subagent.Type
	}
	return schema.HookSessionStart, string(source)
}

// stopEvent is the event whose hooks run when the agent would stop on
// session s, and the value its matchers select on: Stop, or, in a
// subagent's session, SubagentStop on the subagent's type.
func stopEvent(s *Session) (schema.HookEvent, string) {
	if s != nil && s.Subagent != nil {
		return schema.HookSubagentStop, s.Subagent.Type
	}
	return schema.HookStop, ""
}

// unlessDefault is event, or "" when it is def: what an intent records of
// the event its hooks run for.
func unlessDefault(event, def schema.HookEvent) schema.HookEvent {
	if event == def {
		return ""
	}
	return event
}

// Input is everything a Step decides from.
type Input struct {
	Agent    *projection.Agent   // the agent as its log folds; Step only reads it (a Driver folds into it)
	Action   Action              // what the host asked for
	Sessions map[string]*Session // the sessions involved, by id; a missing one does not exist
	Outcome  Outcome             // of the Effect the previous Ready asked for; nil at first
	Now      int64               // UTC unix nanoseconds, stamped on records and messages
	NewID    func() string       // the id source, called once for each id the step records
	StopCap  int                 // consecutive blocked stops before hooks are no longer asked
}

// Ready is what a Step decided: records to append in one atomic,
// conditional append, and then the effect to perform. The shell appends
// first; only when the append succeeds does it perform Effect and feed the
// outcome to the next Step. A Ready with no records and no effect, on an
// agent with no step in flight, means the action is finished.
type Ready struct {
	Expect   []eventlog.Expect
	Records  []eventlog.Record
	Payloads []schema.Payload // Records' payloads, decoded, in the same order
	Saves    []Saved          // pending messages that Records flush
	Effect   Effect
	Report   Report
}

// Report is what a step tells the host besides what it writes: a problem
// it went on from, and what the action decided, on the step that decides
// it. A Driver gathers the reports of an action's steps.
type Report struct {
	// Warning is a problem the step recorded and went on from; the shell
	// logs it.
	Warning string
	// Stopped is the result of a Stop, on the step that finishes it;
	// Prompted of a Prompt; Blocked the reason a PreCompact hook gave to
	// stop a compaction.
	Stopped  *StopResult
	Prompted *PromptResult
	Blocked  string
	// Tool is what a PreToolUse or PostToolUse decided, on the step that
	// decides it, or recorded before, for a call asked about again; Fire
	// what a Fire's hooks decided.
	Tool *ToolReport
	Fire *FireReport
	// Deleted is the session of a Prompt, Stop or Compact that another
	// process deleted while the step was in flight: the step ended on the
	// agent's stream alone, and the action fails with CurrentDeleted.
	Deleted string
}

// PromptResult says what became of a prompt: kept as MessageUUID (with
// the hooks' context as ContextUUID, and the context of async hooks that
// ended since the last turn as AsyncUUID), or blocked for Reason.
type PromptResult struct {
	Session     string
	Blocked     bool
	Reason      string
	MessageUUID string
	ContextUUID string
	AsyncUUID   string
	Context     string
	Outcomes    []schema.HookOutcome
}

// Saved says that a Ready's records write the first N pending messages of
// Session: once they are appended, they are no longer pending.
type Saved struct {
	Session string
	N       int
}

// StopResult says what a Stop decided.
type StopResult struct {
	Session     string
	Blocked     bool
	Reason      string
	Context     string // the hooks' additionalContext, when none blocked: the turn goes on
	MessageUUID string // the queued feedback message of a block, or of Context
	Capped      bool
	Outcomes    []schema.HookOutcome
}

// Effect is a side effect the shell performs for the stepper: one of
// MatchHooks, RunHooks or DropSessionHooks.
type Effect interface{ effect() }

// MatchHooks asks which hooks of Event would run for Value (a source or a
// reason) on Session. The outcome is HooksMatched.
type MatchHooks struct {
	Event   schema.HookEvent
	Value   string
	Session string
}

// RunHooks asks for the hooks that the last MatchHooks found, named by
// Hooks, to be run on Session. The outcome is HooksRan.
type RunHooks struct {
	Event         schema.HookEvent
	Session       string
	Hooks         []string
	Source        schema.Source // SessionStart
	InitialPrompt string        // SessionStart
	Reason        schema.Reason // SessionEnd
	FinalMessage  string        // SessionEnd; Stop: the text of the last assistant message
	Error         string        // SessionEnd
	StopActive    bool          // Stop: the previous stop was blocked
	StopReason    string        // Stop
	Prompt        string        // UserPromptSubmit
	PromptID      string        // UserPromptSubmit; the others: the turn's prompt, when its hooks ran
	Trigger       string        // PreCompact
	Instructions  string        // PreCompact
	Summarize     bool          // PreCompact: the performer makes the summary after the hooks (HooksRan.Summary)
	Tool          *ToolRequest  // the tool events
	ToolInput     []byte        // the tool events: the call's input, as the hooks before gave it
	Fire          *FireRequest  // a fired event
}

// DropSessionHooks asks for Session's session-scoped hooks to be dropped:
// the session has ended. The outcome is nil.
type DropSessionHooks struct{ Session string }

func (MatchHooks) effect()       {}
func (RunHooks) effect()         {}
func (DropSessionHooks) effect() {}

// Outcome is what the shell saw: of an Effect, or of a failed append.
type Outcome interface{ outcome() }

// HooksMatched answers MatchHooks of Event: the names of the hooks that
// would run, in order. The shell keeps the hooks themselves, to run them
// when the RunHooks that follows asks.
type HooksMatched struct {
	Event schema.HookEvent
	Hooks []string
	// Status holds the hooks' statusMessage, in the order of Hooks ("" for
	// one without), which their intent records for a view to show while
	// they run; nil when none has one.
	Status []string
}

// HooksRan answers RunHooks: the outcomes in the hooks' order, the joined
// additional context and what they wrote to CLAUDE_ENV_FILE
// (SessionStart) and which file that was, and whether a Stop hook blocked and why.
type HooksRan struct {
	Outcomes []schema.HookOutcome
	Context  string
	Env      string
	EnvFile  string
	Blocked  bool
	Reason   string
	// The tool events: a decision before the tool (allow, deny, ask), and
	// the input or result the hooks gave instead of the call's.
	Decision    string
	Replacement []byte
	// PreCompact: what the hooks add to the compaction's instructions,
	// and the summary the host made when the effect asked for it.
	Instructions string
	Summary      string
	// A fired event: what goes to the model after the fact (exit 2 where
	// it reports), a "continue": false and its reason, the warnings for
	// the user, and the hookSpecificOutput fields the event honours, as
	// JSON.
	Feedback      string
	Halt          bool
	StopReason    string
	SystemMessage string
	Specific      []byte
}

// AppendFailed says that the previous Ready's append failed with Err (not
// on the agent's own stream, which the shell reports itself); Tries counts
// the consecutive failures of this step, and Outcome is the outcome that
// Step had been given.
type AppendFailed struct {
	Err     error
	Tries   int
	Outcome Outcome
}

func (HooksMatched) outcome() {}
func (HooksRan) outcome()     {}
func (AppendFailed) outcome() {}

// MaxInjectTries bounds how often the injection of context is tried again
// while other writers keep appending to the target.
const MaxInjectTries = 8

// Step decides the next step of in.Agent: for a new action when no step is
// in flight, otherwise the step in flight, whatever the action. It is pure:
// the same Input gives the same Ready.
func Step(in Input) (Ready, error) {
	a := in.Agent
	if failed, ok := in.Outcome.(AppendFailed); ok {
		var conflict *eventlog.ConflictError
		if in.Action.Create != nil && !fsm.InFlight(a.State) &&
			errors.As(failed.Err, &conflict) && conflict.Stream == projection.SessionStream(in.Action.To) {
			return Ready{}, fmt.Errorf("%w: %s", ErrSessionExists, in.Action.To)
		}
		if !retries(in, failed) {
			return Ready{}, failed.Err
		}
		if k := in.Action.Kind; a.State == fsm.Prompting || a.State == fsm.Stopping || k == Prompt || k == PreToolUse || k == PostToolUse || k == Fire {
			in.Outcome = failed.Outcome // keep the prompt as the hooks said, once it fits
		}
	}
	switch a.State {
	case fsm.Idle, fsm.Active:
		return begin(in)
	case fsm.Saved:
		r := a.Restore
		return hookIntent(in, Ready{}, func() string { return r.ID }, MatchHooks{Event: schema.HookSessionEnd, Value: string(r.EndReason), Session: r.From},
			func(m HooksMatched) schema.Payload {
				return &schema.SessionEndHookStarted{Session: r.From, Reason: r.EndReason, Hooks: m.Hooks, Status: m.Status}
			}, RunHooks{Event: schema.HookSessionEnd, Session: r.From, Reason: r.EndReason, FinalMessage: r.EndMessage, Error: r.EndError})
	case fsm.Ending:
		r := a.Restore
		ran, cut := hooksRan(in, r.EndHooks)
		ready := agentStep(in, r.ID, &schema.SessionEndHookRan{Session: r.From, Reason: r.EndReason,
			Outcomes: ran.Outcomes, Interrupted: cut})
		ready.Effect = DropSessionHooks{Session: r.From} // it has ended, whatever its hooks did
		return ready, nil
	case fsm.Ended:
		r := a.Restore
		if r.To == "" {
			return agentStep(in, r.ID, &schema.SessionClosed{Session: r.From}), nil
		}
		return load(in, Ready{}, r.ID, r.To, r.Source, r.From, r.InitialPrompt)
	case fsm.Loaded:
		r := a.Restore
		event, value := startEvent(in.Sessions[r.To], r.Source)
		return hookIntent(in, Ready{}, func() string { return r.ID }, MatchHooks{Event: event, Value: value, Session: r.To},
			func(m HooksMatched) schema.Payload {
				return &schema.SessionStartHookStarted{Session: r.To, Source: r.Source, Hooks: m.Hooks, Status: m.Status, Event: unlessDefault(event, schema.HookSessionStart)}
			}, RunHooks{Event: event, Session: r.To, Source: r.Source, InitialPrompt: r.InitialPrompt})
	case fsm.Starting:
		r := a.Restore
		ran, cut := hooksRan(in, r.StartHooks)
		return agentStep(in, r.ID, &schema.SessionStartHookRan{Session: r.To, Source: r.Source, Outcomes: ran.Outcomes,
			Interrupted: cut, Context: ran.Context, Env: ran.Env, EnvFile: ran.EnvFile}), nil
	case fsm.Started:
		return inject(in)
	case fsm.Stopping:
		return stopped(in)
	case fsm.Prompting:
		return prompted(in)
	case fsm.PreCompacting:
		return preCompacted(in)
	case fsm.PreCompacted:
		r := a.Restore
		return compaction(in, r.To, r.ID, r.Summary)
	}
	return Ready{}, fmt.Errorf("agent %s: unknown state %q", a.ID, a.State)
}

// retries reports whether the step decides something else after its append
// failed: a save that failed is recorded as failed, once; an injection that
// lost a race with another writer of the target is tried again. Any other
// failed append ends the action with its error.
func retries(in Input, failed AppendFailed) bool {
	switch in.Agent.State {
	case fsm.Idle, fsm.Active:
		leaving := in.Action.Kind == Restore || in.Action.Kind == Clear || in.Action.Kind == End ||
			(in.Action.Kind == New || in.Action.Kind == Fork) && in.Agent.Current != ""
		if k := in.Action.Kind; k == Prompt || k == PreToolUse || k == PostToolUse || k == Fire {
			return errors.Is(failed.Err, eventlog.ErrConflict) && failed.Tries < MaxInjectTries
		}
		return leaving && failed.Tries == 1
	case fsm.Started, fsm.Prompting, fsm.Stopping, fsm.PreCompacted:
		return errors.Is(failed.Err, eventlog.ErrConflict) && failed.Tries < MaxInjectTries
	}
	return false
}

// deleted returns ErrSessionDeleted, naming id, when id is a deleted
// session.
func deleted(in Input, id string) error {
	if s := in.Sessions[id]; s != nil && s.Deleted {
		return fmt.Errorf("%w: %s", ErrSessionDeleted, id)
	}
	return nil
}

// importing returns ErrImportUnfinished, naming id, when id is a session
// whose import did not finish.
func importing(in Input, id string) error {
	if s := in.Sessions[id]; s != nil && s.Importing {
		return fmt.Errorf("%w: session %s; resume its import, or delete it", ErrImportUnfinished, id)
	}
	return nil
}

// CurrentDeleted is the error for an action on agent whose current
// session was deleted: ErrSessionDeleted, saying how to go on.
func CurrentDeleted(agent, session string) error {
	return fmt.Errorf("%w: %s, the current session of agent %s; start another session", ErrSessionDeleted, session, agent)
}

// begin is the first step of in.Action on an agent with no step in flight.
// An action on an agent whose current session was deleted fails, except a
// Start, which does not touch the current session: it is the way on.
func begin(in Input) (Ready, error) {
	act, a := in.Action, in.Agent
	current := a.Current
	switch act.Kind {
	case Continue:
		ready, _ := orphans(in)
		return ready, nil
	case PreToolUse, PostToolUse:
		return toolStep(in)
	case Fire:
		return fireStep(in)
	}
	if a.HooksInFlight > 0 {
		return Ready{}, fmt.Errorf("%w: agent %s: the hooks of %d tool call(s) or fired event(s) are running", ErrAgentBusy, a.ID, a.HooksInFlight)
	}
	switch act.Kind {
	case Start:
		if act.To == "" {
			return Ready{}, nil
		}
		if err := deleted(in, act.To); err != nil {
			return Ready{}, err
		}
	default:
		if s := in.Sessions[current]; s != nil && s.Deleted {
			return Ready{}, CurrentDeleted(a.ID, current)
		}
		if err := deleted(in, act.To); err != nil {
			return Ready{}, err
		}
	}
	switch act.Kind {
	case Start:
		if in.Sessions[act.To] == nil {
			return Ready{}, fmt.Errorf("%w: %s", ErrSessionNotFound, act.To)
		}
		if err := importing(in, act.To); err != nil {
			return Ready{}, err
		}
		source := schema.SourceStartup
		if act.Resume {
			source = schema.SourceResume
		}
		return load(in, Ready{}, in.NewID(), act.To, source, current, act.Prompt)
	case Restore:
		if act.To == "" || act.To == current {
			return Ready{}, nil
		}
		if current == "" {
			return Ready{}, fmt.Errorf("%w: agent %s", ErrNoCurrentSession, a.ID)
		}
		if in.Sessions[act.To] == nil {
			return Ready{}, fmt.Errorf("%w: %s", ErrSessionNotFound, act.To)
		}
		if err := importing(in, act.To); err != nil {
			return Ready{}, err
		}
		return leave(in, Ready{}, &schema.SaveAttempted{From: current, To: act.To})
	case New, Fork:
		source, reason := schema.SourceNew, schema.ReasonClear
		if act.Kind == Fork {
			source, reason = schema.SourceFork, schema.ReasonResume
		}
		created, err := create(in)
		if err != nil {
			return Ready{}, err
		}
		if current == "" {
			return load(in, created, in.NewID(), act.To, source, "", act.Prompt)
		}
		return leave(in, created, &schema.SaveAttempted{From: current, To: act.To, Reason: reason, Source: source, Prompt: act.Prompt})
	case Clear:
		if current == "" {
			return Ready{}, fmt.Errorf("%w: agent %s", ErrNoCurrentSession, a.ID)
		}
		created, err := create(in)
		if err != nil {
			return Ready{}, err
		}
		return leave(in, created, &schema.SaveAttempted{From: current, To: act.To, Reason: schema.ReasonClear, Source: schema.SourceClear})
	case End:
		if !slices.Contains(EndReasons, act.Reason) {
			return Ready{}, fmt.Errorf("%w: %q", ErrBadReason, act.Reason)
		}
		if current == "" {
			return Ready{}, fmt.Errorf("%w: agent %s", ErrNoCurrentSession, a.ID)
		}
		return leave(in, Ready{}, &schema.SaveAttempted{From: current, Reason: act.Reason, FinalMessage: act.FinalMessage, EndError: act.Error})
	case Compact:
		if current == "" {
			return Ready{}, fmt.Errorf("%w: agent %s", ErrNoCurrentSession, a.ID)
		}
		return compact(in, current)
	case Stop:
		if current == "" {
			return Ready{}, fmt.Errorf("%w: agent %s", ErrNoCurrentSession, a.ID)
		}
		return stop(in, current)
	case Prompt:
		if current == "" {
			return Ready{}, fmt.Errorf("%w: agent %s", ErrNoCurrentSession, a.ID)
		}
		return prompt(in, current)
	}
	return Ready{}, fmt.Errorf("agent %s: unknown action %d", a.ID, act.Kind)
}

// EndReasons are the reasons End accepts.
var EndReasons = []schema.Reason{schema.ReasonComplete, schema.ReasonError, schema.ReasonAbort, schema.ReasonTimeout,
	schema.ReasonUserExit, schema.ReasonLogout, schema.ReasonPromptInputExit, schema.ReasonOther,
	schema.ReasonClear, schema.ReasonResume}

// leave is step 1 of leaving the current session: its pending messages and
// SaveAttempted in one atomic append, after created, the session the
// action creates, if any. If that append failed, SaveAttempted records
// why, with created but without the messages, which stay pending.
func leave(in Input, created Ready, attempt *schema.SaveAttempted) (Ready, error) {
	rid := in.NewID()
	from := in.Sessions[attempt.From]
	if attempt.FinalMessage == "" && from != nil {
		attempt.FinalMessage = lastAssistant(from)
	}
	if failed, ok := in.Outcome.(AppendFailed); ok || from == nil {
		why := "session " + attempt.From + " cannot be read"
		if ok {
			why = failed.Err.Error()
		}
		attempt.Error = why
		ready := withAgentStep(in, created, rid, attempt)
		ready.Report.Warning = "save before restore failed; messages stay pending: " + why
		return ready, nil
	}
	ready := created
	if len(from.Pending) > 0 {
		ready = join(ready, messages(in.Now, from))
		attempt.Saved = len(from.Pending)
	}
	return withAgentStep(in, ready, rid, attempt), nil
}

// lastAssistant is the text of s's last assistant message, pending ones
// included.
func lastAssistant(s *Session) string {
	for i := len(s.Pending) - 1; i >= 0; i-- {
		if m := s.Pending[i]; m.Role == "assistant" {
			return projection.FirstText(m)
		}
	}
	return s.LastAssistant
}

// lastAnswer is the uuid of s's last assistant message, pending ones
// included.
func lastAnswer(s *Session) string {
	for i := len(s.Pending) - 1; i >= 0; i-- {
		if m := s.Pending[i]; m.Role == "assistant" {
			return m.UUID
		}
	}
	return s.LastAnswer
}

// load records that session id became current through source; prompt is
// the first prompt the host gave, for SessionStart hooks. When the action
// creates id, created writes it, in the same append.
func load(in Input, created Ready, rid, id string, source schema.Source, from, prompt string) (Ready, error) {
	loaded := &schema.SessionLoaded{Session: id, Source: source, From: from, Prompt: prompt}
	if c := in.Action.Create; c != nil && len(created.Records) > 0 {
		loaded.Messages, loaded.Head = len(c.Messages), uint64(len(created.Records))
	} else if s := in.Sessions[id]; s != nil {
		loaded.Messages, loaded.Head = s.Messages, s.Head
	} else {
		return Ready{}, fmt.Errorf("load %s for restore %s: %w: %s", id, rid, ErrSessionNotFound, id)
	}
	return withAgentStep(in, created, rid, loaded), nil
}

// create is the Ready that writes the session the action creates, if any:
// its SessionCreated and a fork's copied messages, on a stream that must
// be empty. An id that is taken, even by a deleted session, is refused.
func create(in Input) (Ready, error) {
	act := in.Action
	c := act.Create
	if c == nil {
		if in.Sessions[act.To] == nil {
			return Ready{}, fmt.Errorf("%w: %s", ErrSessionNotFound, act.To)
		}
		return Ready{}, nil
	}
	if in.Sessions[act.To] != nil {
		return Ready{}, fmt.Errorf("%w: %s", ErrSessionExists, act.To)
	}
	stream := projection.SessionStream(act.To)
	ready := Ready{Expect: []eventlog.Expect{{Stream: stream}}}
	ready = add(ready, stream, &schema.SessionCreated{ID: act.To, Cwd: c.Cwd, Parent: c.Parent, ForkPoint: c.ForkPoint}, in.Now, "")
	for _, m := range c.Messages {
		ready = add(ready, stream, &schema.MessageAppended{Message: m}, in.Now, "")
	}
	return ready, nil
}

// join is a Ready that appends a's records, then b's, in one append.
func join(a, b Ready) Ready {
	a.Expect = append(a.Expect, b.Expect...)
	a.Records = append(a.Records, b.Records...)
	a.Payloads = append(a.Payloads, b.Payloads...)
	a.Saves = append(a.Saves, b.Saves...)
	return a
}

// hookIntent is a hook phase's first half: which hooks would run, then the
// durable intent naming them (and their status messages), appended before
// they run; rid gives the restore id, drawn only when the intent is
// recorded.
func hookIntent(in Input, base Ready, rid func() string, match MatchHooks, intent func(HooksMatched) schema.Payload, run RunHooks) (Ready, error) {
	matched, ok := in.Outcome.(HooksMatched)
	if !ok {
		return Ready{Effect: match}, nil
	}
	ready := withAgentStep(in, base, rid(), intent(matched))
	run.Hooks = matched.Hooks
	ready.Effect = run
	return ready, nil
}

// inject is step 5: the context, if any, becomes a meta user message at the
// end of the target, in the same atomic append as ContextInjected, after
// the messages the host buffered for the target. A conflict with another
// writer of the target is tried again, up to MaxInjectTries.
func inject(in Input) (Ready, error) {
	r := in.Agent.Restore
	done := &schema.ContextInjected{Session: r.To}
	initial := r.InitialUserMessage
	switch r.Source {
	case schema.SourceStartup, schema.SourceResume, schema.SourceFork, schema.SourceNew:
	default:
		initial = "" // Claude Code takes one only when a session starts
	}
	if r.Context == "" && initial == "" {
		return agentStep(in, r.ID, done), nil
	}
	s := in.Sessions[r.To]
	if s == nil {
		return Ready{}, fmt.Errorf("inject into %s for restore %s: %w: %s", r.To, r.ID, ErrSessionNotFound, r.To)
	}
	if s.Deleted {
		// Another process deleted it while its hooks ran: nothing is
		// written after a tombstone, and the restore ends.
		ready := agentStep(in, r.ID, done)
		ready.Report.Warning = "session " + r.To + " was deleted during the restore; its context was not injected"
		return ready, nil
	}
	var msgs []*schema.Message
	if r.Context != "" {
		event, _ := startEvent(s, r.Source)
		msg := schema.Message{UUID: in.NewID(), Role: "user", IsMeta: true, Timestamp: in.Now,
			Content: []schema.Block{{Type: "text", Text: Reminder(event, r.Context)}}}
		done.MessageUUID = msg.UUID
		msgs = append(msgs, &msg)
	}
	if initial != "" {
		// The hook's first prompt for the session, as the user's.
		msg := schema.Message{UUID: in.NewID(), Role: "user", Timestamp: in.Now,
			Content: []schema.Block{{Type: "text", Text: initial}}}
		done.Initial = msg.UUID
		msgs = append(msgs, &msg)
	}
	return withAgentStep(in, messages(in.Now, s, msgs...), r.ID, done), nil
}

// Reminder wraps the context hooks of event gave the way the model expects
// to see it.
func Reminder(event schema.HookEvent, context string) string {
	return "<system-reminder>\n" + string(event) + " hook additional context: " + context + "\n</system-reminder>"
}

// CompactSummaryPrefix opens the summary message of a compacted session, as
// Claude Code words it; the summary given to Compact follows it.
const CompactSummaryPrefix = "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n"

// compact begins a compaction: PreCompact hooks first, when any match;
// with none, the compaction itself.
func compact(in Input, id string) (Ready, error) {
	act := in.Action
	trigger := act.Trigger
	if trigger == "" {
		trigger = "manual"
	}
	matched, ok := in.Outcome.(HooksMatched)
	switch {
	case !ok:
		return Ready{Effect: MatchHooks{Event: schema.HookPreCompact, Value: trigger, Session: id}}, nil
	case len(matched.Hooks) == 0 && !act.Summarize:
		return compaction(in, id, in.NewID(), act.Summary)
	}
	// A summary the host makes is made in the hooks' effect, after them,
	// even when there are none: the intent is recorded first.
	ready := withAgentStep(in, flush(in, id), in.NewID(), &schema.PreCompactHookStarted{Session: id, Trigger: trigger,
		Instructions: act.Instructions, Summary: act.Summary, Hooks: matched.Hooks, Status: matched.Status})
	ready.Effect = RunHooks{Event: schema.HookPreCompact, Session: id, Hooks: matched.Hooks, Trigger: trigger, Instructions: act.Instructions,
		Summarize: act.Summarize}
	return ready, nil
}

// preCompacted records the PreCompact hooks' outcomes: a block ends the
// compaction; otherwise, or when the process running them died, the
// compaction follows.
func preCompacted(in Input) (Ready, error) {
	r := in.Agent.Restore
	ran, cut := hooksRan(in, r.PreCompactHooks)
	if gone(in, r.To) {
		return deletedStep(in, r.ID, r.To, &schema.PreCompactHookRan{Session: r.To, Outcomes: ran.Outcomes, Interrupted: cut,
			Blocked: true, Reason: "session " + r.To + " was deleted", Deleted: true}), nil
	}
	step := &schema.PreCompactHookRan{Session: r.To, Outcomes: ran.Outcomes, Interrupted: cut,
		Blocked: ran.Blocked, Reason: ran.Reason, Instructions: ran.Instructions, Summary: ran.Summary}
	if r.Summary == "" && step.Summary == "" && !step.Blocked {
		// The host was to make the summary and did not: its process died
		// first, or it gave none. Nothing is compacted.
		step.Blocked, step.Reason = true, "the compaction's summary was not made"
		if cut {
			step.Reason += ": the process died while its PreCompact hooks ran"
		}
	}
	ready := agentStep(in, r.ID, step)
	if step.Blocked {
		ready.Report.Blocked = step.Reason
	}
	return ready, nil
}

// compaction writes, in one append, the session's pending messages, a
// compaction boundary, the summary that starts the compacted view, and
// SessionCompacted as step rid; SessionStart hooks with source "compact"
// follow.
func compaction(in Input, id, rid, summaryText string) (Ready, error) {
	s := in.Sessions[id]
	if s == nil {
		return Ready{}, fmt.Errorf("%w: %s", ErrSessionNotFound, id)
	}
	ready := messages(in.Now, s)
	last := s.LastUUID
	if n := len(s.Pending); n > 0 {
		last = s.Pending[n-1].UUID
	}
	boundary := &schema.CompactBoundary{UUID: in.NewID(), LogicalParent: last, Trigger: "manual",
		PreMessages: s.ViewLen + len(s.Pending)}
	if r := in.Agent.Restore; r != nil && r.Trigger != "" {
		boundary.Trigger = r.Trigger
	} else if in.Action.Trigger != "" {
		boundary.Trigger = in.Action.Trigger
	}
	summary := &schema.MessageAppended{Message: schema.Message{UUID: in.NewID(), ParentUUID: boundary.UUID,
		Role: "user", IsMeta: true, Summary: true, Timestamp: in.Now,
		Content: []schema.Block{{Type: "text", Text: CompactSummaryPrefix + summaryText}}}}
	if len(ready.Expect) == 0 {
		ready.Expect = []eventlog.Expect{{Stream: projection.SessionStream(id), Seq: s.Head}}
	}
	ready = add(ready, projection.SessionStream(id), boundary, in.Now, "")
	ready = add(ready, projection.SessionStream(id), summary, in.Now, "")
	step := &schema.SessionCompacted{Session: id, Boundary: boundary.UUID, SummaryUUID: summary.Message.UUID, Trigger: boundary.Trigger}
	return withAgentStep(in, ready, rid, step), nil
}

// prompt is the first step of a Prompt: the UserPromptSubmit hooks to ask,
// then their intent; with none, the prompt is kept at once.
func prompt(in Input, id string) (Ready, error) {
	matched, ok := in.Outcome.(HooksMatched)
	if !ok {
		return Ready{Effect: MatchHooks{Event: schema.HookUserPromptSubmit, Session: id}}, nil
	}
	if len(matched.Hooks) == 0 {
		return keepPrompt(in, id, in.Action.Prompt, "", nil, nil)
	}
	promptID := in.NewID()
	intent := schema.NewPromptHookStarted(id, in.Action.Prompt, promptID, matched.Hooks)
	intent.Status = matched.Status
	ready := withAgentStep(in, flush(in, id), in.NewID(), intent)
	ready.Effect = RunHooks{Event: schema.HookUserPromptSubmit, Session: id, Hooks: matched.Hooks,
		Prompt: in.Action.Prompt, PromptID: promptID}
	return ready, nil
}

// prompted records the UserPromptSubmit hooks' outcomes: a blocked prompt
// is not kept; otherwise the prompt and the hooks' context are appended
// with the outcome. A run its process died in keeps no prompt: the host
// learns it from the log and may submit again. The prompt's text is the
// action's: the intent holds only its digest, and only the action that
// ran the hooks has their outcome.
func prompted(in Input) (Ready, error) {
	pr := in.Agent.Prompt
	ran, cut := hooksRan(in, pr.Hooks)
	if gone(in, pr.Session) {
		return deletedStep(in, pr.ID, pr.Session, &schema.PromptHookRan{Session: pr.Session, Outcomes: ran.Outcomes,
			Interrupted: cut, Deleted: true}), nil
	}
	switch {
	case cut:
		return agentStep(in, pr.ID, &schema.PromptHookRan{Session: pr.Session, Outcomes: ran.Outcomes, Interrupted: true}), nil
	case ran.Blocked:
		ready := agentStep(in, pr.ID, &schema.PromptHookRan{Session: pr.Session, Outcomes: ran.Outcomes, Blocked: true, Reason: ran.Reason})
		ready.Report.Prompted = &PromptResult{Session: pr.Session, Blocked: true, Reason: ran.Reason, Outcomes: ran.Outcomes}
		return ready, nil
	}
	step := &schema.PromptHookRan{Session: pr.Session, Outcomes: ran.Outcomes, Context: ran.Context}
	text := pr.Text // an intent of an older build
	if text == "" {
		text = in.Action.Prompt
	}
	return keepPrompt(in, pr.Session, text, ran.Context, ran.Outcomes, step)
}

// keepPrompt appends the prompt as a user message after s's pending ones,
// and the hooks' context, if any, as a meta message after it, with step
// (when hooks ran) in the same append.
func keepPrompt(in Input, id, text, context string, outcomes []schema.HookOutcome, step *schema.PromptHookRan) (Ready, error) {
	s := in.Sessions[id]
	if s == nil {
		return Ready{}, fmt.Errorf("%w: %s", ErrSessionNotFound, id)
	}
	msg := schema.Message{UUID: in.NewID(), Role: "user", Timestamp: in.Now,
		Content: []schema.Block{{Type: "text", Text: text}}}
	result := &PromptResult{Session: id, MessageUUID: msg.UUID, Context: context, Outcomes: outcomes}
	ready := messages(in.Now, s, &msg)
	if context != "" {
		meta := schema.Message{UUID: in.NewID(), ParentUUID: msg.UUID, Role: "user", IsMeta: true, Timestamp: in.Now,
			Content: []schema.Block{{Type: "text", Text: Reminder(schema.HookUserPromptSubmit, context)}}}
		ready = add(ready, projection.SessionStream(id), &schema.MessageAppended{Message: meta}, in.Now, "")
		result.ContextUUID = meta.UUID
	}
	injected := asyncContext(in, id, cmp.Or(result.ContextUUID, msg.UUID))
	if injected != nil {
		ready = add(ready, projection.SessionStream(id), injected.msg, in.Now, "")
		result.AsyncUUID = injected.msg.Message.UUID
	}
	if step != nil {
		step.MessageUUID, step.ContextUUID = result.MessageUUID, result.ContextUUID
		ready = withAgentStep(in, ready, in.Agent.Prompt.ID, step)
	}
	switch {
	case injected != nil && step != nil:
		ready = add(ready, projection.AgentStream(in.Agent.ID), injected.step, in.Now, "")
	case injected != nil:
		ready = withAgentStep(in, ready, "", injected.step)
	}
	ready.Report.Prompted = result
	return ready, nil
}

// injection is a meta message that takes context to the model, and the
// step that records it.
type injection struct {
	msg  *schema.MessageAppended
	step *schema.AsyncContextInjected
}

// asyncContext is the meta message, after parent, that gives the model
// the context of session id's async hooks that ended since its last
// turn, as Claude Code hands them on with the next prompt; nil when there
// is none.
func asyncContext(in Input, id, parent string) *injection {
	runs := in.Agent.PendingAsync(id)
	if len(runs) == 0 {
		return nil
	}
	texts := make([]string, len(runs))
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
		texts[i] = Reminder(r.Event, r.Context)
		if r.Rewake {
			// Its text names what it is: a blocking error, not context.
			texts[i] = "<system-reminder>\n" + r.Context + "\n</system-reminder>"
		}
	}
	msg := schema.Message{UUID: in.NewID(), ParentUUID: parent, Role: "user", IsMeta: true, Timestamp: in.Now,
		Content: []schema.Block{{Type: "text", Text: strings.Join(texts, "\n")}}}
	return &injection{msg: &schema.MessageAppended{Message: msg},
		step: &schema.AsyncContextInjected{Session: id, Runs: ids, MessageUUID: msg.UUID}}
}

// stop is the first step of a Stop: the hooks to ask, then the intent; or,
// past the cap of consecutive blocks, an intent that asks none.
func stop(in Input, id string) (Ready, error) {
	a := in.Agent
	if a.StopBlocks >= in.StopCap {
		answer := ""
		if s := in.Sessions[id]; s != nil {
			answer = lastAnswer(s)
		}
		ready := withAgentStep(in, flush(in, id), in.NewID(), &schema.StopHookStarted{Session: id, Active: true, Capped: true,
			StopReason: in.Action.StopReason, Answer: answer})
		ready.Report.Warning = fmt.Sprintf("stop hook cap reached: %d consecutive stops were blocked", a.StopBlocks)
		return ready, nil
	}
	active := a.StopBlocks > 0
	last, answer := "", ""
	if s := in.Sessions[id]; s != nil {
		last, answer = lastAssistant(s), lastAnswer(s)
	}
	event, value := stopEvent(in.Sessions[id])
	return hookIntent(in, flush(in, id), in.NewID, MatchHooks{Event: event, Value: value, Session: id},
		func(m HooksMatched) schema.Payload {
			return &schema.StopHookStarted{Session: id, Active: active, Hooks: m.Hooks, Status: m.Status, StopReason: in.Action.StopReason, Answer: answer,
				Event: unlessDefault(event, schema.HookStop)}
		}, RunHooks{Event: event, Session: id, StopActive: active, StopReason: in.Action.StopReason,
			FinalMessage: last, PromptID: a.LastPromptID})
}

// stopped records the end of a Stop: its outcomes, with the reason of a
// block queued as the next user message in the same append; the cap; or,
// rolling forward, that its hooks were interrupted.
func stopped(in Input) (Ready, error) {
	st := in.Agent.Stop
	ran, cut := hooksRan(in, st.Hooks)
	if gone(in, st.Session) {
		return deletedStep(in, st.ID, st.Session, &schema.StopHookRan{Session: st.Session, Outcomes: ran.Outcomes,
			Interrupted: cut && !st.Capped, Deleted: true}), nil
	}
	switch {
	case cut && in.Action.Kind == Stop && st.Capped:
		why := fmt.Sprintf("%d consecutive stops were blocked; the hooks are not asked again until a stop is not blocked", in.Agent.StopBlocks)
		ready := agentStep(in, st.ID, &schema.StopHookRan{Session: st.Session, Capped: why})
		ready.Report.Stopped = &StopResult{Session: st.Session, Capped: true, Reason: why}
		return ready, nil
	case cut:
		return agentStep(in, st.ID, &schema.StopHookRan{Session: st.Session, Outcomes: ran.Outcomes, Interrupted: true}), nil
	}
	ranStep := &schema.StopHookRan{Session: st.Session, Outcomes: ran.Outcomes, Blocked: ran.Blocked, Reason: ran.Reason}
	result := &StopResult{Session: st.Session, Blocked: ran.Blocked, Reason: ran.Reason, Outcomes: ran.Outcomes}
	if !ran.Blocked {
		ranStep.Context, result.Context = ran.Context, ran.Context
	}
	if !ran.Blocked && ran.Context == "" {
		ready := agentStep(in, st.ID, ranStep)
		ready.Report.Stopped = result
		return ready, nil
	}
	s := in.Sessions[st.Session]
	if s == nil {
		return Ready{}, fmt.Errorf("%w: %s", ErrSessionNotFound, st.Session)
	}
	// A block's reason, or the hooks' feedback, goes to the model, which
	// is asked again.
	event, _ := stopEvent(s)
	text := Reminder(event, ran.Context)
	if ran.Blocked {
		text = stopFeedback(event, ran)
	}
	msg := schema.Message{UUID: in.NewID(), Role: "user", IsMeta: true, Timestamp: in.Now,
		Content: []schema.Block{{Type: "text", Text: text}}}
	ranStep.MessageUUID, result.MessageUUID = msg.UUID, msg.UUID
	ready := withAgentStep(in, messages(in.Now, s, &msg), st.ID, ranStep)
	ready.Report.Stopped = result
	return ready, nil
}

// flush is the Ready that saves session id's pending messages, for a step
// whose hooks read the transcript: they see the turn that just ended, as
// Claude Code's do. Nothing when none is pending.
func flush(in Input, id string) Ready {
	if s := in.Sessions[id]; s != nil && len(s.Pending) > 0 {
		return messages(in.Now, s)
	}
	return Ready{}
}

// stopFeedback is the user message that tells the model why its stop was
// blocked by event's hooks (Stop or SubagentStop), as Claude Code words
// it: a line for each hook that blocked.
func stopFeedback(event schema.HookEvent, ran HooksRan) string {
	var lines []string
	for _, o := range ran.Outcomes {
		if o.Decision == "block" {
			lines = append(lines, string(event)+" hook blocking error from command: \""+o.Name+"\": "+o.Reason)
		}
	}
	if len(lines) == 0 {
		return string(event) + " hook blocking error: " + ran.Reason
	}
	return strings.Join(lines, "\n")
}

// messages is a Ready that appends s's pending messages, then extra,
// chaining their parent uuids onto the stored conversation.
func messages(now int64, s *Session, extra ...*schema.Message) Ready {
	stream := projection.SessionStream(s.ID)
	n := len(s.Pending) + len(extra)
	ready := Ready{
		Expect:   []eventlog.Expect{{Stream: stream, Seq: s.Head}},
		Records:  make([]eventlog.Record, 0, n+1),
		Payloads: make([]schema.Payload, 0, n+1),
	}
	if len(s.Pending) > 0 {
		ready.Saves = []Saved{{Session: s.ID, N: len(s.Pending)}}
	}
	appended := make([]schema.MessageAppended, n)
	parent := s.LastUUID
	for i := range appended {
		m := &appended[i].Message
		if i < len(s.Pending) {
			*m = s.Pending[i]
		} else {
			*m = *extra[i-len(s.Pending)]
		}
		m.ParentUUID, parent = parent, m.UUID
		ready.Payloads = append(ready.Payloads, &appended[i])
	}
	ready.Records = schema.AppendMessageRecords(ready.Records, stream, appended, now)
	return ready
}

// SaveMessages is the Ready of a plain save: s's pending messages, chained
// onto its stored conversation, stamped now. It is empty when nothing is
// pending.
func SaveMessages(s *Session, now int64) Ready {
	if len(s.Pending) == 0 {
		return Ready{}
	}
	return messages(now, s)
}

// agentStep is a Ready that appends p, alone, as the next step of restore
// (or stop) rid.
func agentStep(in Input, rid string, p schema.Payload) Ready {
	return withAgentStep(in, Ready{}, rid, p)
}

// withAgentStep adds p, as the next step of rid on the agent's stream, to
// ready, after its records and conditional on the agent's head.
func withAgentStep(in Input, ready Ready, rid string, p schema.Payload) Ready {
	stream := projection.AgentStream(in.Agent.ID)
	ready.Expect = append(ready.Expect, eventlog.Expect{Stream: stream, Seq: in.Agent.Head})
	return add(ready, stream, p, in.Now, rid)
}

// add appends the record of p on stream to ready. Payloads of the schema
// always encode, so an error here is a programmer's, and panics.
func add(ready Ready, stream string, p schema.Payload, now int64, rid string) Ready {
	rec, err := schema.NewRecord(stream, p, now, rid)
	if err != nil {
		panic(fmt.Sprintf("lifecycle: %v", err))
	}
	ready.Records = append(ready.Records, rec)
	ready.Payloads = append(ready.Payloads, p)
	return ready
}

// gone reports whether session id, which the step in flight would write
// to, was deleted: another process's deletion can land between an agent's
// check of its session and the intent of its Prompt, Stop or Compact.
func gone(in Input, id string) bool {
	s := in.Sessions[id]
	return s != nil && s.Deleted
}

// deletedStep ends step rid, whose session id was deleted, with p on the
// agent's stream alone: nothing is written after a tombstone.
func deletedStep(in Input, rid, id string, p schema.Payload) Ready {
	ready := agentStep(in, rid, p)
	ready.Report.Deleted = id
	ready.Report.Warning = "session " + id + " was deleted while a step on it was in flight; the step ended without writing to it"
	return ready
}

// hooksRan is what the hooks an intent named did: the outcome the shell
// fed back, or, when there is none because the process that ran them
// died, each hook marked interrupted, and cut true. Every step that closes
// an intent records it, so that hooks never run twice.
func hooksRan(in Input, names []string) (ran HooksRan, cut bool) {
	if ran, ok := in.Outcome.(HooksRan); ok {
		return ran, false
	}
	if len(names) > 0 {
		ran.Outcomes = make([]schema.HookOutcome, len(names))
		for i, n := range names {
			ran.Outcomes[i] = schema.HookOutcome{Name: n, Status: schema.HookInterrupted}
		}
	}
	return ran, true
}
