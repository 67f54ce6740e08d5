package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	demostory "github.com/reprise-dev/reprise/internal/demo"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
)

// newDemoCmd returns the demo command: restores on a scratch store.
func newDemoCmd(a *app, runF func(context.Context, *demoOptions) error) *cobra.Command {
	o := demoOptions{addr: defaultServeAddr}
	cmd := &cobra.Command{
		Use:   "demo [--keep] [--serve]",
		Short: "Run a startup and a runtime restore on a scratch store and show the log",
		Long: `demo creates two sessions, registers example hooks that return context,
restores the first session at startup, switches to the second at run time,
forks the first one up to its first answer, then clears the fork. It prints
the event timeline and the second session's conversation as rebuilt from
the log alone. Its last act is the guarantee itself: a restore whose
process is killed after its SessionStart hooks ran, before their outcome
was recorded, and the next call on the agent, in a fresh process, finishing
it without running them again. The kill cuts the restore's Engine off
from the store at that moment, which leaves the file as a kill of the
process would.

Without --store it uses a temporary bbolt file, which it removes when it
ends, unless --keep keeps it; it ignores $REPRISE_STORE and the default
store. Every line it prints but the kept store's path fits in 100
columns: ids are shortened to their first 8 characters, which every
command takes as a prefix, and long lines are cut (reprise log shows them
whole).

With --serve it then serves the store's web view, as reprise serve does,
until interrupted.`,
		Example: `  reprise demo
  reprise demo --keep
  reprise demo --serve
  reprise demo --store /tmp/demo.db && reprise --store /tmp/demo.db audit`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runDemo(cmd.Context(), &o)
		},
	}
	cmd.Flags().BoolVar(&o.keep, "keep", false, "keep the temporary store and say where it is")
	cmd.Flags().BoolVar(&o.serve, "serve", false, "then serve the store's web view until interrupted")
	cmd.Flags().StringVar(&o.addr, "addr", o.addr, "with --serve, listen on `HOST:PORT`")
	return cmd
}

// demoOptions are the options of demo.
type demoOptions struct {
	cmdIO
	keep  bool   // --keep
	serve bool   // --serve
	addr  string // --addr
}

// demoWidth is the widest line the demo prints.
const demoWidth = 100

// runDemo runs the demo on --store, or on a temporary bbolt file that it
// removes afterwards unless --keep.
func runDemo(ctx context.Context, o *demoOptions) error {
	store, named := o.store, o.store != ""
	if !named {
		dir, err := os.MkdirTemp("", "reprise-demo-")
		if err != nil {
			return err
		}
		if !o.keep {
			defer os.RemoveAll(dir)
		}
		store = filepath.Join(dir, "demo.db")
	}
	kept := named || o.keep
	d, err := demo(ctx, store)
	if err != nil {
		return err
	}
	if o.json {
		out, err := d.json(store, kept)
		if err == nil {
			err = printJSON(o.stdout, out)
		}
		if err != nil {
			return err
		}
	} else {
		w := &fitWriter{w: o.stdout, width: demoWidth}
		if err := d.print(w); err != nil {
			return err
		}
		switch {
		case o.serve:
		case kept:
			// Not cut: a path cut short is no path.
			fmt.Fprintf(o.stdout, "\nthe store stays at %s\nsee it in a browser: reprise --store %s serve\n", store, shellQuote(store))
		default:
			fmt.Fprintln(w, "\nthe temporary store was removed; reprise demo --keep keeps it, reprise demo --serve shows it")
		}
	}
	if !o.serve {
		return nil
	}
	view := *o.app
	view.store = store
	so := serveOptions{cmdIO: o.cmdIO, addr: o.addr}
	so.app = &view
	return runServe(ctx, &so)
}

// demoRun is what the demo did and what the log then held.
type demoRun struct {
	store, agent     string
	startup, restore *reprise.Transition // design at startup, then to bugfix
	fork, clear      *reprise.Transition
	crash            *demostory.Crash
	events           []eventlog.Event // the whole log
	storyEnd         uint64           // the position of the story's last event, before the last act
	conv             *projection.Conversation
}

// demoJSON is the output of demo --json.
type demoJSON struct {
	Store        string           `json:"store"` // "" for the temporary file, removed
	Restores     []restoreJSON    `json:"restores"`
	Crash        demoCrashJSON    `json:"crash"`
	Events       []eventJSON      `json:"events"`
	Conversation conversationJSON `json:"conversation"`
}

// demoCrashJSON is the demo's last act in demo --json.
type demoCrashJSON struct {
	From     string      `json:"from"`
	To       string      `json:"to"`
	Killed   string      `json:"killed"`    // the error of the killed restore
	Left     uint64      `json:"left"`      // the position of the last event the killed process wrote
	Finished restoreJSON `json:"finished"`  // the restore as the next call finished it
	HookRuns int32       `json:"hook_runs"` // how often its SessionStart hook ran, in both processes
}

