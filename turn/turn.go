package turn

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
)

// ErrUnfinished is returned by Run while the agent's last turn has tool
// calls without a result: Resume finishes it first.
var ErrUnfinished = errors.New("turn: the last turn is unfinished")

// What the model is told, as a call's error tool_result, of a call that
// did not run.
const (
	// Interrupted: the call was allowed and has no recorded result, and
	// its tool is not Repeatable.
	Interrupted = "The tool call was interrupted before its result was recorded: it may have run."
	// NotRun: a hook stopped the turn before the call ran.
	NotRun = "Not run: a hook stopped the turn."
	// NoOneToAsk: the call needed the user's word and Runner.Ask is nil.
	NoOneToAsk = "The tool call needed the user's permission, and there was no one to ask."
)

// DefaultMaxRequests bounds the model requests of one Run or Resume.
const DefaultMaxRequests = 50

// Model asks the model for its next answer to conv, the session's messages
// as the model sees them, and returns it as an assistant message: its text,
// tool_use and other blocks, and the transcript Record if the host keeps
// one. The Runner records it before acting on it.
type Model func(ctx context.Context, conv []reprise.Message) (reprise.Message, error)

// ModelError is a failed model request. The turn waits for an answer:
// Resume asks again.
type ModelError struct{ Err error }

func (e *ModelError) Error() string { return "turn: model: " + e.Err.Error() }
func (e *ModelError) Unwrap() error { return e.Err }

// Call is a tool call as a Tool runs it.
type Call struct {
	ID    string // the tool_use id
	Name  string
	Input json.RawMessage // what the hooks left of the model's input
	// Again says the call was allowed before and has no recorded result: a
	// process that died may have run it. Only a Repeatable tool sees it.
	Again bool
}

// Tool is a tool the model may call.
type Tool struct {
	// Run runs call. Its result is recorded as the call's tool_result (the
	// Runner fills in ID, and Duration when it is 0); an error is recorded
	// as the call's failure, its text what the model is told.
	Run func(ctx context.Context, call Call) (reprise.ToolResult, error)
	// Repeatable declares that running a call twice does no harm (a read,
	// an idempotent write): a call cut off between its start and its
	// recorded result runs again, rather than being reported Interrupted.
	Repeatable bool
}

// EventKind says what an Event reports.
type EventKind int

// The kinds of Event.
const (
	Prompted   EventKind = iota + 1 // the prompt went through UserPromptSubmit
	Answered                        // the model answered, and the answer is recorded
	Decided                         // a tool call was decided (or its recorded decision read)
	Ran                             // a tool call's result is recorded and its hooks ran
	NotReached                      // a halted turn's call got an error result without running
	Stopped                         // the Stop hooks ran
)

// Event tells the host what the Runner did, as it happens, for it to show.
type Event struct {
	Kind     EventKind
	Prompt   *reprise.PromptResult // Prompted
	Answer   *reprise.Message      // Answered
	Call     *Call                 // Decided, Ran, NotReached
	Decision *reprise.ToolDecision // Decided
	Result   *reprise.ToolResult   // Ran, NotReached: what was recorded
	Feedback *reprise.ToolFeedback // Ran
	Stop     *reprise.StopResult   // Stopped
}

// Runner drives the turns of one agent. Engine, Agent, Model and Tools are
// required; the rest may be left zero.
type Runner struct {
	Engine *reprise.Engine
	Agent  *reprise.Agent
	Model  Model
	Tools  map[string]Tool // by name; a call of a tool not here fails
	// Permission says what the host's own rules say of a call:
	// reprise.ToolAllow, ToolDeny, ToolAsk, or "" for nothing (a call that
	// nothing decides is left to ask). Nil says nothing of any call.
	Permission func(Call) string
	// Ask asks the user about a call left to ask, with the hooks' reason,
	// and returns "" to run it, else the refusal the model is told. It is
	// called one call at a time. Nil refuses every such call (NoOneToAsk).
	Ask func(ctx context.Context, call Call, reason string) (refusal string)
	// Parallel lets the calls of one answer be decided and run at once:
	// their results are recorded as they come, and the model gets them in
	// the answer's order.
	Parallel bool
	// MaxRequests bounds the model requests of one Run or Resume;
	// DefaultMaxRequests when 0.
	MaxRequests int
	// OnEvent, when set, is told each step, one at a time.
	OnEvent func(Event)

	mu sync.Mutex // serializes Ask and OnEvent
}

