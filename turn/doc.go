// Package turn drives an agent's turns through reprise so that a host
// killed in the middle of one picks it up where it was: no answer asked
// for twice, no tool run twice, no hook fired twice.
//
// The host plugs in its model call (Model) and its tools (Tool) as plain
// functions; a Runner takes a prompt through UserPromptSubmit, asks the
// model, records the answer before acting on it, takes each tool call
// through PreToolUse, the tool and PostToolUse, asks the model again with
// the results, and ends the turn through the Stop hooks, until they let it
// end. Every step is in the agent's log before the next one begins, and
// the Runner decides each step from the log alone (reprise.Agent.Turn), so
// a new process that calls Resume continues a turn a dead one began, by
// the same path.
//
// What is and is not repeated after a crash:
//
//   - an answer that is recorded is never asked for again; a tool whose
//     result is recorded never runs again; a decision that is recorded is
//     not asked again; hooks run at most once, as everywhere in reprise;
//   - a tool that was allowed but has no result may have run: it does not
//     run again unless it is Repeatable (then it runs again with the same
//     tool_use id, at most once more per crash that cut it); otherwise the
//     model gets an error tool_result saying it was interrupted and may
//     have run (Interrupted);
//   - a model request in flight when the process died cannot be made
//     at most once: the Messages API has no idempotency key, and its
//     answer was never recorded. Resume asks again, once per such crash.
//
// A call whose tool_use id cannot be used (not an id, twice in the answer,
// or an earlier call's) gets an error tool_result without running, and the
// turn goes on. A call whose tool ended because the turn's context did has
// its result recorded all the same, its PostToolUse hooks given a few
// seconds.
//
// The package also answers the prompt and agent hooks of package
// hookexec with the host's models (Models): PromptEvaluator asks once,
// with the hook's prompt after the transcript it judges, and
// AgentEvaluator gives the hook a turn of its own, on a Runner over an
// Engine in memory that is gone when the verdict is in, with the
// read-only tools Read, Grep and Glob, which stay inside the session's
// directory, and the hook's bound on its requests. Set them as
// hookexec.Exec's Evaluator and AgentEvaluator.
//
// Caveats: the turn of an agent is held by one Runner at a time; a second
// one in this process, or in another on a shared store (PostgreSQL), gets
// reprise.ErrAgentBusy. A bbolt file belongs to one process, so there a
// second process cannot open the store at all while the first holds it. Tools of one answer run one at a time unless
// Parallel is set; the model gets their results in the answer's order
// either way. Model and Tool functions must honour their context.
package turn
