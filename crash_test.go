package reprise_test

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// fullRun records a startup restore into a and a runtime restore from a to
// b, with a message buffered on a, and returns every event of the log.
func fullRun(t *testing.T) []eventlog.Event {
	t.Helper()
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	var c calls
	recordingHooks(t, e.Hooks(), &c, "ctx")
	testkit.Session(t, e, "a", "", "hello")
	testkit.Session(t, e, "b", "", "hi")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Buffer(ctx, "a", reprise.Text("user", "buffered")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Restore(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	return testkit.Events(t, e.Store())
}

func metaCount(t *testing.T, e *reprise.Engine, id string) int {
	t.Helper()
	msgs, err := e.Conversation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range msgs {
		if m.IsMeta {
			n++
		}
	}
	return n
}

// The process dies after each append of each restore. Reopening the store
// rolls the restore forward: hooks that never started run, hooks whose
// intent was recorded are closed as interrupted and not run again, and the
// log ends with every step in order.
func TestCrashAfterEveryStepRollsForward(t *testing.T) {
	ctx := context.Background()
	evs := fullRun(t)
	cases := []struct {
		restore     string // which restore the cut falls in
		after       eventlog.Type
		reruns      []string
		target      string
		injected    int // meta messages on the target afterwards
		interrupted bool
	}{
		{"startup", schema.TypeSessionLoaded, []string{"Start a startup"}, "a", 1, false},
		{"startup", schema.TypeSessionStartHookStarted, nil, "a", 0, true},
		{"startup", schema.TypeSessionStartHookRan, nil, "a", 1, false},
		{"startup", schema.TypeContextInjected, nil, "a", 1, false},
		{"resume", schema.TypeSaveAttempted, []string{"End a resume", "Start b resume"}, "b", 1, false},
		{"resume", schema.TypeSessionEndHookStarted, []string{"Start b resume"}, "b", 1, true},
		{"resume", schema.TypeSessionEndHookRan, []string{"Start b resume"}, "b", 1, false},
		{"resume", schema.TypeSessionLoaded, []string{"Start b resume"}, "b", 1, false},
		{"resume", schema.TypeSessionStartHookStarted, nil, "b", 0, true},
		{"resume", schema.TypeSessionStartHookRan, nil, "b", 1, false},
		{"resume", schema.TypeContextInjected, nil, "b", 1, false},
	}
	for _, c := range cases {
		t.Run(c.restore+"/after-"+string(c.after), func(t *testing.T) {
			cut := cutAfter(t, evs, c.restore, c.after)
			path := testkit.WriteStore(t, evs[:cut])
			var rerun calls
			e := testkit.OpenEngine(t, path, reprise.Options{})
			recordingHooks(t, e.Hooks(), &rerun, "ctx")
			a := testkit.Agent(t, e, "ide")
			if got := rerun.get(); !reflect.DeepEqual(got, c.reruns) {
				t.Fatalf("hooks run on reopen = %q, want %q", got, c.reruns)
			}
			if a.Current() != c.target {
				t.Fatalf("current = %q, want %q", a.Current(), c.target)
			}
			want := slices.Clone(startupSteps)
			if c.restore == "resume" {
				want = append(want, resumeSteps...)
			}
			if got := testkit.StreamTypes(t, e.Store(), projection.AgentStream("ide")); !reflect.DeepEqual(got, want) {
				t.Fatalf("agent stream after roll-forward = %v\nwant %v", got, want)
			}
			if got := metaCount(t, e, c.target); got != c.injected {
				t.Fatalf("%d injected messages on %s, want %d", got, c.target, c.injected)
			}
			h := a.History()
			last := h[len(h)-1]
			if got := last.EndInterrupted || last.StartInterrupted; got != c.interrupted {
				t.Fatalf("interrupted = %v, want %v (%+v)", got, c.interrupted, last)
			}
			if c.restore == "resume" {
				msgs, _ := e.Conversation(ctx, "a")
				if !slices.ContainsFunc(msgs, func(m reprise.Message) bool { return m.Content[0].Text == "buffered" }) {
					t.Fatal("the message saved by the interrupted restore is gone")
				}
			}
			// A second reopen finds nothing left to do.
			e.Close()
			var again calls
			e2 := testkit.OpenEngine(t, path, reprise.Options{})
			recordingHooks(t, e2.Hooks(), &again, "ctx")
			testkit.Agent(t, e2, "ide")
			if len(again.get()) != 0 {
				t.Fatalf("second reopen ran hooks: %q", again.get())
			}
		})
	}
}

// cutAfter returns how many events of evs precede and include the first
// agent event of type typ in the given restore.
func cutAfter(t *testing.T, evs []eventlog.Event, restore string, typ eventlog.Type) int {
	t.Helper()
	var restores []string
	for i, ev := range evs {
		if ev.Stream != projection.AgentStream("ide") {
			continue
		}
		if !slices.Contains(restores, ev.RestoreID) {
			restores = append(restores, ev.RestoreID)
		}
		which := "startup"
		if len(restores) == 2 {
			which = "resume"
		}
		if which == restore && ev.Type == typ {
			return i + 1
		}
	}
	t.Fatalf("no %s in the %s restore", typ, restore)
	return 0
}

// Rebuilding every view from the log gives exactly what the Engine kept up
// to date as it went.
func TestRebuildFromTheLogEqualsIncrementalState(t *testing.T) {
	ctx := context.Background()
	e, path := testkit.NewEngine(t, reprise.Options{})
	var c calls
	recordingHooks(t, e.Hooks(), &c, "ctx")
	ids := []string{"s1", "s2", "s3"}
	for _, id := range ids {
		testkit.Session(t, e, id, "", "q", "a")
	}
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"s2", "s3", "s1", "s2"} {
		e.Buffer(ctx, a.Current(), reprise.Text("user", "pending"))
		if i%2 == 0 {
			e.Append(ctx, id, reprise.Text("assistant", "durable"))
		}
		if _, err := a.Restore(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		live, err := e.Conversation(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		rebuilt := projection.NewConversation(id)
		if err := e.Store().ReadStream(ctx, projection.SessionStream(id), 1, rebuilt.Apply); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(live, rebuilt.Messages) {
			t.Fatalf("%s: live and rebuilt conversations differ\nlive    %+v\nrebuilt %+v", id, live, rebuilt.Messages)
		}
	}
	agent := projection.NewAgent("ide")
	if err := e.Store().ReadStream(ctx, projection.AgentStream("ide"), 1, agent.Apply); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(agent.History, a.History()) || agent.Current != a.Current() {
		t.Fatalf("agent: rebuilt %+v\nlive %+v", agent.History, a.History())
	}
	// And a fresh Engine on the same file rebuilds the same.
	live := a.History()
	e.Close()
	e2 := testkit.OpenEngine(t, path, reprise.Options{})
	a2 := testkit.Agent(t, e2, "ide")
	if !reflect.DeepEqual(a2.History(), live) {
		t.Fatal("reopened Engine rebuilt a different history")
	}
	sessions, err := e2.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range sessions {
		msgs, _ := e2.Conversation(ctx, info.ID)
		if info.Messages != len(msgs) {
			t.Fatalf("index says %s has %d messages, conversation has %d", info.ID, info.Messages, len(msgs))
		}
	}
}

// A process that dies while Stop hooks run leaves a stop intent; reopening
// closes it as interrupted, not blocked, and runs no Stop hook again.
func TestCrashDuringStopHooksClosesThemAsInterrupted(t *testing.T) {
	evs := fullRun(t)
	last := evs[len(evs)-1]
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Stream == projection.AgentStream("ide") {
			last = evs[i]
			break
		}
	}
	rec, err := schema.NewRecord(last.Stream, &schema.StopHookStarted{Session: "b", Hooks: []string{"stopper"}}, last.Time+1, "stop-1")
	if err != nil {
		t.Fatal(err)
	}
	intent := eventlog.Event{Stream: rec.Stream, Seq: last.Seq + 1, Type: rec.Type, Version: rec.Version, Time: rec.Time, RestoreID: rec.RestoreID, Payload: rec.Payload}
	path := testkit.WriteStore(t, append(evs, intent))
	e := testkit.OpenEngine(t, path, reprise.Options{})
	var ran calls
	e.Hooks().OnStop("stopper", func(context.Context, hookexec.StopInput) (hookexec.StopOutput, error) {
		ran.add("stop")
		return hookexec.StopOutput{Decision: "block", Reason: "again"}, nil
	})
	a := testkit.Agent(t, e, "ide")
	if len(ran.get()) != 0 {
		t.Fatal("an interrupted Stop hook ran again on reopen")
	}
	steps := testkit.StreamTypes(t, e.Store(), projection.AgentStream("ide"))
	if steps[len(steps)-1] != schema.TypeStopHookRan || a.Current() != "b" {
		t.Fatalf("agent stream ends %v", steps[len(steps)-3:])
	}
	// An interrupted stop does not count as a block: the next stop asks
	// with stop_hook_active false and runs the hook once.
	res, err := a.Stop(context.Background())
	if err != nil || !res.Blocked || len(ran.get()) != 1 {
		t.Fatalf("next stop: %+v, %v, runs %d", res, err, len(ran.get()))
	}
}

// With no hooks at all, the live view of an agent still equals the one
// rebuilt from the log.
func TestRebuildEqualsLiveWithoutHooks(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	testkit.Session(t, e, "a", "", "hi")
	testkit.Session(t, e, "b", "")
	a := testkit.Agent(t, e, "ide")
	a.Start(ctx, "a")
	a.Restore(ctx, "b")
	a.Stop(ctx)
	a.End(ctx, reprise.ReasonComplete, reprise.EndOptions{})
	rebuilt := projection.NewAgent("ide")
	if err := e.Store().ReadStream(ctx, projection.AgentStream("ide"), 1, rebuilt.Apply); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rebuilt.History, a.History()) {
		t.Fatalf("rebuilt %+v\nlive    %+v", rebuilt.History, a.History())
	}
}
