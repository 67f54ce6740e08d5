package pgstore

import (
	"context"

	"github.com/reprise-dev/reprise/eventlog"
)

// GroupAppend is one append of a group that a test commits with
// CommitGroup, and its outcome.
type GroupAppend struct {
	Ctx    context.Context
	Expect []eventlog.Expect
	Recs   []eventlog.Record

	Events []eventlog.Event
	Err    error
}

// CommitGroup commits appends as one group, as s does with the appends
// that queue up behind its transaction, and sets their outcomes.
func CommitGroup(s *Store, appends ...*GroupAppend) {
	group := make([]*appendReq, len(appends))
	for i, a := range appends {
		group[i] = &appendReq{ctx: a.Ctx, expect: a.Expect, recs: a.Recs}
	}
	s.commitGroup(group, nil)
	for i, r := range group {
		appends[i].Events, appends[i].Err = r.evs, r.err
	}
}

// Groups returns how many group commits s has attempted.
func Groups(s *Store) int64 { return s.groups.Load() }

// Queued returns how many appends wait in s's queue for a group commit.
func Queued(s *Store) int { return s.queue.Waiting() }
