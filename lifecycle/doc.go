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
// the agent's stream alone, marked deleted (Report.Deleted names the
// session), since nothing may follow a tombstone.
//
// # Usage
//
// A shell (the Engine, the lifecycle's tests, ExampleDriver) carries an
// action through a Driver, the one owner of the loop around Step: it holds
// the Input between steps and folds the agent's appended steps into the
// agent it was given, which it changes:
//
//	d := lifecycle.NewDriver(agent, action, newID, stopCap)
//	for !d.Done() {
//		ready, err := d.Ready(sessions, now)
//		// append ready.Records, conditional on ready.Expect, then
//		// d.Appended(ready, events), or d.AppendFailed(err); the shell
//		// brings the sessions it appended to up to date itself (their
//		// Head, Messages and Pending), as the Driver knows none of them
//		// perform ready.Effect, if any, and d.Performed(its outcome)
//	}
//
// What a step writes is Ready's records; what it tells the host is its
// Report (a warning, and what a Stop, Prompt or Compact decided), which the
// Driver gathers for the whole action. New, Clear and Fork create their
// session in the action's first append (Action.Create), so a refused
// action leaves nothing behind.
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
