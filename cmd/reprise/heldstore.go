package main

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/eventlog/remote"
)

// heldStore reads a store file through the socket of the process that
// held it when the command began. When that process goes away in the
// middle of the command, a read that finds no one serving goes on from
// the file itself, now free, or from the socket of the process that
// holds it next: the command's reads are bounded by its lock timeout, not
// by the first holder's life. A read cut part way resumes after the last
// event (or stream) it passed on, so that nothing is passed twice. It is
// safe for concurrent use; it only reads.
type heldStore struct {
	reopen func(ctx context.Context) (eventlog.Store, error)

	mu     sync.Mutex
	cur    eventlog.Store
	old    []eventlog.Store // replaced, closed with the store: reads may still be using them
	closed bool
}

var (
	_ eventlog.Store   = (*heldStore)(nil)
	_ eventlog.Indexed = (*heldStore)(nil)
)

// current returns the store reads go to.
func (h *heldStore) current() (eventlog.Store, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, eventlog.ErrClosed
	}
	return h.cur, nil
}

// client returns the holder's client that reads go to, or nil once they
// go to the file.
func (h *heldStore) client() *remote.Client {
	s, _ := h.current()
	c, _ := s.(*remote.Client)
	return c
}

// holderGone reports whether err says that the process serving the reads
// is gone, and no longer holds the file: not one that stalled, which
// still holds it.
func holderGone(err error) bool {
	return !errors.Is(err, remote.ErrStalled) && (errors.Is(err, remote.ErrNotServing) || errors.Is(err, remote.ErrDisconnected))
}

// replace finds the store anew after failed, the store a read used,
// answered that its holder is gone, and returns the store to read from
// now: the one another read found already, or the file, or the next
// holder's socket.
func (h *heldStore) replace(ctx context.Context, failed eventlog.Store) (eventlog.Store, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, eventlog.ErrClosed
	}
	if h.cur != failed {
		return h.cur, nil
	}
	s, err := h.reopen(ctx)
	if err != nil {
		return nil, err
	}
	h.old = append(h.old, h.cur)
	h.cur = s
	return s, nil
}

// read runs do on the current store, and again on the next one for as
// long as the holder it read from turns out to be gone. do reports
// whether it may be run again after it failed.
func (h *heldStore) read(ctx context.Context, do func(eventlog.Store) (again bool, err error)) error {
	s, err := h.current()
	if err != nil {
		return err
	}
	for {
		again, err := do(s)
		if err == nil || !again || !holderGone(err) || ctx.Err() != nil {
			return err
		}
		if s, err = h.replace(ctx, s); err != nil {
			return err
		}
	}
}

// passed wraps fn so that the read knows whether an error is fn's own,
// which is returned as it is and never read again.
type passed struct{ fnErr error }

func (p *passed) call(err error) error {
	p.fnErr = err
	return err
}

// storeErr reports whether err is the store's, not fn's.
func (p *passed) storeErr(err error) bool {
	return err != nil && (p.fnErr == nil || !errors.Is(err, p.fnErr))
}

func (h *heldStore) Append(context.Context, []eventlog.Expect, []eventlog.Record) ([]eventlog.Event, error) {
	if _, err := h.current(); err != nil {
		return nil, err
	}
	return nil, eventlog.ErrReadOnly
}

func (h *heldStore) Head(ctx context.Context, stream string) (head uint64, err error) {
	err = h.read(ctx, func(s eventlog.Store) (bool, error) {
		head, err = s.Head(ctx, stream)
		return true, err
	})
	return head, err
}

func (h *heldStore) ReadStream(ctx context.Context, stream string, from uint64, fn func(eventlog.Event) error) error {
	return h.read(ctx, func(s eventlog.Store) (bool, error) {
		var p passed
		err := s.ReadStream(ctx, stream, from, func(ev eventlog.Event) error {
			from = ev.Seq + 1
			return p.call(fn(ev))
		})
		return p.storeErr(err), err
	})
}

func (h *heldStore) ReadAll(ctx context.Context, from uint64, fn func(eventlog.Event) error) error {
	return h.read(ctx, func(s eventlog.Store) (bool, error) {
		var p passed
		err := s.ReadAll(ctx, from, func(ev eventlog.Event) error {
			from = ev.Position + 1
			return p.call(fn(ev))
		})
		return p.storeErr(err), err
	})
}

func (h *heldStore) Streams(ctx context.Context, prefix string, fn func(eventlog.StreamInfo) error) error {
	var last *string // the name of the last stream passed on
	return h.read(ctx, func(s eventlog.Store) (bool, error) {
		var p passed
		err := s.Streams(ctx, prefix, func(info eventlog.StreamInfo) error {
			if last != nil && info.Name <= *last {
				return nil
			}
			name := info.Name
			last = &name
			return p.call(fn(info))
		})
		return p.storeErr(err), err
	})
}

// Index returns eventlog.ErrReadOnly: the store is read only.
func (h *heldStore) Index(context.Context, eventlog.Indexer) error {
	if _, err := h.current(); err != nil {
		return err
	}
	return eventlog.ErrReadOnly
}

// ReadIndex implements eventlog.Indexed. Rows passed on come from one
// snapshot, with the position of that snapshot, so a read cut after some
// rows is not resumed from another: it fails.
func (h *heldStore) ReadIndex(ctx context.Context, name string, fn func(string, []byte) error) (last uint64, err error) {
	err = h.read(ctx, func(s eventlog.Store) (bool, error) {
		x, ok := s.(eventlog.Indexed)
		if !ok {
			return false, eventlog.ErrNoIndex
		}
		rows := 0
		pos, rerr := x.ReadIndex(ctx, name, func(key string, value []byte) error {
			rows++
			return fn(key, value)
		})
		last = pos
		return rows == 0, rerr
	})
	return last, err
}

// Close closes the store and those it replaced.
func (h *heldStore) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return eventlog.ErrClosed
	}
	h.closed = true
	var errs []error
	for _, s := range append(h.old, h.cur) {
		if err := s.Close(); err != nil && !errors.Is(err, eventlog.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reopenHeld opens the store file at path for reading once the process
// whose socket a command read through is gone: the file itself, as soon as
// it is free, else the socket of the process that holds it now, trying for
// up to wait, the lock timeout.
func (a *app) reopenHeld(ctx context.Context, path string, wait time.Duration, stderr io.Writer) (eventlog.Store, error) {
	deadline := time.Now().Add(wait)
	applied := false
	for {
		s, err := boltstore.Open(path, boltstore.Options{ReadOnly: true, Logger: warnLogger(stderr),
			Timeout: max(min(lockProbe, time.Until(deadline)), time.Nanosecond)})
		if !applied && errors.Is(err, boltstore.ErrUnapplied) {
			applied = true
			if applyLog(path, warnLogger(stderr)) {
				continue
			}
		}
		if !errors.Is(err, eventlog.ErrLocked) {
			return s, err
		}
		if c := a.dialHolder(ctx, path, stderr); c != nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			var locked *eventlog.LockedError
			if errors.As(err, &locked) {
				locked.Waited = wait
			}
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(lockProbe, max(time.Until(deadline), 0))):
		}
	}
}
