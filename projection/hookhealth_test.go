package projection_test

import (
	"testing"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// healthLog feeds events to a HookHealth with increasing positions.
type healthLog struct {
	h   *projection.HookHealth
	pos uint64
}

func (l *healthLog) apply(stream string, at time.Time, p schema.Payload) eventlog.Event {
	l.pos++
	ev := eventlog.Event{Stream: stream, Seq: l.pos, Position: l.pos, Type: p.EventType(), Time: at.UnixNano()}
	l.h.Apply(ev, p)
	return ev
}

func ran(name, source, status string, ms int) schema.HookOutcome {
	return schema.HookOutcome{Name: name, Source: source, Status: status, Duration: int64(ms) * int64(time.Millisecond)}
}

// The runs of each hook are counted by how they ended, their durations
// give exact percentiles, a window keeps only its hours, and the failed
// runs are kept as the events that recorded them.
func TestHookHealthCountsRunsPerHook(t *testing.T) {
	l := &healthLog{h: projection.NewHookHealth()}
	day := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	later := day.Add(48 * time.Hour)
	const agent = "agent/a"
	l.apply(agent, day, &schema.SessionStartHookStarted{Session: "s"})
	l.apply(agent, day, &schema.SessionStartHookRan{Session: "s", Outcomes: []schema.HookOutcome{
		ran("a.sh", "/p/settings.json", schema.HookOK, 10), ran("a.sh", "/p/settings.json", schema.HookOK, 20)}})
	l.apply(agent, later, &schema.SessionStartHookStarted{Session: "s"})
	failed := l.apply(agent, later, &schema.SessionStartHookRan{Session: "s", Outcomes: []schema.HookOutcome{
		ran("a.sh", "/p/settings.json", schema.HookOK, 30), {Name: "a.sh", Source: "/p/settings.json", Status: schema.HookFailed, ExitCode: 2, Duration: int64(time.Second)}}})
	deny := ran("guard", "plugin:/plugins/g", schema.HookOK, 5)
	deny.Decision = "deny"
	l.apply(agent, later, &schema.ToolHookRan{Session: "s", Event: schema.HookPreToolUse, Outcomes: []schema.HookOutcome{deny}})
	// A subagent's SessionStart is its SubagentStart; an async hook's run
	// is its end, not the step that started it.
	l.apply(agent, later, &schema.SessionStartHookStarted{Session: "sub", Event: schema.HookSubagentStart})
	l.apply(agent, later, &schema.SessionStartHookRan{Session: "sub", Outcomes: []schema.HookOutcome{
		ran("sub.sh", "/p/settings.json", schema.HookOK, 1), {Name: "bg.sh", Source: "/p/settings.json", Status: schema.HookAsync, Async: "x"}}})
	l.apply(agent, later, &schema.AsyncHookEnded{Session: "sub", Event: schema.HookSubagentStart, Outcome: ran("bg.sh", "/p/settings.json", schema.HookTimedOut, 60000)})
	// A run a crash cut off, rolled forward without its source, is the
	// hook's of that name.
	l.apply(agent, later, &schema.SessionEndHookRan{Session: "s", Outcomes: []schema.HookOutcome{ran("end.sh", "/p/settings.json", schema.HookOK, 1)}})
	l.apply(agent, later, &schema.SessionEndHookRan{Session: "s", Outcomes: []schema.HookOutcome{{Name: "end.sh", Status: schema.HookInterrupted}}})
	// An event folded again changes nothing.
	l.h.Apply(failed, &schema.SessionStartHookRan{Session: "s", Outcomes: []schema.HookOutcome{ran("a.sh", "/p/settings.json", schema.HookFailed, 1)}})

	if !l.h.FailedOn("s") || !l.h.FailedOn("sub") || l.h.FailedOn("other") {
		t.Errorf("FailedOn s %v, sub %v, other %v; want the sessions of the failed, timed out and interrupted runs",
			l.h.FailedOn("s"), l.h.FailedOn("sub"), l.h.FailedOn("other"))
	}
	all := l.h.Report(day.UnixNano(), later.Add(time.Hour).UnixNano(), projection.ByHook, 2)
	byName := map[string]projection.HookStats{}
	for _, s := range all {
		byName[s.Key.Name+" "+string(s.Key.Event)] = s
	}
	a := byName["a.sh SessionStart"]
	if a.Runs != 4 || a.OK != 3 || a.Failed != 1 || a.Key.Type != "command" {
		t.Fatalf("a.sh: %+v; want 4 runs, 3 ok, 1 failed, a command", a)
	}
	if a.P50 != 20*time.Millisecond || a.P95 != time.Second || a.Max != time.Second {
		t.Errorf("a.sh's p50 %v, p95 %v, max %v; want 20ms, 1s, 1s", a.P50, a.P95, a.Max)
	}
	if len(a.FailedRuns) != 1 || a.FailedRuns[0].Position != failed.Position || a.FailedRuns[0].ExitCode != 2 {
		t.Errorf("a.sh's failed runs %+v; want the one at position %d, exit 2", a.FailedRuns, failed.Position)
	}
	if a.Spark[0] != 2 || a.Spark[1] != 2 || a.SparkFailed[0] != 0 || a.SparkFailed[1] != 1 {
		t.Errorf("a.sh's sparkline %v, failed %v; want [2 2], [0 1]", a.Spark, a.SparkFailed)
	}
	if g := byName["guard PreToolUse"]; g.Runs != 1 || g.Blocked != 1 {
		t.Errorf("guard: %+v; want 1 run, blocked", g)
	}
	if s := byName["sub.sh SubagentStart"]; s.Runs != 1 {
		t.Errorf("sub.sh under SubagentStart: %+v; want its run (all: %+v)", s, all)
	}
	if e := byName["end.sh SessionEnd"]; e.Runs != 2 || e.Interrupted != 1 || e.Key.Source != "/p/settings.json" || e.P50 != time.Millisecond {
		t.Errorf("end.sh: %+v; want its run and the interrupted one together, the 1ms of the first its p50", e)
	}
	if bg := byName["bg.sh SubagentStart"]; bg.Runs != 1 || bg.TimedOut != 1 {
		t.Errorf("bg.sh: %+v; want one run, timed out, its end", bg)
	}
	if all[0].Key.Name != "a.sh" && all[0].Key.Name != "bg.sh" {
		t.Errorf("first listed %q; want a hook that failed", all[0].Key.Name)
	}

	recent := l.h.Report(later.UnixNano(), later.Add(time.Hour).UnixNano(), projection.ByHook, 1)
	for _, s := range recent {
		if s.Key.Name == "a.sh" && (s.Runs != 2 || s.P50 != 30*time.Millisecond) {
			t.Errorf("a.sh in the later hour: %+v; want its 2 runs of then", s)
		}
	}
	bySource := l.h.Report(day.UnixNano(), later.Add(time.Hour).UnixNano(), projection.BySource, 1)
	for _, s := range bySource {
		if s.Key.Source == "/p/settings.json" && s.Runs != 8 {
			t.Errorf("settings.json's hooks: %d runs, want 8", s.Runs)
		}
		if s.Key.Name != "" || s.Key.Event != "" {
			t.Errorf("a group by source names more than its source: %+v", s.Key)
		}
	}
	if none := l.h.Report(later.Add(24*time.Hour).UnixNano(), later.Add(25*time.Hour).UnixNano(), projection.ByHook, 4); len(none) != 0 {
		t.Errorf("a window without runs lists %+v", none)
	}
}
