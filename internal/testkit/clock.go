package testkit

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Clock returns a clock for reprise.Options.Now that starts at start and
// moves on by step at each reading, from any goroutine.
func Clock(start time.Time, step time.Duration) func() time.Time {
	var ticks atomic.Int64
	return func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * step) }
}

// IDs returns an id source for reprise.Options.NewID that gives prefix-1,
// prefix-2, ... from any goroutine.
func IDs(prefix string) func() string {
	var n atomic.Uint64
	return func() string { return fmt.Sprintf("%s-%d", prefix, n.Add(1)) }
}
