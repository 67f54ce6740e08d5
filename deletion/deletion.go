package deletion

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// maxTries bounds how often a deletion starts again because another
// writer moved a stream it had read.
const maxTries = 16

// Tombstone deletes the session conv folds: it appends the session's
// SessionDeleted tombstone, with reason, to store, stamped with now (UTC
// unix nanoseconds), conditional on the session's head and on every agent
// stream being where g last read it, so that no agent can begin a step on
// the session unseen. conv is caught up from store first and given the
// tombstone once it is written. A session already deleted is
// lifecycle.ErrSessionDeleted; one an agent has a step in flight on is
// ErrSessionInUse.
func Tombstone(ctx context.Context, store eventlog.Store, now func() int64, conv *projection.Conversation, reason string, g *Guard) error {
	id := conv.ID
	stream := projection.SessionStream(id)
	// What a try reads, kept short: a writer appending steadily to the
	// session leaves only a short gap between its appends. The read that
	// catches conv up also gives the time of the session's last event,
	// and the agents are read again only when one of them moved.
	var last int64
	from, refresh := max(conv.Head, 1), true
	for tries := 1; ; tries++ {
		if err := store.ReadStream(ctx, stream, from, func(ev eventlog.Event) error {
			last = ev.Time
			if ev.Seq <= conv.Head {
				return nil // its time only
			}
			return conv.Apply(ev)
		}); err != nil {
			return err
		}
		from = conv.Head + 1
		if conv.Deleted {
			return Deleted(id)
		}
		if refresh {
			if err := g.Refresh(ctx, store); err != nil {
				return err
			}
		}
		expect, err := g.Check(id)
		if err != nil {
			return err
		}
		p := &schema.SessionDeleted{ID: id, Reason: reason, Messages: len(conv.Messages), LastActivity: last}
		rec, err := schema.NewRecord(stream, p, now(), "")
		if err != nil {
			return err
		}
		evs, err := store.Append(ctx, append(expect, eventlog.Expect{Stream: stream, Seq: conv.Head}), []eventlog.Record{rec})
		if errors.Is(err, eventlog.ErrConflict) && tries < maxTries {
			var conflict *eventlog.ConflictError
			refresh = !errors.As(err, &conflict) || conflict.Stream != stream
			// A pause, longer each time, lets the tombstone find a gap in
			// a writer that appends steadily, where trying again at once
			// can meet it at the same point of its stride.
			select {
			case <-ctx.Done():
				return fmt.Errorf("delete %s: %w", id, ctx.Err())
			case <-time.After(time.Duration(tries) * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("delete %s: %w", id, err)
		}
		return conv.ApplyDecoded(evs[0], p)
	}
}

// Deleted is lifecycle.ErrSessionDeleted naming session id.
func Deleted(id string) error {
	return fmt.Errorf("%w: %s", lifecycle.ErrSessionDeleted, id)
}

// Taken explains why session id could not be created: it exists
// (lifecycle.ErrSessionExists), or it was deleted
// (lifecycle.ErrSessionDeleted), and a deleted id is never used again.
func Taken(ctx context.Context, store eventlog.Store, id string) error {
	if gone, err := Tombstoned(ctx, store, id); err != nil || gone {
		return cmp.Or(err, fmt.Errorf("%w: %s; a deleted id is never used again", lifecycle.ErrSessionDeleted, id))
	}
	return fmt.Errorf("%w: %s", lifecycle.ErrSessionExists, id)
}

// Tombstoned reports whether session id's stream ends with its tombstone,
// reading only that last event.
func Tombstoned(ctx context.Context, store eventlog.Store, id string) (bool, error) {
	stream := projection.SessionStream(id)
	head, err := store.Head(ctx, stream)
	if err != nil || head == 0 {
		return false, err
	}
	gone := false
	err = store.ReadStream(ctx, stream, head, func(ev eventlog.Event) error {
		gone = ev.Type == schema.TypeSessionDeleted
		return nil
	})
	return gone, err
}

// Guard follows every agent stream of a store, so that a deletion can see
// which sessions agents have steps in flight on, and make its tombstone
// conditional on the agents not having moved since. The zero Guard is
// ready to use; it is not safe for concurrent use.
type Guard struct {
	views map[string]*projection.Agent // by stream
}

// Refresh folds what agents appended since the last refresh.
func (g *Guard) Refresh(ctx context.Context, store eventlog.Store) error {
	if g.views == nil {
		g.views = map[string]*projection.Agent{}
	}
	var behind []string
	err := store.Streams(ctx, "agent/", func(info eventlog.StreamInfo) error {
		if v := g.views[info.Name]; v == nil || v.Head < info.Head {
			behind = append(behind, info.Name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, stream := range behind {
		v := g.views[stream]
		if v == nil {
			v = projection.NewAgent(strings.TrimPrefix(stream, "agent/"))
			g.views[stream] = v
		}
		if err := store.ReadStream(ctx, stream, v.Head+1, v.Apply); err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
	}
	return nil
}

// Check returns ErrSessionInUse when an agent has a step in flight that
// involves session id, as of the last Refresh, and otherwise the heads of
// every agent stream.
func (g *Guard) Check(id string) ([]eventlog.Expect, error) {
	expect := make([]eventlog.Expect, 0, len(g.views)+1)
	for stream, v := range g.views {
		if fsm.InFlight(v.State) && involves(v, id) {
			return nil, fmt.Errorf("%w: %s: agent %s is in state %s; any command on the agent finishes the step, then delete again",
				ErrSessionInUse, id, v.ID, v.State)
		}
		expect = append(expect, eventlog.Expect{Stream: stream, Seq: v.Head})
	}
	return expect, nil
}

// involves reports whether the step in flight on agent v uses session id.
func involves(v *projection.Agent, id string) bool {
	switch {
	case v.Restore != nil && (v.Restore.From == id || v.Restore.To == id):
		return true
	case v.Stop != nil && v.Stop.Session == id:
		return true
	case v.Prompt != nil && v.Prompt.Session == id:
		return true
	}
	return false
}

// InactiveSession is a session as Inactive returns it; its LastActivity
// (UTC unix nanoseconds) is as package reprise's InactiveSessions defines
// it.
type InactiveSession struct {
	projection.SessionInfo
}

// Inactive returns the sessions whose last activity came before cutoff,
// oldest first, or nil when there are none.
func Inactive(sessions []projection.SessionInfo, cutoff time.Time) []InactiveSession {
	var out []InactiveSession
	for _, s := range sessions {
		if s.LastActivity < cutoff.UnixNano() {
			out = append(out, InactiveSession{SessionInfo: s})
		}
	}
	slices.SortStableFunc(out, func(a, b InactiveSession) int { return cmp.Compare(a.LastActivity, b.LastActivity) })
	return out
}
