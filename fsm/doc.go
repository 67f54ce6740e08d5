// Package fsm is the lifecycle machine of an agent: which step of a restore
// may follow which. It is a pure guard built on looplab/fsm: no callbacks,
// no I/O, no clock, and never a cancellable context.
//
// An agent is idle until its first restore and active between restores. A
// runtime restore walks
//
//	active -SaveAttempted-> saved -SessionEndHookStarted-> ending
//	-SessionEndHookRan-> ended -SessionLoaded/resume-> loaded
//	-SessionStartHookStarted-> starting -SessionStartHookRan-> started
//	-ContextInjected-> active
//
// and a startup restore enters at SessionLoaded/startup from idle or active.
// The *HookStarted events are durable intents: a log that ends in ending or
// starting means hooks may have run when the process died, so they are
// closed as interrupted and never run again.
//
// # Usage
//
//	s := fsm.Idle
//	for _, ev := range events {
//		e, ok := fsm.EventOf(payload)
//		if !ok { continue } // not a lifecycle event
//		if s, err = fsm.Apply(s, e); err != nil { ... }
//	}
//
// # Caveats
//
// Apply takes a looplab machine from a pool for each call, so no lock is
// shared between agents or audits; looplab machines are never shared
// between goroutines and never given a cancellable context, which would
// leave one "in transition".
//
// The state is whatever the log yields: callers fold an agent stream through
// Apply and append an event only when Apply accepts it from that state. The
// conditional append of the event log makes that check race-free; this
// package only knows the table.
package fsm
