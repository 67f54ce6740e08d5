// Package demo runs the demo's story on an Engine: two sessions, example
// hooks that return context, a startup restore, a runtime restore, a fork
// and a clear; then, as its last act, a restore killed mid-way and
// finished by the next call. The reprise demo command prints it; the web view's tests
// look at the store it leaves.
package demo

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
)

// Agent is the agent the demo drives.
const Agent = "demo-host"

// Run is what the demo did.
type Run struct {
	Design, Bugfix   string              // the two sessions it created
	Startup, Restore *reprise.Transition // design at startup, then to bugfix
	Fork, Clear      *reprise.Transition
}

// Play registers the demo's hooks in e and runs its story on e's store.
func Play(ctx context.Context, e *reprise.Engine) (*Run, error) {
	if err := registerHooks(e, nil); err != nil {
		return nil, err
	}
	var r Run
	var err error
	r.Design, err = session(ctx, e, "/src/payments", "Review the retry design in payments.", "Retries back off exponentially, capped at 30 s.")
	if err != nil {
		return nil, err
	}
	r.Bugfix, err = session(ctx, e, "/src/payments", "Why does TestRefund flake?", "It races on the shared ledger; add a lock.", "Do it.")
	if err != nil {
		return nil, err
	}
	agent, err := e.Agent(ctx, Agent)
	if err != nil {
		return nil, err
	}
	if r.Startup, err = agent.Start(ctx, r.Design); err != nil {
		return nil, err
	}
	if _, err := e.Buffer(ctx, r.Design, reprise.Text("user", "Note: keep the jitter.")); err != nil {
		return nil, err
	}
	if r.Restore, err = agent.Restore(ctx, r.Bugfix); err != nil {
		return nil, err
	}
	designMsgs, err := e.Conversation(ctx, r.Design)
	if err != nil {
		return nil, err
	}
	if r.Fork, err = agent.Fork(ctx, r.Design, designMsgs[1].UUID); err != nil {
		return nil, err
	}
	if r.Clear, err = agent.Clear(ctx); err != nil {
		return nil, err
	}
	return &r, nil
}

// session creates a session in cwd whose messages are texts, alternating
// user and assistant.
func session(ctx context.Context, e *reprise.Engine, cwd string, texts ...string) (string, error) {
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

// registerHooks registers the demo's function hooks in e; each run of the
// SessionStart hook adds one to runs, when given.
func registerHooks(e *reprise.Engine, runs *atomic.Int32) error {
	err := e.Hooks().OnSessionStart("project-context", "startup|resume|fork|clear",
		func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			if runs != nil {
				runs.Add(1)
			}
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
