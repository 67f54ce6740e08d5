package reprise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// Restore is the log's record of one restore, step by step.
type Restore = projection.Restore

// Source says how a session became current: what SessionStart hooks get.
type Source = schema.Source

// The sources SessionStart hooks get.
const (
	SourceStartup = schema.SourceStartup // the host process started (Start)
	SourceResume  = schema.SourceResume  // switched to an existing session (Restore)
	SourceNew     = schema.SourceNew     // a fresh session (New)
	SourceClear   = schema.SourceClear   // a fresh session replacing a cleared one (Clear)
	SourceCompact = schema.SourceCompact // the same session, compacted (Compact)
	SourceFork    = schema.SourceFork    // a copy of another session (Fork)
)

// Reason says why a session stopped being current: what SessionEnd hooks
// get. Restore and Fork end the current session with ReasonResume, New and
// Clear with ReasonClear; End takes any of the others.
type Reason = schema.Reason

// The reasons SessionEnd hooks get.
const (
	ReasonResume          = schema.ReasonResume
	ReasonClear           = schema.ReasonClear
	ReasonComplete        = schema.ReasonComplete
	ReasonError           = schema.ReasonError
	ReasonAbort           = schema.ReasonAbort
	ReasonTimeout         = schema.ReasonTimeout
	ReasonUserExit        = schema.ReasonUserExit
	ReasonLogout          = schema.ReasonLogout
	ReasonPromptInputExit = schema.ReasonPromptInputExit
	ReasonOther           = schema.ReasonOther
)

// reminder wraps hook context the way the model expects to see it.
func reminder(context string) string {
	return "<system-reminder>\nSessionStart hook additional context: " + context + "\n</system-reminder>"
}

// Agent is one agent host's lifecycle: at most one current session, and the
// restores that switch it. Get one with Engine.Agent. Methods are safe for
// concurrent use; restores of one agent never overlap.
type Agent struct {
	e      *Engine
	id     string
	stream string

	mu     sync.Mutex // held for the whole of a restore
	loaded bool
	view   *projection.Agent
}

// Agent returns agent id, reading its lifecycle from the log on first use.
// If the log ends inside a restore (the process that ran it died), the
// restore is rolled forward first: its remaining steps run, and hooks whose
// intent was recorded without an outcome are closed as interrupted, never
// run again.
func (e *Engine) Agent(ctx context.Context, id string) (*Agent, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	e.mu.Lock()
	a := e.agents[id]
	if a == nil {
		a = &Agent{e: e, id: id, stream: projection.AgentStream(id), view: projection.NewAgent(id)}
		e.agents[id] = a
	}
	e.mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.loaded {
		release, err := a.lockStream(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
		if _, err := a.sync(ctx); err != nil {
			return nil, err
		}
		a.loaded = true
	}
	return a, nil
}

// lockStream takes the agent's lock in a store shared between processes;
// for other stores the in-process lock is enough. A.mu must be held.
func (a *Agent) lockStream(ctx context.Context) (release func(), err error) {
	locker, ok := a.e.store.(eventlog.StreamLocker)
	if !ok {
		return func() {}, nil
	}
	release, err = locker.TryLock(ctx, a.stream)
	if errors.Is(err, eventlog.ErrBusy) {
		return nil, fmt.Errorf("%w: agent %s: %w", ErrRestoreInProgress, a.id, err)
	}
	return release, err
}

// ID returns the agent's id.
func (a *Agent) ID() string { return a.id }

// Current returns the agent's current session, "" before its first restore.
func (a *Agent) Current() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.view.Current
}

// History returns the agent's completed restores, oldest first.
func (a *Agent) History() []Restore {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Restore(nil), a.view.History...)
}

// sync applies what other writers appended to the agent's stream and rolls
// forward a restore left in flight. It returns that restore, if any. a.mu
// must be held.
func (a *Agent) sync(ctx context.Context) (*Restore, error) {
	if err := a.e.store.ReadStream(ctx, a.stream, a.view.Head+1, a.view.Apply); err != nil {
		return nil, fmt.Errorf("read agent %s: %w", a.id, err)
	}
	if !fsm.InFlight(a.view.State) {
		return nil, nil
	}
	id := ""
	if a.view.Restore != nil {
		id = a.view.Restore.ID
	} else if a.view.Stop != nil {
		id = a.view.Stop.ID
	}
	a.e.log.Warn("rolling forward an interrupted step", "agent", a.id, "id", id, "state", a.view.State)
	return a.advance(ctx)
}

// begin takes the agent for one restore, or fails if another is running,
// in this process or, on a shared store, in another. The caller must call
// end when done.
func (a *Agent) begin(ctx context.Context) (end func(), err error) {
	if !a.mu.TryLock() {
		return nil, fmt.Errorf("%w: agent %s", ErrRestoreInProgress, a.id)
	}
	release, err := a.lockStream(ctx)
	if err != nil {
		a.mu.Unlock()
		return nil, err
	}
	end = func() { release(); a.mu.Unlock() }
	if _, err := a.sync(ctx); err != nil {
		end()
		return nil, err
	}
	return end, nil
}

