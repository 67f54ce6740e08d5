package eventlog

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrConflict is returned by Append when a stream's head is not the
	// sequence the caller expected. Nothing was written.
	ErrConflict = errors.New("eventlog: append conflict")

	// ErrLocked is returned when opening a store that another process holds.
	ErrLocked = errors.New("eventlog: store is locked by another process")

	// ErrBusy is returned by StreamLocker.TryLock while another holder,
	// usually another process, has the stream's lock.
	ErrBusy = errors.New("eventlog: stream is held by another process")

	// ErrLockLost is the cause of the context of a lock taken with Hold
	// when the lock is lost while held: the database session holding it
	// ended, and another holder may take it.
	ErrLockLost = errors.New("eventlog: stream lock lost")

	// ErrClosed is returned by any call on a closed Store.
	ErrClosed = errors.New("eventlog: store is closed")

	// ErrReadOnly is returned by Append on a store opened read-only.
	ErrReadOnly = errors.New("eventlog: store is read-only")

	// ErrCorrupt is returned when stored bytes break an invariant of the
	// log: a bad checksum, a sequence gap, an envelope under the wrong key.
	ErrCorrupt = errors.New("eventlog: store is corrupt")

	// ErrInvalidStream is returned for an empty or malformed stream name.
	ErrInvalidStream = errors.New("eventlog: invalid stream name")

	// ErrInvalidAppend is returned by Append for a malformed request: no
	// records, or a record whose stream has no expectation.
	ErrInvalidAppend = errors.New("eventlog: invalid append")

	// ErrInvalidLoad is returned by Loader.Load for events that do not come
	// after what the store holds, or not in order.
	ErrInvalidLoad = errors.New("eventlog: events do not follow the store's")

	// ErrInvalidPurge is returned by Purge for a request naming an event
	// that is not stored (never written, or removed already), or the head
	// of a stream, which must stay. Nothing changed.
	ErrInvalidPurge = errors.New("eventlog: invalid purge")
)

// LockedError is the ErrLocked of a store file that another process holds.
// It names that process when the operating system tells which one it is.
type LockedError struct {
	Path    string        // the store file
	Waited  time.Duration // how long the open waited for the lock
	PID     int           // the holder's process id, 0 when unknown
	Command string        // the holder's command line, "" when unknown
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("store %s is locked by %s (waited %v)", e.Path, e.Holder(), e.Waited)
}

// Holder names the holding process: "process PID (COMMAND)", or "another
// process" when it is unknown.
func (e *LockedError) Holder() string {
	switch {
	case e.PID <= 0:
		return "another process"
	case e.Command == "":
		return fmt.Sprintf("process %d", e.PID)
	}
	return fmt.Sprintf("process %d (%s)", e.PID, e.Command)
}

// Is reports whether target is ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// ConflictError tells which stream moved. It matches ErrConflict.
type ConflictError struct {
	Stream   string
	Expected uint64
	Actual   uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("eventlog: append conflict on %s: expected head %d, found %d", e.Stream, e.Expected, e.Actual)
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// EventError locates a problem at one event of the log. It unwraps to the
// cause, typically ErrCorrupt, or the schema's ErrUnknownType, ErrBadVersion
// or ErrNewerVersion.
type EventError struct {
	Stream string
	Seq    uint64
	Err    error
}

func (e *EventError) Error() string {
	return fmt.Sprintf("%s#%d: %v", e.Stream, e.Seq, e.Err)
}

func (e *EventError) Unwrap() error { return e.Err }

// Corruptf returns an error matching ErrCorrupt that names the stream and
// sequence where an invariant of the log broke.
func Corruptf(stream string, seq uint64, format string, args ...any) error {
	return &EventError{Stream: stream, Seq: seq, Err: fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)}
}
