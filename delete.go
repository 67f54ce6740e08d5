package reprise

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/reprise-dev/reprise/deletion"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// DeleteSession deletes session id: a SessionDeleted tombstone ends its
// stream. From then on the session is in no listing, and every call that
// would use it, or act on an agent whose current session it is, returns
// ErrSessionDeleted; only Start of another session moves such an agent on.
// Its buffered messages are dropped. A session with a restore, stop,
// prompt or compaction in flight on some agent is ErrSessionInUse. The
// events stay in the log until Vacuum removes them; the id is never used
// again. The sessions of its subagents, and of theirs, are deleted with
// it, the deepest first: they hold text of the same conversation.
func (e *Engine) DeleteSession(ctx context.Context, id string) error {
	subs, err := e.descendants(ctx, id)
	if err != nil {
		return err
	}
	g := &deletion.Guard{}
	for _, sub := range slices.Backward(subs) {
		err := e.deleteSession(ctx, sub.ID, "its parent session "+sub.Subagent.Session+" is deleted", g)
		if err != nil && !errors.Is(err, ErrSessionDeleted) {
			return err
		}
	}
	return e.deleteSession(ctx, id, "", g)
}

// CheckDelete returns the error DeleteSession would return for session id
// now (ErrSessionDeleted, ErrSessionInUse, or that there is no such
// session), and writes nothing.
func (e *Engine) CheckDelete(ctx context.Context, id string) error {
	if _, err := e.Session(ctx, id); err != nil {
		return err
	}
	var g deletion.Guard
	if err := g.Refresh(ctx, e.store); err != nil {
		return err
	}
	_, err := g.Check(id)
	return err
}

// deleteSession writes id's tombstone, with reason, under the session's
// lock, conditional on every agent stream being where g last read it.
func (e *Engine) deleteSession(ctx context.Context, id, reason string, g *deletion.Guard) error {
	s, err := e.session(ctx, id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := deletion.Tombstone(ctx, e.writer(), e.stamp, s.conv, reason, g); err != nil {
		return err
	}
	s.pending = nil
	e.scoped.Drop(id)
	return nil
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

// InactiveSession is a session as InactiveSessions returns it; its
// LastActivity (UTC unix nanoseconds) is as InactiveSessions defines it.
type InactiveSession = deletion.InactiveSession

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
	return deletion.Inactive(sessions, cutoff), nil
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
	g := &deletion.Guard{}
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
