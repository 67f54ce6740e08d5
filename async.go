package reprise

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// AsyncHookEnded is told to Options.AsyncHookEnded when an "async" or
// "asyncRewake" command hook ends, once its end is recorded.
type AsyncHookEnded struct {
	Agent, Session string
	Event          hookexec.Event
	Outcome        schema.HookOutcome
	// Context reaches the model with the session's next prompt.
	Context string
	// Rewake says that an asyncRewake hook exited with code 2: Claude Code
	// wakes the model at once with Context; a host that wants the same
	// starts a turn.
	Rewake bool
}

// asyncRecordTimeout bounds the append of an async hook's end.
const asyncRecordTimeout = 30 * time.Second

// background is the hookexec.Background of step (its restore id) of a on
// session for event: each async hook is counted until it ends (Close waits
// for them), held under a lock of its own on a store shared between
// processes until its end is recorded (so that another process tells a
// live one's from a dead one's), and its end is recorded on the agent's
// stream.
func (a *Agent) background(session string, event hookexec.Event, step string) hookexec.Background {
	return func(h hookexec.Hook) (string, func(hookexec.AsyncEnd)) {
		e := a.e
		id := e.newID()
		e.async.Add(1)
		a.running.Store(id, true)
		release := func() {}
		if locker, ok := e.store.(eventlog.StreamLocker); ok {
			_, r, err := eventlog.Hold(context.Background(), locker, asyncLock(a.id, id))
			if err != nil {
				e.log.Warn("async hook runs without its lock", "agent", a.id, "hook", h.Name, "error", err)
			} else {
				release = r
			}
		}
		return id, func(end hookexec.AsyncEnd) {
			defer e.async.Done()
			rec := &schema.AsyncHookEnded{Session: session, Event: event, Outcome: end.Outcome, Context: end.Context, Rewake: end.Rewake}
			a.queue(endedRun{rec: rec, step: step, done: func() {
				a.running.Delete(id)
				release()
			}})
		}
	}
}

// asyncLock names the lock an async hook's run is held under.
func asyncLock(agent, id string) string { return "async/" + agent + "/" + id }

// endedRun is the end of an async hook, the id of the step that started
// it, which its record is under, and what is let go once it is recorded.
type endedRun struct {
	rec  *schema.AsyncHookEnded
	step string
	done func()
}

// queue keeps the end of an async hook for the agent's stream, and records
// it at once unless an action holds the agent: that action records it.
func (a *Agent) queue(run endedRun) {
	a.asyncMu.Lock()
	a.ended = append(a.ended, run)
	a.asyncMu.Unlock()
	a.recording.Add(1)
	defer a.recording.Add(-1)
	if !a.mu.TryLock() {
		return
	}
	defer a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), asyncRecordTimeout)
	defer cancel()
	// What other writers appended is read, never rolled forward: a step
	// left in flight is finished by the next action, not by this.
	if err := a.readNew(ctx); err != nil {
		a.e.log.Warn("async hook's end not recorded yet", "agent", a.id, "error", err)
		return
	}
	if fsm.InFlight(a.view.State) {
		return // the action that finishes the step records it
	}
	a.flushAsync(ctx)
}

// flushAsync records the ends of async hooks queued so far. a.mu is held
// and the agent's view is read. One that cannot be recorded stays queued
// for the next action, and is logged.
func (a *Agent) flushAsync(ctx context.Context) {
	a.asyncMu.Lock()
	ended := a.ended
	a.ended = nil
	a.asyncMu.Unlock()
	for i, run := range ended {
		if err := a.appendAsync(ctx, run.rec, run.step); err != nil {
			a.e.log.Warn("async hook's end not recorded yet", "agent", a.id, "hook", run.rec.Outcome.Name, "error", err)
			a.asyncMu.Lock()
			a.ended = append(ended[i:], a.ended...)
			a.asyncMu.Unlock()
			return
		}
		run.done()
	}
}

// appendAsync appends rec to the agent's stream, after the agent's head,
// under the id of the step that started the hook, and tells the host.
// a.mu is held.
func (a *Agent) appendAsync(ctx context.Context, rec *schema.AsyncHookEnded, step string) error {
	r, err := schema.NewRecord(a.stream, rec, a.e.stamp(), step)
	if err != nil {
		return err
	}
	for tries := 0; ; tries++ {
		evs, err := a.e.appendTimed(ctx, []eventlog.Expect{{Stream: a.stream, Seq: a.view.Head}}, []eventlog.Record{r})
		var conflict *eventlog.ConflictError
		if errors.As(err, &conflict) && tries < 3 {
			// Another process stepped the agent: read what it wrote.
			if err := a.readNew(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := a.view.ApplyDecoded(evs[0], rec); err != nil {
			return err
		}
		break
	}
	if f := a.e.onAsync; f != nil {
		f(AsyncHookEnded{Agent: a.id, Session: rec.Session, Event: rec.Event, Outcome: rec.Outcome, Context: rec.Context, Rewake: rec.Rewake})
	}
	return nil
}

// closeAsyncOrphans records as interrupted the async hooks the log shows
// running that no hook of this process runs and whose lock, on a store
// shared between processes, is free: those of a process that died. a.mu
// is held and the view read.
func (a *Agent) closeAsyncOrphans(ctx context.Context) error {
	for _, r := range a.view.Async {
		if !r.Running() {
			continue
		}
		if _, mine := a.running.Load(r.ID); mine {
			continue
		}
		if locker, ok := a.e.store.(eventlog.StreamLocker); ok {
			release, err := locker.TryLock(ctx, asyncLock(a.id, r.ID))
			if errors.Is(err, eventlog.ErrBusy) {
				continue // a live process runs it
			}
			if err != nil {
				return err
			}
			defer release()
		}
		rec := &schema.AsyncHookEnded{Session: r.Session, Event: r.Event,
			Outcome: schema.HookOutcome{Name: r.Hook, Status: schema.HookInterrupted, Async: r.ID,
				Error: "the process that ran it ended first"}}
		if err := a.appendAsync(ctx, rec, r.Step); err != nil {
			return fmt.Errorf("close async hook %s: %w", r.ID, err)
		}
	}
	return nil
}