// Outcome says how a Run or Resume ended.
type Outcome struct {
	Resumed      bool // Resume found a turn left unfinished, and went on with it
	Requests     int  // the model requests made
	Blocked      bool // a UserPromptSubmit hook blocked the prompt: it was not kept
	Reason       string
	Capped       bool // the Stop hooks were not asked: too many consecutive blocks
	Limited      bool // MaxRequests was reached: the turn waits for an answer
	reprise.Halt      // a hook's "continue": false ended the turn
}

// Run submits prompt to the agent's current session and drives the turn
// it begins to its end. It returns ErrUnfinished while the last turn has
// tool calls without a result, and reprise.ErrAgentBusy while another
// Runner drives the agent's turn, here or in another process.
func (r *Runner) Run(ctx context.Context, prompt string) (*Outcome, error) {
	release, err := r.hold(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	t, err := r.Agent.Turn(ctx)
	if err != nil {
		return nil, err
	}
	if t.Phase == reprise.TurnTools {
		return nil, fmt.Errorf("%w: agent %s: the calls of answer %s have no result; Resume finishes them", ErrUnfinished, r.Agent.ID(), t.Answer)
	}
	pr, err := r.Agent.Prompt(ctx, prompt)
	if err != nil {
		return nil, err
	}
	r.emit(Event{Kind: Prompted, Prompt: pr})
	out := &Outcome{Blocked: pr.Blocked, Reason: pr.Reason, Halt: pr.Halt}
	if pr.Blocked || pr.Halted {
		return out, nil
	}
	return out, r.drive(ctx, out)
}

// Resume drives the turn the log shows unfinished on the agent's current
// session to its end, from where it stands; with none, it does nothing.
func (r *Runner) Resume(ctx context.Context) (*Outcome, error) {
	release, err := r.hold(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	t, err := r.Agent.Turn(ctx)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Resumed: t.Phase != reprise.TurnOver}
	return out, r.drive(ctx, out)
}

// drive takes the turn step by step, each step decided from the log, until
// it is over.
func (r *Runner) drive(ctx context.Context, out *Outcome) error {
	limit := cmp.Or(r.MaxRequests, DefaultMaxRequests)
	var last *reprise.Turn
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		t, err := r.Agent.Turn(ctx)
		if err != nil {
			return err
		}
		if last != nil && same(*last, t) {
			return fmt.Errorf("turn: agent %s: the %s step of answer %s changed nothing in the log", r.Agent.ID(), t.Phase, t.Answer)
		}
		last = &t
		switch t.Phase {
		case reprise.TurnOver:
			return nil
		case reprise.TurnAsk:
			if out.Requests >= limit {
				out.Limited = true
				return nil
			}
			out.Requests++
			if err := r.answer(ctx, t.Session); err != nil {
				return err
			}
		case reprise.TurnTools:
			halt, err := r.tools(ctx, t)
			if err != nil {
				return err
			}
			if halt.Halted {
				out.Halt = halt
			}
		case reprise.TurnStop:
			st, err := r.Agent.Stop(ctx)
			if err != nil {
				return err
			}
			if st == nil {
				return fmt.Errorf("turn: agent %s: the stop was not recorded", r.Agent.ID())
			}
			r.emit(Event{Kind: Stopped, Stop: st})
			out.Capped = out.Capped || st.Capped
			if st.Halted {
				out.Halt = st.Halt
			}
		}
	}
}

// same reports whether two readings of the turn are one: a step between
// them recorded nothing.
func same(a, b reprise.Turn) bool {
	return a.Phase == b.Phase && a.Answer == b.Answer && len(a.Calls) == len(b.Calls) && a.Session == b.Session
}

// answer asks the model for its answer to session id and records it.
func (r *Runner) answer(ctx context.Context, id string) error {
	conv, err := r.Engine.Conversation(ctx, id)
	if err != nil {
		return err
	}
	m, err := r.Model(ctx, inAnswerOrder(conv))
	if err != nil {
		return &ModelError{err}
	}
	if m.Role == "" {
		m.Role = "assistant"
	}
	if m.Role != "assistant" {
		return fmt.Errorf("turn: the model's answer has role %q", m.Role)
	}
	// The answer is paid for: it is recorded even when ctx ends meanwhile.
	stored, err := r.Engine.Append(context.WithoutCancel(ctx), id, m)
	if err != nil {
		return fmt.Errorf("turn: record the answer: %w", err)
	}
	r.emit(Event{Kind: Answered, Answer: &stored})
	return nil
}

