package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// statusLines is the Engine Observer of the commands that run hooks: as a
// hook with a "statusMessage" starts, its message goes to stderr, as
// Claude Code shows it while the hook runs. It tells nothing else.
type statusLines struct{ w io.Writer }

func (s statusLines) Hooks(ctx context.Context, _ hookexec.Event, _, _ string, hooks []hookexec.Hook) (context.Context, []string, func([]schema.HookOutcome)) {
	for _, h := range hooks {
		if msg := projection.OneLine(h.StatusMessage, maxShown); msg != "" {
			fmt.Fprintf(s.w, "%s…\n", msg)
		}
	}
	return ctx, nil, func([]schema.HookOutcome) {}
}

func (statusLines) Action(ctx context.Context, _, _, _ string) (context.Context, func(*reprise.Transition, error)) {
	return ctx, func(*reprise.Transition, error) {}
}

func (statusLines) Step(context.Context, eventlog.Event)                {}
func (statusLines) Appended(context.Context, int, time.Duration, error) {}