// target loads the session a restore goes to. Any failure is
// ErrSessionNotFound, unless the caller's context ended.
func (a *Agent) target(ctx context.Context, id string) (*session, error) {
	s, err := a.e.session(ctx, id)
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrSessionNotFound) {
		err = fmt.Errorf("%w: %w", ErrSessionNotFound, err)
	}
	return s, err
}

// Start is the startup restore: it makes session id current and runs the
// SessionStart hooks with source "startup", without any SessionEnd. Use it
// when the host process starts, including to resume the session the log
// already has as current. An empty id is a no-op that returns nil, nil.
func (a *Agent) Start(ctx context.Context, id string) (*Restore, error) {
	end, err := a.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	if id == "" {
		return nil, nil
	}
	if _, err := a.target(ctx, id); err != nil {
		return nil, err
	}
	if err := a.loadStep(ctx, a.e.newID(), id, SourceStartup, a.view.Current); err != nil {
		return nil, err
	}
	return a.advance(ctx)
}

// Restore is the runtime restore from the current session to session id:
// save the current session, run its SessionEnd hooks (reason "resume"),
// load the target, run its SessionStart hooks (source "resume") and inject
// their context as a meta user message. Each step is recorded durably
// before the next side effect.
//
// An empty id or the current session is a no-op that returns nil, nil. A
// target that does not exist or cannot be read returns ErrSessionNotFound
// before anything is recorded or run. A failed save or a failed hook is
// logged and recorded, and the restore goes on. Once the first step is
// recorded, cancelling ctx cancels running hooks but the restore still
// records its remaining steps.
func (a *Agent) Restore(ctx context.Context, id string) (*Restore, error) {
	end, err := a.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	from := a.view.Current
	if id == "" || id == from {
		return nil, nil
	}
	if from == "" {
		return nil, fmt.Errorf("%w: agent %s", ErrNoCurrentSession, a.id)
	}
	if _, err := a.target(ctx, id); err != nil {
		return nil, err
	}
	return a.switchTo(ctx, &schema.SaveAttempted{From: from, To: id})
}

// switchTo makes the target of step current: through the whole leave path
// (save, SessionEnd) when the agent has a current session, or straight to
// SessionLoaded when it has none. step names the target, the source its
// SessionStart hooks get and the reason the current session ends with.
func (a *Agent) switchTo(ctx context.Context, step *schema.SaveAttempted) (*Restore, error) {
	rid := a.e.newID()
	if step.From == "" {
		if err := a.loadStep(ctx, rid, step.To, step.Source, ""); err != nil {
			return nil, err
		}
	} else if err := a.save(ctx, rid, step); err != nil {
		return nil, err
	}
	return a.advance(ctx)
}

