package reprise

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// DefaultSubagentType is the subagent_type of an Agent call that names
// none, as in Claude Code.
const DefaultSubagentType = "general-purpose"

// DefaultMaxSubagentDepth is how deep subagents nest by default: as in
// Claude Code 2.1.328, a subagent of depth 3 starts none.
const DefaultMaxSubagentDepth = 3

// ErrNestedSubagent is returned by StartSubagent on a subagent at the
// nesting limit (Options.MaxSubagentDepth).
var ErrNestedSubagent = errors.New("reprise: subagent nesting limit reached")

// ErrBadSubagent is returned by StartSubagent for a call without a prompt,
// for a call the agent's current session has not allowed, or when the
// subagent's session is found linked to another call.
var ErrBadSubagent = errors.New("reprise: bad subagent call")

// SubagentCall is a call of the Agent tool (Task, in Claude Code's older
// words): the model hands Prompt to a subagent of Type.
type SubagentCall struct {
	ToolUseID   string // the call's tool_use id in the parent's session
	Type        string // its subagent_type; DefaultSubagentType when empty
	Description string
	Prompt      string
}

// SubagentID is the agent_id of the subagent that the Agent call
// toolUseID of session starts: the same in every process, so that one
// call starts one subagent, however often it is asked to.
func SubagentID(session, toolUseID string) string {
	sum := sha256.Sum256([]byte(session + "\x00" + toolUseID))
	return "a" + hex.EncodeToString(sum[:8])
}

// SubagentSession is the id of the session, and of the agent that drives
// it, of the subagent with agentID: agent-<agent_id>, as Claude Code
// names the subagent's transcript.
func SubagentSession(agentID string) string { return "agent-" + agentID }

