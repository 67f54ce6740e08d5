package turn

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/uuid"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// ErrUnfinished is returned by Run while the agent's last turn has tool
// calls without a result, or an answer whose Stop hooks have not run:
// Resume finishes it first.
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

// ModelError is a failed model request. Unless the Runner's policy ends
// the turn on it (Runner.ModelTries, FinalError), the turn waits for an
// answer: Resume asks again.
type ModelError struct{ Err error }

// FinalError is a model error that the host marks final, such as a
// refused key: the turn ends at once with StopFailure, Kind as its
// error. Kind is one of ErrorKinds; "" is "unknown".
type FinalError struct {
	Kind string
	Err  error
}

func (e *FinalError) Error() string { return e.Err.Error() }
func (e *FinalError) Unwrap() error { return e.Err }

// ErrorKinds are the words StopFailure's error takes, as Claude Code
// 2.1.328 names the API errors a turn can end on.
var ErrorKinds = []string{"authentication_failed", "oauth_org_not_allowed", "account_on_hold", "verification_required",
	"billing_error", "rate_limit", "overloaded", "invalid_request", "model_not_found", "server_error", "unknown",
	"max_output_tokens", "cloud_credential_error"}

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
	// Cwd is the working directory of the session the call is in, where a
	// tool that touches files or runs commands works; "" when the session
	// has none.
	Cwd string
	// Subagent, in a Step's call of the Agent tool under
	// StepInput.Subagents, is the agent of the subagent the call started.
	Subagent string
}

// Tool is a tool the model may call.
type Tool struct {
	// Run runs call. Its result is recorded as the call's tool_result (the
	// Runner fills in ID, and Duration when it is 0; an Output that is not
	// JSON is taken as text); an error is recorded as the call's failure,
	// its text what the model is told. A panic is the caller's, or with
	// Parallel an error of the step.
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
	// Subagent is the agent_id of the subagent whose step this is; "" for
	// the Runner's own agent.
	Subagent string
}

// Runner drives the turns of one agent, on its current session (make one
// current first: Agent.New or Start). Engine, Agent, Model and Tools are
// required; the rest may be left zero, but note that with neither
// Permission nor Ask (and no hook that allows it) no call runs: a call
// nothing decides is left to ask, and nobody is asked.
type Runner struct {
	Engine *reprise.Engine
	Agent  *reprise.Agent
	Model  Model
	Tools  map[string]Tool // by name; a call of a tool not here fails
	// Permission says what the host's own rules say of a call:
	// hookexec.Allow, Deny, Ask, or "" for nothing (a call that
	// nothing decides is left to ask). Nil says nothing of any call.
	Permission func(Call) string
	// Ask asks the user about a call left to ask, with the hooks' reason,
	// and returns "" to run it, else the refusal the model is told
	// (reprise.UserRefused, or reprise.UserRefusedSaying with the user's
	// words, are Claude Code's); the answer is recorded (Agent.AnswerAsk) before the call runs, so a call
	// the user answered is not asked about again. It is called one call at
	// a time. Nil refuses every such call (NoOneToAsk).
	Ask func(ctx context.Context, call Call, reason string) (refusal string)
	// Parallel lets the calls of one answer be decided and run at once:
	// their results are recorded as they come, and the model gets them in
	// the answer's order.
	Parallel bool
	// MaxRequests bounds the model requests of one Run or Resume;
	// DefaultMaxRequests when 0.
	MaxRequests int
	// ModelTries is how many times in a row one model request may fail
	// before the turn ends with StopFailure (error "unknown"), in place of
	// Stop, as Claude Code ends a turn on an API error it gives up on. 0
	// leaves the turn waiting on the first failure (Run and Resume return
	// the ModelError; Resume asks again), unless the Model's error is a
	// FinalError, which ends the turn at once. Tries follow each other at
	// once: a Model that wants a pause between them waits itself.
	ModelTries int
	// Subagents are the types of subagent the model may hand work to
	// with the Agent tool (Task, its former name), by subagent_type: a
	// call of it runs a turn of its own on a subagent
	// (Agent.StartSubagent) and its final answer is the call's result.
	// Nil leaves Agent to Tools, as any other tool.
	Subagents map[string]Subagent
	// OnEvent, when set, is told each step, one at a time, the steps of
	// subagents among them.
	OnEvent func(Event)

	mu       sync.Mutex // serializes Ask and OnEvent
	subagent bool       // the Runner of a subagent's turn, which another Runner started
	external *external  // set by Step: the host runs the model and the tools, a step at a time
}

