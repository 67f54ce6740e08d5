package projection

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
)

// HookHealth folds every hook run a log records into counts per hook: how
// many ran, how they ended, how long they took, by the hour they ran in.
// A view keeps one and folds each new event into it, rather than reading
// the whole log for each question (Report). It holds no text of the runs
// beyond the hooks' names and where they were configured: a failed run is
// kept as the position of the event that recorded it.
//
// A run is an outcome of a hook's step (SessionStart, a tool call's hooks,
// a fired event, ...) or the end of an async hook; the outcome that only
// says an async hook started is not one.
type HookHealth struct {
	// Last is the position of the last event applied.
	Last  uint64
	hooks map[HookKey]*hookSeries
	// started is the event each agent stream's last SessionStart or Stop
	// intent named, which its Ran does not repeat: SubagentStart and
	// SubagentStop share their payloads.
	started map[string]schema.HookEvent
	// named is the last hook of each name and event with a source: an
	// outcome a crash left without one (interrupted, rolled forward) is
	// that hook's.
	named map[HookKey]HookKey
	// failedOn holds the sessions a hook run failed on.
	failedOn map[string]bool
}

// HookKey names a hook as the health view counts it.
type HookKey struct {
	Name   string // the command, URL, prompt or function's name
	Source string // where it was configured: a settings file, plugin:DIR, function, session
	Event  schema.HookEvent
	Type   string // command, function, http, prompt, agent, mcp_tool
}

// hookSeries is one hook's runs, by hour, and its latest failures.
type hookSeries struct {
	hours  map[int64]*hourRuns // by unix hour
	failed []FailedRun         // the latest maxFailed, oldest first
}

// hourRuns are the runs of one hook in one hour.
type hourRuns struct {
	counts    HookCounts
	durations []uint32 // microseconds, each run's, at most math.MaxUint32
}

// HookCounts are how runs ended.
type HookCounts struct {
	Runs, OK, Failed, TimedOut, Cancelled, Interrupted, Blocked int
}

// add counts o.
func (c *HookCounts) add(o schema.HookOutcome) {
	c.Runs++
	switch o.Status {
	case schema.HookOK:
		c.OK++
	case schema.HookFailed, schema.HookPanicked:
		c.Failed++
	case schema.HookTimedOut:
		c.TimedOut++
	case schema.HookCancelled:
		c.Cancelled++
	case schema.HookInterrupted:
		c.Interrupted++
	}
	if o.Decision == "block" || o.Decision == "deny" || o.Halt {
		c.Blocked++
	}
}

// plus returns c and d summed.
func (c HookCounts) plus(d HookCounts) HookCounts {
	return HookCounts{c.Runs + d.Runs, c.OK + d.OK, c.Failed + d.Failed, c.TimedOut + d.TimedOut,
		c.Cancelled + d.Cancelled, c.Interrupted + d.Interrupted, c.Blocked + d.Blocked}
}

// FailedRun is a run that failed, timed out or was interrupted: the event
// that recorded it, and how it ended.
type FailedRun struct {
	Stream   string
	Seq      uint64
	Position uint64
	Time     int64 // the event's, UTC unix nanoseconds
	Status   string
	ExitCode int
}

// maxFailed is how many failed runs HookHealth keeps per hook.
const maxFailed = 100

// NewHookHealth returns an empty HookHealth.
func NewHookHealth() *HookHealth {
	return &HookHealth{hooks: map[HookKey]*hookSeries{}, started: map[string]schema.HookEvent{}, named: map[HookKey]HookKey{}, failedOn: map[string]bool{}}
}

// HookHealthFolds reports whether HookHealth.Apply folds events of type
// t: a reader decodes only those.
func HookHealthFolds(t eventlog.Type) bool {
	switch t {
	case schema.TypeSessionStartHookStarted, schema.TypeStopHookStarted, schema.TypeSessionStartHookRan,
		schema.TypeStopHookRan, schema.TypeSessionEndHookRan, schema.TypePromptHookRan, schema.TypePreCompactHookRan,
		schema.TypeToolHookRan, schema.TypeHookEventRan, schema.TypeAsyncHookEnded:
		return true
	}
	return false
}

