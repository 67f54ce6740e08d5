package proptest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// A crash scenario is what a child process of the crash test does, drawn
// from a seed: create sessions s0, s1, ... with durable messages, start
// s0, then restore s1, s2, ... in turn, appending durable messages to the
// current session and buffering messages on it and on the target before
// each restore. Each session is entered once and left once, so every hook
// run of a scenario is a distinct side-file line.
type scenario struct {
	seed     uint64
	sessions int
	initial  []int // durable messages of each session at creation
	appends  []int // before runtime restore i: durable messages on the current session
	buffered []int // then messages buffered on it
	onTarget []int // then messages buffered on the target
	// The behaviours of the hooks: two SessionStart hooks and one
	// SessionEnd hook, all matching everything.
	startA, startB, end string
	restore             int // the runtime restore that "resume" points hit
	append              int // the durable append that "append" points hit, from 1
}

func newScenario(seed uint64) scenario {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	pick := func(choices ...string) string { return choices[r.IntN(len(choices))] }
	sc := scenario{seed: seed, sessions: 3 + r.IntN(2)}
	total := 0
	for range sc.sessions {
		n := r.IntN(3)
		sc.initial = append(sc.initial, n)
		total += n
	}
	sc.appends, sc.buffered, sc.onTarget = make([]int, sc.sessions), make([]int, sc.sessions), make([]int, sc.sessions)
	for i := 1; i < sc.sessions; i++ {
		sc.appends[i], sc.buffered[i], sc.onTarget[i] = 1+r.IntN(2), r.IntN(3), r.IntN(2)
		total += sc.appends[i]
	}
	sc.startA = pick(behaveContext, behaveJSON, behaveEmpty)
	sc.startB = pick(behaveContext, behaveEmpty, behaveFail)
	sc.end = pick(behaveEmpty, behaveFail)
	sc.restore = 1 + r.IntN(sc.sessions-1)
	sc.append = 1 + r.IntN(total)
	return sc
}

func (sc scenario) String() string {
	return fmt.Sprintf("seed %d: %d sessions, initial %v, appends %v, buffered %v, on target %v, hooks start-a %s, start-b %s, end %s; resume points hit restore %d, append points append %d",
		sc.seed, sc.sessions, sc.initial, sc.appends[1:], sc.buffered[1:], sc.onTarget[1:],
		sc.startA, sc.startB, sc.end, sc.restore, sc.append)
}

func sessionName(i int) string { return fmt.Sprintf("s%d", i) }

// op is one step of a scenario.
type op struct {
	kind    string // "create", "append", "buffer", "start", "restore"
	session string
	text    string
	restore int // for "start" (0) and "restore"
}

func (sc scenario) ops() []op {
	var ops []op
	n := 0
	message := func(kind, session string) op {
		n++
		return op{kind: kind, session: session, text: fmt.Sprintf("m%d", n)}
	}
	for i := range sc.sessions {
		ops = append(ops, op{kind: "create", session: sessionName(i)})
		for range sc.initial[i] {
			ops = append(ops, message("append", sessionName(i)))
		}
	}
	ops = append(ops, op{kind: "start", session: sessionName(0)})
	for i := 1; i < sc.sessions; i++ {
		from, to := sessionName(i-1), sessionName(i)
		for range sc.appends[i] {
			ops = append(ops, message("append", from))
		}
		for range sc.buffered[i] {
			ops = append(ops, message("buffer", from))
		}
		for range sc.onTarget[i] {
			ops = append(ops, message("buffer", to))
		}
		ops = append(ops, op{kind: "restore", session: to, restore: i})
	}
	return ops
}

// The tags of the scenario's hooks. The first hook of each event is the
// one that blocks at a "running" point.
const (
	tagStartA = "start-a"
	tagStartB = "start-b"
	tagEnd    = "end"
)

// hookKinds are the two ways the crash test configures hooks.
var hookKinds = []string{"function", "command"}

