package hookexec

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/reprise-dev/reprise/schema"
)

// Background is how a run hands over its "async" and "asyncRewake"
// command hooks (CommandEnv.Background). It is called once per such hook,
// before the hook starts, and returns the id the step records for the run
// and the function told how it ended: called once, on a goroutine of its
// own, with the hook's outcome (its Async set to id) and what of it
// reaches the model on the session's next turn, if anything.
type Background func(h Hook) (id string, end func(AsyncEnd))

// AsyncEnd is how an async hook ended.
type AsyncEnd struct {
	Hook    Hook
	Outcome schema.HookOutcome
	// Context is what the model gets on the session's next turn: the
	// context the hook's answer gives, as its event reads an answer, or,
	// for an asyncRewake hook that exited with code 2, Claude Code's
	// blocking-error line with what it printed.
	Context string
	// Rewake says that an asyncRewake hook exited with code 2: Claude
	// Code wakes the model with Context at once, and a host may too.
	Rewake bool
}

// background starts the async command hook h and returns at once the
// outcome its step records: status HookAsync, with the id env.Background
// gave. The hook runs under its own timeout (its event's default when it
// sets none), not under the step's
// context, which may end first; "onFailure" does not apply to it, as in
// Claude Code, since nothing waits for it.
func background(ctx context.Context, h Hook, stdin []byte, env CommandEnv) schema.HookOutcome {
	id, end := env.Background(h)
	timeout := commandTimeout(h) // not a SessionEnd budget: nothing waits
	hctx := context.WithoutCancel(ctx)
	// The hook's time counts from its hand-over, read here, on the step's
	// goroutine; the hook's goroutine alone reads the clock after it.
	now := env.clock()
	began, first := now(), true
	env.Now = func() time.Time {
		if first {
			first = false
			return began
		}
		return now()
	}
	go func() {
		o, a := runCommandOnce(hctx, h, stdin, env, timeout)
		o.Async = id
		end(asyncEnd(h, o, a))
	}()
	return schema.HookOutcome{Name: h.Name, Source: h.Source, Status: schema.HookAsync, Async: id}
}

// asyncEnd is what async hook h's outcome o and answer a give the model.
func asyncEnd(h Hook, o schema.HookOutcome, a answer) AsyncEnd {
	end := AsyncEnd{Hook: h, Outcome: o}
	if h.AsyncRewake {
		if o.ExitCode == 2 {
			end.Rewake = true
			prefix := cmp.Or(h.RewakeMessage, fmt.Sprintf("Stop hook blocking error from command %q:", h.Name))
			end.Context = prefix + " " + cmp.Or(o.Reason, o.Stderr)
		}
		return end
	}
	switch {
	case o.Status != schema.HookOK || o.Decision == "block":
		// A block's text is its reason, and nothing waits to be blocked.
	case toolEvent(h.Event):
		end.Context = a.context
	case h.Event == Stop || h.Event == PreCompact || h.Event == SessionEnd:
		// Their text is a block's reason or a summary, not context.
	default:
		end.Context = a.text
	}
	return end
}
