package lifecycle

import "errors"

var (
	// ErrSessionNotFound is returned when a session does not exist or its
	// events cannot be read.
	ErrSessionNotFound = errors.New("reprise: session not found")

	// ErrNoCurrentSession is returned by actions that leave or use the
	// current session (Restore, Clear, Compact, End, Stop) on an agent that
	// has none.
	ErrNoCurrentSession = errors.New("reprise: agent has no current session")

	// ErrBadReason is returned by End for a reason it does not know.
	ErrBadReason = errors.New("reprise: unknown end reason")
)
