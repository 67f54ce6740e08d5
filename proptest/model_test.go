package proptest

import (
	"slices"
	"strings"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// The model is what the Engine should do, written as plainly as possible:
// sessions are lists of messages, agents are a current session and a list
// of restores, and a restore is a fixed sequence of steps whose hooks run
// according to their behaviours. It knows nothing of events, stores,
// projections or processes.

// msg is a message as the model sees it. Texts are unique in a run.
type msg struct {
	role string
	text string
	meta bool
}

// reminder is the meta message a non-empty hook context is injected as.
func reminder(context string) msg {
	return msg{role: "user", meta: true, text: "<system-reminder>\nSessionStart hook additional context: " + context + "\n</system-reminder>"}
}

// hookSpec is a hook as the model sees it.
type hookSpec struct {
	event   hookexec.Event
	matcher string // "", or words joined by "|"
	tag     string // what its runs write to the side file
	name    string // its name in intents and outcomes
	command string // "" for a function hook
	fixed   string // its behaviour, when it never changes
	slot    string // else the behaviours slot that says what it does
}

func (h hookSpec) matches(value string) bool {
	return h.matcher == "" || slices.Contains(strings.Split(h.matcher, "|"), value)
}

// identity is what makes two session-scoped hooks equal.
func (h hookSpec) identity() string {
	if h.command != "" {
		return string(h.event) + "\x00" + h.matcher + "\x00cmd\x00" + h.command
	}
	return string(h.event) + "\x00" + h.matcher + "\x00func\x00" + h.name
}

type scopedEntry struct {
	id   string
	spec hookSpec
}

type modelSession struct {
	saved   []msg // the conversation the model sees: after a compaction, from its summary on
	history []msg // every saved message, those a compaction replaced included
	pending []msg
	scoped  []scopedEntry // in the order they were added
}

// modelRestore is what the log should say about one completed restore.
// An End is a restore to "" with no source.
type modelRestore struct {
	source           reprise.Source
	from, to         string
	reason           reprise.Reason // the SessionEnd reason, "" when no session was left
	saved            int
	endNames         []string
	endStatuses      []string
	endInterrupted   bool
	startNames       []string
	startStatuses    []string
	startInterrupted bool
	context          string
	vacuumed         bool // a vacuum removed its target: the log's context is blank
}

// contextNow is the context the log holds for r: none once a vacuum
// removed its target.
func (r modelRestore) contextNow() string {
	if r.vacuumed {
		return ""
	}
	return r.context
}

// steps returns the event types r records when complete.
func (r modelRestore) steps() []eventlog.Type {
	switch {
	case r.to == "":
		return endSteps
	case r.source == reprise.SourceCompact:
		return compactSteps
	case r.reason == "":
		return startupSteps
	}
	return resumeSteps
}

var (
	// startupSteps are the steps of a restore that leaves no session: Start,
	// or New on an agent without a current session.
	startupSteps = []eventlog.Type{schema.TypeSessionLoaded, schema.TypeSessionStartHookStarted,
		schema.TypeSessionStartHookRan, schema.TypeContextInjected}
	// resumeSteps are the steps of a restore that leaves a session: Restore,
	// Clear, or New on an agent with a current session.
	resumeSteps = []eventlog.Type{schema.TypeSaveAttempted, schema.TypeSessionEndHookStarted,
		schema.TypeSessionEndHookRan, schema.TypeSessionLoaded, schema.TypeSessionStartHookStarted,
		schema.TypeSessionStartHookRan, schema.TypeContextInjected}
	// compactSteps are the steps of a compaction.
	compactSteps = []eventlog.Type{schema.TypeSessionCompacted, schema.TypeSessionStartHookStarted,
		schema.TypeSessionStartHookRan, schema.TypeContextInjected}
	// endSteps are the steps of an End.
	endSteps = []eventlog.Type{schema.TypeSaveAttempted, schema.TypeSessionEndHookStarted,
		schema.TypeSessionEndHookRan, schema.TypeSessionClosed}
)

// crash says where the process running a restore dies: during the k-th
// append of the restore (from 1), before the append is written or after it
// is written but before the writer learns it. The zero value is no crash.
// A later process rolls the restore forward.
type crash struct {
	k     int
	after bool
}

// recorded reports whether step i is in the log when the process dies.
func (c crash) recorded(i int) bool { return c.k == 0 || i < c.k || i == c.k && c.after }

// alive reports whether the process that recorded step i went on past it.
func (c crash) alive(i int) bool { return c.k == 0 || i < c.k }

type model struct {
	registry  []hookSpec        // in registration order
	behaviour map[string]string // slot -> behaviour
	sessions  map[string]*modelSession
	order     []string // session ids, in creation order
	current   map[string]string
	history   map[string][]modelRestore
	// stopBlocks counts each agent's consecutive blocked stops.
	stopBlocks map[string]int
	deleted    map[string]bool // deleted sessions, which are not in order
	// fires are each agent's host fires by id; compactFires the
	// PostCompact fires of its compactions, in order.
	fires        map[string]map[string]*modelFire
	compactFires map[string][]modelFire
}

// compactSummary is the summary every compaction of the model gives.
const compactSummary = "what was said so far"

func newModel(registry []hookSpec, behaviour map[string]string) *model {
	return &model{registry: registry, behaviour: behaviour, sessions: map[string]*modelSession{},
		current: map[string]string{}, history: map[string][]modelRestore{}, stopBlocks: map[string]int{},
		deleted: map[string]bool{}, fires: map[string]map[string]*modelFire{}, compactFires: map[string][]modelFire{}}
}

func (m *model) create(id string) {
	m.sessions[id] = &modelSession{}
	m.order = append(m.order, id)
}

// delete takes session id out of the sessions any action uses; its
// buffered messages are gone.
func (m *model) delete(id string) {
	m.order = slices.DeleteFunc(m.order, func(o string) bool { return o == id })
	m.sessions[id].pending = nil
	m.deleted[id] = true
}

// vacuum marks the restores into deleted sessions: their context is
// blanked in the log.
func (m *model) vacuum() {
	for _, h := range m.history {
		for i := range h {
			if m.deleted[h[i].to] {
				h[i].vacuumed = true
			}
		}
	}
}

// save makes session id's pending messages durable and returns how many.
func (m *model) save(id string) int {
	s := m.sessions[id]
	n := len(s.pending)
	s.keep(s.pending...)
	s.pending = nil
	return n
}

// keep adds saved messages to the session's view and its history.
func (s *modelSession) keep(msgs ...msg) {
	s.saved = append(s.saved, msgs...)
	s.history = append(s.history, msgs...)
}

// heard is the word hook h receives, and matches on, for value, a source
// or reason as the log records it: command hooks get Claude Code's words,
// function hooks the Copilot SDK's (the tables in docs/hooks.md).
func (h hookSpec) heard(event hookexec.Event, value string) string {
	command := h.command != ""
	switch {
	case command && event == hookexec.SessionStart && value == "new":
		return "startup"
	case command && event == hookexec.SessionEnd:
		switch value {
		case "user_exit":
			return "prompt_input_exit"
		case "complete", "error", "abort", "timeout":
			return "other"
		}
	case !command && event == hookexec.SessionEnd:
		switch value {
		case "clear", "logout", "prompt_input_exit":
			return "user_exit"
		case "other":
			return "complete"
		}
	}
	return value
}

// hooksFor lists the hooks a restore runs, as Engine.HooksFor does: the
// registry's, then (unless the process is a new one, which has none) the
// session's own, each command once.
func (m *model) hooksFor(event hookexec.Event, value, session string, scoped bool) []hookSpec {
	var out []hookSpec
	for _, h := range m.registry {
		if h.event == event && h.matches(h.heard(event, value)) {
			out = append(out, h)
		}
	}
	if s := m.sessions[session]; s != nil && scoped {
		for _, e := range s.scoped {
			if e.spec.event == event && e.spec.matches(e.spec.heard(event, value)) {
				out = append(out, e.spec)
			}
		}
	}
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(h hookSpec) bool {
		if h.command == "" {
			return false
		}
		dup := seen[h.command]
		seen[h.command] = true
		return dup
	})
}

