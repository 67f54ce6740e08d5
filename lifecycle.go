package reprise

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// ErrMessageNotFound is returned by Fork when the fork point is not a
// message of the session.
var ErrMessageNotFound = errors.New("reprise: message not found")

// ErrBadReason is returned by End for a reason it does not know.
var ErrBadReason = lifecycle.ErrBadReason

// New makes a fresh, empty session with id (a new UUID when empty) and
// working directory cwd current and runs its SessionStart hooks with source
// "new". A current session is first left the way Clear leaves it: saved,
// and ended with reason "clear". The fresh session is written in the same
// append as the action's first step, so a New that is refused leaves
// nothing behind. It returns ErrSessionExists for an id already taken and
// ErrSessionDeleted for a deleted one.
func (a *Agent) New(ctx context.Context, id, cwd string, opts ...ActionOption) (*Transition, error) {
	r, _, err := a.do(ctx, action(lifecycle.Action{Kind: lifecycle.New}, opts), func(ctx context.Context, act *lifecycle.Action) error {
		cwd, err := a.e.resolveCwd(cwd)
		if err != nil {
			return err
		}
		if id == "" {
			id = a.e.newID()
		}
		act.To, act.Create = id, &lifecycle.Creation{Cwd: cwd}
		return ValidateID(id)
	})
	return r, err
}

// Clear ends the current session with reason "clear" and makes a fresh,
// empty session in the same working directory current, with SessionStart
// source "clear", as Claude Code's /clear does.
func (a *Agent) Clear(ctx context.Context) (*Transition, error) {
	r, _, err := a.do(ctx, lifecycle.Action{Kind: lifecycle.Clear}, func(ctx context.Context, act *lifecycle.Action) error {
		cwd := ""
		if info, err := a.e.Session(ctx, a.view.Current); err == nil {
			cwd = info.Cwd // the cleared session's, as it is
		}
		act.To, act.Create = a.e.newID(), &lifecycle.Creation{Cwd: cwd}
		return nil
	})
	return r, err
}

// Fork makes a new session that starts as a copy of session parent's
// conversation up to and including message upTo (the whole conversation
// when upTo is empty), makes it current, and runs its SessionStart hooks
// with source "fork". The parent is not touched; the new session records
// the parent and the fork point. A current session is left as by Restore,
// with reason "resume". Copies drop imported transcript lines, so the
// fork's transcript names the fork, not the parent.
func (a *Agent) Fork(ctx context.Context, parent, upTo string) (*Transition, error) {
	r, _, err := a.do(ctx, lifecycle.Action{Kind: lifecycle.Fork}, func(ctx context.Context, act *lifecycle.Action) (err error) {
		act.To = a.e.newID()
		act.Create, err = a.e.fork(ctx, parent, upTo)
		return err
	})
	return r, err
}

// fork returns the session that forks parent at message upTo: its
// directory, parent and fork point, and a copy of the messages up to it.
func (e *Engine) fork(ctx context.Context, parent, upTo string) (*lifecycle.Creation, error) {
	s, err := e.session(ctx, parent)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	msgs := s.conv.Messages
	cwd := s.conv.Cwd
	if upTo != "" {
		i := slices.IndexFunc(msgs, func(m Message) bool { return m.UUID == upTo })
		if i < 0 {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: %s in %s", ErrMessageNotFound, upTo, parent)
		}
		msgs = msgs[:i+1]
	} else if len(msgs) > 0 {
		upTo = msgs[len(msgs)-1].UUID
	}
	copied := projection.CloneMessages(msgs)
	s.mu.Unlock()
	for i := range copied {
		copied[i].Record = nil // imported lines name the parent
	}
	return &lifecycle.Creation{Cwd: cwd, Parent: parent, ForkPoint: upTo, Messages: copied}, nil
}

// CompactSummaryPrefix opens the summary message of a compacted session, as
// Claude Code words it; the summary given to Compact follows it.
const CompactSummaryPrefix = lifecycle.CompactSummaryPrefix

// Compact replaces, for the model, the current session's messages so far by
// summary. The log keeps every message: a compaction boundary and the
// summary (a meta user message) are appended, together with any pending
// messages, and the conversation from then on starts at the summary.
// SessionStart hooks then run with source "compact" and their context is
// injected after the summary.
//
// PreCompact hooks run first, with the trigger (WithTrigger, "manual" by
// default) and the user's instructions (WithInstructions). One that blocks
// stops the compaction: Compact returns the restore, which records it, and
// an error matching ErrCompactionBlocked with the hook's reason.
func (a *Agent) Compact(ctx context.Context, summary string, opts ...ActionOption) (*Transition, error) {
	act := action(lifecycle.Action{Kind: lifecycle.Compact, Summary: summary}, opts)
	r, _, err := a.do(ctx, act, nil)
	return a.compacted(ctx, act.Trigger, r, err)
}

