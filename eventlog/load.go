package eventlog

import (
	"bytes"
	"context"
	"fmt"
)

// Loader is implemented by stores that can take events numbered by another
// store, which is how a store is copied from one backend to another.
type Loader interface {
	// Load writes evs as they are, each keeping its stream, Seq, Position,
	// type, version, time, restore id and payload. evs must be in position
	// order, each Position above every position the store holds, and each
	// Seq above its stream's head; gaps are allowed, so a store whose
	// deleted sessions were vacuumed copies as it is. Load writes all of
	// evs or, with an error, nothing; out-of-order events are
	// ErrInvalidLoad. Later appends continue after the last position and
	// each stream's head.
	Load(ctx context.Context, evs []Event) error
}

// CheckLoad checks that evs may follow a store whose last position is last
// and whose streams' heads head returns, the way every Loader must, before
// touching storage. head is asked once per stream, and sees the seqs of
// earlier events of evs.
func CheckLoad(evs []Event, last uint64, head func(stream string) (uint64, error)) error {
	heads := map[string]uint64{}
	for _, ev := range evs {
		if err := ValidateStream(ev.Stream); err != nil {
			return err
		}
		if ev.Type == "" {
			return fmt.Errorf("%w: %s#%d has no type", ErrInvalidLoad, ev.Stream, ev.Seq)
		}
		if ev.Position <= last {
			return fmt.Errorf("%w: %s#%d is at position %d, not after %d", ErrInvalidLoad, ev.Stream, ev.Seq, ev.Position, last)
		}
		last = ev.Position
		h, ok := heads[ev.Stream]
		if !ok {
			var err error
			if h, err = head(ev.Stream); err != nil {
				return err
			}
		}
		if ev.Seq <= h {
			return fmt.Errorf("%w: %s#%d does not follow the stream's head %d", ErrInvalidLoad, ev.Stream, ev.Seq, h)
		}
		heads[ev.Stream] = ev.Seq
	}
	return nil
}

// copyBatch is how many events Copy loads at a time.
const copyBatch = 4096

// Copy loads every event of src into dst, in batches, and returns how many
// it copied. The events come from one ReadAll, so they are one snapshot of
// src wherever its ReadAll reads one (every store of this module does).
// dst should be empty: Load refuses events that do not follow what it
// holds. A failed copy leaves the batches loaded before the failure.
func Copy(ctx context.Context, dst Loader, src Store) (int, error) {
	var (
		batch []Event
		n     int
	)
	flush := func() error {
		if err := dst.Load(ctx, batch); err != nil {
			return err
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	err := src.ReadAll(ctx, 1, func(ev Event) error {
		ev.Payload = bytes.Clone(ev.Payload)
		if batch = append(batch, ev); len(batch) == copyBatch {
			return flush()
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	return n, err
}
