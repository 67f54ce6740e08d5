package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise/eventlog"
)

var _ eventlog.Indexed = (*Store)(nil)

var (
	// indexBucket holds the rows of the index the store keeps: key ->
	// value, as the Indexer put them.
	indexBucket = []byte("index")
	// indexNameKey, in the meta bucket, names the index indexBucket
	// holds; indexLastKey is the position (8 bytes, big-endian) of the
	// last event folded into it. Both live in the meta bucket, which
	// stays inside the page every commit writes, so an append that
	// folds its events pays only for the rows it changes.
	indexNameKey = []byte("index")
	indexLastKey = []byte("index-last")
)

// Index implements eventlog.Indexed. It brings the rows up to date in one
// write transaction, building them from the whole log when the store
// holds none of ix's name, or folding the events after the last one they
// hold; when they are up to date already it writes nothing.
func (s *Store) Index(ctx context.Context, ix eventlog.Indexer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.caughtUp(ctx); err != nil {
		return err
	}
	if s.readOnly {
		return eventlog.ErrReadOnly
	}
	s.ixMu.Lock()
	defer s.ixMu.Unlock()
	s.ix = nil
	var current bool
	err := s.view(func(tx *bolt.Tx, _ *guard) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		name, last, err := indexHeld(tx)
		current = err == nil && name == ix.Name() && last == lastPosition(b)
		return err
	})
	if err != nil {
		return fmt.Errorf("boltstore: index %s: %w", ix.Name(), err)
	}
	if current {
		s.ix = ix
		return nil
	}
	err = s.update(func(tx *bolt.Tx) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		name, last, err := indexHeld(tx)
		if err != nil {
			return err
		}
		rows := tx.Bucket(indexBucket)
		if name != ix.Name() {
			if rows != nil {
				if err := tx.DeleteBucket(indexBucket); err != nil {
					return err
				}
			}
			if rows, err = tx.CreateBucket(indexBucket); err != nil {
				return err
			}
			if err := tx.Bucket(metaBucket).Put(indexNameKey, []byte(ix.Name())); err != nil {
				return err
			}
			last = 0
		}
		end := lastPosition(b)
		if last > end {
			return fmt.Errorf("%w: %s: the index holds events up to position %d; the log ends at %d", eventlog.ErrCorrupt, s.path, last, end)
		}
		fold := eventlog.NewFold(func(key string) ([]byte, error) { return rows.Get([]byte(key)), nil })
		if last < end {
			r := runReader{s: s, ctx: ctx, g: &guard{path: s.path}, events: b.events.Cursor(), gaps: b.gaps,
				from: last + 1, want: last + 1, last: end, fn: func(ev eventlog.Event) error { return fold.Apply(ix, ev) }}
			if err := r.readAll(b); err != nil {
				return err
			}
		}
		k := keeper{ix: ix, rows: rows, meta: tx.Bucket(metaBucket)}
		if err := k.check(fold); err != nil {
			return err
		}
		return k.write(fold, end)
	})
	if err != nil {
		return fmt.Errorf("boltstore: index %s: %w", ix.Name(), err)
	}
	s.ix = ix
	return nil
}

// indexHeld returns the name of the index whose rows tx holds ("" for
// none) and the position of the last event folded into them.
func indexHeld(tx *bolt.Tx) (string, uint64, error) {
	meta := tx.Bucket(metaBucket)
	name := meta.Get(indexNameKey)
	if name == nil || tx.Bucket(indexBucket) == nil {
		return "", 0, nil
	}
	v := meta.Get(indexLastKey)
	if len(v) != 8 {
		return "", 0, fmt.Errorf("%w: the last position of index %s is %d bytes, want 8", eventlog.ErrCorrupt, name, len(v))
	}
	return string(name), binary.BigEndian.Uint64(v), nil
}

