package schema

import "errors"

var (
	// ErrUnknownType is returned by Decode for an event type that is neither
	// in the schema nor registered as ignorable.
	ErrUnknownType = errors.New("schema: unknown event type")

	// ErrBadVersion is returned by Decode for an event of payload version
	// 0, which no build writes.
	ErrBadVersion = errors.New("schema: bad payload version")

	// ErrNewerVersion is returned by Decode, as a *VersionError, for an
	// event whose payload version is newer than this build reads: a newer
	// reprise wrote it. It is not damage, and never matches
	// eventlog.ErrCorrupt.
	ErrNewerVersion = errors.New("schema: event written by a newer reprise")
)
