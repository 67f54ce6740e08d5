package reprise

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// ErrMessageNotFound is returned by Fork when the fork point is not a
// message of the session.
var ErrMessageNotFound = errors.New("reprise: message not found")

// ErrBadReason is returned by End for a reason it does not know.
var ErrBadReason = errors.New("reprise: unknown end reason")

// beginOnCurrent is begin for paths that need a current session, which it
// returns.
func (a *Agent) beginOnCurrent(ctx context.Context) (end func(), current string, err error) {
	if end, err = a.begin(ctx); err != nil {
		return nil, "", err
	}
	if a.view.Current == "" {
		end()
		return nil, "", fmt.Errorf("%w: agent %s", ErrNoCurrentSession, a.id)
	}
	return end, a.view.Current, nil
}

// New makes a fresh, empty session with id (a new UUID when empty) and
// working directory cwd current and runs its SessionStart hooks with source
// "new". A current session is first
// left the way Clear leaves it: saved, and ended with reason "clear". The
// fresh session is created before the first step is recorded, so a
// refused New (ErrRestoreInProgress) leaves an empty session behind.
func (a *Agent) New(ctx context.Context, id, cwd string) (*Restore, error) {
	end, err := a.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	id, err = a.e.CreateSession(ctx, id, cwd)
	if err != nil {
		return nil, err
	}
	return a.switchTo(ctx, &schema.SaveAttempted{From: a.view.Current, To: id, Reason: ReasonClear, Source: SourceNew})
}

