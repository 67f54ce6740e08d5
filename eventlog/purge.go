package eventlog

import (
	"context"
	"fmt"
)

// Purger is implemented by stores that can remove events for good, which
// is how a vacuum gets rid of deleted sessions. Every store of this module
// implements it.
type Purger interface {
	// Purge removes the events of p.Remove, replaces the payloads of
	// p.Rewrite and appends p.Records under p.Expect, all in one
	// transaction: if an expectation fails (a *ConflictError) or a named
	// event does not exist (ErrInvalidPurge), nothing changes. It returns
	// the appended events, owned by the caller.
	//
	// Removed events leave gaps: their sequences in their streams and
	// their positions in the store-wide order are never used again, and
	// ReadStream and ReadAll pass over them, while a gap Purge did not
	// make is still reported as corruption. Head is unchanged, since the
	// last event of a stream cannot be removed. A store kept in a file
	// also rewrites the file, so the removed bytes are gone from it.
	Purge(ctx context.Context, p Purge) ([]Event, error)
}

// Purge says what one Purger.Purge removes, rewrites and appends.
type Purge struct {
	Expect  []Expect   // as for Append; must cover every stream of Records
	Remove  []SeqRange // events removed; none may be the head of its stream
	Rewrite []Rewrite  // events whose payload is replaced, in place
	Records []Record   // appended after the removal; at least one
}

// SeqRange is the events First to Last, both included, of Stream.
type SeqRange struct {
	Stream      string
	First, Last uint64
}

// Rewrite replaces the payload of the event Seq of Stream; its type,
// version, time and position stay.
type Rewrite struct {
	Stream  string
	Seq     uint64
	Payload []byte
}

// CheckPurge validates a purge request the way every backend must, before
// touching storage: the records as for Append, valid ranges and rewrites.
// Whether the events exist is the backend's to check.
func CheckPurge(p Purge) error {
	if err := CheckAppend(p.Expect, p.Records); err != nil {
		return err
	}
	for _, r := range p.Remove {
		if err := ValidateStream(r.Stream); err != nil {
			return err
		}
		if r.First == 0 || r.Last < r.First {
			return fmt.Errorf("%w: %s#%d..%d is not a range of events", ErrInvalidPurge, r.Stream, r.First, r.Last)
		}
	}
	for _, r := range p.Rewrite {
		if err := ValidateStream(r.Stream); err != nil {
			return err
		}
		if r.Seq == 0 {
			return fmt.Errorf("%w: %s#0 is not an event", ErrInvalidPurge, r.Stream)
		}
	}
	return nil
}

// LoadGaps returns the gaps that loading evs leaves in a store whose last
// position is last and whose streams' heads head returns: the sequences
// each stream skips, and, with an empty Stream, the positions skipped.
// A Loader records them as Purge does, so that a store whose sessions were
// vacuumed reads the same once copied. evs must have passed CheckLoad.
func LoadGaps(evs []Event, last uint64, head func(stream string) (uint64, error)) ([]SeqRange, error) {
	var gaps []SeqRange
	heads := map[string]uint64{}
	for _, ev := range evs {
		if ev.Position > last+1 {
			gaps = append(gaps, SeqRange{First: last + 1, Last: ev.Position - 1})
		}
		last = ev.Position
		h, ok := heads[ev.Stream]
		if !ok {
			var err error
			if h, err = head(ev.Stream); err != nil {
				return nil, err
			}
		}
		if ev.Seq > h+1 {
			gaps = append(gaps, SeqRange{Stream: ev.Stream, First: h + 1, Last: ev.Seq - 1})
		}
		heads[ev.Stream] = ev.Seq
	}
	return gaps, nil
}