// Outcome says how a Run or Resume ended.
type Outcome struct {
	Resumed  bool // Resume found a turn left unfinished, and went on with it
	Requests int  // the model requests made
	Blocked  bool // a UserPromptSubmit hook blocked the prompt: it was not kept
	Reason   string
	Capped   bool // the Stop hooks were not asked: too many consecutive blocks
	Limited  bool // MaxRequests was reached: the turn waits for an answer
	// StopFailure is the error kind the turn ended on, with StopFailure's
	// hooks run in place of Stop's (ModelTries, FinalError); Failure is
	// the model's error. "" and nil otherwise.
	StopFailure  string
	Failure      error
	reprise.Halt // a hook's "continue": false ended the turn
}

// Run submits prompt to the agent's current session and drives the turn
// it begins to its end. It returns ErrUnfinished while the last turn has
// tool calls without a result or its Stop hooks to run, and
// reprise.ErrAgentBusy while another Runner drives the agent's turn, here
// or in another process on a shared store. A turn that waits for an answer
// (after a ModelError, or MaxRequests) takes the new prompt with it.
func (r *Runner) Run(ctx context.Context, prompt string) (_ *Outcome, err error) {
	ctx, release, t, err := r.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { err = lost(ctx, err); release() }()
	switch t.Phase {
	case reprise.TurnTools:
		return nil, fmt.Errorf("%w: agent %s: the calls of answer %s have no result; Resume finishes them", ErrUnfinished, r.Agent.ID(), t.Answer)
	case reprise.TurnStop:
		return nil, fmt.Errorf("%w: agent %s: the Stop hooks of answer %s have not run; Resume runs them", ErrUnfinished, r.Agent.ID(), t.Answer)
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
func (r *Runner) Resume(ctx context.Context) (_ *Outcome, err error) {
	ctx, release, t, err := r.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { err = lost(ctx, err); release() }()
	out := &Outcome{Resumed: t.Phase != reprise.TurnOver}
	return out, r.drive(ctx, out)
}

// begin takes the agent's turn for this Runner and reads where it stands.
// The turn goes on under the context it returns, which ends if the turn's
// lock is lost.
func (r *Runner) begin(ctx context.Context) (held context.Context, release func(), t reprise.Turn, err error) {
	if held, release, err = r.hold(ctx); err != nil {
		return ctx, nil, t, err
	}
	if t, err = r.Agent.Turn(held); err != nil {
		release()
		return ctx, nil, t, err
	}
	return held, release, t, nil
}

// drive takes the turn step by step, each step decided from the log, until
// it is over.
func (r *Runner) drive(ctx context.Context, out *Outcome) error {
	limit := cmp.Or(r.MaxRequests, DefaultMaxRequests)
	var last *reprise.Turn
	tries := 0 // consecutive failures of the model request in flight
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
		switch Next(t) {
		case Over:
			if t.Answer == "" || out.Limited || r.subagent {
				return nil // a subagent waits on nobody: its parent goes on
			}
			// Waiting on the user, once per answer the turn ended on.
			return r.notify(ctx, "idle-"+t.Answer, IdlePrompt, "Claude is waiting for your input")
		case Ask:
			// The answer's PostToolBatch, once: a process that died after
			// the last result may not have fired it.
			b, err := r.Agent.ToolBatch(ctx)
			if err != nil {
				return err
			}
			if b != nil && !b.AlreadyRecorded && (b.Blocked || b.Halted) {
				out.Halt = reprise.Halt{Halted: true, StopReason: cmp.Or(b.StopReason, b.Reason)}
				continue // the log now ends the turn
			}
			if out.Requests >= limit {
				out.Limited = true
				return nil
			}
			out.Requests++
			err = r.answer(ctx, t.Session)
			var failed *ModelError
			if !errors.As(err, &failed) {
				if err != nil {
					return err
				}
				tries = 0
				continue
			}
			tries++
			var final *FinalError
			switch {
			case errors.As(failed.Err, &final):
				return r.stopFailure(ctx, out, cmp.Or(final.Kind, "unknown"), failed)
			case r.ModelTries > 0 && tries >= r.ModelTries:
				return r.stopFailure(ctx, out, "unknown", failed)
			case r.ModelTries > 0:
				last = nil // the failed request recorded nothing: try it again
				continue
			}
			return err
		case Unrun:
			if err := r.notReached(ctx, t.Session, t.Calls); err != nil {
				return err
			}
			out.Halt = reprise.Halt{Halted: true}
		case Tools:
			halt, err := r.tools(ctx, t)
			if err != nil {
				return err
			}
			if halt.Halted {
				out.Halt = halt
			}
			if r.external != nil && r.external.waiting() {
				return nil // the host runs the calls, or asks its user
			}
		case Stop:
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

// stopFailure ends the turn on failed, a model error of kind, with
// StopFailure's hooks in place of Stop's, recorded once for the place in
// the conversation where the model failed: the log then shows the turn
// over.
func (r *Runner) stopFailure(ctx context.Context, out *Outcome, kind string, failed *ModelError) error {
	conv, err := r.Agent.ModelView(ctx)
	if err != nil {
		return err
	}
	if len(conv) == 0 {
		return failed
	}
	lastAnswer := ""
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Role == "assistant" {
			lastAnswer = projection.FirstText(conv[i])
			break
		}
	}
	fields, _ := json.Marshal(map[string]string{"error": kind, "error_details": failed.Err.Error(),
		"last_assistant_message": lastAnswer}) // strings always marshal
	if _, err := r.Agent.Fire(ctx, schema.HookStopFailure, projection.StopFailureFireID(conv[len(conv)-1].UUID), fields); err != nil {
		return fmt.Errorf("turn: %w; its StopFailure: %w", failed, err)
	}
	out.StopFailure, out.Failure = kind, failed
	return nil
}

// same reports whether two readings of the turn are one: a step between
// them recorded nothing.
func same(a, b reprise.Turn) bool {
	return a.Phase == b.Phase && a.Answer == b.Answer && len(a.Calls) == len(b.Calls) && a.Session == b.Session
}

// answer asks the model for its answer to session id and records it.
func (r *Runner) answer(ctx context.Context, id string) error {
	var (
		m       reprise.Message
		refused []reprise.ToolResult
	)
	// What the model gets: a PostToolUse hook's updatedToolOutput in
	// place of the tool's result.
	ask := func(conv []reprise.Message) error {
		var err error
		if m, err = r.Model(ctx, inAnswerOrder(conv)); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("turn: model: %w", ctx.Err())
			}
			return &ModelError{err}
		}
		if m.Role == "" {
			m.Role = "assistant"
		}
		if m.Role != "assistant" {
			return fmt.Errorf("turn: the model's answer has role %q", m.Role)
		}
		m, refused = renameReused(conv, m)
		return nil
	}
	var err error
	if r.external != nil {
		// The host's model keeps nothing of conv and returns at once:
		// the conversation is read in place, not copied at every step.
		err = r.Agent.ReadModelView(ctx, ask)
	} else {
		var conv []reprise.Message
		if conv, err = r.Agent.ModelView(ctx); err == nil {
			err = ask(conv)
		}
	}
	if err != nil {
		return err
	}
	// The answer is paid for: it is recorded even when ctx ends meanwhile.
	wctx := context.WithoutCancel(ctx)
	if len(refused) == 0 {
		stored, err := r.Engine.Append(wctx, id, m)
		if err != nil {
			return fmt.Errorf("turn: record the answer: %w", err)
		}
		r.emit(Event{Kind: Answered, Answer: &stored})
		return nil
	}
	// The calls whose ids were taken get their error results in the same
	// append as the answer: no process runs them.
	stored, err := r.Engine.Buffer(wctx, id, m)
	if err == nil {
		_, err = r.Engine.Buffer(wctx, id, resultsMessage(refused))
	}
	if err == nil {
		_, err = r.Engine.Save(wctx, id)
	}
	if err != nil {
		return fmt.Errorf("turn: record the answer: %w", err)
	}
	r.emit(Event{Kind: Answered, Answer: &stored})
	for _, res := range refused {
		r.emit(Event{Kind: NotReached, Call: &Call{ID: res.ID}, Result: &res})
	}
	return nil
}

// renameReused returns answer m with each tool_use whose id cannot be
// recorded (none, one conv holds, or one used earlier in m) given a new
// id, and for each such call the error result the model is told: the
// session would otherwise hold a conversation the Messages API refuses.
func renameReused(conv []reprise.Message, m reprise.Message) (reprise.Message, []reprise.ToolResult) {
	uses := projection.ToolUsesWithEmpty(m)
	if len(uses) == 0 {
		return m, nil
	}
	held := heldIDs(conv, uses)
	var refused []reprise.ToolResult
	seen := map[string]bool{}
	for _, u := range uses {
		why := ""
		switch {
		case u.ID == "":
			why = "The tool_use has no id."
		case held[u.ID]:
			why = fmt.Sprintf("The tool_use id %q was used by an earlier call.", u.ID)
		case seen[u.ID]:
			why = fmt.Sprintf("The tool_use id %q is used twice in this answer.", u.ID)
		}
		seen[u.ID] = true
		if why == "" {
			continue
		}
		if len(refused) == 0 {
			m.Content = slices.Clone(m.Content)
		}
		fresh := "toolu_" + strings.ReplaceAll(newID(), "-", "")
		m.Content[u.Block] = reprise.ToolUseBlock(fresh, u.Name, u.Input)
		refused = append(refused, reprise.ToolResult{ID: fresh, Error: why})
	}
	return m, refused
}

// heldIDs returns which of the ids of uses conv's tool_use blocks hold.
// A block is decoded only when its JSON may hold one of them: one that
// holds none of them between quotes, and no escape, cannot. An id that
// JSON must escape turns that test off.
func heldIDs(conv []reprise.Message, uses []projection.ToolUse) map[string]bool {
	var quoted [][]byte
	every := false
	for _, u := range uses {
		if u.ID != "" {
			quoted = append(quoted, []byte(`"`+u.ID+`"`))
			every = every || strings.ContainsFunc(u.ID, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' })
		}
	}
	held := map[string]bool{}
	if len(quoted) == 0 {
		return held
	}
	mayHold := func(raw []byte) bool {
		if every || bytes.IndexByte(raw, '\\') >= 0 {
			return true
		}
		return slices.ContainsFunc(quoted, func(q []byte) bool { return bytes.Contains(raw, q) })
	}
	for _, c := range conv {
		if !slices.ContainsFunc(c.Content, func(b reprise.Block) bool { return b.Type == "tool_use" && mayHold(b.Raw) }) {
			continue
		}
		for _, u := range projection.ToolUses(c) {
			held[u.ID] = true
		}
	}
	return held
}

// newID returns a random UUID.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return uuid.V4(b)
}

// inAnswerOrder returns conv with the tool_results after each answer in
// the order of the answer's tool_uses, each with the meta messages that
// follow it: calls that ran at once are recorded as they finished, and the
// model gets every request's prefix the same. A conversation already in
// that order, as one whose calls ran one at a time always is, is returned
// itself, not copied.
func inAnswerOrder(conv []reprise.Message) []reprise.Message {
	var out []reprise.Message // made at the first answer whose results are out of order
	for i := 0; i < len(conv); {
		next, rest, moved := i+1, []reprise.Message(nil), false
		if conv[i].Role == "assistant" {
			for next < len(conv) && conv[next].Role != "assistant" {
				next++
			}
			rest, moved = resultsInOrder(conv[i], conv[i+1:next])
		}
		if moved && out == nil {
			out = append(make([]reprise.Message, 0, len(conv)), conv[:i]...)
		}
		if out != nil {
			out = append(append(out, conv[i]), rest...)
		}
		i = next
	}
	if out == nil {
		return conv
	}
	return out
}

// resultsInOrder returns rest, the messages after answer up to the next
// one, with the groups that hold its calls' tool_results (each result and
// the meta messages after it) in the order of its tool_uses, and anything
// else after them; moved reports whether that order is not rest's own.
func resultsInOrder(answer reprise.Message, rest []reprise.Message) (ordered []reprise.Message, moved bool) {
	if len(answer.Content) < 2 || len(rest) < 2 {
		return rest, false // nothing to order: no call is decoded
	}
	calls := 0
	for _, b := range answer.Content {
		if b.Type == "tool_use" {
			calls++
		}
	}
	if calls < 2 {
		return rest, false
	}
	order := map[string]int{}
	for i, u := range projection.ToolUses(answer) {
		order[u.ID] = i
	}
	if len(order) < 2 {
		return rest, false
	}
	type group struct {
		msgs []reprise.Message
		key  int // the place of its call in the answer; after them all for anything else
	}
	var groups []group
	all := rest
	for len(rest) > 0 {
		n := 1
		for n < len(rest) && rest[n].IsMeta {
			n++
		}
		g := group{msgs: rest[:n], key: len(order)}
		for _, id := range projection.ToolResults(rest[0]) {
			if i, ok := order[id]; ok {
				g.key = i
				break
			}
		}
		groups = append(groups, g)
		rest = rest[n:]
	}
	byKey := func(a, b group) int { return cmp.Compare(a.key, b.key) }
	if slices.IsSortedFunc(groups, byKey) {
		return all, false
	}
	slices.SortStableFunc(groups, byKey)
	out := make([]reprise.Message, 0, len(all))
	for _, g := range groups {
		out = append(out, g.msgs...)
	}
	return out, true
}

// tools takes the calls of t that have no result through their steps,
// and returns a hook's halt.
func (r *Runner) tools(ctx context.Context, t reprise.Turn) (reprise.Halt, error) {
	info, err := r.Engine.Session(ctx, t.Session)
	if err != nil {
		return reprise.Halt{}, err
	}
	cwd := info.Cwd
	seen := map[string]bool{}
	if !r.Parallel {
		for i, c := range t.Calls {
			st := r.decideAndRun(ctx, c, seen, cwd)
			halt, err := r.finish(ctx, t.Session, c, st)
			if err != nil || halt.Halted {
				if err == nil {
					err = r.notReached(ctx, t.Session, t.Calls[i+1:])
				}
				return halt, err
			}
		}
		return reprise.Halt{}, nil
	}
	type done struct {
		call reprise.ToolUse
		step
	}
	results := make(chan done, len(t.Calls))
	for _, c := range t.Calls {
		unusable := usable(c, seen) // before any goroutine reads seen
		go func() {
			defer func() {
				if p := recover(); p != nil {
					results <- done{c, step{err: fmt.Errorf("turn: tool %s of call %s panicked: %v", c.Name, c.ID, p)}}
				}
			}()
			if unusable != "" {
				results <- done{c, step{unusable: unusable}}
				return
			}
			results <- done{c, r.decideAndRun(ctx, c, nil, cwd)}
		}()
	}
	var (
		halt reprise.Halt
		errs []error
	)
	for range t.Calls {
		d := <-results // recorded as they finish: a crash loses none that did
		h, err := r.finish(ctx, t.Session, d.call, d.step)
		if h.Halted && !halt.Halted {
			halt = h
		}
		errs = append(errs, err)
	}
	return halt, errors.Join(errs...)
}

// step is what became of a call before its result is recorded: the result
// to record (nil when there is none: a deny, whose error result PreToolUse
// recorded), a hook's halt, or why the call's tool_use id cannot be used.
type step struct {
	res      *reprise.ToolResult
	halt     reprise.Halt
	unusable string
	err      error
	// pending, under Step, is a call the host is to run (or, with asking,
	// to ask its user about): nothing is recorded for it yet.
	pending *Call
	asking  string // the hooks' reason, for a call left to ask
}

// usable says why call c cannot be taken through its steps, "" when it
// can, and marks its id seen: its tool_use id must be an id, and not one
// the answer used already.
func usable(c reprise.ToolUse, seen map[string]bool) string {
	defer func() { seen[c.ID] = true }()
	if err := reprise.ValidateID(c.ID); err != nil {
		return fmt.Sprintf("The tool_use id %q cannot be used: %v", c.ID, err)
	}
	if seen[c.ID] {
		return fmt.Sprintf("The tool_use id %q is used twice in this answer.", c.ID)
	}
	return ""
}

// decideAndRun asks PreToolUse about call c, then runs it when it may, in
// cwd, its session's working directory.
// With seen, it first checks that c's id is usable.
func (r *Runner) decideAndRun(ctx context.Context, c reprise.ToolUse, seen map[string]bool, cwd string) step {
	if seen != nil {
		if why := usable(c, seen); why != "" {
			return step{unusable: why}
		}
	}
	call := Call{ID: c.ID, Name: c.Name, Input: c.Input, Cwd: cwd}
	perm := ""
	if r.Permission != nil {
		perm = r.Permission(call)
	}
	if perm != "" && perm != hookexec.Allow && perm != hookexec.Deny && perm != hookexec.Ask {
		return step{err: fmt.Errorf("turn: Permission says %q of call %s, none of allow, deny, ask", perm, c.ID)}
	}
	d, err := r.Agent.PreToolUse(ctx, reprise.ToolCall{ID: c.ID, Name: c.Name, Input: c.Input, Permission: perm})
	if errors.Is(err, reprise.ErrBadTool) {
		return step{unusable: fmt.Sprintf("The tool_use id %q cannot be used: %v", c.ID, err)}
	}
	if err != nil {
		return step{err: err}
	}
	if d.Resulted || d.Decision == hookexec.Deny && c.Decided {
		// A deny this answer's call got has its error result in the
		// same append: a denied call without one is an earlier call's.
		// Its result is recorded, but not in this answer: another call
		// used the id first.
		return step{unusable: fmt.Sprintf("The tool_use id %q was used by an earlier call.", c.ID)}
	}
	tool, known := r.tool(c.Name)
	call.Input, call.Again = d.Input, d.Interrupted && known && (tool.Repeatable || r.external.hasResult(c.ID))
	r.emit(Event{Kind: Decided, Call: &call, Decision: d})
	switch {
	case d.Decision == hookexec.Deny:
		return step{halt: d.Halt}
	case d.Halted:
		return step{res: &reprise.ToolResult{ID: c.ID, Error: NotRun, Refused: true}, halt: d.Halt}
	case d.Interrupted && !call.Again:
		return step{res: &reprise.ToolResult{ID: c.ID, Error: Interrupted, Interrupt: true}, halt: d.Halt}
	}
	if d.Decision == hookexec.Ask {
		refusal, err := r.confirm(ctx, call, d.Reason)
		if errors.Is(err, errPending) {
			return step{pending: &call, asking: cmp.Or(d.Reason, "ask"), halt: d.Halt}
		}
		if err != nil {
			return step{err: err}
		}
		a, err := r.Agent.AnswerAsk(context.WithoutCancel(ctx), reprise.ToolAnswer{ID: c.ID, Allow: refusal == "", Refusal: refusal})
		if err != nil {
			return step{err: err}
		}
		if a.Decision != hookexec.Allow {
			// The refusal is the call's result, recorded with it.
			res := reprise.ToolResult{ID: c.ID, Error: a.Reason, Refused: true}
			r.emit(Event{Kind: Ran, Call: &call, Result: &res, Feedback: &reprise.ToolFeedback{}})
			return step{halt: d.Halt}
		}
		call.Input = a.Input
	}
	if !known {
		return step{res: &reprise.ToolResult{ID: c.ID, Error: "No such tool available: " + c.Name}, halt: d.Halt}
	}
	began := time.Now()
	res, err := tool.Run(ctx, call)
	if errors.Is(err, errPending) {
		return step{pending: &call, halt: d.Halt}
	}
	if err != nil {
		res = reprise.ToolResult{Error: err.Error(), Interrupt: ctx.Err() != nil}
	}
	res.ID = c.ID
	if res.Duration == 0 {
		res.Duration = time.Since(began)
	}
	if len(res.Output) > 0 && !json.Valid(res.Output) {
		// Plain text: the model reads it as a string.
		res.Output, _ = json.Marshal(string(res.Output))
	}
	return step{res: &res, halt: d.Halt}
}

// recordGrace is how long a turn whose context ended still gives the hooks
// after a call whose result it records.
const recordGrace = 5 * time.Second

// finish records what became of call c: its result through PostToolUse,
// or, for a call whose id cannot be used, an error tool_result without
// hooks. A result is recorded even when ctx ended meanwhile (what the tool
// did is known), its hooks then given recordGrace.
func (r *Runner) finish(ctx context.Context, session string, c reprise.ToolUse, st step) (reprise.Halt, error) {
	switch {
	case st.err != nil:
		return st.halt, st.err
	case st.unusable != "":
		res := reprise.ToolResult{ID: c.ID, Error: st.unusable}
		r.emit(Event{Kind: NotReached, Call: &Call{ID: c.ID, Name: c.Name, Input: c.Input}, Result: &res})
		return st.halt, r.appendResults(ctx, session, []reprise.ToolResult{res})
	case st.pending != nil:
		r.external.wait(*st.pending, st.asking)
		return st.halt, nil
	case st.res == nil:
		return st.halt, nil
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), recordGrace)
		defer cancel()
	}
	fb, err := r.Agent.PostToolUse(ctx, *st.res)
	if err != nil {
		return st.halt, err
	}
	r.emit(Event{Kind: Ran, Call: &Call{ID: c.ID, Name: c.Name, Input: c.Input}, Result: st.res, Feedback: fb})
	return cmp.Or(st.halt, fb.Halt), nil
}