// demo runs the demo on the store at path.
func demo(ctx context.Context, path string) (*demoRun, error) {
	// The demo's sessions name an example project that need not exist:
	// only Go function hooks run, and none in the directory.
	e, err := reprise.Open(path, reprise.Options{AllowMissingCwd: true})
	if err != nil {
		return nil, err
	}
	run, err := demostory.Play(ctx, e)
	if err == nil {
		err = e.Close()
	} else {
		err = errors.Join(err, e.Close())
	}
	if err != nil {
		return nil, err
	}
	d := &demoRun{store: path, agent: demostory.Agent, startup: run.Startup, restore: run.Restore, fork: run.Fork, clear: run.Clear}
	if d.storyEnd, err = lastPosition(ctx, path); err != nil {
		return nil, err
	}
	if d.crash, err = demostory.PlayCrash(ctx, path, run.Bugfix); err != nil {
		return nil, err
	}
	e, err = reprise.Open(path, reprise.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	err = e.Store().ReadAll(ctx, 1, func(ev eventlog.Event) error {
		ev.Payload = slices.Clone(ev.Payload)
		d.events = append(d.events, ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.conv = projection.NewConversation(run.Bugfix)
	if err := e.Store().ReadStream(ctx, projection.SessionStream(run.Bugfix), 1, d.conv.Apply); err != nil {
		return nil, err
	}
	return d, nil
}

// lastPosition returns the position of the last event of the bbolt store
// at path.
func lastPosition(ctx context.Context, path string) (last uint64, err error) {
	e, err := reprise.Open(path, reprise.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer closeEngine(e, &err)
	err = e.Store().ReadAll(ctx, 1, func(ev eventlog.Event) error {
		last = ev.Position
		return nil
	})
	return last, err
}

// print writes the demo's story, its event timeline, the conversation of
// the runtime restore's target rebuilt from its events, then the last act.
func (d *demoRun) print(w io.Writer) error {
	fmt.Fprintf(w, "startup restore of %s\n", d.startup.To)
	fmt.Fprintf(w, "runtime restore %s -> %s\n", d.restore.From, d.restore.To)
	fmt.Fprintf(w, "saved %d pending message(s), injected %q\n", d.restore.Saved, d.restore.Context)
	fmt.Fprintf(w, "fork of %s up to its first answer: %s (%d messages copied)\n", d.startup.To, d.fork.To, d.fork.Messages)
	fmt.Fprintf(w, "clear: %s ended (reason %s), fresh session %s started\n", d.clear.From, d.clear.EndReason, d.clear.To)
	fmt.Fprintf(w, "\nevent timeline (ids cut to 8 characters, lines to %d columns)\n", demoWidth)
	var story, killed, finished []eventlog.Event
	for _, ev := range d.events {
		switch {
		case ev.Position <= d.storyEnd:
			story = append(story, ev)
		case ev.Position <= d.crash.Left:
			killed = append(killed, ev)
		default:
			finished = append(finished, ev)
		}
	}
	if err := printTimeline(w, story); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nconversation of %s, rebuilt from the log\n", d.conv.ID)
	for i, m := range d.conv.Messages {
		role := m.Role
		if m.IsMeta {
			role += " (meta)"
		}
		fmt.Fprintf(w, "%2d  %-12s %s\n", i+1, role, projection.FirstText(m))
	}
	c := d.crash
	fmt.Fprintf(w, "\nlast act: restore %s -> %s, killed after its SessionStart hook ran,\n", c.From, c.To)
	fmt.Fprintln(w, "before its outcome was recorded; the log ends inside the restore:")
	if err := printTimeline(w, killed); err != nil {
		return err
	}
	fmt.Fprintf(w, "the next call on agent %s, in a fresh process, finished it:\n", d.agent)
	if err := printTimeline(w, finished); err != nil {
		return err
	}
	for _, o := range c.Finished.StartOutcomes {
		fmt.Fprintf(w, "SessionStart hook %s: %s, as it ran in the killed process\n", o.Name, o.Status)
	}
	fmt.Fprintf(w, "it ran %d time(s) for this restore in all, none after the kill\n", c.Runs)
	return nil
}

// json describes the demo for JSON output; store is the store's path,
// given only when it is kept.
func (d *demoRun) json(store string, kept bool) (demoJSON, error) {
	out := demoJSON{Events: make([]eventJSON, 0, len(d.events))}
	if kept {
		out.Store = store
	}
	c := d.crash
	out.Crash = demoCrashJSON{From: c.From, To: c.To, Killed: userMessage(c.Killed), Left: c.Left,
		Finished: jsonview.NewRestore(d.agent, c.Finished.To, c.Finished), HookRuns: c.Runs}
	for _, r := range []*reprise.Transition{d.startup, d.restore, d.fork, d.clear} {
		out.Restores = append(out.Restores, jsonview.NewRestore(d.agent, r.To, r))
	}
	for _, ev := range d.events {
		js, err := jsonview.NewEvent(ev)
		if err != nil {
			return demoJSON{}, err
		}
		out.Events = append(out.Events, js)
	}
	out.Conversation = jsonview.NewConversation(d.conv, d.conv.Messages)
	return out, nil
}

// demoUUID matches a UUID, which the demo shortens to its first 8
// characters.
var demoUUID = regexp.MustCompile(`\b([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)

// shortIDs returns s with every UUID cut to its first 8 characters.
func shortIDs(s string) string { return demoUUID.ReplaceAllString(s, "$1") }

// fitWriter writes each line with its UUIDs shortened to their first 8
// characters and cut, with an ellipsis, to width columns. It expects
// whole lines in each Write, as fmt.Fprint* calls give it.
type fitWriter struct {
	w     io.Writer
	width int
}

func (f *fitWriter) Write(p []byte) (int, error) {
	text := shortIDs(string(p))
	var b strings.Builder
	for line := range strings.SplitAfterSeq(text, "\n") {
		body, nl := strings.CutSuffix(line, "\n")
		if r := []rune(body); len(r) > f.width {
			body = string(r[:f.width-1]) + "…"
		}
		b.WriteString(body)
		if nl {
			b.WriteByte('\n')
		}
	}
	if _, err := io.WriteString(f.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}
