package reprise

import (
	"context"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// Observer is told what an Engine does, for tracing and metrics; the
// module github.com/reprise-dev/reprise/otel implements it with
// OpenTelemetry. With no Observer (Options.Observer nil) nothing is called
// and nothing costs. Methods are called on the goroutine doing the work and
// should return quickly; the context one returns is the one the work nested
// in it gets, so spans nest.
type Observer interface {
	// Action begins a lifecycle action ("start", "restore", "new", "clear",
	// "fork", "compact", "end", "stop", "prompt", or "continue" for a roll
	// forward) of agent on session (its target, or the current session);
	// end is called once, with the restore the action completed (nil when
	// none) and its error.
	Action(ctx context.Context, agent, action, session string) (context.Context, func(r *Transition, err error))
	// Step is told each step an action records, as stored.
	Step(ctx context.Context, ev eventlog.Event)
	// Hooks begins a run of the hooks of event on session, for value (the
	// source, reason or trigger). env is added to the environment of its
	// command hooks (such as TRACEPARENT, so that a hook's own spans join
	// the trace); end is called with their outcomes.
	Hooks(ctx context.Context, event hookexec.Event, session, value string, hooks []hookexec.Hook) (hctx context.Context, env []string, end func([]schema.HookOutcome))
	// Appended is told each append the Engine made: how many records, how
	// long it took, and its error.
	Appended(ctx context.Context, records int, took time.Duration, err error)
}

// appendTimed appends to the store, telling the Observer.
func (e *Engine) appendTimed(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	if e.observer == nil {
		return e.store.Append(ctx, expect, recs)
	}
	began := time.Now()
	evs, err := e.store.Append(ctx, expect, recs)
	e.observer.Appended(ctx, len(recs), time.Since(began), err)
	return evs, err
}

// writer returns the store as the packages the Engine hands it to write
// it: each append is told to the Observer, as appendTimed tells it.
func (e *Engine) writer() eventlog.Store {
	if e.observer == nil {
		return e.store
	}
	return observedStore{Store: e.store, e: e}
}

// observedStore is a store whose appends go through appendTimed.
type observedStore struct {
	eventlog.Store
	e *Engine
}

func (o observedStore) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	return o.e.appendTimed(ctx, expect, recs)
}
