package projection

import (
	"sort"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
)

// SessionInfo is one row of the session index.
type SessionInfo struct {
	ID           string
	Cwd          string
	ImportedCwd  string // the cwd an imported transcript named, never used to run hooks
	Created      int64  // UTC unix nanoseconds
	Messages     int
	LastRestored int64 // when an agent last loaded it; 0 if never
	// Importing marks a session whose import started and did not finish:
	// it holds only the first part of its transcript.
	Importing bool
	// Newer marks a session holding events of a payload version newer
	// than this build reads: what the row shows of them may be incomplete
	// (a SessionCreated of a newer version leaves Cwd empty).
	Newer bool
}

// Index is the fold of the whole log, in position order, into one row per
// session. A deleted session has no row.
type Index struct {
	sessions map[string]*SessionInfo
	activity map[string]int64 // by session: see LastActivity
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{sessions: map[string]*SessionInfo{}, activity: map[string]int64{}}
}

// LastActivity returns when session id was last used: the time of its
// stream's last event, or when an agent last loaded it, if later; 0 for
// a session the index has no row for.
func (x *Index) LastActivity(id string) int64 { return x.activity[id] }

// Apply folds the next event of the log into x.
func (x *Index) Apply(ev eventlog.Event) error {
	if id := SessionID(ev.Stream); id != "" {
		if ev.Type == schema.TypeSessionDeleted {
			delete(x.sessions, id)
			delete(x.activity, id)
			return nil
		}
		x.activity[id] = max(x.activity[id], ev.Time)
	}
	// An event newer than this build reads does not stop the index: the
	// session's row is marked, and what the event would say is left out.
	newer := ev.Version > schema.Version(ev.Type)
	switch ev.Type {
	case schema.TypeSessionCreated:
		if newer {
			id := SessionID(ev.Stream)
			x.sessions[id] = &SessionInfo{ID: id, Created: ev.Time, Newer: true}
			return nil
		}
	case schema.TypeMessageAppended:
		// Counting needs no payload, whatever its version.
		s, ok := x.sessions[SessionID(ev.Stream)]
		if !ok {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "message for a session that was never created")
		}
		s.Messages++
		s.Newer = s.Newer || newer
		return nil
	case schema.TypeSessionLoaded:
		if newer {
			return nil
		}
	case schema.TypeImportStarted, schema.TypeImportFinished:
		if s, ok := x.sessions[SessionID(ev.Stream)]; ok {
			s.Importing = ev.Type == schema.TypeImportStarted
			s.Newer = s.Newer || newer
		}
		return nil
	default:
		// Besides activity, only the types above change the index.
		if s, ok := x.sessions[SessionID(ev.Stream)]; ok && newer {
			s.Newer = true
		}
		return nil
	}
	p, err := schema.Decode(ev)
	if err != nil {
		return err
	}
	switch p := p.(type) {
	case *schema.SessionCreated:
		x.sessions[p.ID] = &SessionInfo{ID: p.ID, Cwd: p.Cwd, ImportedCwd: p.ImportedCwd, Created: ev.Time}
	case *schema.SessionLoaded:
		if s, ok := x.sessions[p.Session]; ok {
			s.LastRestored = ev.Time
			x.activity[p.Session] = max(x.activity[p.Session], ev.Time)
		}
	}
	return nil
}

// Sessions returns the rows ordered by creation time, then id.
func (x *Index) Sessions() []SessionInfo {
	out := make([]SessionInfo, 0, len(x.sessions))
	for _, s := range x.sessions {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Created != out[j].Created {
			return out[i].Created < out[j].Created
		}
		return out[i].ID < out[j].ID
	})
	return out
}
