package proptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// Fired events in the state machine: a host fires Notification, Setup and
// TaskCreated with ids of a small pool, so that ids come back, and every
// compaction fires PostCompact. Their hooks write the fire id (PostCompact's:
// the trigger) where restores' write the source or reason.

// fireEvents are the events the Fire actions fire.
var fireEvents = []hookexec.Event{schema.HookNotification, schema.HookSetup, schema.HookTaskCreated}

// firePool is how many fire ids each agent draws from.
const firePool = 3

// behaveMeddle is a fired event's function hook that, while it runs, tries
// to end the session of the agent that fired it, which must be refused.
const behaveMeddle = "meddle"

// fireFuncBehaviours are the behaviours of the fired events' function hook.
var fireFuncBehaviours = []string{behaveContext, behaveEmpty, behaveFail, behavePanic, behaveMeddle}

// compactTrigger is the trigger of every compaction of the machine.
const compactTrigger = "manual"

// registerFireFuncs adds the function hooks of the fired events to the
// registry and returns them as the model sees them: fn-fire on each event
// of fireEvents (on Setup, only for the init trigger) and fn-post-compact.
func (s *machine) registerFireFuncs(t *rapid.T) []hookSpec {
	var specs []hookSpec
	for _, f := range []struct {
		event        hookexec.Event
		tag, matcher string
	}{
		{schema.HookNotification, "fn-fire", ""},
		{schema.HookSetup, "fn-fire", "init"},
		{schema.HookTaskCreated, "fn-fire", ""},
		{schema.HookPostCompact, "fn-post-compact", ""},
	} {
		m, err := hookexec.ParseMatcherFor(f.event, f.matcher)
		if err != nil {
			t.Fatal(err)
		}
		h := hookexec.Hook{Event: f.event, Name: f.tag, Source: "function", Matcher: m, Timeout: workingTimeout,
			Body: s.fireFunc(f.event, f.tag)}
		if err := s.reg.Add(h); err != nil {
			t.Fatal(err)
		}
		specs = append(specs, hookSpec{event: f.event, matcher: f.matcher, tag: f.tag, name: f.tag, slot: f.tag})
	}
	return specs
}

// fireFunc is the function hook tagged tag of a fired event: it records
// its run with the fire id, or PostCompact's trigger, and acts out the
// behaviour of its slot.
func (s *machine) fireFunc(event hookexec.Event, tag string) hookexec.EventFunc {
	return func(ctx context.Context, in hookexec.EventInput) (hookexec.EventOutput, error) {
		var f struct {
			ID      string `json:"fire_id"`
			Trigger string `json:"trigger"`
		}
		_ = json.Unmarshal(in.Fields, &f) // the Engine checked they are an object
		value := f.ID
		if event == schema.HookPostCompact {
			value = f.Trigger
		}
		b := s.beh.get(tag)
		if b == behaveMeddle {
			s.meddle(ctx)
			b = behaveEmpty
		}
		var out hookexec.EventOutput
		text, err := act(ctx, b, s.side, runLine(event, in.SessionID, value, tag), hookContext(tag, in.SessionID, value))
		if err == nil && text != "" {
			out.HookSpecificOutput, _ = json.Marshal(map[string]string{"hookEventName": string(event), "additionalContext": text})
		}
		return out, err
	}
}

// meddle tries a lifecycle action, End, on the agent whose fire is
// running, and keeps what it returned.
func (s *machine) meddle(ctx context.Context) {
	_, err := s.agents[s.firing].End(context.WithoutCancel(ctx), reprise.ReasonOther, reprise.EndOptions{})
	s.meddled = append(s.meddled, err)
}

// checkMeddled requires that every run of a meddling hook since the fire
// began was refused with ErrAgentBusy: groups are the runs of the fire.
func (s *machine) checkMeddled(t *rapid.T, groups [][]string) {
	want := 0
	if s.m.behaviour["fn-fire"] == behaveMeddle {
		for _, g := range groups {
			for _, line := range g {
				if strings.HasSuffix(line, " fn-fire") {
					want++
				}
			}
		}
	}
	if len(s.meddled) != want {
		t.Fatalf("%d lifecycle actions tried from the hooks of a fire, want %d", len(s.meddled), want)
	}
	for _, err := range s.meddled {
		if !errors.Is(err, reprise.ErrAgentBusy) {
			t.Fatalf("End while the hooks of a fire run: %v; want ErrAgentBusy", err)
		}
	}
	s.st.meddles.Add(int64(want))
}

