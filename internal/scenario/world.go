package scenario

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
)

// Run runs the scenario file at path on a World of its own: with scripted
// hooks on the twins when real is false, with real commands and files on
// disk when it is true.
func Run(t *testing.T, path string, real bool) {
	w := newWorld(t, real)
	defer w.close()
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		w.where = d.Pos
		out := w.run(t, d)
		if len(out) == 0 {
			return "(no output)\n"
		}
		return strings.Join(out, "\n") + "\n"
	})
}

// World is what a scenario runs against: a store and files that outlive
// the Engines over them, as a disk outlives a process.
type World struct {
	real    bool
	store   *eventlog.MemoryStore
	faults  *faultStore
	files   reprise.Files
	runner  *recordingRunner
	hooks   *hookexec.Registry
	scripts map[string]hookScript // scripted outcomes by hook name
	e       *reprise.Engine
	dir     string // real: the directory files live in
	stopCap int
	where   string // the scenario line being run, for errors

	mu    sync.Mutex // guards clock and ids, which hooks running at once draw
	clock time.Time
	ids   int

	journal journal // what the commands did, in order
}

func newWorld(t *testing.T, real bool) *World {
	w := &World{real: real, store: eventlog.NewMemoryStore(), hooks: hookexec.NewRegistry(),
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
func (w *World) open() {
	w.faults = &faultStore{MemoryStore: w.store, journal: &w.journal}
	w.e = reprise.New(w.faults, reprise.Options{
		Hooks: w.hooks, Files: keepOpen{w.files}, Runner: w.runner, StopBlockCap: w.stopCap,
		AllowMissingCwd: !w.real, // scenarios name directories like /src/app; real hooks run in real ones
		Logger:          slog.New(slog.DiscardHandler), Now: w.now, NewID: w.newID,
	})
}

// scenarioDir stands for the directory sessions work in when a scenario
// names none: a real one when hooks run for real, printed as this.
const scenarioDir = "/scenario"

func (w *World) cwd() string {
	if w.real {
		return w.dir
	}
	return scenarioDir
}

func (w *World) close() {
	if w.e != nil {
		_ = w.e.Close()
	}
	_ = w.files.Close()
}

func (w *World) now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.clock = w.clock.Add(time.Millisecond)
	return w.clock
}

func (w *World) newID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ids++
	return "u" + strconv.Itoa(w.ids)
}

// keepOpen keeps the world's files across Engines: an Engine's Close does
// not close them.
type keepOpen struct{ reprise.Files }

func (keepOpen) Close() error { return nil }

// command is one command of the language: its handler and the options it
// takes besides the faults, which every command takes.
type command struct {
	run     func(w *World, ctx context.Context, t *testing.T, d *datadriven.TestData) ([]string, error)
	options []string
}

// commands is the language; each handler's doc has an example.
var commands = map[string]command{
	"session":      {(*World).session, []string{"cwd"}},
	"append":       {(*World).append, []string{"meta", "blocks"}},
	"buffer":       {(*World).buffer, []string{"meta", "blocks"}},
	"save":         {(*World).save, nil},
	"conversation": {(*World).conversation, nil},
	"transcript":   {(*World).transcript, nil},
	"delete":       {(*World).delete, nil},
	"vacuum":       {(*World).vacuum, nil},
	"audit":        {(*World).audit, nil},
	"hook": {(*World).hook, []string{"matcher", "status", "context", "block", "summary", "cleanup", "config", "suppress",
		"decision", "reason", "input", "check", "timeout", "scoped", "id", "error", "once", "specific", "halt"}},
	"unhook":      {(*World).unhook, nil},
	"hooks":       {(*World).scopedHooks, []string{"event"}},
	"agent":       {(*World).agent, nil},
	"start":       {(*World).start, []string{"prompt", "resume"}},
	"restore":     {(*World).restore, nil},
	"new":         {(*World).newSession, []string{"cwd", "prompt"}},
	"clear":       {(*World).clear, nil},
	"fork":        {(*World).fork, []string{"upto"}},
	"compact":     {(*World).compact, []string{"trigger", "instructions", "summarize"}},
	"end":         {(*World).end, []string{"final", "error"}},
	"stop":        {(*World).stop, []string{"reason"}},
	"prompt":      {(*World).prompt, nil},
	"restored":    {(*World).restored, nil},
	"reopen":      {(*World).reopen, []string{"stopcap"}},
	"tool":        {(*World).tool, []string{"permission"}},
	"tool-result": {(*World).toolResult, []string{"error"}},
	"tool-answer": {(*World).toolAnswer, []string{"refusal"}},
	"tool-batch":  {(*World).toolBatch, nil},
	"fire":        {(*World).fire, nil},
	"subagent":    {(*World).subagent, []string{"type"}},
	"turn":        {(*World).turnState, nil},
	"run-turn":    {(*World).runTurn, []string{"prompt", "repeat", "permission", "ask", "tries"}},
}

// faultOptions are the options every command takes.
var faultOptions = []string{"crash-after", "cancel-after", "fail", "delete-before"}

// run executes one test case and returns what it appended, the hooks it
// ran and what it printed.
func (w *World) run(t *testing.T, d *datadriven.TestData) []string {
	t.Helper()
	cmd, ok := commands[d.Cmd]
	if !ok {
		t.Fatalf("%s: unknown command %q", w.where, d.Cmd)
	}
	for _, a := range d.CmdArgs {
		if a.Vals != nil && !slices.Contains(cmd.options, a.Key) && !slices.Contains(faultOptions, a.Key) {
			t.Fatalf("%s: %s takes no option %q", w.where, d.Cmd, a.Key)
		}
	}
	if w.e == nil && d.Cmd != "reopen" {
		t.Fatalf("%s: %s: the Engine crashed; reopen first", w.where, d.Cmd)
	}
	w.journal.take()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	printed, err, crashed := w.withFaults(t, d, cancel, func() ([]string, error) { return cmd.run(w, ctx, t, d) })
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

// arg returns the i-th positional argument (from 0) of d; "" stands for
// the empty string.
func (w *World) arg(t *testing.T, d *datadriven.TestData, i int) string {
	t.Helper()
	n := 0
	for _, a := range d.CmdArgs {
		if a.Vals != nil {
			continue
		}
		if n == i {
			if a.Key == `""` {
				return ""
			}
			return a.Key
		}
		n++
	}
	t.Fatalf("%s: %s: missing argument %d", w.where, d.Cmd, i+1)
	return ""
}

// opt returns the value of option key of d, "" when it is absent. A
// value in parentheses is read by datadriven as a list split at its
// commas; it is joined back, so that a comma is kept (the spaces after it
// are not), as JSON needs.
func opt(d *datadriven.TestData, key string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key && a.Vals != nil {
			return strings.Join(a.Vals, ",")
		}
	}
	return ""
}

// text returns the input of d: the text of a message, a prompt, a
// summary or a hook's command.
func (w *World) text(t *testing.T, d *datadriven.TestData) string {
	t.Helper()
	if d.Input == "" {
		t.Fatalf("%s: %s needs its text as input, on the lines after it", w.where, d.Cmd)
	}
	return d.Input
}

// restored prints what an action returned: nothing but its events, or
// "(nothing to do)" when it changed nothing.
func restored(r *reprise.Transition, err error) ([]string, error) {
	if err == nil && r == nil {
		return []string{"(nothing to do)"}, nil
	}
	return nil, err
}

// printf is one printed line.
func printf(format string, args ...any) []string { return []string{fmt.Sprintf(format, args...)} }
