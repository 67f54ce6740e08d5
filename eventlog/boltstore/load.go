package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise/eventlog"
)

var _ eventlog.Loader = (*Store)(nil)

// Load implements eventlog.Loader in one write transaction. Consecutive
// events of one stream with consecutive positions and sequences are one
// run, as an append would have written them.
func (s *Store) Load(ctx context.Context, evs []eventlog.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.exclusive(ctx, func() error { return s.load(evs) })
}

// load is Load, once the log is applied.
func (s *Store) load(evs []eventlog.Event) error {
	s.ixMu.Lock()
	defer s.ixMu.Unlock()
	var k *keeper
	err := s.update(func(tx *bolt.Tx) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		k = s.keeper(tx)
		prev := lastPosition(b)
		c := b.events.Cursor()
		if err := eventlog.CheckLoad(evs, lastPosition(b), func(stream string) (uint64, error) {
			return readHead(c, stream)
		}); err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		gaps, err := eventlog.LoadGaps(evs, lastPosition(b), func(stream string) (uint64, error) {
			return readHead(c, stream)
		})
		if err != nil {
			return err
		}
		if err := recordGaps(tx, gaps); err != nil {
			return err
		}
		// Runs older than the loaded ones leave recent first, so that
		// positions stays in order ahead of it.
		if err := moveRecent(tx, b); err != nil {
			return err
		}
		b.recent = tx.Bucket(recentBucket)
		b.positions.FillPercent = 1
		b.events.FillPercent = 1
		for i := 0; i < len(evs); {
			j := i + 1
			for j < len(evs) && j-i < math.MaxUint32 && evs[j].Stream == evs[i].Stream &&
				evs[j].Position == evs[j-1].Position+1 && evs[j].Seq == evs[j-1].Seq+1 {
				j++
			}
			key := binary.BigEndian.AppendUint64(nil, evs[i].Position)
			if err := b.positions.Put(key, appendRun(nil, evs[i].Stream, evs[i].Seq, uint32(j-i))); err != nil {
				return fmt.Errorf("boltstore: load %s: %w", evs[i].Stream, err)
			}
			for _, ev := range evs[i:j] {
				if n := EnvelopeSize(ev); n > bolt.MaxValueSize {
					return fmt.Errorf("boltstore: load %s#%d: an event of %d bytes is larger than the %d a value may hold",
						ev.Stream, ev.Seq, n, bolt.MaxValueSize)
				}
			}
			// Written as an append writes them, in batches; putEvents
			// points the Payloads of what it is given at its buffer, so it
			// is given copies of the events, not the caller's.
			if _, err := putEvents(b.events, nil, slices.Clone(evs[i:j])); err != nil {
				return fmt.Errorf("boltstore: load: %w", err)
			}
			i = j
		}
		if err := b.recent.SetSequence(evs[len(evs)-1].Position); err != nil {
			return fmt.Errorf("boltstore: load: %w", err)
		}
		return k.fold(prev, evs)
	})
	if err != nil {
		return err
	}
	s.kept(k)
	return nil
}
