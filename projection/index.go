package projection

import (
	"sort"
	"strings"

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
	switch ev.Type {
	case schema.TypeSessionCreated, schema.TypeMessageAppended, schema.TypeSessionLoaded:
	case schema.TypeImportStarted, schema.TypeImportFinished:
		if s, ok := x.sessions[SessionID(ev.Stream)]; ok {
			s.Importing = ev.Type == schema.TypeImportStarted
		}
		return nil
	default:
		return nil // besides activity, only these change the index
	}
	p, err := schema.Decode(ev)
	if err != nil {
		return err
	}
	switch p := p.(type) {
	case *schema.SessionCreated:
		x.sessions[p.ID] = &SessionInfo{ID: p.ID, Cwd: p.Cwd, ImportedCwd: p.ImportedCwd, Created: ev.Time}
	case *schema.MessageAppended:
		id := strings.TrimPrefix(ev.Stream, "session/")
		s, ok := x.sessions[id]
		if !ok {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "message for a session that was never created")
		}
		s.Messages++
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
