package deletion

import "errors"

// ErrSessionInUse is returned by Tombstone and Guard.Check while an agent
// has a restore, stop, prompt or compaction of the session in flight; the
// next action on that agent finishes it.
var ErrSessionInUse = errors.New("reprise: session is in use by an agent step in flight")
