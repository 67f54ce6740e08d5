package hookexec

import "errors"

var (
	// ErrBadMatcher is returned when a matcher is not a valid regular
	// expression.
	ErrBadMatcher = errors.New("hookexec: invalid matcher")

	// ErrBadHook is returned when a hook has no body or answers an event
	// reprise does not know.
	ErrBadHook = errors.New("hookexec: invalid hook")
)
