package jsonview

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// Agent is one agent as `reprise agents --json` prints it and the web
// view's /api/agents lists it.
type Agent struct {
	ID         string `json:"id"`
	State      string `json:"state"`             // the lifecycle state its log ends in
	Session    string `json:"session,omitempty"` // its current session
	Now        string `json:"now"`               // what it is doing now, in words
	InProgress bool   `json:"in_progress"`       // a step is in flight: the next action, or reprise finish, finishes it
	Restores   int    `json:"restores"`          // restores finished
	LastActive string `json:"last_active"`       // the time of its last event, "-" when none
	// SubagentOf, for the agent of a subagent, is the session of the
	// Agent call that started it.
	SubagentOf string `json:"subagent_of,omitempty"`
}

// NewAgent is the Agent of a's fold, whose last event was at lastActive
// (UTC unix nanoseconds).
func NewAgent(a *projection.Agent, lastActive int64) Agent {
	last := "-"
	if lastActive != 0 {
		last = time.Unix(0, lastActive).UTC().Format(time.RFC3339)
	}
	return Agent{ID: a.ID, State: string(a.State), Session: a.Current, Now: AgentNow(a),
		InProgress: a.InFlight() || a.HooksInFlight > 0, Restores: len(a.History), LastActive: last}
}

// AgentNow says in words what agent a is doing as its log ends.
func AgentNow(a *projection.Agent) string {
	var now []string
	switch {
	case a.Restore != nil && a.Restore.Source == "":
		now = append(now, fmt.Sprintf("end of %s in progress (%s)", a.Restore.From, a.State))
	case a.Restore != nil && a.Compacting():
		now = append(now, fmt.Sprintf("compaction of %s in progress (%s)", a.Restore.From, a.State))
	case a.Restore != nil:
		from := a.Restore.From
		if from == "" {
			from = "-"
		}
		now = append(now, fmt.Sprintf("%s restore %s -> %s in progress (%s)", a.Restore.Source, from, a.Restore.To, a.State))
	case a.Stop != nil:
		now = append(now, string(cmp.Or(a.Stop.Event, schema.HookStop))+" hooks in progress")
	case a.Prompt != nil:
		now = append(now, "UserPromptSubmit hooks in progress")
	}
	var calls []*projection.ToolCall
	for _, c := range a.Tools {
		if !c.Done() {
			calls = append(calls, c)
		}
	}
	slices.SortFunc(calls, func(x, y *projection.ToolCall) int { return strings.Compare(x.ID, y.ID) })
	for _, c := range calls {
		what := "its hooks in progress"
		if c.Decided() {
			what = "decided, waiting for its result"
		}
		now = append(now, fmt.Sprintf("tool %s %s: %s", projection.Word(c.Tool), projection.Word(c.ID), what))
	}
	switch {
	case len(now) > 0:
		return strings.Join(now, "; ")
	case a.Idle() && len(a.History) == 0:
		return "no session yet"
	case a.Idle():
		return "no session: the last one ended"
	}
	return "nothing in progress"
}

// ReadAgents folds the stream of every agent of store, in name order, and
// returns each with the time of its last event (UTC unix nanoseconds).
func ReadAgents(ctx context.Context, store eventlog.Store) ([]*projection.Agent, []int64, error) {
	prefix := projection.AgentStream("")
	var names []string
	err := store.Streams(ctx, prefix, func(s eventlog.StreamInfo) error {
		names = append(names, strings.TrimPrefix(s.Name, prefix))
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	agents := make([]*projection.Agent, 0, len(names))
	last := make([]int64, 0, len(names))
	for _, id := range names {
		a := projection.NewAgent(id)
		var at int64
		err := store.ReadStream(ctx, projection.AgentStream(id), 1, func(ev eventlog.Event) error {
			at = ev.Time
			return a.Apply(ev)
		})
		if err != nil {
			return nil, nil, fmt.Errorf("read agent %s: %w", id, err)
		}
		agents, last = append(agents, a), append(last, at)
	}
	return agents, last, nil
}

// ListAgents is every agent of store as NewAgent gives it, in name order,
// each subagent's with the session of the call that started it.
func ListAgents(ctx context.Context, store eventlog.Store) ([]Agent, error) {
	agents, last, err := ReadAgents(ctx, store)
	if err != nil {
		return nil, err
	}
	out := make([]Agent, len(agents))
	for i, a := range agents {
		out[i] = NewAgent(a, last[i])
		if out[i].SubagentOf, err = subagentOf(ctx, store, a.ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// errFirst ends a read at its first event.
var errFirst = errors.New("first event read")

// subagentOf is, when agent id drives a subagent, the session of the call
// that started it: a subagent's agent has the name of its session
// (agent-<agent_id>), whose first event links it to the call.
func subagentOf(ctx context.Context, store eventlog.Store, id string) (string, error) {
	if !strings.HasPrefix(id, "agent-") {
		return "", nil
	}
	var of string
	err := store.ReadStream(ctx, projection.SessionStream(id), 1, func(ev eventlog.Event) error {
		if ev.Type == schema.TypeSessionCreated {
			p, err := schema.Decode(ev)
			if err != nil {
				return err
			}
			if c, ok := p.(*schema.SessionCreated); ok && c.Subagent != nil {
				of = c.Subagent.Session
			}
		}
		return errFirst
	})
	if err != nil && !errors.Is(err, errFirst) {
		return "", fmt.Errorf("read session %s: %w", id, err)
	}
	return of, nil
}
