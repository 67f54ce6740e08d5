package vacuum

import "errors"

// ErrNoVacuum is returned by Run for a store that cannot remove events:
// one that does not implement eventlog.Purger.
var ErrNoVacuum = errors.New("reprise: the store cannot remove events")
