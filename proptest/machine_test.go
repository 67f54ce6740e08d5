package proptest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// TestEngineStateMachine drives a real Engine on a real bbolt file with
// random sequences of actions and checks it against the model after each
// one. See the package documentation for the actions and the checks.
func TestEngineStateMachine(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	var st stats
	rapid.Check(t, func(rt *rapid.T) {
		rt.Repeat(newMachine(rt, base, &st).actions())
	})
	t.Logf("%s: %s", rapidBudget(), &st)
}

// stats counts what the state machine test did, over all its cases.
type stats struct {
	cases, startups, runtimes, ends, crashes, reopens, hooks atomic.Int64
	fires, refires, fireCrashes, compactCrashes, meddles     atomic.Int64
}

func (st *stats) String() string {
	return fmt.Sprintf("%d cases, %d restores leaving no session, %d leaving one, %d ends, %d crashes, %d clean reopens, %d hook runs; "+
		"%d new fires, %d fired again, %d crashes in a fire, %d in a compaction, %d lifecycle actions refused during a fire",
		st.cases.Load(), st.startups.Load(), st.runtimes.Load(), st.ends.Load(), st.crashes.Load(), st.reopens.Load(), st.hooks.Load(),
		st.fires.Load(), st.refires.Load(), st.fireCrashes.Load(), st.compactCrashes.Load(), st.meddles.Load())
}

// The agents of the state machine: two hosts sharing one Engine.
var agentIDs = []string{"ide", "cli"}

// Targets that do not exist, or cannot name a session at all.
var missingIDs = []string{"nope", "../etc/passwd", "a/b", ".hidden"}

// Behaviours the registry's hooks may be given.
var (
	startFuncBehaviours = []string{behaveContext, behaveEmpty, behaveFail, behavePanic}
	endFuncBehaviours   = []string{behaveEmpty, behaveFail, behavePanic}
	startCmdBehaviours  = []string{behaveContext, behaveJSON, behaveEmpty, behaveFail}
	endCmdBehaviours    = []string{behaveEmpty, behaveFail}
)

// scopedKinds are the session-scoped hooks the machine may add. The last is
// the registry's own command, which deduplication must drop.
var scopedKinds = []struct {
	tag       string
	event     hookexec.Event
	behaviour string
	command   bool
}{
	{"scoped-fn-text", hookexec.SessionStart, behaveContext, false},
	{"scoped-fn-hang", hookexec.SessionStart, behaveHang, false},
	{"scoped-fn-end", hookexec.SessionEnd, behaveEmpty, false},
	{"scoped-fn-end-fail", hookexec.SessionEnd, behaveFail, false},
	{"scoped-cmd-json", hookexec.SessionStart, behaveJSON, true},
	{"scoped-cmd-empty", hookexec.SessionStart, behaveEmpty, true},
	{"scoped-cmd-hang", hookexec.SessionStart, behaveHang, true},
	{"scoped-cmd-end-fail", hookexec.SessionEnd, behaveFail, true},
	{"cmd-start", hookexec.SessionStart, "", true},
}

var discard = testkit.Discard

// machine is the system under test and its model.
type machine struct {
	st     *stats
	dir    string
	path   string
	script string
	side   *sideFile
	beh    *behaviours
	reg    *hookexec.Registry
	cmds   map[string]hookSpec // the registry's command hooks, by tag

	store  *faultStore
	e      *reprise.Engine
	agents map[string]*reprise.Agent
	m      *model

	newID func() string    // the Engine's ids: id-1, id-2, ...
	now   func() time.Time // the Engine's clock: a millisecond later at each reading
	texts int
	news  int

	firing   string         // the agent whose fire is running
	meddled  []error        // what the lifecycle actions tried by hooks of that fire returned
	fireRuns map[string]int // hook runs by fired event, fire id and tag, over the whole case
}

func newMachine(t *rapid.T, base string, st *stats) *machine {
	st.cases.Add(1)
	// Cases run one after the other, and each one gets the same directory
	// and clock, so that replaying a case gives the same failure message,
	// which rapid needs to shrink it.
	dir := filepath.Join(base, "case")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &machine{st: st, dir: dir, path: filepath.Join(dir, "reprise.db"), script: hookScript(t),
		side: newSideFile(dir), beh: &behaviours{}, reg: hookexec.NewRegistry(),
		fireRuns: map[string]int{}, newID: testkit.IDs("id"), now: testkit.Clock(time.Unix(1_700_000_000, 0), time.Millisecond)}
	if err := os.Mkdir(s.cwd(), 0o755); err != nil {
		t.Fatal(err)
	}
	s.m = newModel(s.registerHooks(t), map[string]string{})
	for slot, b := range map[string]string{"fn-start": behaveContext, "fn-start-resume": behaveEmpty,
		"fn-end": behaveEmpty, "cmd-start": behaveJSON, "cmd-end": behaveEmpty,
		"fn-fire": behaveMeddle, "cmd-fire": behaveJSON, "fn-post-compact": behaveEmpty} {
		s.setBehaviour(t, slot, b)
	}
	s.open(t)
	t.Cleanup(func() {
		s.e.Close()
		os.RemoveAll(dir)
	})
	return s
}

// actions returns the machine's actions for rapid. Restores are what the
// test is about, so Restore is drawn three times as often as most others,
// and Start twice; Fire three times, since most of its draws find no new
// id or no current session. The fire actions are keyed in lower case:
// rapid draws an action by its place among the sorted keys, and keys that
// sort after the others leave the older actions where the kept .fail
// files expect them.
func (s *machine) actions() map[string]func(*rapid.T) {
	actions := rapid.StateMachineActions(s)
	for _, name := range []string{"Fire", "CrashInFire", "CrashInCompact"} {
		actions[strings.ToLower(name[:1])+name[1:]] = actions[name]
		delete(actions, name)
	}
	for name, weight := range map[string]int{"Start": 2, "Restore": 3, "fire": 3} {
		for i := 2; i <= weight; i++ {
			actions[fmt.Sprintf("%s#%d", name, i)] = actions[name]
		}
	}
	return actions
}