// StartSubagent starts the subagent of Agent call c of the agent's current
// session, once: its session, linked to the call (schema.Subagent) and
// holding c.Prompt as its first message, and its own agent, which drives
// that session (its own turn and lock, so that the subagents of one answer
// run at once) and whose start runs SubagentStart hooks, never
// SessionStart's; its turn then runs as any other (turn.Runner), and its
// Stop runs SubagentStop hooks, never Stop's. The call must be allowed
// first (PreToolUse, AnswerAsk): a subagent is what the tool does. Asked
// again for the same call, in any process, it returns the same agent and
// starts nothing: what a dead process began is rolled forward. A
// subagent may start subagents of its own, one depth deeper each, down to
// Options.MaxSubagentDepth (ErrNestedSubagent past it), as in Claude
// Code.
//
// Inside a subagent, every hook is told the parent's session_id and
// transcript_path, as in Claude Code; SubagentStart and SubagentStop
// hooks are also told the subagent's agent_id and agent_type.
func (a *Agent) StartSubagent(ctx context.Context, c SubagentCall) (*Agent, error) {
	if err := checkToolID(c.ToolUseID); err != nil {
		return nil, err
	}
	if strings.TrimSpace(c.Prompt) == "" {
		return nil, fmt.Errorf("%w: call %s has no prompt", ErrBadSubagent, c.ToolUseID)
	}
	if c.Type == "" {
		c.Type = DefaultSubagentType
	}
	a.mu.Lock()
	parent, call, prompt := a.view.Current, a.view.Tools[c.ToolUseID], a.view.LastPromptID
	a.mu.Unlock()
	if parent == "" {
		return nil, fmt.Errorf("%w: agent %s", ErrNoCurrentSession, a.id)
	}
	ps, err := a.e.session(ctx, parent)
	if err != nil {
		return nil, err
	}
	ps.mu.Lock()
	cwd, depth := ps.conv.Cwd, 0
	if sub := ps.conv.Subagent; sub != nil {
		depth = max(sub.Depth, 1) // a link without one is of the first depth
	}
	ps.mu.Unlock()
	switch {
	case depth >= a.e.subagentDepth:
		return nil, fmt.Errorf("%w (depth %d of %d): complete this task directly", ErrNestedSubagent, depth, a.e.subagentDepth)
	case call == nil || call.Decision != hookexec.Allow || call.Session != parent:
		return nil, fmt.Errorf("%w: call %s of session %s is not allowed to run", ErrBadSubagent, c.ToolUseID, parent)
	}
	link := &schema.Subagent{Session: parent, ToolUseID: c.ToolUseID, AgentID: SubagentID(parent, c.ToolUseID),
		Type: c.Type, Description: c.Description, Depth: depth + 1, PromptID: prompt}
	id := SubagentSession(link.AgentID)
	_, err = a.e.createSession(ctx, &schema.SessionCreated{ID: id, Cwd: cwd, Subagent: link})
	if err != nil && !errors.Is(err, ErrSessionExists) {
		return nil, err
	}
	s, err := a.e.session(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	found, empty := s.conv.Subagent, len(s.conv.Messages) == 0
	s.mu.Unlock()
	if found == nil || found.Session != parent || found.ToolUseID != c.ToolUseID {
		return nil, fmt.Errorf("%w: session %s is not the subagent of call %s", ErrBadSubagent, id, c.ToolUseID)
	}
	if empty {
		// A process that died between the two appends left no prompt.
		if _, err := a.e.Append(ctx, id, Message{Role: "user", Content: []Block{{Type: "text", Text: c.Prompt}}}); err != nil {
			return nil, err
		}
	}
	child, err := a.e.Agent(ctx, id)
	if err != nil {
		return nil, err
	}
	if child.Current() != id {
		if _, err := child.Start(ctx, id); err != nil {
			return nil, err
		}
	}
	return child, nil
}

// runSubagentHooks runs the SubagentStart or SubagentStop hooks of eff on
// subagent sub's session, whose transcript is own: in is what every hook
// is told (the parent's session and transcript), and the event's own
// fields are added as Claude Code sends them.
func (a *Agent) runSubagentHooks(ctx context.Context, eff lifecycle.RunHooks, sub *schema.Subagent, hooks []hookexec.Hook, in hookexec.EventInput, own string, env hookexec.CommandEnv) lifecycle.HooksRan {
	fields := map[string]any{}
	if sub != nil {
		in.AgentID, in.AgentType = sub.AgentID, sub.Type // and Go hooks get them typed
	}
	in.PermissionMode = "" // SubagentStart has none in Claude Code
	if eff.Event == schema.HookSubagentStop {
		in.PermissionMode = cmp.Or(a.e.permissionMode, hookexec.DefaultPermissionMode)
		fields["stop_hook_active"], fields["agent_transcript_path"] = eff.StopActive, own
		fields["last_assistant_message"] = eff.FinalMessage
	}
	in.Fields, _ = json.Marshal(fields) // strings and a bool always marshal
	return a.runEvent(ctx, eff.Event, "subagent-"+a.e.newID(), eff.Session, hooks, in, env)
}

// SubagentInfo is one subagent of a session: its session, the call that
// started it, and where its turn stands.
type SubagentInfo struct {
	Session projection.SessionInfo // Session.Subagent links it to its call
	Turn    Turn                   // of the subagent's own agent
	// Resulted says that the parent's session holds the call's
	// tool_result: the parent has the subagent's answer.
	Resulted bool
}

// Subagents returns the subagents that the Agent calls of session id
// started, in the order of the calls; a call whose subagent never started
// (denied, or not reached) has none.
func (e *Engine) Subagents(ctx context.Context, id string) ([]SubagentInfo, error) {
	children, results, err := e.children(ctx, id)
	if err != nil {
		return nil, err
	}
	subs := make([]SubagentInfo, 0, len(children))
	for _, info := range children {
		sid := info.ID
		// Read, not loaded: a view rolls nothing forward.
		view := projection.NewAgent(sid)
		if err := e.store.ReadStream(ctx, projection.AgentStream(sid), 1, view.Apply); err != nil {
			return nil, err
		}
		cs, err := e.session(ctx, sid)
		if err != nil {
			return nil, err
		}
		cs.mu.Lock()
		t := projection.TurnOf(sid, cs.conv.View(), view)
		cs.mu.Unlock()
		subs = append(subs, SubagentInfo{Session: info, Turn: t, Resulted: results[info.Subagent.ToolUseID]})
	}
	return subs, nil
}

// children returns the sessions of the subagents that the Agent calls of
// session id started, in the order of the calls, and the tool_use ids of
// the session's tool_results.
func (e *Engine) children(ctx context.Context, id string) ([]projection.SessionInfo, map[string]bool, error) {
	s, err := e.session(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	calls := projection.SubagentCalls(s.conv.Messages)
	results := map[string]bool{}
	for _, m := range s.conv.Messages {
		for _, r := range projection.ToolResults(m) {
			results[r] = true
		}
	}
	s.mu.Unlock()
	var out []projection.SessionInfo
	for _, c := range calls {
		info, err := e.Session(ctx, SubagentSession(SubagentID(id, c.ID)))
		if errors.Is(err, ErrSessionNotFound) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if info.Subagent == nil || info.Subagent.Session != id || info.Subagent.ToolUseID != c.ID {
			continue // a session of that name, not this call's subagent
		}
		out = append(out, info)
	}
	return out, results, nil
}

// descendants returns the sessions of every subagent below session id,
// each after its parent.
func (e *Engine) descendants(ctx context.Context, id string) ([]projection.SessionInfo, error) {
	var out []projection.SessionInfo
	for queue := []string{id}; len(queue) > 0; queue = queue[1:] {
		children, _, err := e.children(ctx, queue[0])
		if err != nil {
			return nil, err
		}
		for _, c := range children {
			out, queue = append(out, c), append(queue, c.ID)
		}
	}
	return out, nil
}
