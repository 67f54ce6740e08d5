package schema

import "errors"

var (
	// ErrUnknownType is returned by Decode for an event type that is neither
	// in the schema nor registered as ignorable.
	ErrUnknownType = errors.New("schema: unknown event type")

	// ErrBadVersion is returned by Decode for a schema version this build
	// does not understand.
	ErrBadVersion = errors.New("schema: unsupported schema version")
)