// crashHooks returns the registry of a scenario run with hooks of kind,
// recording runs in side, and the model's view of it. In a child, block
// is called by a function hook that is to block.
func (sc scenario) crashHooks(kind, script string, side *sideFile, block func(event hookexec.Event, session, tag string)) (*hookexec.Registry, []hookSpec, error) {
	reg := hookexec.NewRegistry()
	any, err := hookexec.ParseMatcher("")
	if err != nil {
		return nil, nil, err
	}
	var specs []hookSpec
	for _, h := range []struct {
		event          hookexec.Event
		tag, behaviour string
	}{
		{hookexec.SessionStart, tagStartA, sc.startA},
		{hookexec.SessionStart, tagStartB, sc.startB},
		{hookexec.SessionEnd, tagEnd, sc.end},
	} {
		spec := hookSpec{event: h.event, tag: h.tag, name: h.tag, fixed: h.behaviour}
		hook := hookexec.Hook{Event: h.event, Name: h.tag, Source: "function", Matcher: any, Timeout: workingTimeout}
		if kind == "command" {
			spec.command = commandLine(script, h.tag, h.behaviour, side.path)
			spec.name = spec.command
			hook = hookexec.Hook{Event: h.event, Body: hookexec.Command{Line: spec.command}, Source: "test", Matcher: any, Timeout: workingTimeout}
		} else {
			behave := func() string { return h.behaviour }
			line := func(session, value string) string { return runLine(h.event, session, value, h.tag) }
			if h.event == hookexec.SessionStart {
				run := startFunc(h.tag, side, behave)
				hook.Body = hookexec.SessionStartFunc(func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
					if block != nil && blocks(h.event, in.SessionID, h.tag) {
						if err := side.appendRun(line(in.SessionID, string(in.Source))); err != nil {
							return hookexec.SessionStartOutput{}, err
						}
						block(h.event, in.SessionID, h.tag)
					}
					return run(ctx, in)
				})
			} else {
				run := endFunc(h.tag, side, behave)
				hook.Body = hookexec.SessionEndFunc(func(ctx context.Context, in hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
					if block != nil && blocks(h.event, in.SessionID, h.tag) {
						if err := side.appendRun(line(in.SessionID, string(in.Reason))); err != nil {
							return hookexec.SessionEndOutput{}, err
						}
						block(h.event, in.SessionID, h.tag)
					}
					return run(ctx, in)
				})
			}
		}
		if err := reg.Add(hook); err != nil {
			return nil, nil, err
		}
		specs = append(specs, spec)
	}
	return reg, specs, nil
}

// Environment of a crash child and of its command hooks.
const (
	blockEnv = "REPRISE_CRASH_BLOCK" // "EVENT SESSION TAG" of the hook that blocks
	peersEnv = "REPRISE_CRASH_PEERS" // runs of its phase it waits for first
	fifoEnv  = "REPRISE_CRASH_FIFO"  // where the child reports
)

// blocks reports whether the hook tagged tag is the one to block when it
// runs for event on session.
func blocks(event hookexec.Event, session, tag string) bool {
	return os.Getenv(blockEnv) == strings.Join([]string{string(event), session, tag}, " ")
}

// point is where a crash child is killed.
type point struct {
	op   string // "startup", "resume" or "append"
	when string // "before" or "after" an append, or "running" while a hook runs
	what string // the event type appended, or for "running" the hook event
}

func (p point) String() string {
	if p.op == "append" {
		return p.op + "/" + p.when
	}
	return p.op + "/" + p.when + "/" + p.what
}

func parsePoint(s string) (point, error) {
	parts := strings.Split(s, "/")
	switch {
	case len(parts) == 2 && parts[0] == "append":
		return point{op: parts[0], when: parts[1]}, nil
	case len(parts) == 3:
		return point{op: parts[0], when: parts[1], what: parts[2]}, nil
	}
	return point{}, fmt.Errorf("bad crash point %q", s)
}