// drawFire draws an event of fireEvents and one of ids, and returns them
// with what the event's matchers select on and the event's input, which
// holds the fire id for the hooks to record.
func drawFire(t *rapid.T, ids []string) (event hookexec.Event, id, value string, fields json.RawMessage) {
	event = rapid.SampledFrom(fireEvents).Draw(t, "event")
	id = rapid.SampledFrom(ids).Draw(t, "fire")
	in := map[string]string{"fire_id": id}
	switch event {
	case schema.HookNotification:
		in["message"] = "note " + id
	case schema.HookSetup:
		value = rapid.SampledFrom([]string{"init", "maintenance"}).Draw(t, "trigger")
		in["trigger"] = value
	case schema.HookTaskCreated:
		in["task_id"], in["task_subject"] = id, "ship"
	}
	fields, _ = json.Marshal(in) // strings always marshal
	return event, id, value, fields
}

// fireIDs are the fire ids of agent's pool; with free, only those no fire
// of the model holds.
func (s *machine) fireIDs(agent string, free bool) []string {
	var ids []string
	for n := 1; n <= firePool; n++ {
		id := fmt.Sprintf("%s-f%d", agent, n)
		if !free || s.m.fires[agent][id] == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// Fire fires an event with an id of the pool: a new id runs its hooks
// once; an id recorded before returns the recorded result, running
// nothing, or is refused for another event; without a current session a
// new id is refused.
func (s *machine) Fire(t *rapid.T) {
	agent := drawAgent(t)
	event, id, value, fields := drawFire(t, s.fireIDs(agent, false))
	prev, cur := s.m.fires[agent][id], s.m.current[agent]
	s.firing, s.meddled = agent, nil
	got, err := s.agents[agent].Fire(context.Background(), event, id, fields)
	switch {
	case prev != nil && prev.event != event:
		if !errors.Is(err, reprise.ErrBadFire) {
			t.Fatalf("Fire(%s, %s) of a %s's id = %+v, %v; want ErrBadFire", event, id, prev.event, got, err)
		}
	case prev != nil:
		if err != nil || got == nil || !got.AlreadyRecorded {
			t.Fatalf("Fire(%s, %s) again = %+v, %v; want the recorded result", event, id, got, err)
		}
		checkFired(t, id, got, prev)
		s.st.refires.Add(1)
	case cur == "":
		if !errors.Is(err, reprise.ErrNoCurrentSession) {
			t.Fatalf("Fire(%s, %s) with no current session = %+v, %v; want ErrNoCurrentSession", event, id, got, err)
		}
	default:
		want, groups := s.m.fire(event, value, id, cur, crash{})
		if err != nil || got == nil || got.AlreadyRecorded {
			t.Fatalf("Fire(%s, %s) = %+v, %v", event, id, got, err)
		}
		checkFired(t, id, got, want)
		s.m.keepFire(agent, id, want)
		s.checkMeddled(t, groups)
		s.checkRuns(t, groups)
		s.st.fires.Add(1)
		return
	}
	s.checkMeddled(t, nil)
	s.checkRuns(t, nil)
}

// CrashInFire kills the process (in effect) before or after the append of
// a new fire's intent or of its outcome (its only append when no hook
// matches), then opens the store again, which closes a fire whose hooks
// may have run as interrupted without running them again.
func (s *machine) CrashInFire(t *rapid.T) {
	var ok []string
	for _, id := range agentIDs {
		if s.m.current[id] != "" && len(s.fireIDs(id, true)) > 0 {
			ok = append(ok, id)
		}
	}
	if len(ok) == 0 {
		t.SkipNow() // no agent can fire a new id
	}
	agent := rapid.SampledFrom(ok).Draw(t, "agent")
	event, id, value, fields := drawFire(t, s.fireIDs(agent, true))
	cur := s.m.current[agent]
	appends := 1
	if len(s.m.hooksFor(event, value, cur, true)) > 0 {
		appends = 2
	}
	c := crash{rapid.IntRange(1, appends).Draw(t, "k"), rapid.Bool().Draw(t, "after")}
	want, groups := s.m.fire(event, value, id, cur, c)
	if want != nil {
		s.m.keepFire(agent, id, want)
	}
	s.m.crashed()
	s.store.arm(c.k, c.after)
	s.firing, s.meddled = agent, nil
	_, err := s.agents[agent].Fire(context.Background(), event, id, fields)
	s.checkMeddled(t, groups)
	s.reopenAfterCrash(t, err, groups)
	s.st.fireCrashes.Add(1)
}

// CrashInCompact kills the process (in effect) before or after one append
// of a compaction or of its PostCompact, then opens the store again, which
// rolls the compaction forward and fires its PostCompact, once.
func (s *machine) CrashInCompact(t *rapid.T) {
	agent := s.drawAgentWithCurrent(t)
	cur := s.m.current[agent]
	appends := len(compactSteps) + 1
	if len(s.m.hooksFor(schema.HookPostCompact, compactTrigger, cur, true)) > 0 {
		appends++
	}
	c := crash{rapid.IntRange(1, appends).Draw(t, "k"), rapid.Bool().Draw(t, "after")}
	want, groups := s.m.restore(agent, cur, reprise.SourceCompact, "", c)
	if want != nil {
		post := crash{}
		if c.k > len(compactSteps) {
			post = crash{c.k - len(compactSteps), c.after}
		}
		groups = append(groups, s.m.postCompact(agent, cur, post)...)
	}
	s.store.arm(c.k, c.after)
	_, err := s.agents[agent].Compact(context.Background(), compactSummary)
	s.reopenAfterCrash(t, err, groups)
	s.st.compactCrashes.Add(1)
}

// checkFired compares what Fire returned for id with the model's fire; the
// first result kept becomes the one every later fire of id must return.
func checkFired(t *rapid.T, id string, got *reprise.Fired, want *modelFire) {
	names, statuses := outcomeWords(got.Outcomes)
	if got.ID != id || got.Event != want.event || got.Interrupted != want.interrupted ||
		!slices.Equal(names, want.names) || !slices.Equal(statuses, want.statuses) {
		t.Fatalf("fire %s = %s %s interrupted %v, hooks %q, statuses %q; want %s interrupted %v, hooks %q, statuses %q",
			id, got.ID, got.Event, got.Interrupted, names, statuses, want.event, want.interrupted, want.names, want.statuses)
	}
	result := firedResult(got)
	if want.result == "" {
		want.result = result
	} else if result != want.result {
		t.Fatalf("fire %s returned\n%s\nthe first time it returned\n%s", id, result, want.result)
	}
}

// firedResult is what a fire decided, in a line that holds nothing that
// changes between two reads of one record.
func firedResult(f *reprise.Fired) string {
	var errs []string
	for _, o := range f.Outcomes {
		errs = append(errs, o.Error)
	}
	return fmt.Sprintf("interrupted %v blocked %v reason %q feedback %q context %q system %q specific %s env %q halt %v %q errors %q",
		f.Interrupted, f.Blocked, f.Reason, f.Feedback, f.Context, f.SystemMessage, f.Specific, f.Env, f.Halted, f.StopReason, errs)
}

func outcomeWords(os []schema.HookOutcome) (names, statuses []string) {
	for _, o := range os {
		names, statuses = append(names, o.Name), append(statuses, o.Status)
	}
	return names, statuses
}

// checkFireRuns fails when the side file holds a second run of one hook of
// one fire id, counted across the whole case: crashes and reopens
// included.
func (s *machine) checkFireRuns(t *rapid.T, lines []string) {
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) != 4 || !slices.Contains(fireEvents, hookexec.Event(f[0])) {
			continue
		}
		key := f[0] + " " + f[2] + " " + f[3]
		if s.fireRuns[key]++; s.fireRuns[key] > 1 {
			t.Fatalf("hook %s of fire %s (%s) ran %d times", f[3], f[2], f[0], s.fireRuns[key])
		}
	}
}

