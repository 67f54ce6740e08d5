package eventlog

import (
	"context"
	"errors"
)

// A Positioner tells the position of the last event of its log without
// reading the log.
type Positioner interface {
	// LastPosition returns the position of the last event, 0 for an empty
	// log.
	LastPosition(ctx context.Context) (uint64, error)
}

// errFound stops a read at its first event.
var errFound = errors.New("found")

// LastPosition returns the position of the store's last event, 0 for an
// empty store: the store's own answer when it is a Positioner, otherwise
// a search with reads that stop at their first event, a few dozen seeks
// rather than a read of the log.
func LastPosition(ctx context.Context, s Store) (uint64, error) {
	if p, ok := s.(Positioner); ok {
		return p.LastPosition(ctx)
	}
	has := func(from uint64) (bool, uint64, error) {
		var found bool
		var pos uint64
		err := s.ReadAll(ctx, from, func(ev Event) error {
			found, pos = true, ev.Position
			return errFound
		})
		if err != nil && !errors.Is(err, errFound) {
			return false, 0, err
		}
		return found, pos, nil
	}
	found, lo, err := has(1)
	if err != nil || !found {
		return 0, err
	}
	// lo holds an event and nothing lies at or beyond hi: double hi until
	// that holds, then halve the distance.
	hi := lo + 1
	for {
		ok, pos, err := has(hi)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		step := hi - lo
		lo, hi = pos, pos+2*step
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, pos, err := has(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = pos
		} else {
			hi = mid
		}
	}
	return lo, nil
}
