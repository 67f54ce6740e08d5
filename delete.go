package reprise

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

// maxDeleteTries bounds how often a deletion or a vacuum starts again
// because another writer moved a stream it had read.
const maxDeleteTries = 8

// DeleteSession deletes session id: a SessionDeleted tombstone ends its
// stream. From then on the session is in no listing, and every call that
// would use it, or act on an agent whose current session it is, returns
// ErrSessionDeleted; only Start of another session moves such an agent on.
// Its buffered messages are dropped. A session with a restore, stop,
// prompt or compaction in flight on some agent is ErrSessionInUse. The
// events stay in the log until Vacuum removes them; the id is never used
// again.
func (e *Engine) DeleteSession(ctx context.Context, id string) error {
	return e.deleteSession(ctx, id, "", &agentGuard{})
}

// CheckDelete returns the error DeleteSession would return for session id
// now (ErrSessionDeleted, ErrSessionInUse, or that there is no such
// session), and writes nothing.
func (e *Engine) CheckDelete(ctx context.Context, id string) error {
	if _, err := e.Session(ctx, id); err != nil {
		return err
	}
	g := &agentGuard{}
	if err := g.refresh(ctx, e.store); err != nil {
		return err
	}
	_, err := g.check(id)
	return err
}

// deleteSession writes id's tombstone, with reason, conditional on every
// agent stream being where g last read it, so that no agent can begin a
// step on the session unseen.
func (e *Engine) deleteSession(ctx context.Context, id, reason string, g *agentGuard) error {
	s, err := e.session(ctx, id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stream := projection.SessionStream(id)
	for tries := 1; ; tries++ {
		if err := e.catchUp(ctx, s); err != nil {
			return err
		}
		if s.conv.Deleted {
			return deletedError(id)
		}
		if err := g.refresh(ctx, e.store); err != nil {
			return err
		}
		expect, err := g.check(id)
		if err != nil {
			return err
		}
		var last int64
		if err := e.store.ReadStream(ctx, stream, s.conv.Head, func(ev eventlog.Event) error { last = ev.Time; return nil }); err != nil {
			return err
		}
		p := &schema.SessionDeleted{ID: id, Reason: reason, Messages: len(s.conv.Messages), LastActivity: last}
		rec, err := schema.NewRecord(stream, p, e.stamp(), "")
		if err != nil {
			return err
		}
		evs, err := e.appendTimed(ctx, append(expect, eventlog.Expect{Stream: stream, Seq: s.conv.Head}), []eventlog.Record{rec})
		if errors.Is(err, eventlog.ErrConflict) && tries < maxDeleteTries {
			continue
		}
		if err != nil {
			return fmt.Errorf("delete %s: %w", id, err)
		}
		if err := s.conv.ApplyDecoded(evs[0], p); err != nil {
			return err
		}
		s.pending = nil
		e.scoped.Drop(id)
		return nil
	}
}

// deletedError is ErrSessionDeleted naming session id.
func deletedError(id string) error {
	return fmt.Errorf("%w: %s", ErrSessionDeleted, id)
}

// currentDeleted returns the stepper's error for agent a when its current
// session was deleted, before an action creates its next session.
func (a *Agent) currentDeleted(ctx context.Context) error {
	id := a.view.Current
	if id == "" {
		return nil
	}
	s, err := a.e.load(ctx, id)
	if err != nil {
		return nil // the stepper says what a missing session means
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conv.Deleted {
		return lifecycle.CurrentDeleted(a.id, id)
	}
	return nil
}

// seeTombstones catches up the cached sessions among ids that another
// process deleted since this Engine read them. Others stay as cached: what
// other writers appended is learnt when an append conflicts, as before.
func (e *Engine) seeTombstones(ctx context.Context, ids ...string) error {
	for _, id := range ids {
		e.mu.Lock()
		s := e.sessions[id]
		e.mu.Unlock()
		if s == nil {
			continue
		}
		s.mu.Lock()
		gone := false
		err := e.store.ReadStream(ctx, projection.SessionStream(id), s.conv.Head+1, func(ev eventlog.Event) error {
			gone = gone || ev.Type == schema.TypeSessionDeleted
			return nil
		})
		if err == nil && gone {
			err = e.catchUp(ctx, s)
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// taken explains why session id could not be created: it exists, or it
// was deleted, and a deleted id is never used again.
func (e *Engine) taken(ctx context.Context, id string) error {
	if gone, err := e.tombstoned(ctx, id); err != nil || gone {
		return cmp.Or(err, fmt.Errorf("%w: %s; a deleted id is never used again", ErrSessionDeleted, id))
	}
	return fmt.Errorf("%w: %s", ErrSessionExists, id)
}

// tombstoned reports whether session id's stream ends with its tombstone,
// reading only that last event.
func (e *Engine) tombstoned(ctx context.Context, id string) (bool, error) {
	stream := projection.SessionStream(id)
	head, err := e.store.Head(ctx, stream)
	if err != nil || head == 0 {
		return false, err
	}
	gone := false
	err = e.store.ReadStream(ctx, stream, head, func(ev eventlog.Event) error {
		gone = ev.Type == schema.TypeSessionDeleted
		return nil
	})
	return gone, err
}

// agentGuard follows every agent stream of the store, so that a deletion
// can see which sessions agents have steps in flight on, and make its
// tombstone conditional on the agents not having moved since.
type agentGuard struct {
	views map[string]*projection.Agent // by stream
}

// refresh folds what agents appended since the last refresh.
func (g *agentGuard) refresh(ctx context.Context, store eventlog.Store) error {
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

// check returns ErrSessionInUse when an agent has a step in flight that
// involves session id, and otherwise the heads of every agent stream.
func (g *agentGuard) check(id string) ([]eventlog.Expect, error) {
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

// InactiveSessions returns the sessions whose last activity came before
// cutoff, oldest first. A session's last activity is the time of the
// last event of its stream (its creation, a message, an injected
// reminder) or the last time an agent loaded it (a restore, a start), if
// that is later: an agent that keeps resuming a session keeps it alive
// even when it adds nothing. Hook runs that record nothing in the
// session do not count. It reads what Sessions reads.
func (e *Engine) InactiveSessions(ctx context.Context, cutoff time.Time) ([]InactiveSession, error) {
	sessions, err := e.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	var out []InactiveSession
	for _, s := range sessions {
		if s.LastActivity < cutoff.UnixNano() {
			out = append(out, InactiveSession{SessionInfo: s})
		}
	}
	slices.SortStableFunc(out, func(a, b InactiveSession) int { return cmp.Compare(a.LastActivity, b.LastActivity) })
	return out, nil
}

// InactiveSession is a session as InactiveSessions returns it; its
// LastActivity (UTC unix nanoseconds) is as InactiveSessions defines it.
type InactiveSession struct {
	projection.SessionInfo
}

// DeleteInactive deletes, as DeleteSession does, every session that
// InactiveSessions returns for cutoff, and returns those it deleted. A
// session that cannot be deleted (one in use, say) is left, and its error
// is among those returned, joined, while the others go.
func (e *Engine) DeleteInactive(ctx context.Context, cutoff time.Time) ([]InactiveSession, error) {
	inactive, err := e.InactiveSessions(ctx, cutoff)
	if err != nil {
		return nil, err
	}
	reason := "inactive since before " + cutoff.UTC().Format(time.RFC3339)
	g := &agentGuard{}
	var (
		deleted []InactiveSession
		errs    []error
	)
	for _, s := range inactive {
		if err := ctx.Err(); err != nil {
			return deleted, err
		}
		if err := e.deleteSession(ctx, s.ID, reason, g); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, s)
	}
	return deleted, errors.Join(errs...)
}
