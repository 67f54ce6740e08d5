package lifecycle_test

import (
	"errors"
	"reflect"
	"strconv"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// walk drives act on agent to its end through a Driver, with made-up
// outcomes, calling check before each step with the Input it steps from.
// The sessions' streams are not written: their heads only count.
func walk(t *testing.T, agent *projection.Agent, sessions map[string]*lifecycle.Session, act lifecycle.Action, check func(lifecycle.Input)) {
	t.Helper()
	ids := 0
	heads := map[string]uint64{projection.AgentStream(agent.ID): agent.Head}
	for id, s := range sessions {
		heads[projection.SessionStream(id)] = s.Head
	}
	d := lifecycle.NewDriver(agent, act, func() string { ids++; return "id" + strconv.Itoa(ids) }, 8)
	for range 50 {
		if d.Done() {
			return
		}
		check(d.Input(sessions, 7))
		ready, err := d.Ready(sessions, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(ready.Records) > 0 {
			evs := make([]eventlog.Event, len(ready.Records))
			for i, rec := range ready.Records {
				heads[rec.Stream]++
				evs[i] = eventlog.Event{Stream: rec.Stream, Seq: heads[rec.Stream], Type: rec.Type, RestoreID: rec.RestoreID}
			}
			if err := d.Appended(ready, evs); err != nil {
				t.Fatal(err)
			}
		}
		switch ready.Effect.(type) {
		case lifecycle.MatchHooks:
			d.Performed(lifecycle.HooksMatched{Hooks: []string{"h"}})
		case lifecycle.RunHooks:
			d.Performed(lifecycle.HooksRan{Outcomes: []schema.HookOutcome{{Name: "h", Status: schema.HookOK}}, Context: "c"})
		}
	}
	t.Fatal("the action did not end in 50 steps")
}

// TestStepIsPure checks, at every step of a runtime restore, that Step
// returns the same Ready for the same Input and changes nothing it is
// given.
func TestStepIsPure(t *testing.T) {
	agent := projection.NewAgent("ide")
	sessions := map[string]*lifecycle.Session{
		"a": {ID: "a", Head: 1},
		"b": {ID: "b", Head: 3, Messages: 2, ViewLen: 2, LastUUID: "m2"},
	}
	walk(t, agent, sessions, lifecycle.Action{Kind: lifecycle.Start, To: "a"}, func(lifecycle.Input) {})
	sessions["a"].Pending = []schema.Message{{UUID: "p1", Role: "user", Content: []schema.Block{{Type: "text", Text: "hi"}}}}
	steps := 0
	walk(t, agent, sessions, lifecycle.Action{Kind: lifecycle.Restore, To: "b"}, func(in lifecycle.Input) {
		steps++
		before := *in.Agent
		pending := append([]schema.Message(nil), in.Sessions["a"].Pending...)
		idsA, idsB := 0, 0
		inA, inB := in, in
		inA.NewID = func() string { idsA++; return "x" + strconv.Itoa(idsA) }
		inB.NewID = func() string { idsB++; return "x" + strconv.Itoa(idsB) }
		first, errA := lifecycle.Step(inA)
		second, errB := lifecycle.Step(inB)
		if !reflect.DeepEqual(first, second) || !errors.Is(errA, errB) && errA != errB {
			t.Fatalf("in state %s, two Steps of one Input differ:\n%+v\n%+v", in.Agent.State, first, second)
		}
		if !reflect.DeepEqual(before, *in.Agent) || !reflect.DeepEqual(pending, in.Sessions["a"].Pending) {
			t.Fatalf("in state %s, Step changed its input", in.Agent.State)
		}
	})
	if steps < 8 {
		t.Fatalf("checked %d steps of a restore, want its 7 appends and its 4 effects", steps)
	}
}

// TestStepRefusesBeforeRecording checks the cases where nothing may be
// recorded: an empty target or the current session (no-op), a session
// that does not exist, and an unknown End reason.
func TestStepRefusesBeforeRecording(t *testing.T) {
	agent := projection.NewAgent("ide")
	sessions := map[string]*lifecycle.Session{"a": {ID: "a", Head: 1}}
	walk(t, agent, sessions, lifecycle.Action{Kind: lifecycle.Start, To: "a"}, func(lifecycle.Input) {})
	cases := []struct {
		name string
		act  lifecycle.Action
		want error
	}{
		{"restore to nothing", lifecycle.Action{Kind: lifecycle.Restore}, nil},
		{"restore to the current session", lifecycle.Action{Kind: lifecycle.Restore, To: "a"}, nil},
		{"restore to a missing session", lifecycle.Action{Kind: lifecycle.Restore, To: "gone"}, lifecycle.ErrSessionNotFound},
		{"start a missing session", lifecycle.Action{Kind: lifecycle.Start, To: "gone"}, lifecycle.ErrSessionNotFound},
		{"end for no known reason", lifecycle.Action{Kind: lifecycle.End, Reason: "bored"}, lifecycle.ErrBadReason},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ready, err := lifecycle.Step(lifecycle.Input{Agent: agent, Action: c.act, Sessions: sessions, Now: 1,
				NewID: func() string { return "id" }, StopCap: 8})
			if !errors.Is(err, c.want) || err == nil && c.want != nil {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if len(ready.Records) != 0 || ready.Effect != nil {
				t.Fatalf("Step decided %d records and effect %v; want nothing", len(ready.Records), ready.Effect)
			}
		})
	}
}

// TestStopBlockIsTriedAgainAfterAConflict checks that a Stop whose hooks
// blocked, and whose outcome lost a race with another writer of the
// session, is recorded again, block and feedback message included, rather
// than lost.
func TestStopBlockIsTriedAgainAfterAConflict(t *testing.T) {
	agent := projection.NewAgent("ide")
	sessions := map[string]*lifecycle.Session{"a": {ID: "a", Head: 1}}
	walk(t, agent, sessions, lifecycle.Action{Kind: lifecycle.Start, To: "a"}, func(lifecycle.Input) {})
	ids := 0
	in := lifecycle.Input{Agent: agent, Action: lifecycle.Action{Kind: lifecycle.Stop}, Sessions: sessions, Now: 1, StopCap: 8,
		NewID: func() string { ids++; return "s" + strconv.Itoa(ids) }}
	in.Outcome = lifecycle.HooksMatched{Hooks: []string{"checker"}}
	ready, err := lifecycle.Step(in)
	if err != nil {
		t.Fatal(err)
	}
	ev := eventlog.Event{Stream: "agent/ide", Seq: agent.Head + 1, Type: ready.Records[0].Type, RestoreID: ready.Records[0].RestoreID}
	if err := agent.ApplyDecoded(ev, ready.Payloads[0]); err != nil {
		t.Fatal(err)
	}
	ran := lifecycle.HooksRan{Outcomes: []schema.HookOutcome{{Name: "checker", Status: schema.HookOK, Decision: "block"}}, Blocked: true, Reason: "keep going"}
	conflict := &eventlog.ConflictError{Stream: "session/a", Expected: 1, Actual: 2}
	in.Outcome = lifecycle.AppendFailed{Err: conflict, Tries: 1, Outcome: ran}
	ready, err = lifecycle.Step(in)
	if err != nil {
		t.Fatalf("a conflict on the session ended the Stop: %v", err)
	}
	if ready.Report.Stopped == nil || !ready.Report.Stopped.Blocked || len(ready.Records) != 2 {
		t.Fatalf("after the conflict: %d records, result %+v; want the feedback message and the blocked outcome", len(ready.Records), ready.Report.Stopped)
	}
}
