package main

import (
	"fmt"
	"io"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// printTimeline writes the demo's timeline, one line per event:
// position, stream, seq, type and the fields that matter for that type,
// every UUID cut to its first 8 characters.
func printTimeline(w io.Writer, evs []eventlog.Event) error {
	for _, ev := range evs {
		p, err := schema.Decode(ev)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%3d  %-16s %3d  %-23s %s\n", ev.Position, shortIDs(ev.Stream), ev.Seq, ev.Type, shortIDs(projection.Describe(p)))
	}
	return nil
}

// printLogLine writes one event of a stream for log: its sequence, time,
// type and the fields that matter for that type.
func printLogLine(w io.Writer, ev eventlog.Event) error {
	p, err := schema.Decode(ev)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%4d  %s  %-24s %s\n", ev.Seq, time.Unix(0, ev.Time).UTC().Format(logTime), ev.Type, projection.Describe(p))
	return err
}

// logTime is the time format of log lines: UTC, to the millisecond.
const logTime = "2006-01-02T15:04:05.000Z"

// shortTime formats UTC unix nanoseconds for people: UTC, to the second,
// or "-" for 0.
func shortTime(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339)
}
