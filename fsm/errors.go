package fsm

import (
	"errors"
	"fmt"
)

// ErrIllegalTransition is returned by Apply when the table has no
// transition for the event from the state.
var ErrIllegalTransition = errors.New("fsm: illegal transition")

// TransitionError names the state and event that Apply rejected. It matches
// ErrIllegalTransition.
type TransitionError struct {
	From  State
	Event Event
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("fsm: illegal transition: %s in state %s", e.Event, e.From)
}

// Is reports whether target is ErrIllegalTransition.
func (e *TransitionError) Is(target error) bool { return target == ErrIllegalTransition }
