package reprise_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/scenarios/*.txt")

// TestScenarios runs the lifecycle spec: each file of testdata/scenarios
// is a script of what a host does, each block of commands followed by
// "----" and what the log must then hold. They run on the in-memory twins
// of the Engine's boundary: a memory store, memory files and a runner that
// plays each hook's scripted outcome. Files named real-*.txt run a second
// time with real hook commands and files on disk, and must give the same
// output: that is how the twin is shown to keep the real runner's
// contract. Run with -rewrite to regenerate the expected output.
func TestScenarios(t *testing.T) {
	paths, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no scenario files")
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		t.Run(name, func(t *testing.T) { runScenarioFile(t, path, false) })
		if strings.HasPrefix(name, "real-") {
			t.Run(name+"/real-hooks", func(t *testing.T) { runScenarioFile(t, path, true) })
		}
	}
}

// block is one command block of a scenario file.
type block struct {
	comments []string // the lines before the commands
	commands []string
	want     []string
	line     int // of the first command
}

func parseScenario(t *testing.T, path string) []block {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	var cur block
	inWant := false
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case inWant && line == "":
			blocks = append(blocks, cur)
			cur, inWant = block{}, false
		case inWant:
			cur.want = append(cur.want, line)
		case line == "----":
			if len(cur.commands) == 0 {
				t.Fatalf("%s:%d: ---- without commands", path, i+1)
			}
			inWant = true
		case line == "" || strings.HasPrefix(line, "#"):
			if len(cur.commands) > 0 {
				t.Fatalf("%s:%d: a command block must end with ----", path, i+1)
			}
			cur.comments = append(cur.comments, line)
		default:
			if len(cur.commands) == 0 {
				cur.line = i + 1
			}
			cur.commands = append(cur.commands, line)
		}
	}
	if inWant {
		blocks = append(blocks, cur)
	} else if len(cur.commands) > 0 {
		t.Fatalf("%s: the last block has no ----", path)
	}
	return blocks
}

func runScenarioFile(t *testing.T, path string, real bool) {
	blocks := parseScenario(t, path)
	w := newWorld(t, real)
	defer w.close()
	var out strings.Builder
	failed := false
	for _, b := range blocks {
		var got []string
		for k, cmd := range b.commands {
			w.where = fmt.Sprintf("%s:%d", path, b.line+k)
			got = append(got, w.run(t, cmd)...)
		}
		if len(got) == 0 {
			got = []string{"(no output)"}
		}
		for _, c := range b.comments {
			out.WriteString(c + "\n")
		}
		out.WriteString(strings.Join(b.commands, "\n") + "\n----\n" + strings.Join(got, "\n") + "\n\n")
		if !*rewrite && strings.Join(got, "\n") != strings.Join(b.want, "\n") {
			failed = true
			t.Errorf("%s:%d:\n%s\n---- got:\n%s\n---- want:\n%s", path, b.line, strings.Join(b.commands, "\n"),
				strings.Join(got, "\n"), strings.Join(b.want, "\n"))
		}
	}
	if *rewrite && !real {
		if err := os.WriteFile(path, []byte(strings.TrimSuffix(out.String(), "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if failed {
		t.Log("run with -rewrite to accept the new output")
	}
}

// world is what a scenario runs against: a store and files that outlive
// the Engines over them, as a disk outlives a process.
type world struct {
	real    bool
	store   *eventlog.MemoryStore
	crashes *crashStore
	files   reprise.Files
	runner  *recordingRunner
	hooks   *hookexec.Registry
	scripts map[string]hookScript // scripted outcomes by hook name
	e       *reprise.Engine
	dir     string // real: the directory files live in
	clock   time.Time
	ids     int
	stopCap int
	mu      sync.Mutex
	where   string // the scenario line being run, for errors

	journal journal // what the commands did, in order
}

// journal is the lines a command prints: its appends and its hook runs,
// in the order they happened.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(lines ...string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, lines...)
}

func (j *journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.lines
	j.lines = nil
	return out
}

func newWorld(t *testing.T, real bool) *world {
	w := &world{real: real, store: eventlog.NewMemoryStore(), hooks: hookexec.NewRegistry(),
		scripts: map[string]hookScript{}, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if real {
		w.dir = t.TempDir()
		w.files = reprise.DirFiles(w.dir)
		w.runner = &recordingRunner{inner: hookexec.Exec{}, journal: &w.journal}
	} else {
		w.files = reprise.NewMemoryFiles()
		w.runner = &recordingRunner{inner: scriptedRunner{scripts: w.scripts}, journal: &w.journal}
	}
	w.open()
	return w
}

// open starts an Engine over the world's store, as a process would.
func (w *world) open() {
	w.crashes = &crashStore{MemoryStore: w.store, journal: &w.journal}
	w.e = reprise.New(w.crashes, reprise.Options{
		Hooks: w.hooks, Files: keepOpen{w.files}, Runner: w.runner, StopBlockCap: w.stopCap,
		AllowMissingCwd: !w.real, // scenarios name directories like /src/app; real hooks run in real ones
		Logger:          slog.New(slog.DiscardHandler), Now: w.now, NewID: w.newID,
	})
}

// scenarioDir stands for the directory sessions work in when a scenario
// names none: a real one when hooks run for real, printed as this.
const scenarioDir = "/scenario"

func (w *world) cwd() string {
	if w.real {
		return w.dir
	}
	return scenarioDir
}

func (w *world) close() {
	if w.e != nil {
		_ = w.e.Close()
	}
	_ = w.files.Close()
}

func (w *world) now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.clock = w.clock.Add(time.Millisecond)
	return w.clock
}

func (w *world) newID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ids++
	return "u" + strconv.Itoa(w.ids)
}

// keepOpen keeps the world's files across Engines: an Engine's Close does
// not close them.
type keepOpen struct{ reprise.Files }

func (keepOpen) Close() error { return nil }

// run executes one command line and returns what it printed and the events
// it appended.
func (w *world) run(t *testing.T, line string) []string {
	t.Helper()
	words, opts, err := splitCommand(line)
	if err != nil {
		t.Fatalf("%s: %q: %v", w.where, line, err)
	}
	allowed, known := commandOptions[words[0]]
	if !known {
		t.Fatalf("%s: unknown command %q", w.where, words[0])
	}
	for key := range opts {
		if key != "crash-after" && key != "cancel-after" && key != "fail" && key != "delete-before" && !strings.Contains(" "+allowed+" ", " "+key+" ") {
			t.Fatalf("%s: %s takes no option %q", w.where, words[0], key)
		}
	}
	if w.e == nil && words[0] != "reopen" {
		t.Fatalf("%s: %q: the Engine crashed; reopen first", w.where, line)
	}
	w.journal.take()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var printed []string
	crashed := false
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(crashSignal); !ok {
					panic(r)
				}
				crashed = true
			}
		}()
		if after := opts["crash-after"]; after != "" {
			w.crashes.crashAfter = eventlog.Type(after)
		}
		if fail := opts["fail"]; fail != "" {
			w.crashes.failOnce = eventlog.Type(fail)
		}
		if race := opts["delete-before"]; race != "" {
			typ, id, ok := strings.Cut(race, ":")
			if !ok {
				t.Fatalf("%s: delete-before takes TYPE:SESSION, got %q", w.where, race)
			}
			w.crashes.deleteBefore, w.crashes.deleteOther = eventlog.Type(typ), func() error { return w.otherHostDeletes(id) }
		}
		if after := opts["cancel-after"]; after != "" {
			w.crashes.cancelAfter, w.crashes.cancel = eventlog.Type(after), cancel
		}
		printed, err = w.command(ctx, t, words, opts)
	}()
	w.crashes.crashAfter, w.crashes.failOnce, w.crashes.cancelAfter, w.crashes.cancel = "", "", "", nil
	w.crashes.deleteBefore, w.crashes.deleteOther = "", nil
	out := w.journal.take()
	if w.real {
		for i := range out {
			out[i] = strings.ReplaceAll(out[i], w.dir, scenarioDir)
		}
	}
	if err != nil {
		out = append(out, "error: "+err.Error())
	}
	out = append(out, printed...)
	if crashed {
		out = append(out, "crash")
		w.e = nil
	}
	return out
}

// command runs one command on the world's Engine, under ctx.
func (w *world) command(ctx context.Context, t *testing.T, words []string, opts map[string]string) ([]string, error) {
	t.Helper()
	arg := func(i int) string {
		if i >= len(words) {
			t.Fatalf("%s: %s: missing argument %d", w.where, words[0], i)
		}
		return words[i]
	}
	agent := func() *reprise.Agent {
		a, err := w.e.Agent(ctx, arg(1))
		if err != nil {
			t.Fatalf("agent %s: %v", arg(1), err)
		}
		return a
	}
	restored := func(r *reprise.Restore, err error) ([]string, error) {
		if err == nil && r == nil {
			return []string{"(nothing to do)"}, nil
		}
		return nil, err
	}
	switch words[0] {
	case "session":
		_, err := w.e.CreateSession(ctx, arg(1), cmp.Or(opts["cwd"], w.cwd()))
		return nil, err
	case "append", "buffer":
		m := reprise.Text(arg(2), arg(3))
		m.IsMeta = opts["meta"] == "true"
		var err error
		if words[0] == "append" {
			_, err = w.e.Append(ctx, arg(1), m)
		} else {
			_, err = w.e.Buffer(ctx, arg(1), m)
		}
		return nil, err
	case "save":
		n, err := w.e.Save(ctx, arg(1))
		return []string{fmt.Sprintf("saved %d", n)}, err
	case "hook":
		return w.addHook(t, words, opts)
	case "unhook":
		return []string{fmt.Sprintf("removed %v", w.e.RemoveSessionHook(arg(1), arg(2)))}, nil
	case "agent":
		a, err := w.e.Agent(ctx, arg(1))
		if err != nil {
			return nil, err
		}
		return []string{"current=" + a.Current()}, nil
	case "start":
		return restored(agent().Start(ctx, arg(2), reprise.WithInitialPrompt(opts["prompt"])))
	case "restore":
		return restored(agent().Restore(ctx, arg(2)))
	case "new":
		return restored(agent().New(ctx, arg(2), cmp.Or(opts["cwd"], w.cwd()), reprise.WithInitialPrompt(opts["prompt"])))
	case "clear":
		return restored(agent().Clear(ctx))
	case "fork":
		return restored(agent().Fork(ctx, arg(2), opts["upto"]))
	case "compact":
		return restored(agent().Compact(ctx, arg(2), reprise.WithTrigger(opts["trigger"]), reprise.WithInstructions(opts["instructions"])))
	case "prompt":
		res, err := agent().Prompt(ctx, arg(2))
		if err != nil {
			return nil, err
		}
		return []string{fmt.Sprintf("blocked=%v reason=%q context=%q", res.Blocked, res.Reason, res.Context)}, nil
	case "hooks":
		var out []string
		for _, sh := range w.e.SessionHooks(arg(1), hookexec.Event(opts["event"])) {
			out = append(out, fmt.Sprintf("%s %s %s once=%v", sh.ID, sh.Hook.Event, sh.Hook.Name, sh.Options.Once))
		}
		return out, nil
	case "restored":
		a := agent()
		h := a.History()
		if len(h) == 0 {
			return []string{"(no restore)"}, nil
		}
		r := h[len(h)-1]
		return []string{fmt.Sprintf("config=%s suppress=%v prompt=%q", r.ModifiedConfig, r.SuppressOutput, r.InitialPrompt)}, nil
	case "end":
		return restored(agent().End(ctx, reprise.Reason(arg(2)), reprise.EndOptions{FinalMessage: opts["final"], Error: opts["error"]}))
	case "stop":
		res, err := agent().Stop(ctx, reprise.WithStopReason(opts["reason"]))
		if err != nil {
			return nil, err
		}
		return []string{fmt.Sprintf("blocked=%v capped=%v reason=%q", res.Blocked, res.Capped, res.Reason)}, nil
	case "conversation":
		msgs, err := w.e.Conversation(ctx, arg(1))
		var out []string
		for _, m := range msgs {
			meta := ""
			if m.IsMeta {
				meta = " meta"
			}
			out = append(out, fmt.Sprintf("| %s%s %q", m.Role, meta, projection.FirstText(m)))
		}
		return out, err
	case "transcript":
		data, err := w.files.Read(arg(1) + ".jsonl")
		if err != nil {
			return nil, err
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		var last struct {
			Type    string `json:"type"`
			IsMeta  bool   `json:"isMeta"`
			Message struct {
				Content any `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
			return nil, err
		}
		return []string{fmt.Sprintf("transcript: %d lines, the last %s meta=%v %q", len(lines), last.Type, last.IsMeta,
			projection.Clip(fmt.Sprint(last.Message.Content), 50))}, nil
	case "delete":
		return nil, w.e.DeleteSession(ctx, arg(1))
	case "vacuum":
		rep, err := w.e.Vacuum(ctx)
		return []string{fmt.Sprintf("vacuumed sessions=%s events=%d rewritten=%d files=%d",
			strings.Join(rep.Sessions, ","), rep.Events, rep.Rewritten, rep.Files)}, err
	case "audit":
		rep, err := reprise.Audit(ctx, w.store)
		if err != nil {
			return nil, err
		}
		out := []string{fmt.Sprintf("audit: %d events, %d violations", rep.Events, len(rep.Violations))}
		for _, v := range rep.Violations {
			out = append(out, "  "+v.String())
		}
		return out, nil
	case "reopen":
		if w.e != nil {
			if err := w.e.Close(); err != nil {
				return nil, err
			}
		}
		if cap := opts["stopcap"]; cap != "" {
			n, err := strconv.Atoi(cap)
			if err != nil {
				t.Fatalf("stopcap: %v", err)
			}
			w.stopCap = n
		}
		w.open()
		return nil, nil
	}
	t.Fatalf("%s: unknown command %q", w.where, words[0])
	return nil, nil
}

// otherHostDeletes deletes session id through a second Engine over the
// world's store, as another host sharing a database would.
func (w *world) otherHostDeletes(id string) error {
	w.journal.add("  another host deletes " + id)
	other := reprise.New(&crashStore{MemoryStore: w.store, journal: &w.journal}, reprise.Options{
		Hooks: hookexec.NewRegistry(), Files: keepOpen{w.files}, Runner: w.runner, AllowMissingCwd: !w.real,
		Logger: slog.New(slog.DiscardHandler), Now: w.now, NewID: w.newID,
	})
	defer other.Close()
	return other.DeleteSession(context.Background(), id)
}

// commandOptions are the options each command takes, besides crash-after,
// cancel-after, fail and delete-before (TYPE:SESSION: another host deletes
// SESSION just before the append that holds an event of TYPE), which every
// command takes.
var commandOptions = map[string]string{
	"session": "cwd", "append": "meta", "buffer": "meta", "save": "",
	"hook":   "matcher status context block summary cleanup config suppress timeout scoped id error once",
	"unhook": "", "hooks": "event", "agent": "", "restored": "", "conversation": "", "transcript": "",
	"start": "prompt", "restore": "", "new": "cwd prompt", "clear": "", "fork": "upto",
	"compact": "trigger instructions", "end": "final error", "stop": "reason", "prompt": "",
	"reopen": "stopcap", "delete": "", "vacuum": "", "audit": "",
}

// addHook registers a hook: "hook EVENT NAME [matcher=M] [status=S]
// [context=C] [block=R] [summary=S] [cleanup=C] [timeout=D] [scoped=ID]".
// NAME is its command; the scripted runner plays status and the rest, and
// the real runner runs the command, which must do the same.
func (w *world) addHook(t *testing.T, words []string, opts map[string]string) ([]string, error) {
	if len(words) != 3 {
		t.Fatalf("hook needs an event and a command, got %q", words)
	}
	m, err := hookexec.ParseMatcher(opts["matcher"])
	if err != nil {
		return nil, err
	}
	h := hookexec.Hook{Event: hookexec.Event(words[1]), Name: words[2], Source: "scenario", Matcher: m,
		Body: hookexec.Command{Line: words[2]}}
	if d := opts["timeout"]; d != "" {
		if h.Timeout, err = time.ParseDuration(d); err != nil {
			t.Fatalf("timeout: %v", err)
		}
	}
	w.scripts[words[2]] = hookScript{status: cmp.Or(opts["status"], schema.HookOK), context: opts["context"],
		block: opts["block"], summary: opts["summary"], cleanup: opts["cleanup"], config: opts["config"],
		suppress: opts["suppress"] == "true"}
	if id := opts["scoped"]; id != "" {
		hid, err := w.e.AddSessionHookWith(id, h, hookexec.ScopedOptions{ID: opts["id"], ErrorMessage: opts["error"],
			Once: opts["once"] == "true", OnSuccess: func(o schema.HookOutcome) {
				w.journal.add("  on success " + o.Name)
			}})
		return []string{"hook " + hid}, err
	}
	return nil, w.hooks.Add(h)
}

// describe is the line of an appended event: its type, then for a
// session's events the session, then the fields reprise log prints.
func describe(ev eventlog.Event) string {
	p, err := schema.Decode(ev)
	if err != nil {
		return fmt.Sprintf("%-24s undecodable: %v", ev.Type, err)
	}
	where := ""
	if id := projection.SessionID(ev.Stream); id != "" {
		where = "session=" + id + " "
	}
	return strings.TrimRight(fmt.Sprintf("%-24s %s%s", ev.Type, where, projection.Describe(p)), " ")
}

// splitCommand splits a command line into words and key=value options;
// values and words may be double-quoted, with Go escapes.
func splitCommand(line string) (words []string, opts map[string]string, err error) {
	opts = map[string]string{}
	for rest := strings.TrimSpace(line); rest != ""; rest = strings.TrimSpace(rest) {
		key := ""
		if i := strings.IndexAny(rest, "= \""); i > 0 && rest[i] == '=' {
			key, rest = rest[:i], rest[i+1:]
		}
		var value string
		if strings.HasPrefix(rest, `"`) {
			quoted, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, nil, fmt.Errorf("bad quoting in %q", rest)
			}
			value, _ = strconv.Unquote(quoted)
			rest = rest[len(quoted):]
		} else {
			end := strings.IndexByte(rest, ' ')
			if end < 0 {
				end = len(rest)
			}
			value, rest = rest[:end], rest[end:]
		}
		if key != "" {
			opts[key] = value
		} else {
			words = append(words, value)
		}
	}
	if len(words) == 0 {
		return nil, nil, errors.New("empty command")
	}
	return words, opts, nil
}

// crashSignal is the panic that stands for the process dying.
type crashSignal struct{}

// crashStore is the world's store as one process sees it: it can die right
// after an append that holds an event of type crashAfter, cancel the
// command's context (as a Ctrl-C would) right after an append that holds
// an event of type cancelAfter, fail once an append that holds an
// event of type failOnce, and let another host delete a session (with
// deleteOther) just before an append that holds an event of type
// deleteBefore, after the process checked the session was there.
type crashStore struct {
	*eventlog.MemoryStore
	journal     *journal
	crashAfter  eventlog.Type
	cancelAfter eventlog.Type
	cancel      context.CancelFunc
	failOnce    eventlog.Type

	deleteBefore eventlog.Type
	deleteOther  func() error
}

func (c *crashStore) Close() error { return nil } // the store outlives the process

func (c *crashStore) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	if c.failOnce != "" && holds(recs, c.failOnce) {
		c.failOnce = ""
		return nil, errors.New("injected failure: disk full")
	}
	if c.deleteBefore != "" && holds(recs, c.deleteBefore) {
		c.deleteBefore = ""
		if err := c.deleteOther(); err != nil {
			c.journal.add("  another host: error: " + err.Error())
		}
	}
	evs, err := c.MemoryStore.Append(ctx, expect, recs)
	for _, ev := range evs {
		c.journal.add(describe(ev))
	}
	if err == nil && c.crashAfter != "" && holds(recs, c.crashAfter) {
		panic(crashSignal{})
	}
	if err == nil && c.cancelAfter != "" && holds(recs, c.cancelAfter) {
		c.journal.add("  cancel")
		c.cancel()
		c.cancelAfter = ""
	}
	return evs, err
}

// Purge journals the record a vacuum appends, as Append does.
func (c *crashStore) Purge(ctx context.Context, p eventlog.Purge) ([]eventlog.Event, error) {
	evs, err := c.MemoryStore.Purge(ctx, p)
	for _, ev := range evs {
		c.journal.add(describe(ev))
	}
	return evs, err
}

func holds(recs []eventlog.Record, typ eventlog.Type) bool {
	for _, r := range recs {
		if r.Type == typ {
			return true
		}
	}
	return false
}

// hookScript is what the scripted runner makes a hook do.
type hookScript struct {
	status   string
	context  string // SessionStart: the context it returns
	block    string // Stop: the reason it blocks with
	summary  string // SessionEnd
	cleanup  string // SessionEnd, ";"-separated
	config   string // SessionStart: modifiedConfig, as JSON
	suppress bool   // SessionEnd: suppressOutput
}

// scriptedRunner is the in-memory twin of hookexec.Exec: it plays each
// hook's scripted outcome, keeping Exec's contract (one outcome per hook in
// the hooks' order, context joined from the hooks that succeeded, a Stop
// blocked when any hook blocked).
type scriptedRunner struct{ scripts map[string]hookScript }

func (s scriptedRunner) outcomes(ctx context.Context, hooks []hookexec.Hook) ([]schema.HookOutcome, []string) {
	if len(hooks) == 0 {
		return nil, nil
	}
	out := make([]schema.HookOutcome, len(hooks))
	texts := make([]string, len(hooks))
	for i, h := range hooks {
		sc := s.scripts[h.Name]
		o := schema.HookOutcome{Name: h.Name, Source: h.Source, Status: cmp.Or(sc.status, schema.HookOK)}
		if err := ctx.Err(); err != nil { // cut short, as Exec cuts a hook short
			o.Status, o.Error = schema.HookCancelled, err.Error()
			out[i] = o
			continue
		}
		if o.Status == schema.HookOK {
			texts[i] = sc.context
			o.Summary = sc.summary
			o.Config = []byte(sc.config)
			o.Suppress = sc.suppress
			if sc.cleanup != "" {
				o.Cleanup = strings.Split(sc.cleanup, ";")
			}
			if sc.block != "" {
				o.Decision, o.Reason, texts[i] = "block", sc.block, sc.block
			}
		} else {
			o.Error = "scripted " + o.Status
		}
		o.ContextLen = len(texts[i])
		out[i] = o
	}
	return out, texts
}

func joinTexts(texts []string) string {
	var kept []string
	for _, t := range texts {
		if t != "" {
			kept = append(kept, t)
		}
	}
	return strings.Join(kept, "\n")
}

func (s scriptedRunner) SessionStart(ctx context.Context, hooks []hookexec.Hook, _ hookexec.SessionStartInput, _ hookexec.CommandEnv) ([]schema.HookOutcome, string) {
	out, texts := s.outcomes(ctx, hooks)
	return out, joinTexts(texts)
}

func (s scriptedRunner) SessionEnd(ctx context.Context, hooks []hookexec.Hook, _ hookexec.SessionEndInput, _ hookexec.CommandEnv) []schema.HookOutcome {
	out, _ := s.outcomes(ctx, hooks)
	return out
}

func (s scriptedRunner) Prompt(ctx context.Context, hooks []hookexec.Hook, _ hookexec.PromptInput, _ hookexec.CommandEnv) ([]schema.HookOutcome, bool, string, string) {
	out, texts := s.outcomes(ctx, hooks)
	reasons := make([]string, len(texts))
	blocked := false
	for i, o := range out {
		if o.Decision == "block" {
			blocked, reasons[i], texts[i] = true, texts[i], ""
		}
	}
	return out, blocked, joinTexts(reasons), joinTexts(texts)
}

func (s scriptedRunner) PreCompact(ctx context.Context, hooks []hookexec.Hook, _ hookexec.PreCompactInput, env hookexec.CommandEnv) ([]schema.HookOutcome, bool, string) {
	return s.Stop(ctx, hooks, hookexec.StopInput{}, env)
}

func (s scriptedRunner) Stop(ctx context.Context, hooks []hookexec.Hook, _ hookexec.StopInput, _ hookexec.CommandEnv) ([]schema.HookOutcome, bool, string) {
	out, texts := s.outcomes(ctx, hooks)
	blocked := false
	for i, o := range out {
		if o.Decision == "block" {
			blocked = true
		} else {
			texts[i] = ""
		}
	}
	return out, blocked, joinTexts(texts)
}

// recordingRunner notes every run, in the form scenarios print, before
// passing it on: the proof that a hook ran, and ran once.
type recordingRunner struct {
	inner   hookexec.Runner
	journal *journal
}

func (r *recordingRunner) note(event hookexec.Event, session, value string, hooks []hookexec.Hook) {
	names := strings.Join(hookexec.Names(hooks), ",")
	if names == "" {
		names = "none" // as the intent line says it
	}
	r.journal.add(fmt.Sprintf("  run %s session=%s %s hooks=%s", event, session, value, names))
}

func (r *recordingRunner) SessionStart(ctx context.Context, hooks []hookexec.Hook, in hookexec.SessionStartInput, env hookexec.CommandEnv) ([]schema.HookOutcome, string) {
	value := "source=" + string(in.Source)
	if in.InitialPrompt != "" {
		value += fmt.Sprintf(" initialPrompt=%q", in.InitialPrompt)
	}
	r.note(hookexec.SessionStart, in.SessionID, value, hooks)
	return r.inner.SessionStart(ctx, hooks, in, env)
}

func (r *recordingRunner) SessionEnd(ctx context.Context, hooks []hookexec.Hook, in hookexec.SessionEndInput, env hookexec.CommandEnv) []schema.HookOutcome {
	value := "reason=" + string(in.Reason)
	if in.FinalMessage != "" {
		value += fmt.Sprintf(" finalMessage=%q", in.FinalMessage)
	}
	r.note(hookexec.SessionEnd, in.SessionID, value, hooks)
	return r.inner.SessionEnd(ctx, hooks, in, env)
}

func (r *recordingRunner) Prompt(ctx context.Context, hooks []hookexec.Hook, in hookexec.PromptInput, env hookexec.CommandEnv) ([]schema.HookOutcome, bool, string, string) {
	r.note(hookexec.UserPromptSubmit, in.SessionID, fmt.Sprintf("prompt=%q", in.Prompt), hooks)
	return r.inner.Prompt(ctx, hooks, in, env)
}

func (r *recordingRunner) PreCompact(ctx context.Context, hooks []hookexec.Hook, in hookexec.PreCompactInput, env hookexec.CommandEnv) ([]schema.HookOutcome, bool, string) {
	r.note(hookexec.PreCompact, in.SessionID, fmt.Sprintf("trigger=%s instructions=%q", in.Trigger, in.CustomInstructions), hooks)
	return r.inner.PreCompact(ctx, hooks, in, env)
}

func (r *recordingRunner) Stop(ctx context.Context, hooks []hookexec.Hook, in hookexec.StopInput, env hookexec.CommandEnv) ([]schema.HookOutcome, bool, string) {
	value := "active=" + strconv.FormatBool(in.StopHookActive)
	if in.StopReason != "" {
		value += " stopReason=" + in.StopReason
	}
	r.note(hookexec.Stop, in.SessionID, value, hooks)
	return r.inner.Stop(ctx, hooks, in, env)
}
