package projection

import (
	"cmp"
	"maps"
	"slices"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"

	"github.com/vmihailenco/msgpack/v5"
)

// SessionInfo is one row of the session index.
type SessionInfo struct {
	ID          string `msgpack:"-"` // the row's key
	Cwd         string `msgpack:"c,omitempty"`
	ImportedCwd string `msgpack:"ic,omitempty"` // the cwd an imported transcript named, never used to run hooks
	Created     int64  `msgpack:"t"`            // UTC unix nanoseconds
	Messages    int    `msgpack:"n,omitempty"`
	// LastRestored is when an agent last loaded the session; 0 if never.
	LastRestored int64 `msgpack:"r,omitempty"`
	// LastActivity is when the session was last used: the time of its
	// stream's last event, or when an agent last loaded it, if later.
	LastActivity int64 `msgpack:"a"`
	// Importing marks a session whose import started and did not finish:
	// it holds only the first part of its transcript.
	Importing bool `msgpack:"i,omitempty"`
	// Newer marks a session holding events of a payload version newer
	// than this build reads: what the row shows of them may be incomplete
	// (a SessionCreated of a newer version leaves Cwd empty).
	Newer bool `msgpack:"v,omitempty"`
}

// SessionIndex is the eventlog.Indexer of the session list: one row per
// session, keyed by its id, dropped when the session is deleted. A store
// that keeps it (eventlog.Indexed) lists sessions without reading the
// log; Sessions decodes its rows.
var SessionIndex eventlog.Indexer = sessionIndex{}

type sessionIndex struct{}

// Name implements eventlog.Indexer. The version changes with the rows'
// encoding or with what the fold puts in them: a store holding rows of
// another version builds them again.
func (sessionIndex) Name() string { return "sessions/1" }

// Apply implements eventlog.Indexer. An event newer than this build reads
// does not stop the fold: its session's row is marked, and what the event
// would say is left out.
func (sessionIndex) Apply(rows eventlog.Rows, ev eventlog.Event) error {
	id := SessionID(ev.Stream)
	if id == "" {
		if ev.Type != schema.TypeSessionLoaded || ev.Version > schema.Version(ev.Type) {
			return nil
		}
		p, err := schema.Decode(ev)
		if err != nil {
			return err
		}
		loaded := p.(*schema.SessionLoaded)
		return update(rows, loaded.Session, func(s *SessionInfo) {
			s.LastRestored = ev.Time
			s.LastActivity = max(s.LastActivity, ev.Time)
		})
	}
	newer := ev.Version > schema.Version(ev.Type)
	switch ev.Type {
	case schema.TypeSessionDeleted:
		rows.Put(id, nil)
		return nil
	case schema.TypeSessionCreated:
		s := SessionInfo{ID: id, Created: ev.Time, LastActivity: ev.Time, Newer: newer}
		if !newer {
			p, err := schema.Decode(ev)
			if err != nil {
				return err
			}
			created := p.(*schema.SessionCreated)
			s.Cwd, s.ImportedCwd = created.Cwd, created.ImportedCwd
		}
		return put(rows, &s)
	}
	row, err := rows.Get(id)
	if err != nil {
		return err
	}
	if row == nil {
		if ev.Type == schema.TypeMessageAppended {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "message for a session that was never created")
		}
		return nil
	}
	return update(rows, id, func(s *SessionInfo) {
		s.LastActivity = max(s.LastActivity, ev.Time)
		s.Newer = s.Newer || newer
		switch ev.Type {
		case schema.TypeMessageAppended:
			s.Messages++ // counting needs no payload, whatever its version
		case schema.TypeImportStarted, schema.TypeImportFinished:
			s.Importing = ev.Type == schema.TypeImportStarted
		}
	})
}

// update changes the row of session id with fn; a session with no row is
// left alone.
func update(rows eventlog.Rows, id string, fn func(*SessionInfo)) error {
	row, err := rows.Get(id)
	if err != nil || row == nil {
		return err
	}
	s, err := decodeRow(id, row)
	if err != nil {
		return err
	}
	fn(&s)
	return put(rows, &s)
}

func put(rows eventlog.Rows, s *SessionInfo) error {
	row, err := msgpack.Marshal(s)
	if err != nil {
		return err
	}
	rows.Put(s.ID, row)
	return nil
}

func decodeRow(id string, row []byte) (SessionInfo, error) {
	var s SessionInfo
	if err := msgpack.Unmarshal(row, &s); err != nil {
		return s, eventlog.Corruptf("index/"+id, 0, "session row: %v", err)
	}
	s.ID = id
	return s, nil
}

// Sessions decodes the rows of SessionIndex (as eventlog.ReadRows returns
// them) into the session list, ordered by creation time, then id.
func Sessions(rows map[string][]byte) ([]SessionInfo, error) {
	out := make([]SessionInfo, 0, len(rows))
	for _, id := range slices.Sorted(maps.Keys(rows)) {
		s, err := decodeRow(id, rows[id])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b SessionInfo) int { return cmp.Compare(a.Created, b.Created) })
	return out, nil
}

// Index is the session index held in memory, folded one event at a time.
type Index struct{ fold *eventlog.Fold }

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{fold: eventlog.NewFold(func(string) ([]byte, error) { return nil, nil })}
}

// Apply folds the next event of the log, in position order, into x.
func (x *Index) Apply(ev eventlog.Event) error { return x.fold.Apply(SessionIndex, ev) }

// Sessions returns the rows ordered by creation time, then id. A deleted
// session has no row.
func (x *Index) Sessions() ([]SessionInfo, error) {
	rows := map[string][]byte{}
	_ = x.fold.Changed(func(key string, value []byte) error {
		if value != nil {
			rows[key] = value
		}
		return nil
	})
	return Sessions(rows)
}