// compacted fires the PostCompact of compaction r, started by trigger,
// which do returned with err, and returns r.
func (a *Agent) compacted(ctx context.Context, trigger string, r *Transition, err error) (*Transition, error) {
	if err != nil || r == nil || r.Source != SourceCompact || r.SummaryUUID == "" {
		return r, err
	}
	if r.Trigger == "" {
		r.Trigger = trigger // an older log's compaction, without it
	}
	if _, err := a.postCompact(ctx, r); err != nil {
		return r, fmt.Errorf("agent %s: session %s is compacted; its PostCompact: %w", a.id, r.To, err)
	}
	return r, nil
}

// postCompact fires PostCompact once for compaction r, with its trigger
// and summary, as Claude Code fires it when a compaction completes.
func (a *Agent) postCompact(ctx context.Context, r *Transition) (*Fired, error) {
	summary := r.Summary
	if r.SummaryUUID != "" {
		m, err := a.e.message(context.WithoutCancel(ctx), r.To, r.SummaryUUID)
		if err != nil {
			return nil, err
		}
		summary = strings.TrimPrefix(projection.FirstText(m), lifecycle.CompactSummaryPrefix)
	}
	fields, _ := json.Marshal(map[string]string{"trigger": cmp.Or(r.Trigger, "manual"), "compact_summary": summary}) // strings always marshal
	return a.fire(ctx, &lifecycle.FireRequest{ID: postCompactID(r.ID), Event: schema.HookPostCompact,
		Value: cmp.Or(r.Trigger, "manual"), Fields: fields})
}

// postCompactID is the fire id of the PostCompact of compaction rid.
func postCompactID(rid string) string { return "compact-" + rid }

// Summarizer makes the summary of a compaction from its custom
// instructions: the user's (WithInstructions) and, after a blank line, what
// its PreCompact hooks printed, as Claude Code hands them to its model.
type Summarizer func(ctx context.Context, instructions string) (summary string, err error)

// CompactWith compacts the current session as Compact does, with a
// summary that summarize makes once the PreCompact hooks have run, from
// the instructions they add. The PreCompact intent is recorded even when
// no hook matches, so that the summary is made inside the recorded step:
// an error or an empty summary ends the compaction as blocked (an error
// matching ErrCompactionBlocked), as does a process that dies before the
// summary is recorded. The summary is recorded with the hooks' outcome.
func (a *Agent) CompactWith(ctx context.Context, summarize Summarizer, opts ...ActionOption) (*Transition, error) {
	if summarize == nil {
		return nil, errors.New("reprise: CompactWith needs a Summarizer")
	}
	ctx = context.WithValue(ctx, summarizerKey{}, summarize)
	act := action(lifecycle.Action{Kind: lifecycle.Compact, Summarize: true}, opts)
	r, _, err := a.do(ctx, act, nil)
	return a.compacted(ctx, act.Trigger, r, err)
}

// summarizerKey holds, in the context of a CompactWith, its Summarizer.
type summarizerKey struct{}

// summarize calls the Summarizer of ctx with instructions and says what
// the step records: the summary, or why the compaction is blocked.
func summarize(ctx context.Context, instructions string) (summary string, blocked bool, reason string) {
	fn, _ := ctx.Value(summarizerKey{}).(Summarizer)
	if fn == nil {
		return "", true, "the compaction's summary was not made: no Summarizer"
	}
	summary, err := fn(ctx, instructions)
	switch {
	case err != nil:
		return "", true, "the compaction's summary was not made: " + err.Error()
	case strings.TrimSpace(summary) == "":
		return "", true, "the compaction's summary was not made: the Summarizer gave an empty one"
	}
	return summary, false, ""
}

// Halt is what Claude Code's "continue": false in a hook's JSON answer
// says on the events of a turn: the agent stops after the hooks, whatever
// they decided, and shows the user StopReason (the model is not told).
// Each outcome keeps its hook's own fields, and its systemMessage, a
// warning for the user.
type Halt struct {
	Halted     bool
	StopReason string // the first halting hook's stopReason
}

// haltOf is the Halt of the hooks' outcomes.
func haltOf(outcomes []schema.HookOutcome) Halt {
	for _, o := range outcomes {
		if o.Halt {
			return Halt{Halted: true, StopReason: o.StopReason}
		}
	}
	return Halt{}
}

// PromptResult says what became of a prompt.
type PromptResult struct {
	Blocked bool     // a UserPromptSubmit hook blocked it: it was not kept
	Reason  string   // why it was blocked
	Message *Message // the prompt as kept, nil when blocked
	// Context is what the hooks added, kept as a meta message right after
	// the prompt (ContextMessage); "" when they added nothing.
	Context        string
	ContextMessage *Message
	// AsyncMessage holds, as a meta message after those, the context of
	// the session's async hooks that ended since its last prompt; nil when
	// none did.
	AsyncMessage *Message
	Outcomes     []schema.HookOutcome
	Halt
}

