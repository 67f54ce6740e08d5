// Package lifecycle is the pure stepper of an agent's lifecycle: given the
// agent as its log folds, the sessions involved, the action the host asked
// for and the outcome of the last side effect, Step returns the records to
// append and the next side effect to perform.
//
// Every path of the product is a sequence of Steps: a startup restore
// (SessionLoaded, SessionStart intent and outcome, ContextInjected), a
// runtime restore (SaveAttempted, SessionEnd intent and outcome, then the
// startup path), New, Clear, Fork, Compact, End and Stop, and the roll
// forward of a step a dead process left in flight, where an intent with no
// outcome is closed as interrupted and its hooks never run again. A Prompt,
// Stop or Compact in flight on a session another process deleted ends on
// the agent's stream alone, marked deleted (Ready.Deleted names the
// session), since nothing may follow a tombstone.
//
// # Usage
//
// The caller (the Engine) loops:
//
//	for {
//		ready, err := lifecycle.Step(in)
//		// append ready.Records, conditional on ready.Expect, and fold
//		// them into in.Agent and the sessions
//		// if ready.Effect is nil and the agent has no step in flight: done
//		// else perform ready.Effect and set in.Outcome to what it gave
//	}
//
// # Caveats
//
// Step does no I/O, reads no clock and draws no randomness: the time is
// Input.Now and ids come from Input.NewID, both supplied by the caller.
// It checks nothing against the store: the conditional append is what
// makes a step's decision hold against other writers, and the lifecycle
// table of package fsm is what the folded agent accepts. An append that
// fails on the agent's own stream means another process moved the agent;
// the caller reports that itself and never feeds it back to Step.
package lifecycle