// Clear ends the current session with reason "clear" and makes a fresh,
// empty session in the same working directory current, with SessionStart
// source "clear", as Claude Code's /clear does.
func (a *Agent) Clear(ctx context.Context) (*Restore, error) {
	end, from, err := a.beginOnCurrent(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	cwd := ""
	if info, err := a.e.Session(ctx, from); err == nil {
		cwd = info.Cwd
	}
	id, err := a.e.CreateSession(ctx, "", cwd)
	if err != nil {
		return nil, err
	}
	return a.switchTo(ctx, &schema.SaveAttempted{From: from, To: id, Reason: ReasonClear, Source: SourceClear})
}

// Fork makes a new session that starts as a copy of session parent's
// conversation up to and including message upTo (the whole conversation
// when upTo is empty), makes it current, and runs its SessionStart hooks
// with source "fork". The parent is not touched; the new session records
// the parent and the fork point. A current session is left as by Restore,
// with reason "resume". Copies drop imported transcript lines, so the
// fork's transcript names the fork, not the parent.
func (a *Agent) Fork(ctx context.Context, parent, upTo string) (*Restore, error) {
	end, err := a.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	id, err := a.e.fork(ctx, parent, upTo)
	if err != nil {
		return nil, err
	}
	return a.switchTo(ctx, &schema.SaveAttempted{From: a.view.Current, To: id, Reason: ReasonResume, Source: SourceFork})
}

// fork writes the forked session in one atomic append and returns its id.
func (e *Engine) fork(ctx context.Context, parent, upTo string) (string, error) {
	s, err := e.session(ctx, parent)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	msgs := s.conv.Messages
	cwd := s.conv.Cwd
	if upTo != "" {
		i := slices.IndexFunc(msgs, func(m Message) bool { return m.UUID == upTo })
		if i < 0 {
			s.mu.Unlock()
			return "", fmt.Errorf("%w: %s in %s", ErrMessageNotFound, upTo, parent)
		}
		msgs = msgs[:i+1]
	} else if len(msgs) > 0 {
		upTo = msgs[len(msgs)-1].UUID
	}
	copied := projection.CloneMessages(msgs)
	s.mu.Unlock()

	id := e.newID()
	stream := projection.SessionStream(id)
	now := e.stamp()
	payloads := []schema.Payload{&schema.SessionCreated{ID: id, Cwd: cwd, Parent: parent, ForkPoint: upTo}}
	for _, m := range copied {
		m.Record = nil
		payloads = append(payloads, &schema.MessageAppended{Message: m})
	}
	recs := make([]eventlog.Record, len(payloads))
	for i, p := range payloads {
		if recs[i], err = schema.NewRecord(stream, p, now, ""); err != nil {
			return "", err
		}
	}
	if _, err := e.store.Append(ctx, []eventlog.Expect{{Stream: stream}}, recs); err != nil {
		return "", fmt.Errorf("fork %s: %w", parent, err)
	}
	return id, nil
}

// CompactSummaryPrefix opens the summary message of a compacted session, as
// Claude Code words it; the summary given to Compact follows it.
const CompactSummaryPrefix = "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n"

// Compact replaces, for the model, the current session's messages so far by
// summary. The log keeps every message: a compaction boundary and the
// summary (a meta user message) are appended, together with any pending
// messages, and the conversation from then on starts at the summary.
// SessionStart hooks then run with source "compact" and their context is
// injected after the summary.
func (a *Agent) Compact(ctx context.Context, summary string) (*Restore, error) {
	end, id, err := a.beginOnCurrent(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	s, err := a.e.session(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	w, step, err := a.e.compaction(s, summary)
	if err == nil {
		err = a.record(ctx, a.e.newID(), step, w)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return a.advance(ctx)
}

// compaction builds the write of a compaction: s's pending messages, the
// boundary and the summary. s.mu must be held.
func (e *Engine) compaction(s *session, summary string) (*sessionWrite, *schema.SessionCompacted, error) {
	w, err := e.flush(s, nil)
	if err != nil {
		return nil, nil, err
	}
	stream := projection.SessionStream(s.conv.ID)
	if w == nil {
		w = &sessionWrite{s: s, expect: eventlog.Expect{Stream: stream, Seq: s.conv.Head}}
	}
	last := s.conv.LastUUID()
	if w.n > 0 {
		last = s.pending[len(s.pending)-1].UUID
	}
	boundary := &schema.CompactBoundary{UUID: e.newID(), LogicalParent: last, Trigger: "manual",
		PreMessages: len(s.conv.View()) + w.n}
	msg := Message{UUID: e.newID(), ParentUUID: boundary.UUID, Role: "user", IsMeta: true, Summary: true,
		Timestamp: e.stamp(), Content: []Block{{Type: "text", Text: CompactSummaryPrefix + summary}}}
	now := e.stamp()
	for _, p := range []schema.Payload{boundary, &schema.MessageAppended{Message: msg}} {
		rec, err := schema.NewRecord(stream, p, now, "")
		if err != nil {
			return nil, nil, err
		}
		w.recs = append(w.recs, rec)
	}
	return w, &schema.SessionCompacted{Session: s.conv.ID, Boundary: boundary.UUID, SummaryUUID: msg.UUID}, nil
}

// EndOptions carry what SessionEnd function hooks receive besides the
// reason.
type EndOptions struct {
	FinalMessage string
	Error        string
}

var endReasons = []Reason{ReasonComplete, ReasonError, ReasonAbort, ReasonTimeout, ReasonUserExit,
	ReasonLogout, ReasonPromptInputExit, ReasonOther, ReasonClear, ReasonResume}

// End ends the current session for reason (complete, error, abort,
// timeout, user_exit, logout, prompt_input_exit or other): it is saved, its
// SessionEnd hooks run with that reason, and the agent is left without a
// current session until the next Start or New. What the hooks return
// (summaries, cleanup actions) is recorded with their outcomes.
func (a *Agent) End(ctx context.Context, reason Reason, opts EndOptions) (*Restore, error) {
	if !slices.Contains(endReasons, reason) {
		return nil, fmt.Errorf("%w: %q", ErrBadReason, reason)
	}
	end, from, err := a.beginOnCurrent(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	return a.switchTo(ctx, &schema.SaveAttempted{From: from, Reason: reason, FinalMessage: opts.FinalMessage, EndError: opts.Error})
}

// DefaultStopBlockCap is how many consecutive stops hooks may block before
// the Engine stops asking them.
const DefaultStopBlockCap = 8

// StopResult says whether the agent may stop after its turn.
type StopResult struct {
	Blocked  bool   // a hook wants the agent to continue
	Reason   string // why; it was also queued as the next user message
	Message  *Message
	Capped   bool // the hooks were not asked: too many consecutive blocks
	Outcomes []schema.HookOutcome
}

// Stop runs the Stop hooks when the agent has finished a turn on its
// current session. A hook that answers {"decision": "block", "reason": ...}
// (or exits 2 with the reason on stderr) makes the agent continue: the
// reason is appended as the next user message, in the same atomic append
// as the outcome, and the next Stop tells hooks stop_hook_active. After
// Options.StopBlockCap consecutive blocks the hooks are not asked and the
// stop is recorded as capped. The count lives in the log, so a crash does
// not reset it.
func (a *Agent) Stop(ctx context.Context) (*StopResult, error) {
	end, id, err := a.beginOnCurrent(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	rid, wctx := a.e.newID(), context.WithoutCancel(ctx)
	if a.view.StopBlocks >= a.e.stopCap {
		why := fmt.Sprintf("%d consecutive stops were blocked; the hooks are not asked again until a stop is not blocked", a.view.StopBlocks)
		a.e.log.Warn("stop hook cap reached", "agent", a.id, "session", id, "blocks", a.view.StopBlocks)
		if err := a.record(ctx, rid, &schema.StopHookStarted{Session: id, Active: true, Capped: true}, nil); err != nil {
			return nil, err
		}
		if err := a.record(wctx, rid, &schema.StopHookRan{Session: id, Capped: why}, nil); err != nil {
			return nil, err
		}
		return &StopResult{Capped: true, Reason: why}, nil
	}
	hooks := a.e.HooksFor(ctx, hookexec.Stop, "", id)
	active := a.view.StopBlocks > 0
	if err := a.record(ctx, rid, &schema.StopHookStarted{Session: id, Active: active, Hooks: hookexec.Names(hooks)}, nil); err != nil {
		return nil, err
	}
	transcript, env := a.hookEnv(wctx, id, hooks)
	outcomes, blocked, reason := hookexec.RunStop(ctx, hooks, hookexec.StopInput{
		SessionID: id, TranscriptPath: transcript, Cwd: env.ProjectDir, StopHookActive: active}, env)
	ran := &schema.StopHookRan{Session: id, Outcomes: outcomes, Blocked: blocked, Reason: reason}
	res := &StopResult{Blocked: blocked, Reason: reason, Outcomes: outcomes}
	if !blocked {
		return res, a.record(wctx, rid, ran, nil)
	}
	s, err := a.e.session(wctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := Message{UUID: a.e.newID(), Role: "user", IsMeta: true, Timestamp: a.e.stamp(),
		Content: []Block{{Type: "text", Text: "Stop hook feedback:\n" + reason}}}
	ran.MessageUUID = msg.UUID
	w, err := a.e.flush(s, &msg)
	if err == nil {
		err = a.record(wctx, rid, ran, w)
	}
	if err != nil {
		return nil, err
	}
	res.Message = &s.conv.Messages[len(s.conv.Messages)-1]
	return res, nil
}
