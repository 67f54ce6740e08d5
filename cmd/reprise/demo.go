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
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
)

// newDemoCmd returns the demo command: restores on a scratch store.
func newDemoCmd(a *app) *cobra.Command {
	var o demoOptions
	return &cobra.Command{
		Use:   "demo",
		Short: "Run a startup and a runtime restore on a scratch store and show the log",
		Long: `demo creates two sessions, registers example hooks that return context,
restores the first session at startup, switches to the second at run time,
forks the first one up to its first answer, then clears the fork. It prints
the event timeline and the second session's conversation as rebuilt from
the log alone. Without --store it uses a temporary bbolt file;
it ignores $REPRISE_STORE and the default store.`,
		Example: `  reprise demo
  reprise demo --store /tmp/demo.db && reprise --store /tmp/demo.db audit`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), a, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
}

// demoOptions are the options of demo: none of its own.
type demoOptions struct{}

// runDemo runs the demo on --store, or on a temporary bbolt file that it
// removes afterwards.
func runDemo(ctx context.Context, a *app, _ demoOptions, stdout, _ io.Writer) error {
	if a.json {
		return usagef("demo has no JSON output")
	}
	store := a.store
	if store == "" {
		dir, err := os.MkdirTemp("", "reprise-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		store = filepath.Join(dir, "demo.db")
	}
	return demo(ctx, stdout, store)
}

// demo runs the demo on the store at path, writing its story to w.
func demo(ctx context.Context, w io.Writer, path string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// The demo's sessions name an example project that need not exist:
	// only Go function hooks run, and none in the directory.
	e, err := reprise.Open(path, reprise.Options{AllowMissingCwd: true})
	if err != nil {
		return err
	}
	defer e.Close()
	if err := registerDemoHooks(e); err != nil {
		return err
	}
	design, err := demoSession(ctx, e, "/src/payments", "Review the retry design in payments.", "Retries back off exponentially, capped at 30 s.")
	if err != nil {
		return err
	}
	bugfix, err := demoSession(ctx, e, "/src/payments", "Why does TestRefund flake?", "It races on the shared ledger; add a lock.", "Do it.")
	if err != nil {
		return err
	}
	agent, err := e.Agent(ctx, "demo-host")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "startup restore of %s\n", design)
	if _, err := agent.Start(ctx, design); err != nil {
		return err
	}
	if _, err := e.Buffer(ctx, design, reprise.Text("user", "Note: keep the jitter.")); err != nil {
		return err
	}
	fmt.Fprintf(w, "runtime restore %s -> %s\n", design, bugfix)
	r, err := agent.Restore(ctx, bugfix)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "saved %d pending message(s), injected %q\n", r.Saved, r.Context)
	designMsgs, err := e.Conversation(ctx, design)
	if err != nil {
		return err
	}
	fork, err := agent.Fork(ctx, design, designMsgs[1].UUID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "fork of %s up to its first answer: %s (%d messages copied)\n", design, fork.To, fork.Messages)
	cleared, err := agent.Clear(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "clear: %s ended (reason %s), fresh session %s started\n", cleared.From, cleared.EndReason, cleared.To)
	return printDemoLog(ctx, w, e, path, bugfix)
}

// printDemoLog prints the whole event timeline of the store at path, then
// the conversation of session id rebuilt from its events alone.
func printDemoLog(ctx context.Context, w io.Writer, e *reprise.Engine, path, id string) error {
	fmt.Fprintf(w, "\nevent timeline (%s)\n", path)
	var evs []eventlog.Event
	err := e.Store().ReadAll(ctx, 1, func(ev eventlog.Event) error {
		ev.Payload = slices.Clone(ev.Payload)
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		return err
	}
	if err := printTimeline(w, evs); err != nil {
		return err
	}
	conv := projection.NewConversation(id)
	if err := e.Store().ReadStream(ctx, projection.SessionStream(id), 1, conv.Apply); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nconversation of %s, rebuilt from the log\n", id)
	for i, m := range conv.Messages {
		role := m.Role
		if m.IsMeta {
			role += " (meta)"
		}
		fmt.Fprintf(w, "%2d  %-12s %s\n", i+1, role, projection.FirstText(m))
	}
	return nil
}

// demoSession creates a session in cwd whose messages are texts, alternating user and assistant.
func demoSession(ctx context.Context, e *reprise.Engine, cwd string, texts ...string) (string, error) {
	id, err := e.CreateSession(ctx, "", cwd)
	if err != nil {
		return "", err
	}
	for i, text := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		if _, err := e.Append(ctx, id, reprise.Text(role, text)); err != nil {
			return "", err
		}
	}
	return id, nil
}

// registerDemoHooks registers the demo's function hooks in e.
func registerDemoHooks(e *reprise.Engine) error {
	err := e.Hooks().OnSessionStart("project-context", "startup|resume|fork|clear",
		func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			return hookexec.SessionStartOutput{AdditionalContext: fmt.Sprintf("%s session in %s; CI is green on main.", in.Source, in.Cwd)}, nil
		})
	if err != nil {
		return err
	}
	return e.Hooks().OnSessionEnd("goodbye", "resume|clear",
		func(ctx context.Context, in hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
			return hookexec.SessionEndOutput{SessionSummary: "left " + in.SessionID}, nil
		})
}
