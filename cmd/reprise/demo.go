package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

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
		Use:   "demo",
		Short: "Run a startup and a runtime restore on a scratch store and show the log",
		Long: `demo creates two sessions, registers example hooks that return context,
restores the first session at startup, switches to the second at run time,
forks the first one up to its first answer, then clears the fork. It prints
the event timeline and the second session's conversation as rebuilt from
the log alone. Without --store it uses a temporary bbolt file;
it ignores $REPRISE_STORE and the default store.

With --serve it then serves the store's web view, as reprise serve does,
until interrupted.`,
		Example: `  reprise demo
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
	cmd.Flags().BoolVar(&o.serve, "serve", false, "then serve the store's web view until interrupted")
	cmd.Flags().StringVar(&o.addr, "addr", o.addr, "with --serve, listen on `HOST:PORT`")
	return cmd
}

// demoOptions are the options of demo.
type demoOptions struct {
	cmdIO
	serve bool   // --serve
	addr  string // --addr
}

// runDemo runs the demo on --store, or on a temporary bbolt file that it
// removes afterwards.
func runDemo(ctx context.Context, o *demoOptions) error {
	store := o.store
	if store == "" {
		dir, err := os.MkdirTemp("", "reprise-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		store = filepath.Join(dir, "demo.db")
	}
	d, err := demo(ctx, store)
	if err != nil {
		return err
	}
	if o.json {
		out, err := d.json(o.store)
		if err == nil {
			err = printJSON(o.stdout, out)
		}
		if err != nil {
			return err
		}
	} else {
		if err := d.print(o.stdout); err != nil {
			return err
		}
		if !o.serve {
			see := "reprise demo --serve"
			if o.store != "" {
				see = "reprise --store " + shellQuote(o.store) + " serve"
			}
			fmt.Fprintf(o.stdout, "\nsee it in a browser, every restore and hook: %s\n", see)
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
	startup, restore *reprise.Restore // design at startup, then to bugfix
	fork, clear      *reprise.Restore
	events           []eventlog.Event // the whole log
	conv             *projection.Conversation
}

// demoJSON is the output of demo --json.
type demoJSON struct {
	Store        string           `json:"store"` // "" for the temporary file, removed
	Restores     []restoreJSON    `json:"restores"`
	Events       []eventJSON      `json:"events"`
	Conversation conversationJSON `json:"conversation"`
}

// demo runs the demo on the store at path.
func demo(ctx context.Context, path string) (*demoRun, error) {
	// The demo's sessions name an example project that need not exist:
	// only Go function hooks run, and none in the directory.
	e, err := reprise.Open(path, reprise.Options{AllowMissingCwd: true})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	run, err := demostory.Play(ctx, e)
	if err != nil {
		return nil, err
	}
	d := &demoRun{store: path, agent: demostory.Agent, startup: run.Startup, restore: run.Restore, fork: run.Fork, clear: run.Clear}
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

// print writes the demo's story, the whole event timeline, then the
// conversation of the runtime restore's target rebuilt from its events.
func (d *demoRun) print(w io.Writer) error {
	fmt.Fprintf(w, "startup restore of %s\n", d.startup.To)
	fmt.Fprintf(w, "runtime restore %s -> %s\n", d.restore.From, d.restore.To)
	fmt.Fprintf(w, "saved %d pending message(s), injected %q\n", d.restore.Saved, d.restore.Context)
	fmt.Fprintf(w, "fork of %s up to its first answer: %s (%d messages copied)\n", d.startup.To, d.fork.To, d.fork.Messages)
	fmt.Fprintf(w, "clear: %s ended (reason %s), fresh session %s started\n", d.clear.From, d.clear.EndReason, d.clear.To)
	fmt.Fprintf(w, "\nevent timeline (%s)\n", d.store)
	if err := printTimeline(w, d.events); err != nil {
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
	return nil
}

// json describes the demo for JSON output; store is the store the user
// named, "" for the temporary one.
func (d *demoRun) json(store string) (demoJSON, error) {
	out := demoJSON{Store: store, Events: make([]eventJSON, 0, len(d.events))}
	for _, r := range []*reprise.Restore{d.startup, d.restore, d.fork, d.clear} {
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