// ReadIndex implements eventlog.Indexed, reading the rows and their last
// position in one read transaction.
func (s *Store) ReadIndex(ctx context.Context, name string, fn func(key string, value []byte) error) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := s.caughtUp(ctx); err != nil {
		return 0, err
	}
	var last uint64
	err := s.view(func(tx *bolt.Tx, _ *guard) error {
		held, pos, err := indexHeld(tx)
		switch {
		case err != nil:
			return fmt.Errorf("boltstore: %s: %w", s.path, err)
		case held != name:
			return fmt.Errorf("%w: %s", eventlog.ErrNoIndex, name)
		}
		c := tx.Bucket(indexBucket).Cursor()
		var n uint64
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if err := checkCtx(ctx, n); err != nil {
				return err
			}
			if err := fn(string(k), v); err != nil {
				return err
			}
			n++
		}
		last = pos
		return nil
	})
	if err != nil {
		return 0, err
	}
	return last, nil
}

// keeper folds the events a write transaction appends into the rows of
// the index the store keeps.
type keeper struct {
	ix   eventlog.Indexer // nil when the store keeps none, or no longer
	rows *bolt.Bucket
	meta *bolt.Bucket
	// failed is the fold that failed in this transaction: once it commits,
	// the store keeps the index no longer.
	failed error
}

// keeper returns the keeper of tx's appends. s.ixMu must be held until
// the transaction has ended and the caller has called s.kept.
func (s *Store) keeper(tx *bolt.Tx) *keeper {
	k := &keeper{ix: s.ix, rows: tx.Bucket(indexBucket), meta: tx.Bucket(metaBucket)}
	if k.rows == nil {
		k.ix = nil
	}
	return k
}

// kept ends what k did in a committed transaction: after a failed fold,
// the store keeps the index no longer. s.ixMu must be held.
func (s *Store) kept(k *keeper) {
	if k.failed == nil || s.ix == nil {
		return
	}
	s.log.Warn("boltstore: the index is no longer kept; readers fold the events after it",
		"path", s.path, "index", s.ix.Name(), "error", k.failed)
	s.ix = nil
}

// fold folds evs, which the transaction has just written after position
// prev, into the rows, when the rows hold every event up to prev. Rows
// that lag, as a writer keeping no index leaves them, are left as they
// are for the next Index to catch up. A fold that fails changes no row
// and stops the keeping; an error returned is the transaction's and must
// fail it.
func (k *keeper) fold(prev uint64, evs []eventlog.Event) error {
	if k.ix == nil || len(evs) == 0 {
		return nil
	}
	if v := k.meta.Get(indexLastKey); len(v) != 8 || binary.BigEndian.Uint64(v) != prev {
		return nil
	}
	fold := eventlog.NewFold(func(key string) ([]byte, error) { return k.rows.Get([]byte(key)), nil })
	for _, ev := range evs {
		if err := fold.Apply(k.ix, ev); err != nil {
			k.ix, k.failed = nil, err
			return nil
		}
	}
	if err := k.check(fold); err != nil {
		k.ix, k.failed = nil, err
		return nil
	}
	return k.write(fold, evs[len(evs)-1].Position)
}

// check fails for a row bbolt would refuse, before any is written, so that
// a refused row fails the fold rather than the transaction.
func (k *keeper) check(fold *eventlog.Fold) error {
	return fold.Changed(func(key string, value []byte) error {
		switch {
		case key == "":
			return fmt.Errorf("index %s: a row with an empty key", k.ix.Name())
		case len(key) > bolt.MaxKeySize:
			return fmt.Errorf("index %s: a key of %d bytes is longer than the %d a key may hold", k.ix.Name(), len(key), bolt.MaxKeySize)
		case len(value) > bolt.MaxValueSize:
			return fmt.Errorf("index %s: row %q of %d bytes is larger than the %d a value may hold", k.ix.Name(), key, len(value), bolt.MaxValueSize)
		}
		return nil
	})
}

// write writes the rows fold changed, once each, and last as the position
// of the last event they hold.
func (k *keeper) write(fold *eventlog.Fold, last uint64) error {
	err := fold.Changed(func(key string, value []byte) error {
		if value == nil {
			return k.rows.Delete([]byte(key))
		}
		return k.rows.Put([]byte(key), value)
	})
	if err == nil {
		err = k.meta.Put(indexLastKey, be64(last))
	}
	if err != nil {
		return fmt.Errorf("boltstore: write index rows: %w", err)
	}
	return nil
}