// cwd is every session's working directory, where command hooks run.
func (s *machine) cwd() string { return filepath.Join(s.dir, "work") }

// registerHooks fills the registry, which outlives each Engine of the case,
// and returns its hooks as the model sees them.
func (s *machine) registerHooks(t *rapid.T) []hookSpec {
	slot := func(name string) func() string { return func() string { return s.beh.get(name) } }
	var specs []hookSpec
	for _, f := range []struct {
		event        hookexec.Event
		tag, matcher string
	}{
		{hookexec.SessionStart, "fn-start", ""},
		{hookexec.SessionStart, "fn-start-resume", "resume"},
		{hookexec.SessionEnd, "fn-end", ""},
	} {
		m, err := hookexec.ParseMatcher(f.matcher)
		if err != nil {
			t.Fatal(err)
		}
		h := hookexec.Hook{Event: f.event, Name: f.tag, Source: "function", Matcher: m, Timeout: workingTimeout}
		if f.event == hookexec.SessionStart {
			h.Body = startFunc(f.tag, s.side, slot(f.tag))
		} else {
			h.Body = endFunc(f.tag, s.side, slot(f.tag))
		}
		if err := s.reg.Add(h); err != nil {
			t.Fatal(err)
		}
		specs = append(specs, hookSpec{event: f.event, matcher: f.matcher, tag: f.tag, name: f.tag, slot: f.tag})
	}
	specs = append(specs, s.registerFireFuncs(t)...)
	// The Stop hook is asked only by the Stop action, which models it itself.
	if err := s.reg.OnStop("fn-stop", stopFunc("fn-stop", s.side, slot("fn-stop"))); err != nil {
		t.Fatal(err)
	}
	// Command hooks come from a Claude Code settings file, as hosts load them.
	s.cmds = map[string]hookSpec{}
	for _, c := range []struct {
		event        hookexec.Event
		tag, matcher string
	}{
		{hookexec.SessionStart, "cmd-start", "startup|resume"},
		{hookexec.SessionEnd, "cmd-end", ""},
	} {
		cmd := commandLine(s.script, c.tag, s.modeFile(c.tag), s.side.path)
		s.cmds[c.tag] = hookSpec{event: c.event, matcher: c.matcher, tag: c.tag, name: cmd, command: cmd, slot: c.tag}
	}
	// One command hook of the fired events runs on Notification and on
	// TaskCreated, not on Setup.
	fire := commandLine(s.script, "cmd-fire", s.modeFile("cmd-fire"), s.side.path)
	s.cmds["cmd-fire"] = hookSpec{event: schema.HookNotification, tag: "cmd-fire", name: fire, command: fire, slot: "cmd-fire"}
	task := s.cmds["cmd-fire"]
	task.event = schema.HookTaskCreated
	settings := fmt.Sprintf(`{"hooks": {
		"SessionStart": [{"matcher": %q, "hooks": [{"type": "command", "command": %q, "timeout": %d}]}],
		"SessionEnd": [{"hooks": [{"type": "command", "command": %q, "timeout": %d}]}],
		"Notification": [{"hooks": [{"type": "command", "command": %[6]q, "timeout": %[3]d}]}],
		"TaskCreated": [{"hooks": [{"type": "command", "command": %[6]q, "timeout": %[3]d}]}]}}`,
		s.cmds["cmd-start"].matcher, s.cmds["cmd-start"].command, int(workingTimeout.Seconds()),
		s.cmds["cmd-end"].command, int(workingTimeout.Seconds()), fire)
	path := filepath.Join(s.dir, "settings.json")
	if err := os.WriteFile(path, []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks, err := hookexec.LoadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.reg.AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	return append(specs, s.cmds["cmd-start"], s.cmds["cmd-end"], s.cmds["cmd-fire"], task)
}

func (s *machine) modeFile(tag string) string { return filepath.Join(s.dir, tag+".mode") }

func (s *machine) setBehaviour(t *rapid.T, slot, b string) {
	if _, ok := s.cmds[slot]; ok {
		if err := os.WriteFile(s.modeFile(slot), []byte(b+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	} else {
		s.beh.set(slot, b)
	}
	s.m.behaviour[slot] = b
}

// open opens an Engine on the store file and gets every agent, which rolls
// forward a restore a dead process left in flight.
func (s *machine) open(t *rapid.T) {
	bs, err := boltstore.Open(s.path, boltstore.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s.store = &faultStore{Store: bs}
	s.e = reprise.New(s.store, reprise.Options{Hooks: s.reg, Logger: discard, NewID: s.newID, Now: s.now,
		TranscriptDir: filepath.Join(s.dir, "transcripts"), StopBlockCap: stopCap})
	s.agents = map[string]*reprise.Agent{}
	for _, id := range agentIDs {
		a, err := s.e.Agent(context.Background(), id)
		if err != nil {
			t.Fatalf("Agent(%s) on open: %v", id, err)
		}
		s.agents[id] = a
	}
}

// die abandons the Engine the way a killed process does: nothing is saved
// and nothing is closed cleanly, except the file, so that it can be opened
// again in this process.
func (s *machine) die(t *rapid.T) {
	if err := s.store.Store.Close(); err != nil {
		t.Fatal(err)
	}
}

func (s *machine) nextText() string {
	s.texts++
	return fmt.Sprintf("message %d", s.texts)
}

func (s *machine) drawSession(t *rapid.T) string {
	if len(s.m.order) == 0 {
		t.SkipNow() // no session yet
	}
	return rapid.SampledFrom(s.m.order).Draw(t, "session")
}

// others returns the sessions other than cur.
func (s *machine) others(cur string) []string {
	return slices.DeleteFunc(slices.Clone(s.m.order), func(id string) bool { return id == cur })
}

// drawAgentWithOthers draws an agent that has a session other than its
// current one to go to and, when current is true, a current session. When
// there is none it skips the action before drawing anything: rapid counts
// a skip after a draw against the length of the case.
func (s *machine) drawAgentWithOthers(t *rapid.T, current bool) string {
	var ok []string
	for _, id := range agentIDs {
		cur := s.m.current[id]
		if len(s.others(cur)) > 0 && (cur != "" || !current) {
			ok = append(ok, id)
		}
	}
	if len(ok) == 0 {
		t.SkipNow() // no agent can restore
	}
	return rapid.SampledFrom(ok).Draw(t, "agent")
}

// drawAgentWithCurrent draws an agent that has a current session, or skips
// the action before drawing anything.
func (s *machine) drawAgentWithCurrent(t *rapid.T) string {
	var ok []string
	for _, id := range agentIDs {
		if s.m.current[id] != "" {
			ok = append(ok, id)
		}
	}
	if len(ok) == 0 {
		t.SkipNow() // no agent has a current session
	}
	return rapid.SampledFrom(ok).Draw(t, "agent")
}

func drawAgent(t *rapid.T) string { return rapid.SampledFrom(agentIDs).Draw(t, "agent") }

func drawRole(t *rapid.T) string {
	return rapid.SampledFrom([]string{"user", "assistant"}).Draw(t, "role")
}

// checkRuns compares the hook runs recorded in the side file since the
// last check with the model's groups: each group, in order, must be the
// runs of one phase, in any order within it.
func (s *machine) checkRuns(t *rapid.T, groups [][]string) {
	t.Helper()
	got, err := s.side.newRuns()
	if err != nil {
		t.Fatal(err)
	}
	s.st.hooks.Add(int64(len(got)))
	s.checkFireRuns(t, got)
	rest := got
	for _, g := range groups {
		if len(rest) < len(g) {
			t.Fatalf("hook runs %q, want the phases %q", got, groups)
		}
		have, want := slices.Sorted(slices.Values(rest[:len(g)])), slices.Sorted(slices.Values(g))
		if !slices.Equal(have, want) {
			t.Fatalf("hook runs %q, want the phases %q", got, groups)
		}
		rest = rest[len(g):]
	}
	if len(rest) > 0 {
		t.Fatalf("hook runs %q, want the phases %q", got, groups)
	}
}

// Actions. Each one acts on the Engine and on the model, and checks what
// the Engine returned; Check then compares the whole state.

func (s *machine) CreateSession(t *rapid.T) {
	id := fmt.Sprintf("s%d", len(s.m.order)+len(s.m.deleted)+1)
	got, err := s.e.CreateSession(context.Background(), id, s.cwd())
	if err != nil || got != id {
		t.Fatalf("CreateSession(%s) = %q, %v", id, got, err)
	}
	s.m.create(id)
}

func (s *machine) CreateExistingSession(t *rapid.T) {
	id := s.drawSession(t)
	if _, err := s.e.CreateSession(context.Background(), id, s.cwd()); !errors.Is(err, reprise.ErrSessionExists) {
		t.Fatalf("CreateSession(%s) again: %v, want ErrSessionExists", id, err)
	}
}

func (s *machine) Append(t *rapid.T) {
	id, m := s.drawSession(t), msg{role: drawRole(t), text: s.nextText()}
	got, err := s.e.Append(context.Background(), id, reprise.Text(m.role, m.text))
	if err != nil {
		t.Fatalf("Append(%s): %v", id, err)
	}
	if got.UUID == "" || got.Role != m.role || got.Content[0].Text != m.text {
		t.Fatalf("Append(%s) returned %v", id, asModel([]reprise.Message{got}))
	}
	s.m.sessions[id].pending = append(s.m.sessions[id].pending, m)
	s.m.save(id)
}

func (s *machine) Buffer(t *rapid.T) {
	id, m := s.drawSession(t), msg{role: drawRole(t), text: s.nextText()}
	if _, err := s.e.Buffer(context.Background(), id, reprise.Text(m.role, m.text)); err != nil {
		t.Fatalf("Buffer(%s): %v", id, err)
	}
	s.m.sessions[id].pending = append(s.m.sessions[id].pending, m)
}

func (s *machine) Save(t *rapid.T) {
	id := s.drawSession(t)
	n, err := s.e.Save(context.Background(), id)
	if want := s.m.save(id); err != nil || n != want {
		t.Fatalf("Save(%s) = %d, %v; want %d", id, n, err, want)
	}
}

// Start is a startup restore to an existing session, the current one
// included.
func (s *machine) Start(t *rapid.T) {
	to := s.drawSession(t)
	agent := drawAgent(t)
	if cur := s.m.current[agent]; cur != "" && rapid.Bool().Draw(t, "current") {
		to = cur
	}
	s.restore(t, agent, to, reprise.SourceStartup)
}

// StartNothing is a startup restore to a missing session or to "".
func (s *machine) StartNothing(t *rapid.T) {
	agent := drawAgent(t)
	id := rapid.SampledFrom(append([]string{""}, missingIDs...)).Draw(t, "target")
	r, err := s.agents[agent].Start(context.Background(), id)
	switch {
	case id == "" && (r != nil || err != nil):
		t.Fatalf("Start(\"\") = %s, %v; want a no-op", describe(r), err)
	case id != "" && !errors.Is(err, reprise.ErrSessionNotFound):
		t.Fatalf("Start(%q) = %s, %v; want ErrSessionNotFound", id, describe(r), err)
	}
	s.checkRuns(t, nil)
}

// Restore is a runtime restore to another existing session.
func (s *machine) Restore(t *rapid.T) {
	agent := s.drawAgentWithOthers(t, false)
	cur := s.m.current[agent]
	to := rapid.SampledFrom(s.others(cur)).Draw(t, "to")
	if cur == "" {
		if r, err := s.agents[agent].Restore(context.Background(), to); !errors.Is(err, reprise.ErrNoCurrentSession) {
			t.Fatalf("Restore(%s) with no current session = %s, %v; want ErrNoCurrentSession", to, describe(r), err)
		}
		s.checkRuns(t, nil)
		return
	}
	s.restore(t, agent, to, reprise.SourceResume)
}

// RestoreNothing is a runtime restore to a missing session, to the current
// one or to "".
func (s *machine) RestoreNothing(t *rapid.T) {
	agent := drawAgent(t)
	cur := s.m.current[agent]
	var id string
	switch rapid.SampledFrom([]string{"current", "empty", "missing"}).Draw(t, "target") {
	case "current":
		id = cur
	case "missing":
		id = rapid.SampledFrom(missingIDs).Draw(t, "missing")
	}
	r, err := s.agents[agent].Restore(context.Background(), id)
	switch {
	case id == "" || id == cur:
		if r != nil || err != nil {
			t.Fatalf("Restore(%q) of the current session = %s, %v; want a no-op", id, describe(r), err)
		}
	case cur == "":
		if !errors.Is(err, reprise.ErrNoCurrentSession) {
			t.Fatalf("Restore(%q) with no current session = %s, %v; want ErrNoCurrentSession", id, describe(r), err)
		}
	case !errors.Is(err, reprise.ErrSessionNotFound):
		t.Fatalf("Restore(%q) = %s, %v; want ErrSessionNotFound", id, describe(r), err)
	}
	s.checkRuns(t, nil)
}

// New makes a fresh session current, leaving the current one, if any, with
// reason clear. Now and then the id it asks for is taken.
func (s *machine) New(t *rapid.T) {
	agent := drawAgent(t)
	ctx := context.Background()
	if len(s.m.order) > 0 && rapid.Bool().Draw(t, "taken") {
		id := rapid.SampledFrom(s.m.order).Draw(t, "id")
		if r, err := s.agents[agent].New(ctx, id, s.cwd()); !errors.Is(err, reprise.ErrSessionExists) {
			t.Fatalf("New(%s) of an existing session = %s, %v; want ErrSessionExists", id, describe(r), err)
		}
		s.checkRuns(t, nil)
		return
	}
	s.news++
	id := fmt.Sprintf("n%d", s.news)
	r, err := s.agents[agent].New(ctx, id, s.cwd())
	if err != nil || r == nil || r.To != id {
		t.Fatalf("New(%s) = %s, %v", id, describe(r), err)
	}
	s.m.create(id)
	want, groups := s.m.restore(agent, id, reprise.SourceNew, reprise.ReasonClear, crash{})
	s.checkDone(t, r, want, groups)
}

// Clear ends the current session with reason clear and makes a fresh one
// current.
func (s *machine) Clear(t *rapid.T) {
	agent := s.drawAgentWithCurrent(t)
	r, err := s.agents[agent].Clear(context.Background())
	if err != nil || r == nil || r.To == "" || s.m.sessions[r.To] != nil {
		t.Fatalf("Clear = %s, %v", describe(r), err)
	}
	s.m.create(r.To)
	want, groups := s.m.restore(agent, r.To, reprise.SourceClear, reprise.ReasonClear, crash{})
	s.checkDone(t, r, want, groups)
}

// Fork makes a copy of a session, up to a drawn message or whole, current;
// now and then the fork point is not a message of the session, which must
// change nothing.
func (s *machine) Fork(t *rapid.T) {
	parent := s.drawSession(t)
	agent := drawAgent(t)
	ctx := context.Background()
	full, err := s.e.FullConversation(ctx, parent)
	if err != nil {
		t.Fatal(err)
	}
	if rapid.Bool().Draw(t, "bad point") {
		if r, err := s.agents[agent].Fork(ctx, parent, "no-such-message"); !errors.Is(err, reprise.ErrMessageNotFound) {
			t.Fatalf("Fork at a missing message = %s, %v; want ErrMessageNotFound", describe(r), err)
		}
		s.checkRuns(t, nil)
		return
	}
	n := rapid.IntRange(0, len(full)).Draw(t, "messages") // 0: the whole conversation
	upTo, copied := "", slices.Clone(s.m.sessions[parent].history)
	if n > 0 {
		upTo, copied = full[n-1].UUID, copied[:n]
	}
	r, err := s.agents[agent].Fork(ctx, parent, upTo)
	if err != nil || r == nil || s.m.sessions[r.To] != nil {
		t.Fatalf("Fork(%s, %q) = %s, %v", parent, upTo, describe(r), err)
	}
	s.m.create(r.To)
	s.m.sessions[r.To].keep(copied...)
	want, groups := s.m.restore(agent, r.To, reprise.SourceFork, reprise.ReasonResume, crash{})
	s.checkDone(t, r, want, groups)
}

// Compact replaces the current session's conversation by a summary.
func (s *machine) Compact(t *rapid.T) {
	agent := s.drawAgentWithCurrent(t)
	r, err := s.agents[agent].Compact(context.Background(), compactSummary)
	if err != nil || r == nil {
		t.Fatalf("Compact = %s, %v", describe(r), err)
	}
	cur := s.m.current[agent]
	want, groups := s.m.restore(agent, cur, reprise.SourceCompact, "", crash{})
	groups = append(groups, s.m.postCompact(agent, cur, crash{})...)
	s.checkDone(t, r, want, groups)
}

// stopCap is the Engine's cap on consecutive blocked stops in these tests,
// low so that cases reach it.
const stopCap = 2

// Stop ends a turn: the Stop hook blocks it or not, as drawn, and after
// stopCap blocks in a row it is not asked.
func (s *machine) Stop(t *rapid.T) {
	agent := s.drawAgentWithCurrent(t)
	block := rapid.Bool().Draw(t, "block")
	s.beh.set("fn-stop", map[bool]string{true: behaveBlock, false: behaveEmpty}[block])
	res, err := s.agents[agent].Stop(context.Background())
	if err != nil || res == nil {
		t.Fatalf("Stop = %+v, %v", res, err)
	}
	cur, blocks := s.m.current[agent], s.m.stopBlocks[agent]
	s.m.save(cur) // every stop saves what was buffered before its hooks run
	switch {
	case blocks >= stopCap:
		if !res.Capped || res.Blocked {
			t.Fatalf("stop after %d blocks = %+v; want capped", blocks, res)
		}
		s.m.stopBlocks[agent] = 0
		s.checkRuns(t, nil)
		return
	case block:
		s.m.sessions[cur].keep(msg{role: "user", meta: true, text: "Stop hook blocking error from command: \"fn-stop\": " + stopReason})
		s.m.stopBlocks[agent]++
	default:
		s.m.stopBlocks[agent] = 0
	}
	if res.Capped || res.Blocked != block || (block && res.Reason != stopReason) {
		t.Fatalf("stop (block %v, after %d blocks) = %+v", block, blocks, res)
	}
	s.checkRuns(t, [][]string{{runLine(hookexec.Stop, cur, fmt.Sprint(blocks > 0), "fn-stop")}})
}

// endReasons are the reasons End accepts besides resume and clear.
var endReasons = []reprise.Reason{reprise.ReasonComplete, reprise.ReasonError, reprise.ReasonAbort, reprise.ReasonTimeout,
	reprise.ReasonUserExit, reprise.ReasonLogout, reprise.ReasonPromptInputExit, reprise.ReasonOther}

// End ends the current session, leaving the agent without one.
func (s *machine) End(t *rapid.T) {
	agent := s.drawAgentWithCurrent(t)
	reason := rapid.SampledFrom(endReasons).Draw(t, "reason")
	r, err := s.agents[agent].End(context.Background(), reason, reprise.EndOptions{FinalMessage: "bye"})
	if err != nil || r == nil {
		t.Fatalf("End(%s) = %s, %v", reason, describe(r), err)
	}
	want, groups := s.m.restore(agent, "", "", reason, crash{})
	s.checkDone(t, r, want, groups)
}

// EndNothing is an End or a Clear that must be refused: a reason End does
// not know, or an agent without a current session.
func (s *machine) EndNothing(t *rapid.T) {
	agent := drawAgent(t)
	a, ctx := s.agents[agent], context.Background()
	switch {
	case rapid.Bool().Draw(t, "bad reason"):
		if r, err := a.End(ctx, "bored", reprise.EndOptions{}); !errors.Is(err, reprise.ErrBadReason) {
			t.Fatalf("End(bored) = %s, %v; want ErrBadReason", describe(r), err)
		}
	case s.m.current[agent] == "":
		if r, err := a.End(ctx, reprise.ReasonOther, reprise.EndOptions{}); !errors.Is(err, reprise.ErrNoCurrentSession) {
			t.Fatalf("End with no current session = %s, %v; want ErrNoCurrentSession", describe(r), err)
		}
		if r, err := a.Clear(ctx); !errors.Is(err, reprise.ErrNoCurrentSession) {
			t.Fatalf("Clear with no current session = %s, %v; want ErrNoCurrentSession", describe(r), err)
		}
	}
	s.checkRuns(t, nil)
}

// restore runs a startup or runtime restore to an existing session and
// checks what it returns and which hooks ran.
func (s *machine) restore(t *rapid.T, agent, to string, source reprise.Source) {
	want, groups := s.m.restore(agent, to, source, reprise.ReasonResume, crash{})
	a, ctx := s.agents[agent], context.Background()
	var r *reprise.Transition
	var err error
	if source == reprise.SourceStartup {
		r, err = a.Start(ctx, to)
	} else {
		r, err = a.Restore(ctx, to)
	}
	if err != nil || r == nil {
		t.Fatalf("%s restore of %s to %s = %s, %v", source, agent, to, describe(r), err)
	}
	s.checkDone(t, r, want, groups)
}

// checkDone checks a completed restore against the model's, and the hook
// runs it made.
func (s *machine) checkDone(t *rapid.T, r *reprise.Transition, want *modelRestore, groups [][]string) {
	checkRestore(t, *r, *want)
	s.checkRuns(t, groups)
	switch {
	case want.to == "":
		s.st.ends.Add(1)
	case want.reason == "":
		s.st.startups.Add(1)
	default:
		s.st.runtimes.Add(1)
	}
	if r.InjectedUUID == "" {
		return
	}
	conv, err := s.e.Conversation(context.Background(), r.To)
	if err != nil {
		t.Fatal(err)
	}
	if len(conv) == 0 || conv[len(conv)-1].UUID != r.InjectedUUID {
		t.Fatalf("the injected message %s is not the last of %s: %v", r.InjectedUUID, r.To, asModel(conv))
	}
}

// checkRestore compares a restore of the log with the model's.
func checkRestore(t interface{ Fatalf(string, ...any) }, r reprise.Transition, want modelRestore) {
	fail := func(what string, got, exp any) {
		t.Fatalf("restore %s of %s -> %s (%s): %s = %v, want %v", r.ID, want.from, want.to, want.source, what, got, exp)
	}
	outcomes := func(os []schema.HookOutcome) (names, statuses []string) {
		for _, o := range os {
			names, statuses = append(names, o.Name), append(statuses, o.Status)
		}
		return names, statuses
	}
	endNames, endStatuses := outcomes(r.EndOutcomes)
	startNames, startStatuses := outcomes(r.StartOutcomes)
	switch {
	case r.Source != want.source || r.From != want.from || r.To != want.to:
		fail("source, from, to", []string{string(r.Source), r.From, r.To}, []string{string(want.source), want.from, want.to})
	case !slices.Equal(r.Steps, want.steps()):
		fail("steps", r.Steps, want.steps())
	case r.Saved != want.saved || r.SaveError != "":
		fail("saved, save error", []any{r.Saved, r.SaveError}, []any{want.saved, ""})
	case r.EndReason != want.reason:
		fail("end reason", r.EndReason, want.reason)
	case !slices.Equal(r.EndHooks, want.endNames) || !slices.Equal(endNames, want.endNames):
		fail("SessionEnd hooks (intent, outcomes)", [][]string{r.EndHooks, endNames}, want.endNames)
	case !slices.Equal(endStatuses, want.endStatuses) || r.EndInterrupted != want.endInterrupted:
		fail("SessionEnd statuses, interrupted", []any{endStatuses, r.EndInterrupted}, []any{want.endStatuses, want.endInterrupted})
	case !slices.Equal(r.StartHooks, want.startNames) || !slices.Equal(startNames, want.startNames):
		fail("SessionStart hooks (intent, outcomes)", [][]string{r.StartHooks, startNames}, want.startNames)
	case !slices.Equal(startStatuses, want.startStatuses) || r.StartInterrupted != want.startInterrupted:
		fail("SessionStart statuses, interrupted", []any{startStatuses, r.StartInterrupted}, []any{want.startStatuses, want.startInterrupted})
	case r.Context != want.contextNow():
		fail("context", r.Context, want.contextNow())
	case (r.InjectedUUID != "") != (want.context != ""):
		fail("injected message", r.InjectedUUID, want.context != "")
	}
}

// DeleteSession deletes a session no agent is on; deleting the current
// session of an agent is the scenario delete.txt's. Now and then it then
// tries to create the session again, which must fail.
func (s *machine) DeleteSession(t *rapid.T) {
	var free []string
	for _, id := range s.m.order {
		if !slices.Contains(slices.Collect(maps.Values(s.m.current)), id) {
			free = append(free, id)
		}
	}
	if len(free) == 0 {
		t.SkipNow() // every session is current
	}
	id := rapid.SampledFrom(free).Draw(t, "session")
	if err := s.e.DeleteSession(context.Background(), id); err != nil {
		t.Fatalf("DeleteSession(%s): %v", id, err)
	}
	s.m.delete(id)
	if rapid.Bool().Draw(t, "recreate") {
		if _, err := s.e.CreateSession(context.Background(), id, s.cwd()); !errors.Is(err, reprise.ErrSessionDeleted) {
			t.Fatalf("CreateSession(%s) of a deleted id: %v, want ErrSessionDeleted", id, err)
		}
	}
	s.checkRuns(t, nil)
}

// Vacuum removes the deleted sessions for good: the contexts their
// restores recorded are blanked, and the audit must accept the gaps.
func (s *machine) Vacuum(t *rapid.T) {
	if _, err := s.e.Vacuum(context.Background()); err != nil {
		t.Fatalf("Vacuum: %v", err)
	}
	s.m.vacuum()
	s.checkRuns(t, nil)
}

func (s *machine) SetHookBehaviour(t *rapid.T) {
	slot := rapid.SampledFrom([]string{"fn-start", "fn-start-resume", "fn-end", "cmd-start", "cmd-end",
		"fn-fire", "cmd-fire", "fn-post-compact"}).Draw(t, "slot")
	choices := map[string][]string{"fn-start": startFuncBehaviours, "fn-start-resume": startFuncBehaviours,
		"fn-end": endFuncBehaviours, "cmd-start": startCmdBehaviours, "cmd-end": endCmdBehaviours,
		"fn-fire": fireFuncBehaviours, "cmd-fire": startCmdBehaviours, "fn-post-compact": startFuncBehaviours}[slot]
	s.setBehaviour(t, slot, rapid.SampledFrom(choices).Draw(t, "behaviour"))
}

func (s *machine) AddSessionHook(t *rapid.T) {
	id := s.drawSession(t)
	k := rapid.SampledFrom(scopedKinds).Draw(t, "kind")
	matcher := rapid.SampledFrom([]string{"", "resume", "startup"}).Draw(t, "matcher")
	m, err := hookexec.ParseMatcher(matcher)
	if err != nil {
		t.Fatal(err)
	}
	spec := hookSpec{event: k.event, matcher: matcher, tag: k.tag, fixed: k.behaviour}
	h := hookexec.Hook{Event: k.event, Matcher: m, Timeout: workingTimeout}
	if k.behaviour == behaveHang {
		h.Timeout = hangTimeout
	}
	switch {
	case k.behaviour == "": // the registry's command
		spec = s.cmds[k.tag]
		spec.matcher = matcher
		h.Body = hookexec.Command{Line: spec.command}
	case k.command:
		spec.command = commandLine(s.script, k.tag, k.behaviour, s.side.path)
		spec.name, h.Body = spec.command, hookexec.Command{Line: spec.command}
	default:
		spec.name, h.Name = k.tag, k.tag
		fixed := func() string { return k.behaviour }
		if k.event == hookexec.SessionStart {
			h.Body = startFunc(k.tag, s.side, fixed)
		} else {
			h.Body = endFunc(k.tag, s.side, fixed)
		}
	}
	got, err := s.e.AddSessionHook(id, h)
	if err != nil {
		t.Fatalf("AddSessionHook(%s, %s): %v", id, k.tag, err)
	}
	if same := s.m.addScoped(id, spec); same != "" {
		if got != same {
			t.Fatalf("AddSessionHook(%s, %s) of an equal hook returned %s, want %s", id, k.tag, got, same)
		}
		return
	}
	for _, e := range s.m.sessions[id].scoped {
		if e.id == got {
			t.Fatalf("AddSessionHook(%s, %s) returned the id %s of another hook", id, k.tag, got)
		}
	}
	s.m.keepScoped(id, got, spec)
}

func (s *machine) RemoveSessionHook(t *rapid.T) {
	id := s.drawSession(t)
	hookID := "sh-999999"
	if scoped := s.m.sessions[id].scoped; len(scoped) > 0 && rapid.Bool().Draw(t, "known") {
		hookID = rapid.SampledFrom(scoped).Draw(t, "hook").id
	}
	want := s.m.removeScoped(id, hookID)
	if got := s.e.RemoveSessionHook(id, hookID); got != want {
		t.Fatalf("RemoveSessionHook(%s, %s) = %v, want %v", id, hookID, got, want)
	}
}

// Reopen closes the Engine cleanly, which saves buffered messages, and
// opens the store again.
func (s *machine) Reopen(t *rapid.T) {
	if err := s.e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s.m.reopened()
	s.open(t)
	s.st.reopens.Add(1)
	s.checkRuns(t, nil)
}

// CrashInStart kills the process (in effect) before or after one append
// of a startup restore, then opens the store again, which rolls the
// restore forward.
func (s *machine) CrashInStart(t *rapid.T) {
	to := s.drawSession(t)
	agent := drawAgent(t)
	c := crash{rapid.IntRange(1, len(startupSteps)).Draw(t, "k"), rapid.Bool().Draw(t, "after")}
	_, groups := s.m.restore(agent, to, reprise.SourceStartup, "", c)
	s.store.arm(c.k, c.after)
	_, err := s.agents[agent].Start(context.Background(), to)
	s.reopenAfterCrash(t, err, groups)
}

// CrashInRestore is CrashInStart for a runtime restore.
func (s *machine) CrashInRestore(t *rapid.T) {
	agent := s.drawAgentWithOthers(t, true)
	to := rapid.SampledFrom(s.others(s.m.current[agent])).Draw(t, "to")
	c := crash{rapid.IntRange(1, len(resumeSteps)).Draw(t, "k"), rapid.Bool().Draw(t, "after")}
	_, groups := s.m.restore(agent, to, reprise.SourceResume, reprise.ReasonResume, c)
	s.store.arm(c.k, c.after)
	_, err := s.agents[agent].Restore(context.Background(), to)
	s.reopenAfterCrash(t, err, groups)
}

// CrashInEnd is CrashInStart for an End.
func (s *machine) CrashInEnd(t *rapid.T) {
	agent := s.drawAgentWithCurrent(t)
	reason := rapid.SampledFrom(endReasons).Draw(t, "reason")
	c := crash{rapid.IntRange(1, len(endSteps)).Draw(t, "k"), rapid.Bool().Draw(t, "after")}
	_, groups := s.m.restore(agent, "", "", reason, c)
	s.store.arm(c.k, c.after)
	_, err := s.agents[agent].End(context.Background(), reason, reprise.EndOptions{})
	s.reopenAfterCrash(t, err, groups)
}

// CrashInAppend kills the process (in effect) before or after the append
// of a durable message.
func (s *machine) CrashInAppend(t *rapid.T) {
	id, m := s.drawSession(t), msg{role: drawRole(t), text: s.nextText()}
	after := rapid.Bool().Draw(t, "after")
	s.store.arm(1, after)
	_, err := s.e.Append(context.Background(), id, reprise.Text(m.role, m.text))
	if after {
		s.m.sessions[id].pending = append(s.m.sessions[id].pending, m)
		s.m.save(id)
	}
	s.m.crashed()
	s.reopenAfterCrash(t, err, nil)
}

// reopenAfterCrash checks that the crashed call failed, opens the store in
// a new Engine, and checks the hook runs of the dead and the new Engine.
func (s *machine) reopenAfterCrash(t *rapid.T, err error, groups [][]string) {
	if !errors.Is(err, errCrashed) {
		t.Fatalf("the crashed call returned %v, want the crash", err)
	}
	s.die(t)
	s.open(t)
	s.checkRuns(t, groups)
	s.st.crashes.Add(1)
}

// Check is run after every action.
func (s *machine) Check(t *rapid.T) {
	ctx := context.Background()
	for _, id := range s.m.order {
		want := s.m.sessions[id]
		conv, err := s.e.Conversation(ctx, id)
		if err != nil {
			t.Fatalf("Conversation(%s): %v", id, err)
		}
		checkMessages(t, id, conv, want.saved)
		pending, err := s.e.Pending(ctx, id)
		if err != nil {
			t.Fatalf("Pending(%s): %v", id, err)
		}
		if got := asModel(pending); !slices.Equal(got, want.pending) {
			t.Fatalf("pending of %s = %v, want %v", id, got, want.pending)
		}
		rebuilt := projection.NewConversation(id)
		if err := s.e.Store().ReadStream(ctx, projection.SessionStream(id), 1, rebuilt.Apply); err != nil {
			t.Fatal(err)
		}
		full, err := s.e.FullConversation(ctx, id)
		if err != nil {
			t.Fatalf("FullConversation(%s): %v", id, err)
		}
		if !sameMessages(rebuilt.View(), conv) || !sameMessages(rebuilt.Messages, full) {
			t.Fatalf("%s rebuilt from the log differs from the live conversation\nrebuilt %v\nlive    %v", id, asModel(rebuilt.Messages), asModel(full))
		}
	}
	for _, id := range agentIDs {
		a := s.agents[id]
		if a.Current() != s.m.current[id] {
			t.Fatalf("agent %s: current %q, want %q", id, a.Current(), s.m.current[id])
		}
		live := a.History()
		want := s.m.history[id]
		if len(live) != len(want) {
			t.Fatalf("agent %s has %d restores, want %d", id, len(live), len(want))
		}
		for i := range live {
			checkRestore(t, live[i], want[i])
		}
		rebuilt := projection.NewAgent(id)
		if err := s.e.Store().ReadStream(ctx, projection.AgentStream(id), 1, rebuilt.Apply); err != nil {
			t.Fatal(err)
		}
		if rebuilt.Current != a.Current() || !reflect.DeepEqual(rebuilt.History, live) || rebuilt.Restore != nil {
			t.Fatalf("agent %s rebuilt from the log differs from the live agent\nrebuilt %q %s\nlive    %q %s", id, rebuilt.Current, summarize(rebuilt.History), a.Current(), summarize(live))
		}
	}
	for _, id := range s.m.order {
		for _, q := range []struct {
			event hookexec.Event
			value string
		}{
			{hookexec.SessionStart, string(reprise.SourceStartup)}, {hookexec.SessionStart, string(reprise.SourceResume)},
			{hookexec.SessionEnd, string(reprise.ReasonResume)}, {hookexec.SessionEnd, string(reprise.ReasonOther)},
		} {
			got := hookexec.Names(s.e.HooksFor(ctx, q.event, q.value, id))
			if want := names(s.m.hooksFor(q.event, q.value, id, true)); !slices.Equal(got, want) {
				t.Fatalf("HooksFor(%s, %s, %s) = %q, want %q", q.event, q.value, id, got, want)
			}
		}
	}
	infos, err := s.e.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != len(s.m.order) {
		t.Fatalf("Sessions lists %d sessions, want %d", len(infos), len(s.m.order))
	}
	for _, info := range infos {
		if want := s.m.sessions[info.ID]; want == nil || info.Messages != len(want.history) {
			t.Fatalf("Sessions says %s has %d messages; the model has it %v", info.ID, info.Messages, want != nil)
		}
	}
	for id := range s.m.deleted {
		if _, err := s.e.Conversation(ctx, id); !errors.Is(err, reprise.ErrSessionDeleted) {
			t.Fatalf("Conversation(%s) of a deleted session: %v, want ErrSessionDeleted", id, err)
		}
	}
	checkAudit(t, s.e.Store(), s.m)
	s.checkFires(t)
	s.checkRuns(t, nil)
}

// describe summarizes a restore in a line that, unlike %+v, holds nothing
// that changes from one run of the same case to the next, such as
// durations: rapid only shrinks a case whose failure message repeats.
func describe(r *reprise.Transition) string {
	if r == nil {
		return "<nil>"
	}
	return fmt.Sprintf("restore %s (%s %q -> %q: %v)", r.ID, r.Source, r.From, r.To, r.Steps)
}

// checkMessages compares a conversation with the model's, and checks that
// each message's parent is the one before it.
func checkMessages(t interface{ Fatalf(string, ...any) }, id string, conv []reprise.Message, want []msg) {
	if got := asModel(conv); !slices.Equal(got, want) {
		t.Fatalf("conversation %s =\n%v\nwant\n%v", id, got, want)
	}
	parent := ""
	for i, m := range conv {
		// A compaction's summary hangs from its boundary, not from the
		// message before it.
		if !m.Summary && m.ParentUUID != parent {
			t.Fatalf("conversation %s: message %d has parent %q, want %q", id, i, m.ParentUUID, parent)
		}
		parent = m.UUID
	}
}

// sameMessages reports whether a and b hold equal messages; nil and empty
// are the same.
func sameMessages(a, b []reprise.Message) bool {
	return slices.EqualFunc(a, b, func(x, y reprise.Message) bool { return reflect.DeepEqual(x, y) })
}

func asModel(msgs []reprise.Message) []msg {
	out := make([]msg, 0, len(msgs))
	for _, m := range msgs {
		var texts []string
		for _, b := range m.Content {
			texts = append(texts, b.Text)
		}
		out = append(out, msg{role: m.Role, text: strings.Join(texts, "|"), meta: m.IsMeta})
	}
	return out
}

// checkAudit requires a clean audit whose counts agree with the model.
func checkAudit(t interface{ Fatalf(string, ...any) }, store eventlog.Store, m *model) {
	rep, err := reprise.Audit(context.Background(), store)
	if err != nil {
		t.Fatalf("Audit: %v", err)
	}
	if len(rep.Violations) > 0 {
		t.Fatalf("Audit found %d violations: %v", len(rep.Violations), rep.Violations)
	}
	restores, interrupted := m.interruptedHooks()
	// A deleted session's stream stays, its tombstone at least; the audit
	// counts it apart.
	if rep.Restores != restores || rep.HooksInterrupted != interrupted || rep.Sessions != len(m.order) || rep.DeletedSessions != len(m.deleted) {
		t.Fatalf("Audit counts %d restores, %d interrupted hooks, %d sessions, %d deleted; want %d, %d, %d, %d",
			rep.Restores, rep.HooksInterrupted, rep.Sessions, rep.DeletedSessions, restores, interrupted, len(m.order), len(m.deleted))
	}
}