// Apply folds ev, whose payload is p, into h; an event at or before Last
// is one h has and is passed over. p may be nil for an event of a type
// HookHealthFolds says no to, which only moves Last.
func (h *HookHealth) Apply(ev eventlog.Event, p schema.Payload) {
	if ev.Position <= h.Last {
		return
	}
	h.Last = ev.Position
	var (
		event    schema.HookEvent
		session  string
		outcomes []schema.HookOutcome
	)
	switch p := p.(type) {
	case *schema.SessionStartHookStarted:
		h.started[ev.Stream] = cmp.Or(p.Event, schema.HookSessionStart)
	case *schema.StopHookStarted:
		h.started[ev.Stream] = cmp.Or(p.Event, schema.HookStop)
	case *schema.SessionStartHookRan:
		event, session, outcomes = h.twin(ev.Stream, schema.HookSessionStart, schema.HookSubagentStart), p.Session, p.Outcomes
	case *schema.StopHookRan:
		event, session, outcomes = h.twin(ev.Stream, schema.HookStop, schema.HookSubagentStop), p.Session, p.Outcomes
	case *schema.SessionEndHookRan:
		event, session, outcomes = schema.HookSessionEnd, p.Session, p.Outcomes
	case *schema.PromptHookRan:
		event, session, outcomes = schema.HookUserPromptSubmit, p.Session, p.Outcomes
	case *schema.PreCompactHookRan:
		event, session, outcomes = schema.HookPreCompact, p.Session, p.Outcomes
	case *schema.ToolHookRan:
		event, session, outcomes = p.Event, p.Session, p.Outcomes
	case *schema.HookEventRan:
		event, session, outcomes = p.Event, p.Session, p.Outcomes
	case *schema.AsyncHookEnded:
		event, session, outcomes = p.Event, p.Session, []schema.HookOutcome{p.Outcome}
	}
	for _, o := range outcomes {
		if o.Status == schema.HookAsync {
			continue // started in the background: its end is the run
		}
		if h.add(ev, event, o) && session != "" {
			h.failedOn[session] = true
		}
	}
}

// twin is the event of stream's pending intent when it is twin, else
// event.
func (h *HookHealth) twin(stream string, event, twin schema.HookEvent) schema.HookEvent {
	if h.started[stream] == twin {
		return twin
	}
	return event
}

// add counts the run o of a hook of event, which ev recorded, and
// reports whether it failed.
func (h *HookHealth) add(ev eventlog.Event, event schema.HookEvent, o schema.HookOutcome) bool {
	typ := o.Type
	if typ == "" {
		typ = "command"
		if o.Source == "function" {
			typ = "function"
		}
	}
	k := HookKey{Name: o.Name, Source: o.Source, Event: event, Type: typ}
	if o.Source == "" { // rolled forward after a crash: counted with the hook of that name
		if known, ok := h.named[HookKey{Name: o.Name, Event: event}]; ok {
			k = known
		}
	} else {
		h.named[HookKey{Name: o.Name, Event: event}] = k
	}
	s := h.hooks[k]
	if s == nil {
		s = &hookSeries{hours: map[int64]*hourRuns{}}
		h.hooks[k] = s
	}
	hour := ev.Time / int64(time.Hour)
	r := s.hours[hour]
	if r == nil {
		r = &hourRuns{}
		s.hours[hour] = r
	}
	r.counts.add(o)
	if o.Status != schema.HookInterrupted || o.Duration > 0 { // a run a crash cut off took no time it knows
		r.durations = append(r.durations, uint32(min(max(o.Duration, 0)/int64(time.Microsecond), 1<<32-1)))
	}
	switch o.Status {
	case schema.HookFailed, schema.HookPanicked, schema.HookTimedOut, schema.HookInterrupted:
		if len(s.failed) == maxFailed {
			s.failed = slices.Delete(s.failed, 0, 1)
		}
		s.failed = append(s.failed, FailedRun{Stream: ev.Stream, Seq: ev.Seq, Position: ev.Position, Time: ev.Time,
			Status: o.Status, ExitCode: o.ExitCode})
		return true
	}
	return false
}

// FailedOn reports whether a hook run on session failed, timed out or was
// interrupted.
func (h *HookHealth) FailedOn(session string) bool { return h.failedOn[session] }

// HookGroup is how Report groups hooks.
type HookGroup string

