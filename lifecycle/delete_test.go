package lifecycle_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// TestActionsOnADeletedSession checks every action on an agent whose
// current session was deleted, and every action that names a deleted
// session: each fails with ErrSessionDeleted naming it and records
// nothing, so the lifecycle table never sees a step it would have to
// refuse. A Start of another session is the way on.
func TestActionsOnADeletedSession(t *testing.T) {
	onDeleted := func() (*projection.Agent, map[string]*lifecycle.Session) {
		agent := projection.NewAgent("ide")
		sessions := map[string]*lifecycle.Session{"a": {ID: "a", Head: 1}, "b": {ID: "b", Head: 1}}
		walk(t, agent, sessions, lifecycle.Action{Kind: lifecycle.Start, To: "a"}, func(lifecycle.Input) {})
		sessions["a"].Deleted = true
		sessions["a"].Head++
		return agent, sessions
	}
	tests := []struct {
		act     lifecycle.Action
		deleted string // the session the error names; "" when the action goes on
	}{
		{lifecycle.Action{Kind: lifecycle.Restore, To: "b"}, "a"},
		{lifecycle.Action{Kind: lifecycle.Restore, To: "a"}, "a"},
		{lifecycle.Action{Kind: lifecycle.New, To: "c"}, "a"},
		{lifecycle.Action{Kind: lifecycle.Fork, To: "c"}, "a"},
		{lifecycle.Action{Kind: lifecycle.Clear, To: "c"}, "a"},
		{lifecycle.Action{Kind: lifecycle.End, Reason: schema.ReasonComplete}, "a"},
		{lifecycle.Action{Kind: lifecycle.Compact, Summary: "s"}, "a"},
		{lifecycle.Action{Kind: lifecycle.Stop}, "a"},
		{lifecycle.Action{Kind: lifecycle.Prompt, Prompt: "hi"}, "a"},
		{lifecycle.Action{Kind: lifecycle.Start, To: "a"}, "a"},
		{lifecycle.Action{Kind: lifecycle.Start, To: "b"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.act.Kind.String()+"-"+tt.act.To, func(t *testing.T) {
			agent, sessions := onDeleted()
			ready, err := lifecycle.Step(lifecycle.Input{Agent: agent, Action: tt.act, Sessions: sessions,
				Now: 9, NewID: func() string { return "r" }, StopCap: 8})
			if tt.deleted == "" {
				if err != nil || len(ready.Records) == 0 {
					t.Fatalf("Step = %d records, %v; want the action to begin", len(ready.Records), err)
				}
				return
			}
			if !errors.Is(err, lifecycle.ErrSessionDeleted) || !strings.Contains(err.Error(), ": "+tt.deleted) {
				t.Errorf("Step: %v; want ErrSessionDeleted naming %s", err, tt.deleted)
			}
			if len(ready.Records) != 0 || ready.Effect != nil {
				t.Errorf("Step decided %d records and effect %v; want nothing", len(ready.Records), ready.Effect)
			}
			if agent.State != fsm.Active {
				t.Errorf("agent state %s; want it still active", agent.State)
			}
		})
	}
	// A deleted target of a fresh agent is refused as well.
	_, err := lifecycle.Step(lifecycle.Input{Agent: projection.NewAgent("new"), Action: lifecycle.Action{Kind: lifecycle.Start, To: "gone"},
		Sessions: map[string]*lifecycle.Session{"gone": {ID: "gone", Head: 2, Deleted: true}}, NewID: func() string { return "r" }})
	if !errors.Is(err, lifecycle.ErrSessionDeleted) {
		t.Errorf("Start of a deleted session on a fresh agent: %v; want ErrSessionDeleted", err)
	}
}

// TestInjectIntoASessionDeletedMeanwhile: another process deleted the
// target while its SessionStart hooks ran. The restore ends with no
// message, since nothing may follow a tombstone.
func TestInjectIntoASessionDeletedMeanwhile(t *testing.T) {
	agent := projection.NewAgent("ide")
	for i, p := range []schema.Payload{
		&schema.SessionLoaded{Session: "a", Source: schema.SourceStartup},
		&schema.SessionStartHookStarted{Session: "a", Source: schema.SourceStartup, Hooks: []string{"h"}},
		&schema.SessionStartHookRan{Session: "a", Source: schema.SourceStartup, Context: "ctx",
			Outcomes: []schema.HookOutcome{{Name: "h", Status: schema.HookOK}}},
	} {
		ev := eventlog.Event{Stream: projection.AgentStream("ide"), Seq: uint64(i + 1), Type: p.EventType(), RestoreID: "r"}
		if err := agent.ApplyDecoded(ev, p); err != nil {
			t.Fatal(err)
		}
	}
	ready, err := lifecycle.Step(lifecycle.Input{Agent: agent, Sessions: map[string]*lifecycle.Session{"a": {ID: "a", Head: 3, Deleted: true}},
		NewID: func() string { return "m" }})
	if err != nil {
		t.Fatal(err)
	}
	if len(ready.Records) != 1 || ready.Records[0].Stream != projection.AgentStream("ide") || ready.Report.Warning == "" {
		t.Fatalf("Step = %d records (%v), warning %q; want ContextInjected alone, with a warning", len(ready.Records), ready.Records, ready.Report.Warning)
	}
	if done, ok := ready.Payloads[0].(*schema.ContextInjected); !ok || done.MessageUUID != "" {
		t.Errorf("Step recorded %#v; want ContextInjected with no message", ready.Payloads[0])
	}
}

// TestStepInFlightOnASessionDeletedMeanwhile: another process deleted the
// agent's session after the agent checked it and before the intent of its
// Prompt, Stop or Compact. Whether the hooks' outcome is known or the
// process running them died, the step ends on the agent's stream alone,
// marked Deleted, with a step the lifecycle table accepts, and the agent is
// active again, so that its next action gets ErrSessionDeleted.
func TestStepInFlightOnASessionDeletedMeanwhile(t *testing.T) {
	loaded := []schema.Payload{
		&schema.SessionLoaded{Session: "a", Source: schema.SourceStartup},
		&schema.SessionStartHookStarted{Session: "a", Source: schema.SourceStartup},
		&schema.SessionStartHookRan{Session: "a", Source: schema.SourceStartup},
		&schema.ContextInjected{Session: "a"},
	}
	ran := lifecycle.HooksRan{Outcomes: []schema.HookOutcome{{Name: "h", Status: schema.HookOK, Decision: "block", Reason: "no"}},
		Context: "ctx", Blocked: true, Reason: "no"}
	tests := []struct {
		name   string
		intent schema.Payload
		state  fsm.State
	}{
		{"prompt", &schema.PromptHookStarted{Session: "a", Prompt: "hi", PromptID: "p", Hooks: []string{"h"}}, fsm.Prompting},
		{"stop", &schema.StopHookStarted{Session: "a", Hooks: []string{"h"}}, fsm.Stopping},
		{"compact", &schema.PreCompactHookStarted{Session: "a", Trigger: "manual", Summary: "s", Hooks: []string{"h"}}, fsm.PreCompacting},
	}
	for _, tt := range tests {
		for _, outcome := range []lifecycle.Outcome{ran, nil} {
			t.Run(fmt.Sprintf("%s/hooks-known=%v", tt.name, outcome != nil), func(t *testing.T) {
				agent := projection.NewAgent("ide")
				for i, p := range append(slices.Clone(loaded), tt.intent) {
					rid := "r"
					if i == len(loaded) {
						rid = "s"
					}
					ev := eventlog.Event{Stream: projection.AgentStream("ide"), Seq: uint64(i + 1), Type: p.EventType(), RestoreID: rid}
					if err := agent.ApplyDecoded(ev, p); err != nil {
						t.Fatal(err)
					}
				}
				if agent.State != tt.state {
					t.Fatalf("agent state %s; want %s", agent.State, tt.state)
				}
				sessions := map[string]*lifecycle.Session{"a": {ID: "a", Head: 2, Deleted: true}}
				ready, err := lifecycle.Step(lifecycle.Input{Agent: agent, Action: lifecycle.Action{Kind: lifecycle.Prompt, Prompt: "hi"},
					Sessions: sessions, Outcome: outcome, NewID: func() string { return "m" }, StopCap: 8})
				if err != nil {
					t.Fatal(err)
				}
				if len(ready.Records) != 1 || ready.Records[0].Stream != projection.AgentStream("ide") {
					t.Fatalf("Step = %d records (%v); want one, on the agent's stream", len(ready.Records), ready.Records)
				}
				if ready.Report.Deleted != "a" || ready.Effect != nil || ready.Report.Prompted != nil || ready.Report.Stopped != nil || ready.Report.Blocked != "" {
					t.Errorf("Step = deleted %q, effect %v, prompted %v, stopped %v, blocked %q; want deleted a and nothing else",
						ready.Report.Deleted, ready.Effect, ready.Report.Prompted, ready.Report.Stopped, ready.Report.Blocked)
				}
				var deleted, interrupted bool
				switch p := ready.Payloads[0].(type) {
				case *schema.PromptHookRan:
					deleted, interrupted = p.Deleted, p.Interrupted
				case *schema.StopHookRan:
					deleted, interrupted = p.Deleted, p.Interrupted
				case *schema.PreCompactHookRan:
					deleted, interrupted = p.Deleted && p.Blocked, p.Interrupted
				}
				if !deleted || interrupted != (outcome == nil) {
					t.Errorf("Step recorded %#v; want it marked deleted, interrupted=%v", ready.Payloads[0], outcome == nil)
				}
				ev := eventlog.Event{Stream: projection.AgentStream("ide"), Seq: agent.Head + 1, Type: ready.Records[0].Type, RestoreID: "s"}
				if err := agent.ApplyDecoded(ev, ready.Payloads[0]); err != nil {
					t.Fatalf("the lifecycle table refuses the step: %v", err)
				}
				if agent.State != fsm.Active {
					t.Errorf("agent state %s; want active", agent.State)
				}
				_, err = lifecycle.Step(lifecycle.Input{Agent: agent, Action: lifecycle.Action{Kind: lifecycle.Prompt, Prompt: "hi"},
					Sessions: sessions, NewID: func() string { return "m" }, StopCap: 8})
				if !errors.Is(err, lifecycle.ErrSessionDeleted) {
					t.Errorf("next action: %v; want ErrSessionDeleted", err)
				}
			})
		}
	}
}
