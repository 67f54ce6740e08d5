package boltstore

import "errors"

// ErrFormat is returned by Open for a file that is not a reprise store: a
// bbolt database holding other data, a store written in a layout version
// this build does not read, or (read-only) a file never initialised.
var ErrFormat = errors.New("boltstore: not a reprise store in a supported layout")