// inAnswerOrder returns conv with the tool_results after its last answer
// in the order of the answer's tool_uses, each with the meta messages
// that follow it: calls that ran at once are recorded as they finished.
func inAnswerOrder(conv []reprise.Message) []reprise.Message {
	last := len(conv) - 1
	for last >= 0 && conv[last].Role != "assistant" {
		last--
	}
	if last < 0 {
		return conv
	}
	order := map[string]int{}
	for i, u := range projection.ToolUses(conv[last]) {
		order[u.ID] = i
	}
	var groups [][]reprise.Message
	rest := conv[last+1:]
	for len(rest) > 0 {
		n := 1
		for n < len(rest) && rest[n].IsMeta {
			n++
		}
		groups = append(groups, rest[:n])
		rest = rest[n:]
	}
	key := func(g []reprise.Message) int {
		for _, b := range g[0].Content {
			var r struct {
				ID string `json:"tool_use_id"`
			}
			if b.Type == "tool_result" && json.Unmarshal(b.Raw, &r) == nil {
				if i, ok := order[r.ID]; ok {
					return i
				}
			}
		}
		return len(order) // anything else stays after the results
	}
	slices.SortStableFunc(groups, func(a, b []reprise.Message) int { return cmp.Compare(key(a), key(b)) })
	return slices.Concat(append([][]reprise.Message{conv[:last+1]}, groups...)...)
}

// tools takes the calls of t that have no result through their steps,
// and returns a hook's halt.
func (r *Runner) tools(ctx context.Context, t reprise.Turn) (reprise.Halt, error) {
	if t.Halted {
		return reprise.Halt{Halted: true}, r.notReached(ctx, t.Session, t.Calls)
	}
	if !r.Parallel {
		for i, c := range t.Calls {
			res, halt, err := r.decideAndRun(ctx, c)
			if err == nil && res != nil {
				var h reprise.Halt
				h, err = r.record(ctx, c, res)
				halt = cmp.Or(halt, h)
			}
			if err != nil || halt.Halted {
				if err == nil {
					err = r.notReached(ctx, t.Session, t.Calls[i+1:])
				}
				return halt, err
			}
		}
		return reprise.Halt{}, nil
	}
	type ran struct {
		call reprise.ToolUse
		res  *reprise.ToolResult
		halt reprise.Halt
		err  error
	}
	done := make(chan ran, len(t.Calls))
	for _, c := range t.Calls {
		go func() {
			res, halt, err := r.decideAndRun(ctx, c)
			done <- ran{c, res, halt, err}
		}()
	}
	var (
		halt reprise.Halt
		errs []error
	)
	for range t.Calls {
		d := <-done // recorded as they finish: a crash loses none that did
		if d.halt.Halted && !halt.Halted {
			halt = d.halt
		}
		if d.err != nil || d.res == nil {
			errs = append(errs, d.err)
			continue
		}
		h, err := r.record(ctx, d.call, d.res)
		if h.Halted && !halt.Halted {
			halt = h
		}
		errs = append(errs, err)
	}
	return halt, errors.Join(errs...)
}

// decideAndRun asks PreToolUse about call c, then runs it when it may,
// and returns the result to record: nil when there is none (a deny, whose
// error result PreToolUse recorded; a result already recorded).
func (r *Runner) decideAndRun(ctx context.Context, c reprise.ToolUse) (*reprise.ToolResult, reprise.Halt, error) {
	call := Call{ID: c.ID, Name: c.Name, Input: c.Input}
	perm := ""
	if r.Permission != nil {
		perm = r.Permission(call)
	}
	d, err := r.Agent.PreToolUse(ctx, reprise.ToolCall{ID: c.ID, Name: c.Name, Input: c.Input, Permission: perm})
	if err != nil {
		return nil, reprise.Halt{}, err
	}
	call.Input = d.Input
	r.emit(Event{Kind: Decided, Call: &call, Decision: d})
	tool, known := r.Tools[c.Name]
	switch {
	case d.Resulted || d.Decision == reprise.ToolDeny:
		return nil, d.Halt, nil
	case d.Halted:
		return &reprise.ToolResult{ID: c.ID, Error: NotRun, Refused: true}, d.Halt, nil
	case d.Interrupted && !(known && tool.Repeatable):
		return &reprise.ToolResult{ID: c.ID, Error: Interrupted, Interrupt: true}, d.Halt, nil
	}
	call.Again = d.Interrupted
	if d.Decision == reprise.ToolAsk {
		if refusal := r.confirm(ctx, call, d.Reason); refusal != "" {
			return &reprise.ToolResult{ID: c.ID, Error: refusal, Refused: true}, d.Halt, nil
		}
	}
	if !known {
		return &reprise.ToolResult{ID: c.ID, Error: "No such tool available: " + c.Name}, d.Halt, nil
	}
	began := time.Now()
	res, err := tool.Run(ctx, call)
	if err != nil {
		res = reprise.ToolResult{Error: err.Error(), Interrupt: ctx.Err() != nil}
	}
	res.ID = c.ID
	if res.Duration == 0 {
		res.Duration = time.Since(began)
	}
	return &res, d.Halt, nil
}

