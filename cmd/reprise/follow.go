package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/eventlog/remote"
)

// followPoll is how often log --follow looks for new events when it
// reads the store itself: the file between other processes' holds, or the
// database.
const followPoll = 200 * time.Millisecond

// followWait is how long one read through a holder's socket waits for
// new events before it asks again.
const followWait = 10 * time.Second

// follow passes every event of the store from position next on to fn,
// in position order, then every event appended later, until ctx ends, which is a clean stop. A
// bbolt file is read through the socket of the process holding it, when
// one does, and otherwise opened, read and closed again each time, so that
// writers are never kept out for longer than a read. Once the first read
// has succeeded, a store that is held without a socket is waited for.
func follow(ctx context.Context, a *app, stderr io.Writer, next uint64, fn func(eventlog.Event) error) error {
	emit := func(ev eventlog.Event) error {
		next = ev.Position + 1
		return fn(ev)
	}
	path, err := a.storePath()
	if err != nil {
		return err
	}
	if pgstore.IsURL(path) {
		return followDatabase(ctx, a, stderr, emit, &next)
	}
	for first := true; ; first = false {
		waited, err := followOnce(ctx, a, stderr, next, emit)
		switch {
		case ctx.Err() != nil:
			return nil
		case waited && errors.Is(err, remote.ErrDisconnected):
			// The holder went away while this waited at its socket, as a
			// writer that appended and exited does: read again, after a
			// pause.
		case err != nil && (first || !transient(err)):
			return err
		case waited && err == nil:
			continue
		}
		if !sleep(ctx, followPoll) {
			return nil
		}
	}
}

// followOnce reads the events from position next on, and reports whether
// it waited for them at the holder's socket.
func followOnce(ctx context.Context, a *app, stderr io.Writer, next uint64, fn func(eventlog.Event) error) (waited bool, err error) {
	e, err := a.openReadOnly(ctx, stderr)
	if err != nil {
		return false, err
	}
	defer closeEngine(e, &err)
	if held, ok := e.Store().(*heldStore); ok {
		if client := held.client(); client != nil {
			return true, client.WaitAll(ctx, next, followWait, fn)
		}
	}
	return false, e.Store().ReadAll(ctx, next, fn)
}

// followDatabase follows a PostgreSQL store, which every process may read
// at once, by reading it again every followPoll.
func followDatabase(ctx context.Context, a *app, stderr io.Writer, fn func(eventlog.Event) error, next *uint64) (err error) {
	e, err := a.openReadOnly(ctx, stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	for {
		if err := e.Store().ReadAll(ctx, *next, fn); err != nil && ctx.Err() == nil {
			return err
		}
		if !sleep(ctx, followPoll) {
			return nil
		}
	}
}

// transient reports whether err is one that a later read may not meet: a
// store held by a process that serves no reads, or a holder that went away
// in the middle of a read.
func transient(err error) bool {
	return errors.Is(err, eventlog.ErrLocked) || errors.Is(err, remote.ErrNotServing) || errors.Is(err, remote.ErrDisconnected)
}

// sleep waits for d, and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// printFollowLine prints ev as log does, after the name of its stream.
func printFollowLine(w io.Writer, ev eventlog.Event) error {
	if _, err := fmt.Fprintf(w, "%-44s", ev.Stream); err != nil {
		return err
	}
	return printLogLine(w, ev)
}