// The groups of Report: each hook alone, or all the hooks of one source
// (a settings file or a plugin), one event or one type together.
const (
	ByHook   HookGroup = "hook"
	BySource HookGroup = "source"
	ByEvent  HookGroup = "event"
	ByType   HookGroup = "type"
)

// HookStats are the runs of a hook, or of a group of hooks, in a window.
type HookStats struct {
	// Key names the hook; for a group, only the field it is grouped by
	// is set.
	Key HookKey
	HookCounts
	// P50, P95 and Max are the runs' durations, by nearest rank, to the
	// microsecond; a run a crash cut off (interrupted, no duration) is not
	// among them.
	P50, P95, Max time.Duration
	// Spark is the runs in each of the window's equal slots, oldest
	// first, and SparkFailed those of them that failed, timed out or were
	// interrupted.
	Spark, SparkFailed []int
	// FailedRuns are the latest failed runs of the hook in the window,
	// newest first, at most 100; for a group, of all its hooks.
	FailedRuns []FailedRun
}

// Report returns the runs in the hours from from up to to (UTC unix
// nanoseconds; to is excluded), grouped by group, with a sparkline of
// slots slots each, the hooks that failed most first, then by most runs.
// A hook without a run in the window is not listed.
func (h *HookHealth) Report(from, to int64, group HookGroup, slots int) []HookStats {
	slots = max(slots, 1)
	fromHour, toHour := from/int64(time.Hour), (to+int64(time.Hour)-1)/int64(time.Hour)
	span := max(toHour-fromHour, 1)
	type acc struct {
		stats     HookStats
		durations []uint32
	}
	groups := map[HookKey]*acc{}
	for k, s := range h.hooks {
		gk := k
		switch group {
		case BySource:
			gk = HookKey{Source: k.Source}
		case ByEvent:
			gk = HookKey{Event: k.Event}
		case ByType:
			gk = HookKey{Type: k.Type}
		}
		var a *acc
		for hour, r := range s.hours {
			if hour < fromHour || hour >= toHour {
				continue
			}
			if a = groups[gk]; a == nil {
				a = &acc{stats: HookStats{Key: gk, Spark: make([]int, slots), SparkFailed: make([]int, slots)}}
				groups[gk] = a
			}
			a.stats.HookCounts = a.stats.HookCounts.plus(r.counts)
			a.durations = append(a.durations, r.durations...)
			slot := int((hour - fromHour) * int64(slots) / span)
			a.stats.Spark[slot] += r.counts.Runs
			a.stats.SparkFailed[slot] += r.counts.Failed + r.counts.TimedOut + r.counts.Interrupted
		}
		if a == nil {
			continue
		}
		for _, f := range s.failed {
			if f.Time >= fromHour*int64(time.Hour) && f.Time < toHour*int64(time.Hour) {
				a.stats.FailedRuns = append(a.stats.FailedRuns, f)
			}
		}
	}
	out := make([]HookStats, 0, len(groups))
	for _, a := range groups {
		slices.Sort(a.durations)
		if n := len(a.durations); n > 0 {
			at := func(q float64) time.Duration { // the nearest rank
				return time.Duration(a.durations[max(int(math.Ceil(q*float64(n)))-1, 0)]) * time.Microsecond
			}
			a.stats.P50, a.stats.P95, a.stats.Max = at(0.50), at(0.95), at(1)
		}
		slices.SortFunc(a.stats.FailedRuns, func(x, y FailedRun) int { return cmp.Compare(y.Position, x.Position) })
		if len(a.stats.FailedRuns) > maxFailed {
			a.stats.FailedRuns = a.stats.FailedRuns[:maxFailed]
		}
		out = append(out, a.stats)
	}
	slices.SortFunc(out, func(x, y HookStats) int {
		fx, fy := x.Failed+x.TimedOut+x.Interrupted, y.Failed+y.TimedOut+y.Interrupted
		return cmp.Or(cmp.Compare(fy, fx), cmp.Compare(y.Runs, x.Runs),
			strings.Compare(string(x.Key.Event), string(y.Key.Event)), strings.Compare(x.Key.Name, y.Key.Name),
			strings.Compare(x.Key.Source, y.Key.Source), strings.Compare(x.Key.Type, y.Key.Type))
	})
	return out
}