// run runs hooks in the model and returns their statuses, their joined
// context and the side-file lines their runs write.
func (m *model) run(hooks []hookSpec, event hookexec.Event, session, value string) (statuses []string, context string, lines []string) {
	var texts []string
	for _, h := range hooks {
		b := h.fixed
		if b == "" {
			b = m.behaviour[h.slot]
		}
		status := schema.HookOK
		switch b {
		case behaveFail:
			status = schema.HookFailed
			if h.command != "" && !slices.Contains(schema.HookEvents, event) {
				// A fired event's row reads a command hook's exit 2: it ran.
				status = schema.HookOK
			}
		case behavePanic:
			status = schema.HookPanicked
		case behaveHang:
			status = schema.HookTimedOut
		}
		statuses = append(statuses, status)
		heard := h.heard(event, value)
		if b != behaveHang {
			lines = append(lines, runLine(event, session, heard, h.tag))
		}
		if event == hookexec.SessionStart && (b == behaveContext || b == behaveJSON) {
			texts = append(texts, hookContext(h.tag, session, heard))
		}
	}
	return statuses, strings.Join(texts, "\n"), lines
}

func names(hooks []hookSpec) []string {
	out := make([]string, len(hooks))
	for i, h := range hooks {
		out[i] = h.name
	}
	return out
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// phase is one hook phase of a restore: the intent recorded as step
// intent, the hooks, and their outcomes recorded as step intent+1.
type phase struct {
	names       []string
	statuses    []string
	interrupted bool
	context     string
	lines       []string // side-file lines of the runs
}

func (m *model) phase(event hookexec.Event, value, session string, intent int, c crash) phase {
	byOld := c.recorded(intent)
	hooks := m.hooksFor(event, value, session, byOld)
	p := phase{names: names(hooks)}
	if byOld && !c.alive(intent) {
		// The intent is in the log but its writer died before running the
		// hooks: the next process closes it without running them.
		p.statuses, p.interrupted = repeat(schema.HookInterrupted, len(hooks)), true
		return p
	}
	p.statuses, p.context, p.lines = m.run(hooks, event, session, value)
	if byOld && !c.recorded(intent+1) {
		// The hooks ran, their outcome was lost: closed as interrupted.
		p.statuses, p.context, p.interrupted = repeat(schema.HookInterrupted, len(hooks)), "", true
	}
	return p
}

// restore carries out a restore of agent to session to whose SessionStart
// hooks get source, leaving the current session, if any and unless source
// is startup, with reason; with to "" it is an End for reason. It dies at
// c and is rolled forward by the next process if c says so. It returns the
// restore, nil if it never began, and the side-file lines of its hook
// runs, grouped by phase in the order the phases ran.
func (m *model) restore(agent, to string, source reprise.Source, reason reprise.Reason, c crash) (*modelRestore, [][]string) {
	defer func() {
		if c.k != 0 {
			m.crashed()
		}
	}()
	if !c.recorded(1) {
		return nil, nil
	}
	from := m.current[agent]
	r := &modelRestore{source: source, from: from, to: to}
	var groups [][]string
	add := func(p phase) {
		if len(p.lines) > 0 {
			groups = append(groups, p.lines)
		}
	}
	step := 0
	m.stopBlocks[agent] = 0 // a new current session, or a compaction, ends a chain of blocked stops
	if source == reprise.SourceCompact {
		// The pending messages, the boundary and the summary go in one
		// append; the view then starts at the summary.
		s := m.sessions[from]
		m.save(from)
		summary := msg{role: "user", meta: true, text: reprise.CompactSummaryPrefix + compactSummary}
		s.history = append(s.history, summary)
		s.saved = []msg{summary}
	}
	if source != reprise.SourceStartup && source != reprise.SourceCompact && from != "" {
		r.reason = reason
		r.saved = m.save(from)
		end := m.phase(hookexec.SessionEnd, string(reason), from, 2, c)
		r.endNames, r.endStatuses, r.endInterrupted = end.names, end.statuses, end.interrupted
		add(end)
		if c.k == 0 {
			m.sessions[from].scoped = nil // the session ended: its own hooks go
		}
		step = 3
	}
	m.current[agent] = to
	if to == "" {
		m.history[agent] = append(m.history[agent], *r)
		return r, groups
	}
	start := m.phase(hookexec.SessionStart, string(source), to, step+2, c)
	r.startNames, r.startStatuses, r.startInterrupted, r.context = start.names, start.statuses, start.interrupted, start.context
	add(start)
	if r.context != "" {
		target := m.sessions[to]
		if c.recorded(step + 4) {
			m.save(to) // the injecting process saves what was buffered first
		}
		target.keep(reminder(r.context))
	}
	m.history[agent] = append(m.history[agent], *r)
	return r, groups
}

// crashed is the process dying: buffered messages and session-scoped hooks
// live in memory only.
func (m *model) crashed() {
	for _, s := range m.sessions {
		s.pending, s.scoped = nil, nil
	}
}

// reopened is a clean Close and Open: Close saves what was buffered.
func (m *model) reopened() {
	for _, id := range m.order {
		m.save(id)
		m.sessions[id].scoped = nil
	}
}

// addScoped adds h to session and returns the id of an equal hook it
// already has, or "" if it is new; the caller then passes the new id to
// keepScoped.
func (m *model) addScoped(session string, h hookSpec) string {
	if h.command == "" {
		return "" // function hooks are never merged: each added one is its own
	}
	for _, e := range m.sessions[session].scoped {
		if e.spec.identity() == h.identity() {
			return e.id
		}
	}
	return ""
}

func (m *model) keepScoped(session, id string, h hookSpec) {
	s := m.sessions[session]
	s.scoped = append(s.scoped, scopedEntry{id: id, spec: h})
}

// removeScoped removes hook id of session and reports whether it was there.
func (m *model) removeScoped(session, id string) bool {
	s := m.sessions[session]
	for i, e := range s.scoped {
		if e.id == id {
			s.scoped = slices.Delete(s.scoped, i, i+1)
			return true
		}
	}
	return false
}

// interruptedHooks counts the interrupted outcomes of every restore.
func (m *model) interruptedHooks() (restores, interrupted int) {
	for _, h := range m.history {
		for _, r := range h {
			restores++
			for _, s := range append(slices.Clone(r.endStatuses), r.startStatuses...) {
				if s == schema.HookInterrupted {
					interrupted++
				}
			}
		}
	}
	// The audit counts fired events' hooks with the rest.
	count := func(f *modelFire) {
		for _, s := range f.statuses {
			if s == schema.HookInterrupted {
				interrupted++
			}
		}
	}
	for _, byID := range m.fires {
		for _, f := range byID {
			count(f)
		}
	}
	for _, fs := range m.compactFires {
		for i := range fs {
			count(&fs[i])
		}
	}
	return restores, interrupted
}
