package eventlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// An Indexer is a fold of the whole log, in position order, into rows by
// key. A store that keeps an Indexer's rows (Indexed) writes them in the
// transaction of every append, so that a question only the whole log can
// answer ("which sessions are there?") is read from the rows, and not from
// every event.
//
// Apply must be deterministic and do no I/O: every store, and every
// reader catching up, must fold the same events into the same rows.
type Indexer interface {
	// Name names the fold and the version of its rows. A store that holds
	// rows made under another name drops them and builds them again from
	// the log.
	Name() string
	// Apply folds ev, the next event of the log, into rows.
	Apply(rows Rows, ev Event) error
}

// Rows are an index's rows as a fold sees them: what the events before
// the one being applied made of them.
type Rows interface {
	// Get returns the row of key, nil when there is none. The caller must
	// not change the bytes.
	Get(key string) ([]byte, error)
	// Put sets the row of key to value, which the rows keep; a nil value
	// removes the row.
	Put(key string, value []byte)
}

// Indexed is implemented by stores that keep an Indexer's rows.
type Indexed interface {
	// Index makes the store keep ix's rows from now on, in the transaction
	// of each append (and load and purge), after bringing the rows it
	// holds up to date: building them from the whole log when it holds
	// none of ix's name, or folding the events appended since they were
	// last written. A store keeps one Indexer's rows; a store opened
	// read-only returns ErrReadOnly. Writers that keep no index (older
	// builds, or a process that never called Index) leave the rows behind
	// the log; readers catch up (ReadIndex), and the next Index folds
	// what was missed.
	Index(ctx context.Context, ix Indexer) error

	// ReadIndex calls fn for every row of the index named name, in key
	// order, and returns the position of the last event the rows hold:
	// the events after it are not in the rows yet. A store holding no
	// rows of that name returns ErrNoIndex. The bytes passed to fn are
	// valid only until it returns.
	ReadIndex(ctx context.Context, name string, fn func(key string, value []byte) error) (uint64, error)
}

// ErrNoIndex is returned by ReadIndex for an index the store does not
// hold.
var ErrNoIndex = errors.New("eventlog: no such index")

// ReadRows returns the rows of ix over s as of the log's last event: the
// rows s keeps, when it is Indexed and keeps ix's, with the events
// appended since folded in; otherwise the fold of the whole log.
func ReadRows(ctx context.Context, s Store, ix Indexer) (map[string][]byte, error) {
	rows := map[string][]byte{}
	var pos uint64
	if x, ok := s.(Indexed); ok {
		var err error
		pos, err = x.ReadIndex(ctx, ix.Name(), func(key string, value []byte) error {
			rows[key] = slices.Clone(value)
			return nil
		})
		switch {
		case errors.Is(err, ErrNoIndex):
			clear(rows)
			pos = 0
		case err != nil:
			return nil, err
		}
	}
	fold := &Fold{rows: rows}
	if err := s.ReadAll(ctx, pos+1, func(ev Event) error { return fold.Apply(ix, ev) }); err != nil {
		return nil, err
	}
	maps.DeleteFunc(rows, func(_ string, v []byte) bool { return v == nil })
	return rows, nil
}

// Fold applies events to rows held elsewhere (a store's), through an
// overlay: Get reads the overlay, then the rows behind it; Put writes the
// overlay only. A store folds an append's events into a Fold, then writes
// Changed in the append's transaction.
type Fold struct {
	rows    map[string][]byte            // the overlay; a nil value is a removed row
	get     func(string) ([]byte, error) // the rows behind it; nil for none
	changed map[string]bool
}

// NewFold returns a Fold over the rows get reads.
func NewFold(get func(key string) ([]byte, error)) *Fold {
	return &Fold{rows: map[string][]byte{}, get: get, changed: map[string]bool{}}
}

// Apply folds ev into f with ix. An error names the event.
func (f *Fold) Apply(ix Indexer, ev Event) error {
	if err := ix.Apply(f, ev); err != nil {
		return fmt.Errorf("index %s at %s#%d: %w", ix.Name(), ev.Stream, ev.Seq, err)
	}
	return nil
}

// Get implements Rows.
func (f *Fold) Get(key string) ([]byte, error) {
	if v, ok := f.rows[key]; ok || f.get == nil {
		return v, nil
	}
	v, err := f.get(key)
	if err != nil {
		return nil, err
	}
	f.rows[key] = slices.Clone(v)
	return v, nil
}

// Put implements Rows.
func (f *Fold) Put(key string, value []byte) {
	f.rows[key] = value
	if f.changed != nil {
		f.changed[key] = true
	}
}

// Changed calls fn for every row the fold put, in key order, with its
// last value (nil for a removed row).
func (f *Fold) Changed(fn func(key string, value []byte) error) error {
	for _, key := range slices.Sorted(maps.Keys(f.changed)) {
		if err := fn(key, f.rows[key]); err != nil {
			return err
		}
	}
	return nil
}
