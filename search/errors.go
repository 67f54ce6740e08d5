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
)