// record gives PostToolUse the result of call c.
func (r *Runner) record(ctx context.Context, c reprise.ToolUse, res *reprise.ToolResult) (reprise.Halt, error) {
	fb, err := r.Agent.PostToolUse(ctx, *res)
	if err != nil {
		return reprise.Halt{}, err
	}
	r.emit(Event{Kind: Ran, Call: &Call{ID: c.ID, Name: c.Name, Input: c.Input}, Result: res, Feedback: fb})
	return fb.Halt, nil
}

// notReached gives the calls a halted turn did not reach their error
// tool_results, so that every tool_use of the session has one; no hook
// runs for them. A call whose decision is recorded gets it through
// PostToolUse, the others in one user message.
func (r *Runner) notReached(ctx context.Context, id string, calls []reprise.ToolUse) error {
	m := reprise.Message{Role: "user"}
	for _, c := range calls {
		res := reprise.ToolResult{ID: c.ID, Error: NotRun, Refused: true}
		if c.Decided {
			if _, err := r.Agent.PostToolUse(ctx, res); err != nil {
				return err
			}
		} else {
			raw, err := json.Marshal(map[string]any{"type": "tool_result", "tool_use_id": c.ID, "content": NotRun, "is_error": true})
			if err != nil {
				return err
			}
			m.Content = append(m.Content, reprise.Block{Type: "tool_result", Raw: raw})
		}
		r.emit(Event{Kind: NotReached, Call: &Call{ID: c.ID, Name: c.Name, Input: c.Input}, Result: &res})
	}
	if len(m.Content) == 0 {
		return nil
	}
	if _, err := r.Engine.Append(ctx, id, m); err != nil {
		return fmt.Errorf("turn: record the calls not run: %w", err)
	}
	return nil
}

// confirm asks the host about call, one call at a time.
func (r *Runner) confirm(ctx context.Context, call Call, reason string) string {
	if r.Ask == nil {
		return NoOneToAsk
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Ask(ctx, call, reason)
}

func (r *Runner) emit(ev Event) {
	if r.OnEvent == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.OnEvent(ev)
}

// held keeps apart the Runners of one process on an agent, for stores
// that cannot lock.
var held sync.Map // of holder

type holder struct {
	e  *reprise.Engine
	id string
}

// hold takes the agent's turn for this Runner: in this process, and, on a
// store that locks, across processes; or fails with reprise.ErrAgentBusy.
func (r *Runner) hold(ctx context.Context) (release func(), err error) {
	if r.Engine == nil || r.Agent == nil || r.Model == nil {
		return nil, errors.New("turn: a Runner needs an Engine, an Agent and a Model")
	}
	key := holder{r.Engine, r.Agent.ID()}
	if _, taken := held.LoadOrStore(key, true); taken {
		return nil, fmt.Errorf("%w: agent %s: another Runner drives its turn", reprise.ErrAgentBusy, r.Agent.ID())
	}
	locker, ok := r.Engine.Store().(eventlog.StreamLocker)
	if !ok {
		return func() { held.Delete(key) }, nil
	}
	unlock, err := locker.TryLock(ctx, "turn/"+r.Agent.ID())
	if err != nil {
		held.Delete(key)
		if errors.Is(err, eventlog.ErrBusy) {
			return nil, fmt.Errorf("%w: agent %s: another process drives its turn: %w", reprise.ErrAgentBusy, r.Agent.ID(), err)
		}
		return nil, err
	}
	return func() { unlock(); held.Delete(key) }, nil
}