// Prompt submits text, the user's prompt, to the current session. The
// UserPromptSubmit hooks run first, with Claude Code's input; unless one
// blocks it (exit 2, or "decision": "block"), the prompt is appended as a
// user message, after any buffered ones, with the hooks' context as a
// <system-reminder> meta message after it, in the same append as the
// hooks' outcomes. The hooks run at most once: a run its process died in is
// closed as interrupted on reopen and the prompt is not kept, so the host
// may submit it again. With no UserPromptSubmit hook the prompt is simply
// appended.
func (a *Agent) Prompt(ctx context.Context, text string) (*PromptResult, error) {
	_, out, err := a.do(ctx, lifecycle.Action{Kind: lifecycle.Prompt, Prompt: text}, nil)
	if err != nil {
		return nil, err
	}
	pr := out.Prompted
	if pr == nil {
		return nil, fmt.Errorf("agent %s: the prompt was not decided", a.id)
	}
	res := &PromptResult{Blocked: pr.Blocked, Reason: pr.Reason, Context: pr.Context, Outcomes: pr.Outcomes,
		Halt: haltOf(pr.Outcomes)}
	wctx := context.WithoutCancel(ctx)
	if pr.MessageUUID != "" {
		m, err := a.e.message(wctx, pr.Session, pr.MessageUUID)
		if err != nil {
			return nil, err
		}
		res.Message = &m
	}
	if pr.ContextUUID != "" {
		m, err := a.e.message(wctx, pr.Session, pr.ContextUUID)
		if err != nil {
			return nil, err
		}
		res.ContextMessage = &m
	}
	if pr.AsyncUUID != "" {
		m, err := a.e.message(wctx, pr.Session, pr.AsyncUUID)
		if err != nil {
			return nil, err
		}
		res.AsyncMessage = &m
	}
	return res, nil
}

// EndOptions carry what SessionEnd function hooks receive besides the
// reason.
type EndOptions struct {
	FinalMessage string
	Error        string
}

// End ends the current session for reason (complete, error, abort,
// timeout, user_exit, logout, prompt_input_exit or other): it is saved, its
// SessionEnd hooks run with that reason, and the agent is left without a
// current session until the next Start or New. What the hooks return
// (summaries, cleanup actions) is recorded with their outcomes.
func (a *Agent) End(ctx context.Context, reason Reason, opts EndOptions) (*Transition, error) {
	r, _, err := a.do(ctx, lifecycle.Action{Kind: lifecycle.End, Reason: reason, FinalMessage: opts.FinalMessage, Error: opts.Error}, nil)
	return r, err
}

// DefaultStopBlockCap is how many consecutive stops hooks may block before
// the Engine stops asking them.
const DefaultStopBlockCap = 8

// StopResult says whether the agent may stop after its turn.
type StopResult struct {
	Blocked bool   // a hook wants the agent to continue
	Reason  string // why; it was also queued as the next user message
	// Context is the hooks' additionalContext when none blocked: non-error
	// feedback, queued as a meta message, on which the agent goes on as
	// after a block (Continues); it counts toward the cap as a block does.
	Context  string
	Message  *Message
	Capped   bool // the hooks were not asked: too many consecutive blocks
	Outcomes []schema.HookOutcome
	Halt     // a hook's "continue": false: stop, even when Blocked
}

// Continues reports whether the hooks want the agent to go on: a block, or
// their feedback, is queued for the model, and no hook halted the agent.
func (r *StopResult) Continues() bool { return (r.Blocked || r.Context != "") && !r.Halted }

// Stop runs the Stop hooks when the agent has finished a turn on its
// current session. A hook that answers {"decision": "block", "reason": ...}
// (or exits 2 with the reason on stderr) makes the agent continue: the
// reason is appended as the next user message, in the same atomic append
// as the outcome, and the next Stop tells hooks stop_hook_active. After
// Options.StopBlockCap consecutive blocks the hooks are not asked and the
// stop is recorded as capped. The count lives in the log, so a crash does
// not reset it.
//
// WithStopReason tells the hooks why the turn ended.
func (a *Agent) Stop(ctx context.Context, opts ...ActionOption) (*StopResult, error) {
	_, out, err := a.do(ctx, action(lifecycle.Action{Kind: lifecycle.Stop}, opts), nil)
	st := out.Stopped
	if err != nil || st == nil {
		return nil, err
	}
	res := &StopResult{Blocked: st.Blocked, Reason: st.Reason, Context: st.Context, Capped: st.Capped, Outcomes: st.Outcomes,
		Halt: haltOf(st.Outcomes)}
	if st.MessageUUID != "" {
		m, err := a.e.message(context.WithoutCancel(ctx), st.Session, st.MessageUUID)
		if err != nil {
			return nil, err
		}
		res.Message = &m
	}
	return res, nil
}