// crashPoints lists every point: before and after every append of a
// startup restore, of a runtime restore and of a durable message, and
// while each hook phase runs. "Before the outcome of a hook phase is
// recorded" is "before" its SessionEndHookRan or SessionStartHookRan.
func crashPoints() []point {
	var ps []point
	for _, when := range []string{"before", "after"} {
		ps = append(ps, point{op: "append", when: when})
	}
	for _, r := range []struct {
		op     string
		steps  []eventlog.Type
		events []string
	}{
		{"startup", startupSteps, []string{string(hookexec.SessionStart)}},
		{"resume", resumeSteps, []string{string(hookexec.SessionEnd), string(hookexec.SessionStart)}},
	} {
		for _, typ := range r.steps {
			for _, when := range []string{"before", "after"} {
				ps = append(ps, point{op: r.op, when: when, what: string(typ)})
			}
		}
		for _, ev := range r.events {
			ps = append(ps, point{op: r.op, when: "running", what: ev})
		}
	}
	return ps
}

// restoreIndex returns the restore p hits in sc: 0 for the startup
// restore, or -1 for a message append.
func (sc scenario) restoreIndex(p point) int {
	switch p.op {
	case "startup":
		return 0
	case "resume":
		return sc.restore
	}
	return -1
}

// crashOf returns where in the hit restore p kills the process, in the
// model's terms. A kill while a hook phase runs has the same outcome as
// one before the phase's outcome is recorded, since the blocking hook
// waits for the other hooks of its phase to run first.
func (p point) crashOf() crash {
	steps := startupSteps
	if p.op == "resume" {
		steps = resumeSteps
	}
	typ := eventlog.Type(p.what)
	switch {
	case p.when == "running" && p.what == string(hookexec.SessionEnd):
		typ = schema.TypeSessionEndHookRan
	case p.when == "running":
		typ = schema.TypeSessionStartHookRan
	}
	return crash{k: slices.Index(steps, typ) + 1, after: p.when == "after"}
}

// blockFor returns the blocking hook of a "running" point: its event, its
// session and tag, and how many runs of its phase it waits for.
func (sc scenario) blockFor(p point) (key string, peers int) {
	i := sc.restoreIndex(p)
	if p.what == string(hookexec.SessionEnd) {
		return strings.Join([]string{string(hookexec.SessionEnd), sessionName(i - 1), tagEnd}, " "), 1
	}
	return strings.Join([]string{string(hookexec.SessionStart), sessionName(i), tagStartA}, " "), 2
}

// expect runs the scenario in the model, dying at p, and returns the
// model once the next process has rolled forward, and the side-file lines
// of every hook run.
func (sc scenario) expect(p point, specs []hookSpec) (*model, []string) {
	m := newModel(specs, nil)
	var lines []string
	appended := 0
	for _, o := range sc.ops() {
		switch o.kind {
		case "create":
			m.create(o.session)
		case "append":
			appended++
			s := m.sessions[o.session]
			if p.op == "append" && appended == sc.append {
				if p.when == "after" {
					s.pending = append(s.pending, msg{role: "user", text: o.text})
					m.save(o.session)
				}
				m.crashed()
				return m, lines
			}
			s.pending = append(s.pending, msg{role: "user", text: o.text})
			m.save(o.session)
		case "buffer":
			s := m.sessions[o.session]
			s.pending = append(s.pending, msg{role: "user", text: o.text})
		case "start", "restore":
			source, reason := reprise.SourceStartup, reprise.Reason("")
			if o.kind == "restore" {
				source, reason = reprise.SourceResume, reprise.ReasonResume
			}
			var c crash
			if sc.restoreIndex(p) == o.restore {
				c = p.crashOf()
			}
			_, groups := m.restore("ide", o.session, source, reason, c)
			for _, g := range groups {
				lines = append(lines, g...)
			}
			if c.k != 0 {
				return m, lines
			}
		}
	}
	return m, lines
}

// crashPaths are the files of one crash run.
type crashPaths struct{ dir string }

func (c crashPaths) store() string       { return filepath.Join(c.dir, "reprise.db") }
func (c crashPaths) work() string        { return filepath.Join(c.dir, "work") }
func (c crashPaths) transcripts() string { return filepath.Join(c.dir, "transcripts") }
func (c crashPaths) fifo() string        { return filepath.Join(c.dir, "report") }