// notReached gives the calls a halted turn did not reach their error
// tool_results, so that every tool_use of the session has one; no hook
// runs for them. A call whose decision is recorded gets it through
// PostToolUse, the others in one user message.
func (r *Runner) notReached(ctx context.Context, id string, calls []reprise.ToolUse) error {
	var raw []reprise.ToolResult
	for _, c := range calls {
		res := reprise.ToolResult{ID: c.ID, Error: NotRun, Refused: true}
		if c.Decided {
			if _, err := r.Agent.PostToolUse(ctx, res); err != nil {
				return err
			}
		} else {
			raw = append(raw, res)
		}
		r.emit(Event{Kind: NotReached, Call: &Call{ID: c.ID, Name: c.Name, Input: c.Input}, Result: &res})
	}
	return r.appendResults(ctx, id, raw)
}

// appendResults appends the error tool_results of calls that no hook
// runs for, in one user message of session id.
func (r *Runner) appendResults(ctx context.Context, id string, results []reprise.ToolResult) error {
	if len(results) == 0 {
		return nil
	}
	if _, err := r.Engine.Append(context.WithoutCancel(ctx), id, resultsMessage(results)); err != nil {
		return fmt.Errorf("turn: record the calls not run: %w", err)
	}
	return nil
}

// resultsMessage is the user message with the error tool_results of
// results, calls that no hook runs for.
func resultsMessage(results []reprise.ToolResult) reprise.Message {
	m := reprise.Message{Role: "user"}
	for _, res := range results {
		raw, _ := json.Marshal(map[string]any{"type": "tool_result", "tool_use_id": res.ID, "content": res.Error, "is_error": true}) // strings always marshal
		m.Content = append(m.Content, reprise.Block{Type: "tool_result", Raw: raw})
	}
	return m
}