// save is step 1: the current session's pending messages and SaveAttempted
// go in one atomic append. If the messages cannot be written, SaveAttempted
// records why, alone, and they stay pending.
func (a *Agent) save(ctx context.Context, rid string, attempt *schema.SaveAttempted) error {
	from := attempt.From
	s, err := a.e.session(ctx, from)
	if err != nil {
		attempt.Error = err.Error()
		return a.record(ctx, rid, attempt, nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := a.e.flush(s, nil)
	if err == nil && w != nil {
		attempt.Saved = w.n
		err = a.record(ctx, rid, attempt, w)
		if err == nil || errors.Is(err, ErrRestoreInProgress) {
			return err
		}
		err = a.e.saveFailed(ctx, s, err)
	}
	if err == nil {
		return a.record(ctx, rid, attempt, nil)
	}
	a.e.log.Warn("save before restore failed; messages stay pending", "agent", a.id, "session", from, "pending", len(s.pending), "error", err)
	attempt.Saved, attempt.Error = 0, err.Error()
	return a.record(ctx, rid, attempt, nil)
}

// advance drives the restore in flight to its end, from whatever step the
// log says it reached, and returns it. Hook steps get ctx; the bookkeeping
// appends do not stop when ctx is cancelled, so a restore that has begun
// always ends recorded.
func (a *Agent) advance(ctx context.Context) (*Restore, error) {
	wctx := context.WithoutCancel(ctx)
	for fsm.InFlight(a.view.State) {
		r := a.view.Restore
		var err error
		switch a.view.State {
		case fsm.Saved:
			err = a.runEnd(ctx, wctx, r)
		case fsm.Ending:
			err = a.record(wctx, r.ID, &schema.SessionEndHookRan{
				Session: r.From, Reason: r.EndReason, Outcomes: interrupted(r.EndHooks), Interrupted: true}, nil)
		case fsm.Ended:
			err = a.closeOrLoad(wctx, r)
		case fsm.Loaded:
			err = a.runStart(ctx, wctx, r)
		case fsm.Starting:
			err = a.record(wctx, r.ID, &schema.SessionStartHookRan{
				Session: r.To, Source: r.Source, Outcomes: interrupted(r.StartHooks), Interrupted: true}, nil)
		case fsm.Started:
			err = a.inject(wctx, r)
		case fsm.Stopping:
			err = a.record(wctx, a.view.Stop.ID, &schema.StopHookRan{
				Session: a.view.Stop.Session, Outcomes: interrupted(a.view.Stop.Hooks), Interrupted: true}, nil)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(a.view.History) == 0 { // only a stop was in flight
		return nil, nil
	}
	done := a.view.History[len(a.view.History)-1]
	return &done, nil
}

func interrupted(names []string) []schema.HookOutcome {
	if len(names) == 0 {
		return nil
	}
	out := make([]schema.HookOutcome, len(names))
	for i, n := range names {
		out[i] = schema.HookOutcome{Name: n, Status: schema.HookInterrupted}
	}
	return out
}

// hookEnv prepares session id for hooks: it brings the transcript up to
// date, unless there are no hooks to read it, and returns the hooks' input
// fields and command environment.
func (a *Agent) hookEnv(ctx context.Context, id string, hooks []hookexec.Hook) (transcript string, env hookexec.CommandEnv) {
	env = hookexec.CommandEnv{SpillDir: a.e.transcriptDir, SpillName: id}
	transcript = a.e.TranscriptPath(id)
	if s, err := a.e.session(ctx, id); err == nil {
		s.mu.Lock()
		env.ProjectDir = s.conv.Cwd
		if len(hooks) > 0 {
			_, err = a.e.syncTranscript(s)
		}
		s.mu.Unlock()
		if err != nil {
			a.e.log.Warn("transcript not updated before hooks", "session", id, "error", err)
		}
	}
	if env.ProjectDir == "" {
		env.ProjectDir, _ = os.Getwd()
	}
	return transcript, env
}

// runEnd is step 2: record the intent, run the SessionEnd hooks on the
// session being left, record their outcomes. The session's scoped hooks are
// dropped once it has ended.
func (a *Agent) runEnd(ctx, wctx context.Context, r *Restore) error {
	hooks := a.e.HooksFor(wctx, hookexec.SessionEnd, string(r.EndReason), r.From)
	intent := &schema.SessionEndHookStarted{Session: r.From, Reason: r.EndReason, Hooks: hookexec.Names(hooks)}
	if err := a.record(wctx, r.ID, intent, nil); err != nil {
		return err
	}
	transcript, env := a.hookEnv(wctx, r.From, hooks)
	outcomes := hookexec.RunSessionEnd(ctx, hooks, hookexec.SessionEndInput{
		SessionID: r.From, TranscriptPath: transcript, Timestamp: a.e.now().UnixMilli(), Cwd: env.ProjectDir,
		Reason: r.EndReason, FinalMessage: r.EndMessage, Error: r.EndError,
	}, env)
	a.warnFailed(r, hookexec.SessionEnd, outcomes)
	err := a.record(wctx, r.ID, &schema.SessionEndHookRan{Session: r.From, Reason: r.EndReason, Outcomes: outcomes}, nil)
	if err == nil {
		a.e.scoped.Drop(r.From)
	}
	return err
}

// closeOrLoad is step 3 once the current session has ended: the target
// becomes current, or, for an End, the agent is left without a session.
func (a *Agent) closeOrLoad(ctx context.Context, r *Restore) error {
	if r.To == "" {
		return a.record(ctx, r.ID, &schema.SessionClosed{Session: r.From}, nil)
	}
	return a.loadStep(ctx, r.ID, r.To, r.Source, r.From)
}

// loadStep records that session id became current through source.
func (a *Agent) loadStep(ctx context.Context, rid, id string, source Source, from string) error {
	s, err := a.e.session(ctx, id)
	if err != nil {
		return fmt.Errorf("load %s for restore %s: %w", id, rid, err)
	}
	s.mu.Lock()
	loaded := &schema.SessionLoaded{Session: id, Source: source, From: from, Messages: len(s.conv.Messages), Head: s.conv.Head}
	s.mu.Unlock()
	return a.record(ctx, rid, loaded, nil)
}

// runStart is step 4: record the intent, run the SessionStart hooks on the
// target, record their outcomes, joined context and what they wrote to
// CLAUDE_ENV_FILE.
func (a *Agent) runStart(ctx, wctx context.Context, r *Restore) error {
	hooks := a.e.HooksFor(wctx, hookexec.SessionStart, string(r.Source), r.To)
	intent := &schema.SessionStartHookStarted{Session: r.To, Source: r.Source, Hooks: hookexec.Names(hooks)}
	if err := a.record(wctx, r.ID, intent, nil); err != nil {
		return err
	}
	transcript, env := a.hookEnv(wctx, r.To, hooks)
	env.EnvFile = a.emptyEnvFile(r.To, hooks)
	outcomes, text := hookexec.RunSessionStart(ctx, hooks, hookexec.SessionStartInput{
		SessionID: r.To, TranscriptPath: transcript, Timestamp: a.e.now().UnixMilli(), Cwd: env.ProjectDir, Source: r.Source,
	}, env)
	a.warnFailed(r, hookexec.SessionStart, outcomes)
	ran := &schema.SessionStartHookRan{Session: r.To, Source: r.Source, Outcomes: outcomes, Context: text}
	if env.EnvFile != "" {
		written, _ := os.ReadFile(env.EnvFile)
		ran.Env = string(written)
	}
	return a.record(wctx, r.ID, ran, nil)
}

// emptyEnvFile returns the CLAUDE_ENV_FILE of session id, emptied for a
// run of hooks, or "" when no command hook would see it or it cannot be
// written.
func (a *Agent) emptyEnvFile(id string, hooks []hookexec.Hook) string {
	if !slices.ContainsFunc(hooks, func(h hookexec.Hook) bool { return h.IsCommand() }) {
		return ""
	}
	path := filepath.Join(a.e.transcriptDir, id+".env")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		a.e.log.Warn("no CLAUDE_ENV_FILE for hooks", "session", id, "error", err)
		return ""
	}
	return path
}

// maxInjectTries bounds retries when other writers keep appending to the
// target while the reminder is being injected.
const maxInjectTries = 8

// inject is step 5: the context, if any, becomes a meta user message at the
// end of the target, in the same atomic append as ContextInjected. Messages
// the host buffered for the target are saved first in that append, so the
// reminder is last.
func (a *Agent) inject(ctx context.Context, r *Restore) error {
	done := &schema.ContextInjected{Session: r.To}
	if r.Context == "" {
		return a.record(ctx, r.ID, done, nil)
	}
	s, err := a.e.session(ctx, r.To)
	if err != nil {
		return fmt.Errorf("inject into %s for restore %s: %w", r.To, r.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := Message{UUID: a.e.newID(), Role: "user", IsMeta: true, Timestamp: a.e.stamp(),
		Content: []Block{{Type: "text", Text: reminder(r.Context)}}}
	done.MessageUUID = msg.UUID
	for try := 1; ; try++ {
		w, err := a.e.flush(s, &msg)
		if err != nil {
			return err
		}
		err = a.record(ctx, r.ID, done, w)
		if err == nil || !errors.Is(err, eventlog.ErrConflict) || errors.Is(err, ErrRestoreInProgress) || try == maxInjectTries {
			return err
		}
		if err := a.e.catchUp(ctx, s); err != nil {
			return err
		}
	}
}

func (a *Agent) warnFailed(r *Restore, event hookexec.Event, outcomes []schema.HookOutcome) {
	for _, o := range outcomes {
		if o.Status != schema.HookOK {
			a.e.log.Warn("hook did not succeed", "agent", a.id, "restore", r.ID, "event", event,
				"hook", o.Name, "status", o.Status, "error", o.Error)
		}
	}
}

// record appends p as the next step of restore rid, together with w's
// messages when w is not nil. It checks first that the lifecycle table
// allows the step from the state the log yields; the conditional append
// then makes that check hold against every other writer. A moved agent
// stream means another restore won: ErrRestoreInProgress.
func (a *Agent) record(ctx context.Context, rid string, p schema.Payload, w *sessionWrite) error {
	step, _ := fsm.EventOf(p)
	if _, err := fsm.Apply(a.view.State, step); err != nil {
		return fmt.Errorf("agent %s: %w", a.id, err)
	}
	rec, err := schema.NewRecord(a.stream, p, a.e.stamp(), rid)
	if err != nil {
		return err
	}
	expect := []eventlog.Expect{{Stream: a.stream, Seq: a.view.Head}}
	recs := []eventlog.Record{rec}
	if w != nil {
		expect = append(expect, w.expect)
		recs = append(append([]eventlog.Record(nil), w.recs...), rec)
	}
	evs, err := a.e.store.Append(ctx, expect, recs)
	var conflict *eventlog.ConflictError
	if errors.As(err, &conflict) && conflict.Stream == a.stream {
		return fmt.Errorf("%w: agent %s moved: %w", ErrRestoreInProgress, a.id, err)
	}
	if err != nil {
		return err
	}
	if w != nil {
		if err := w.applied(evs); err != nil {
			return err
		}
	}
	return a.view.ApplyDecoded(evs[len(evs)-1], p)
}
