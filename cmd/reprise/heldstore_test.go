package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/remote"
	"github.com/reprise-dev/reprise/projection"
)

// A command reading through a holder's socket goes on reading when the
// holder exits in the middle of it, from the file, now free, or from the
// socket of the process that holds the file next; reads used to fail with
// "no process serves the store's reads".
func TestReadsGoOnWhenTheHolderExits(t *testing.T) {
	for _, next := range []string{"the file", "the next holder"} {
		t.Run(next, func(t *testing.T) {
			c := newCLI(t)
			c.session("s", "hello", "hi")
			h := holdServing(t, c.store)
			h.append("s", "from the host")
			ctx := context.Background()
			a := &app{}
			e, err := a.openReadOnly(ctx, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			messages := func() int {
				t.Helper()
				n := 0
				if err := e.Store().ReadStream(ctx, projection.SessionStream("s"), 1, func(eventlog.Event) error { n++; return nil }); err != nil {
					t.Fatalf("a read after the holder exited: %v", err)
				}
				return n
			}
			before := messages()
			h.release()
			if next == "the next holder" {
				h = holdServing(t, c.store)
				defer h.release()
			}
			if after := messages(); after != before {
				t.Errorf("after the holder exited, the session reads %d events; before, %d", after, before)
			}
			if list, err := e.Sessions(ctx); err != nil || len(list) != 1 {
				t.Errorf("Sessions after the holder exited: %v, %v", list, err)
			}
			if rep, err := reprise.Audit(ctx, e.Store()); err != nil || len(rep.Violations) != 0 {
				t.Errorf("Audit after the holder exited: %+v, %v", rep, err)
			}
			if held, ok := e.Store().(*heldStore); !ok || (held.client() != nil) != (next == "the next holder") {
				t.Errorf("reads go to %T; want %s", e.Store(), next)
			}
		})
	}
}

// cutStore passes the first n events of a read, then fails as a holder
// that went away in the middle of its answer does.
type cutStore struct {
	eventlog.Store
	n int
}

func (s *cutStore) ReadAll(ctx context.Context, from uint64, fn func(eventlog.Event) error) error {
	k := 0
	err := s.Store.ReadAll(ctx, from, func(ev eventlog.Event) error {
		if k == s.n {
			return fmt.Errorf("%w: the response ended early", remote.ErrDisconnected)
		}
		k++
		return fn(ev)
	})
	return err
}

// A read cut part way goes on from the next store after the last event it
// passed on: each event once, in order. A stalled holder, which still
// holds the file, and the callback's own errors are not read again.
func TestHeldStoreResumesACutRead(t *testing.T) {
	ctx := context.Background()
	mem := eventlog.NewMemoryStore()
	for i := range 5 {
		if _, err := mem.Append(ctx, []eventlog.Expect{{Stream: "s", Seq: uint64(i)}}, []eventlog.Record{{Stream: "s", Type: "T", Payload: []byte{byte(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	reopened := 0
	h := &heldStore{cur: &cutStore{Store: mem, n: 2}, reopen: func(context.Context) (eventlog.Store, error) {
		reopened++
		return mem, nil
	}}
	var got []uint64
	if err := h.ReadAll(ctx, 1, func(ev eventlog.Event) error { got = append(got, ev.Position); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1 2 3 4 5]" || reopened != 1 {
		t.Errorf("a read cut after 2 events passed %v and reopened %d time(s); want [1 2 3 4 5], once", got, reopened)
	}

	// A stalled holder still holds the file; the callback's error is the
	// caller's.
	errFn := errors.New("fn failed")
	for _, c := range []struct {
		store eventlog.Store
		fn    func(eventlog.Event) error
		want  error
	}{
		{stallStore{mem}, func(eventlog.Event) error { return nil }, remote.ErrStalled},
		{mem, func(eventlog.Event) error { return errFn }, errFn},
	} {
		reopened = 0
		h := &heldStore{cur: c.store, reopen: func(context.Context) (eventlog.Store, error) {
			reopened++
			return mem, nil
		}}
		if err := h.ReadAll(ctx, 1, c.fn); !errors.Is(err, c.want) || reopened != 0 {
			t.Errorf("ReadAll = %v after reopening %d time(s); want %v, never reopened", err, reopened, c.want)
		}
	}
}

// stallStore fails every read as a stalled holder does.
type stallStore struct{ eventlog.Store }

func (stallStore) ReadAll(context.Context, uint64, func(eventlog.Event) error) error {
	return fmt.Errorf("%w: %w", remote.ErrDisconnected, remote.ErrStalled)
}