// confirm asks the host about call, one call at a time, after its
// Notification hooks (permission_prompt) have run, as Claude Code runs
// them when it waits on the user.
func (r *Runner) confirm(ctx context.Context, call Call, reason string) (string, error) {
	if r.external != nil {
		refusal, given := r.external.answer(call.ID)
		if !given {
			// The host asks its user, once the Notification has run.
			if err := r.notify(ctx, "ask-"+call.ID, PermissionPrompt, "Claude needs your permission to use "+call.Name); err != nil {
				return "", err
			}
			return "", errPending
		}
		return refusal, nil
	}
	if r.Ask == nil {
		return NoOneToAsk, nil
	}
	if err := r.notify(ctx, "ask-"+call.ID, PermissionPrompt, "Claude needs your permission to use "+call.Name); err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Ask(ctx, call, reason), nil
}

// The notification types the Runner fires Notification with, and the
// messages Claude Code 2.1.328 gives them.
const (
	PermissionPrompt = "permission_prompt" // before Ask: "Claude needs your permission to use TOOL"
	IdlePrompt       = "idle_prompt"       // a turn ended: "Claude is waiting for your input"
)

// notify fires Notification of kind with message, once under fire id
// "notify-"+id; nothing is recorded when no hook matches.
func (r *Runner) notify(ctx context.Context, id, kind, message string) error {
	fields, _ := json.Marshal(map[string]string{"message": message, "notification_type": kind}) // strings always marshal
	_, err := r.Agent.Fire(ctx, schema.HookNotification, "notify-"+id, fields, reprise.FireOnlyWithHooks())
	if err != nil {
		return fmt.Errorf("turn: Notification %s: %w", kind, err)
	}
	return nil
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
// The context it returns ends when the lock is lost (its database session
// ended): another process may then take the turn, and this one stops at
// its next step.
func (r *Runner) hold(ctx context.Context) (_ context.Context, release func(), err error) {
	if r.Engine == nil || r.Agent == nil || r.Model == nil {
		return nil, nil, errors.New("turn: a Runner needs an Engine, an Agent and a Model")
	}
	key := holder{r.Engine, r.Agent.ID()}
	if _, taken := held.LoadOrStore(key, true); taken {
		return nil, nil, fmt.Errorf("%w: agent %s: another Runner drives its turn", reprise.ErrAgentBusy, r.Agent.ID())
	}
	locker, ok := r.Engine.Store().(eventlog.StreamLocker)
	if !ok {
		return ctx, func() { held.Delete(key) }, nil
	}
	ctx, unlock, err := eventlog.Hold(ctx, locker, "turn/"+r.Agent.ID())
	if err != nil {
		held.Delete(key)
		if errors.Is(err, eventlog.ErrBusy) {
			return nil, nil, fmt.Errorf("%w: agent %s: another process drives its turn: %w", reprise.ErrAgentBusy, r.Agent.ID(), err)
		}
		return nil, nil, err
	}
	return ctx, func() { unlock(); held.Delete(key) }, nil
}

// lost adds to err, the error of a turn held under ctx, that the turn's
// lock was lost, when that is what stopped it.
func lost(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, eventlog.ErrLockLost) && !errors.Is(err, eventlog.ErrLockLost) {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}
