package search

import "errors"

var (
	// ErrLocked is returned by Open when another process holds the index's
	// directory: the index belongs to the process that holds the store,
	// and a reader asks that process.
	ErrLocked = errors.New("search: the index is held by another process")

	// ErrNotIndex is returned when the directory or table named for the
	// index holds something else, which is never removed.
	ErrNotIndex = errors.New("search: not a search index")

	// ErrClosed is returned by a Held index's searches after its Close.
	ErrClosed = errors.New("search: the index is closed")

	// ErrNotServed is returned by Remote when the process holding the
	// store serves no searches on its socket: it keeps no index, or was
	// built before it could.
	ErrNotServed = errors.New("search: the store's holder serves no searches")
)