// checkFires reads every agent stream: the fire table must accept each
// fire's steps; no step other than a tool call's or a fire's may come
// while a fire's hooks run; every fire must have ended, with exactly one
// HookEventRan, whose hooks, statuses and interrupted flag are the
// model's; and every compaction of the model must have its PostCompact.
func (s *machine) checkFires(t *rapid.T) {
	for _, agent := range agentIDs {
		states := map[string]fsm.State{}
		ran := map[string]*schema.HookEventRan{}
		var compacts []string // PostCompact fire ids, in order
		inFlight := 0
		err := s.e.Store().ReadStream(context.Background(), projection.AgentStream(agent), 1, func(ev eventlog.Event) error {
			p, err := schema.Decode(ev)
			if err != nil {
				return err
			}
			label, ok := fsm.FireEventOf(p)
			if !ok {
				if _, tool := fsm.ToolEventOf(p); !tool && inFlight > 0 {
					return fmt.Errorf("%s (seq %d) while the hooks of %d fire(s) run", ev.Type, ev.Seq, inFlight)
				}
				return nil
			}
			id, event := fireOf(p)
			from, seen := states[id]
			if !seen {
				from = fsm.NoFire
				if event == schema.HookPostCompact {
					compacts = append(compacts, id)
				}
			}
			to, err := fsm.ApplyFire(from, label)
			if err != nil {
				return fmt.Errorf("fire %s (seq %d): %w", id, ev.Seq, err)
			}
			if from == fsm.FireHooks {
				inFlight--
			}
			if to == fsm.FireHooks {
				inFlight++
			}
			states[id] = to
			if r, ok := p.(*schema.HookEventRan); ok {
				ran[id] = r
			}
			return nil
		})
		if err != nil {
			t.Fatalf("agent %s: %v", agent, err)
		}
		for id, st := range states {
			if st != fsm.FireDone {
				t.Fatalf("agent %s: fire %s is %s after the action", agent, id, st)
			}
		}
		if n := len(states) - len(compacts); n != len(s.m.fires[agent]) {
			t.Fatalf("agent %s: the log has %d host fires, the model %d", agent, n, len(s.m.fires[agent]))
		}
		for id, want := range s.m.fires[agent] {
			checkRan(t, agent, id, ran[id], want)
		}
		if len(compacts) != len(s.m.compactFires[agent]) {
			t.Fatalf("agent %s: the log has %d PostCompact fires, the model %d compactions", agent, len(compacts), len(s.m.compactFires[agent]))
		}
		for i, id := range compacts {
			checkRan(t, agent, id, ran[id], &s.m.compactFires[agent][i])
		}
	}
}

