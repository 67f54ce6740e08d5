package eventlog

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Type names an event type. It is stored in every envelope; package schema
// defines the types reprise writes.
type Type string

// Event is one stored event: the envelope the store assigned plus the
// msgpack-encoded payload.
type Event struct {
	Stream    string
	Seq       uint64 // per-stream sequence, from 1
	Position  uint64 // store-wide position, from 1, strictly increasing
	Type      Type
	Version   uint16 // schema version of the payload
	Time      int64  // UTC unix nanoseconds, stamped by the writer
	RestoreID string // the restore this lifecycle event belongs to, if any
	Payload   []byte
}

// Record is an event before the store assigns its sequence and position.
type Record struct {
	Stream    string
	Type      Type
	Version   uint16
	Time      int64
	RestoreID string
	Payload   []byte
}

// Expect is the head sequence a caller last saw for a stream it appends to;
// 0 means the stream must not exist yet.
type Expect struct {
	Stream string
	Seq    uint64
}

// StreamInfo names a stream and its head sequence.
type StreamInfo struct {
	Name string
	Head uint64
}

// Store is the append-only event log.
//
// All methods are safe for concurrent use. Append is atomic: either every
// record is written, with consecutive sequences per stream and increasing
// positions in the order given, or nothing is. Events returned by Append are
// owned by the caller. Events passed to callbacks, Payload included, are
// only valid until the callback returns, and a callback must not call the
// Store. A callback's error stops the read and is returned as is.
type Store interface {
	// Append writes recs if every stream in expect is at the expected head.
	// Every stream that recs touch must appear in expect exactly once; a
	// stream may be expected without being written to, which makes the
	// append conditional on it. A moved stream returns a *ConflictError.
	Append(ctx context.Context, expect []Expect, recs []Record) ([]Event, error)

	// Head returns the last sequence of stream, or 0 when it has no events.
	Head(ctx context.Context, stream string) (uint64, error)

	// ReadStream calls fn for every event of stream with Seq >= from, in
	// sequence order.
	ReadStream(ctx context.Context, stream string, from uint64, fn func(Event) error) error

	// ReadAll calls fn for every event with Position >= from, in position
	// order.
	ReadAll(ctx context.Context, from uint64, fn func(Event) error) error

	// Streams calls fn for every stream whose name starts with prefix, in
	// name order.
	Streams(ctx context.Context, prefix string, fn func(StreamInfo) error) error

	// Close releases the store. Calls after Close return ErrClosed.
	Close() error
}

// MetaChecker is an optional interface of a store whose file keeps its
// commit records outside what the log checksums, as a bbolt file keeps
// two meta pages: a damaged one makes the file open at an older commit
// without a word, and nothing in the log can tell. DamagedMeta reads them
// from the file and returns, for each damaged one, a sentence saying what
// may be lost; none when all are sound.
type MetaChecker interface {
	DamagedMeta(ctx context.Context) ([]string, error)
}

// StreamLocker is implemented by stores that several processes share at
// once (a database, unlike a bbolt file, which one process owns). The Engine
// holds an agent's lock for the whole of a restore, so another process
// neither runs a second restore of that agent nor mistakes a restore in
// progress for an interrupted one.
type StreamLocker interface {
	// TryLock takes stream's lock for the caller, or fails at once with an
	// error matching ErrBusy while another holder has it. The lock is held
	// until release is called, or until the holder's process dies, which is
	// what lets the next process roll an interrupted restore forward.
	TryLock(ctx context.Context, stream string) (release func(), err error)
}

// LockHolder is implemented by a StreamLocker whose locks can be lost
// while held, as a database's are when the session holding one ends (its
// connection fails, an administrator ends it): another holder may then
// take the lock, and the first must stop doing what the lock guards.
type LockHolder interface {
	StreamLocker
	// Hold takes stream's lock as TryLock does and returns, with its
	// release, a context derived from ctx that ends as soon as the lock
	// is lost, with an error matching ErrLockLost as its cause, and ends
	// when the lock is released.
	Hold(ctx context.Context, stream string) (held context.Context, release func(), err error)
}

// Hold takes stream's lock from l as l.TryLock does, and returns with its
// release a context derived from ctx that ends when the lock is released
// and, on a store whose locks can be lost (LockHolder), as soon as it is
// lost. A holder that does its work under that context stops at its next
// step once another may have taken the lock.
func Hold(ctx context.Context, l StreamLocker, stream string) (held context.Context, release func(), err error) {
	if h, ok := l.(LockHolder); ok {
		return h.Hold(ctx, stream)
	}
	unlock, err := l.TryLock(ctx, stream)
	if err != nil {
		return nil, nil, err
	}
	held, cancel := context.WithCancel(ctx)
	return held, func() { cancel(); unlock() }, nil
}

// MaxStreamLen bounds stream names so they fit in any backend's keys.
const MaxStreamLen = 512

// ValidateStream reports whether name is a usable stream name: non-empty,
// valid UTF-8, at most MaxStreamLen bytes, without NUL or other control
// characters.
func ValidateStream(name string) error {
	if name == "" || len(name) > MaxStreamLen || !utf8.ValidString(name) {
		return fmt.Errorf("%w: %q", ErrInvalidStream, name)
	}
	if strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return fmt.Errorf("%w: %q has a control character", ErrInvalidStream, name)
	}
	return nil
}

// CheckAppend validates an append request the way every backend must, before
// touching storage: at least one record, valid stream names, each expected
// stream named once, and every record's stream expected.
func CheckAppend(expect []Expect, recs []Record) error {
	if len(recs) == 0 {
		return fmt.Errorf("%w: no records", ErrInvalidAppend)
	}
	for i, e := range expect {
		if err := ValidateStream(e.Stream); err != nil {
			return err
		}
		for _, prev := range expect[:i] {
			if prev.Stream == e.Stream {
				return fmt.Errorf("%w: stream %s expected twice", ErrInvalidAppend, e.Stream)
			}
		}
	}
	for _, r := range recs {
		if !expects(expect, r.Stream) {
			return fmt.Errorf("%w: record for %q has no expectation", ErrInvalidAppend, r.Stream)
		}
		if r.Type == "" {
			return fmt.Errorf("%w: record for %s has no type", ErrInvalidAppend, r.Stream)
		}
	}
	return nil
}

func expects(expect []Expect, stream string) bool {
	for _, e := range expect {
		if e.Stream == stream {
			return true
		}
	}
	return false
}
