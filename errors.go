package reprise

import (
	"errors"

	"github.com/reprise-dev/reprise/deletion"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/vacuum"
)

var (
	// ErrSessionNotFound is returned when a session does not exist or its
	// stream cannot be read. A restore that returns it changed nothing.
	ErrSessionNotFound = lifecycle.ErrSessionNotFound

	// ErrSessionExists is returned by CreateSession, New and Fork for an id
	// already taken.
	ErrSessionExists = lifecycle.ErrSessionExists

	// ErrSessionDeleted is returned when a call would use a deleted session:
	// read, append to, buffer, save, restore, start, fork or delete it, or
	// act on an agent whose current session it is (only Start of another
	// session goes on). CreateSession, New and Import return it for a
	// deleted id, which is never used again.
	ErrSessionDeleted = lifecycle.ErrSessionDeleted

	// ErrNoVacuum is returned by Vacuum for a store that cannot remove
	// events: one that does not implement eventlog.Purger.
	ErrNoVacuum = vacuum.ErrNoVacuum

	// ErrSessionInUse is returned by DeleteSession while an agent has a
	// restore, stop, prompt or compaction of the session in flight; the
	// next action on that agent finishes it.
	ErrSessionInUse = deletion.ErrSessionInUse

	// ErrInvalidID is returned for a session or agent id that is empty, too
	// long, or holds characters other than letters, digits, '-', '_', '.'
	// and ':', or "..".
	ErrInvalidID = errors.New("reprise: invalid id")

	// ErrInvalidMessage is returned for a message whose role is neither
	// "user" nor "assistant", and for an answer the Messages API would
	// refuse after the session's messages; the error then also matches
	// ErrEmptyToolUseID, ErrDuplicateToolUse or ErrToolCallsOpen.
	ErrInvalidMessage = errors.New("reprise: invalid message")

	// ErrEmptyToolUseID is returned by Append and Buffer for an answer with
	// a tool_use block that has no id: no tool_result could name it.
	ErrEmptyToolUseID = projection.ErrEmptyToolUseID

	// ErrDuplicateToolUse is returned by Append and Buffer for an answer
	// with a tool_use id that the session (as the model sees it), or the
	// answer itself, holds already.
	ErrDuplicateToolUse = projection.ErrDuplicateToolUse

	// ErrToolUseNotFound is returned by PreToolUse for a call whose
	// tool_use no answer of the agent's current session holds, unless
	// ToolCall.AddToolUse asks for it to be added.
	ErrToolUseNotFound = errors.New("reprise: tool_use not found")

	// ErrToolCallsOpen is returned by Append and Buffer for an answer
	// while calls of the answer before it have no tool_result, and by
	// PreToolUse when the tool_use it would add comes so. Give each call
	// its result first: an error tool_result for one that was interrupted.
	ErrToolCallsOpen = projection.ErrToolCallsOpen

	// ErrAgentBusy is returned when the agent is busy with another action
	// (a restore, prompt, stop, compaction), in this process or in another
	// one on the same store. Nothing was done for the caller.
	ErrAgentBusy = lifecycle.ErrAgentBusy

	// ErrRestoreInProgress is ErrAgentBusy under its former name.
	//
	// Deprecated: use ErrAgentBusy, which names what it is: any action,
	// not only a restore, finds the agent busy.
	ErrRestoreInProgress = ErrAgentBusy

	// ErrDatabaseURL is returned by Open for a database URL: the root
	// package opens only bbolt files, and a database store is opened by its
	// own package and handed to New.
	ErrDatabaseURL = errors.New("reprise: Open takes a bbolt file, not a database URL")

	// ErrNoDirectory is returned by CreateSession and New for a working
	// directory that does not exist or is not a directory.
	ErrNoDirectory = errors.New("reprise: working directory does not exist")

	// ErrCompactionBlocked is returned by Compact when a PreCompact hook
	// blocked the compaction; the error says why.
	ErrCompactionBlocked = errors.New("reprise: compaction blocked by a PreCompact hook")

	// ErrInterrupted is returned when the context of an action was
	// cancelled while a step was in flight. The action stopped at the next
	// step boundary: the hooks that were running were cancelled and their
	// outcome recorded, and no new step began. The error also matches the
	// context's error. The log is consistent: the next call on the agent
	// (Engine.Agent or any action) finishes the restore, running the steps
	// that never began and never a hook whose outcome is recorded.
	ErrInterrupted = errors.New("reprise: restore interrupted")

	// ErrNoCurrentSession is returned by Restore on an agent that has no
	// current session yet; use Start for its first one.
	ErrNoCurrentSession = lifecycle.ErrNoCurrentSession
)

// CurrentDeleted is the error of an action on agent whose current session,
// session, was deleted: it matches ErrSessionDeleted, and says that the way
// on is to start another session.
func CurrentDeleted(agent, session string) error { return lifecycle.CurrentDeleted(agent, session) }