// fireOf is the fire id and event of a fire's step.
func fireOf(p schema.Payload) (string, hookexec.Event) {
	switch p := p.(type) {
	case *schema.HookEventStarted:
		return p.ID, p.Event
	case *schema.HookEventRan:
		return p.ID, p.Event
	}
	return "", ""
}

// checkRan compares the HookEventRan of fire id with the model's fire.
func checkRan(t *rapid.T, agent, id string, got *schema.HookEventRan, want *modelFire) {
	if got == nil {
		t.Fatalf("agent %s: fire %s has no HookEventRan", agent, id)
	}
	names, statuses := outcomeWords(got.Outcomes)
	if got.Event != want.event || got.Interrupted != want.interrupted || !slices.Equal(names, want.names) || !slices.Equal(statuses, want.statuses) {
		t.Fatalf("agent %s: fire %s recorded %s interrupted %v, hooks %q, statuses %q; want %s interrupted %v, hooks %q, statuses %q",
			agent, id, got.Event, got.Interrupted, names, statuses, want.event, want.interrupted, want.names, want.statuses)
	}
}

// modelFire is what the log should say about one fire.
type modelFire struct {
	event       hookexec.Event
	names       []string
	statuses    []string
	interrupted bool
	result      string // firedResult of the first result Fire returned, "" before
}

// fire carries out a fire of event, whose matchers select on value, under
// id on session: the intent (when hooks match) and the outcome, the first
// and second appends, dying at c. It returns the fire, nil if nothing of
// it was recorded, and the side-file lines of its runs.
func (m *model) fire(event hookexec.Event, value, id, session string, c crash) (*modelFire, [][]string) {
	if !c.recorded(1) {
		return nil, nil
	}
	hooks := m.hooksFor(event, value, session, true)
	f := &modelFire{event: event, names: names(hooks)}
	switch {
	case len(hooks) == 0:
		return f, nil
	case !c.alive(1):
		// The intent is in the log, its writer died before the hooks ran.
		f.statuses, f.interrupted = repeat(schema.HookInterrupted, len(hooks)), true
		return f, nil
	}
	statuses, _, lines := m.run(hooks, event, session, id)
	f.statuses = statuses
	if !c.recorded(2) {
		f.statuses, f.interrupted = repeat(schema.HookInterrupted, len(hooks)), true
	}
	if len(lines) == 0 {
		return f, nil
	}
	return f, [][]string{lines}
}

// keepFire records agent's fire id.
func (m *model) keepFire(agent, id string, f *modelFire) {
	if m.fires[agent] == nil {
		m.fires[agent] = map[string]*modelFire{}
	}
	m.fires[agent][id] = f
}

// postCompact fires the PostCompact of agent's compaction of session,
// dying at c (its own appends counted from 1); a process that died before
// recording any of it leaves it to the next one, which fires it afresh.
// It returns the side-file lines of its runs.
func (m *model) postCompact(agent, session string, c crash) [][]string {
	if !c.recorded(1) {
		c = crash{}
	}
	f, groups := m.fire(schema.HookPostCompact, compactTrigger, compactTrigger, session, c)
	m.compactFires[agent] = append(m.compactFires[agent], *f)
	return groups
}
