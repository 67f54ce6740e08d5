package lifecycle

import "errors"

var (
	// ErrSessionNotFound is returned when a session does not exist or its
	// events cannot be read.
	ErrSessionNotFound = errors.New("reprise: session not found")

	// ErrSessionExists is returned when New, Clear or Fork would create a
	// session whose id is taken.
	ErrSessionExists = errors.New("reprise: session already exists")

	// ErrNoCurrentSession is returned by actions that leave or use the
	// current session (Restore, Clear, Compact, End, Stop) on an agent that
	// has none.
	ErrNoCurrentSession = errors.New("reprise: agent has no current session")

	// ErrSessionDeleted is returned when an action would use a deleted
	// session: restore or start it, or leave, end, compact, prompt or stop
	// on it as the current session. Nothing is recorded; an agent whose
	// current session was deleted can still Start another one.
	ErrSessionDeleted = errors.New("reprise: session was deleted")

	// ErrImportUnfinished is returned for a session whose import started
	// and did not finish: it holds only the first part of its transcript,
	// and nothing but the import's resume may add to it, so no agent may
	// start or restore it.
	ErrImportUnfinished = errors.New("reprise: unfinished import")

	// ErrAgentBusy is returned when the agent is busy with another action:
	// a lifecycle action while the hooks of a tool call or a fired event
	// run, or, from the
	// shell, any action while another holds the agent.
	ErrAgentBusy = errors.New("reprise: the agent is busy with another action")

	// ErrBadTool is returned for a tool action without a tool_use id or a
	// tool name.
	ErrBadTool = errors.New("reprise: bad tool call")

	// ErrToolNotDecided is returned by PostToolUse for a tool call with no
	// decision recorded: ask PreToolUse first.
	ErrToolNotDecided = errors.New("reprise: the tool call has no decision recorded")

	// ErrToolNotAllowed is returned by PostToolUse for a result of a call
	// left to ask whose user's allow is not recorded: nothing allowed it
	// to run.
	ErrToolNotAllowed = errors.New("reprise: the tool call was never allowed")

	// ErrToolNotAsked is returned for the user's answer to a call that was
	// not left to ask.
	ErrToolNotAsked = errors.New("reprise: the tool call was not left to ask")

	// ErrBadFire is returned for a fire without an id, of an event that is
	// not one of the table's events without steps of their own, with
	// input the event's row does not take, or with an id an earlier fire
	// of another event holds.
	ErrBadFire = errors.New("reprise: bad fire")

	// ErrBadReason is returned by End for a reason it does not know.
	ErrBadReason = errors.New("reprise: unknown end reason")
)
