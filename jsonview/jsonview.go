// Package jsonview holds the JSON objects that describe sessions, events,
// conversations, restores and audits, and the functions that build them.
// The reprise command prints them with --json and the web view answers
// them under /api, so both say the same thing in the same words.
package jsonview

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// FormatTime formats UTC unix nanoseconds as RFC 3339 in UTC, or "" for 0.
func FormatTime(ns int64) string {
	if ns == 0 {
		return ""
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}

// Session is one session of a listing.
type Session struct {
	ID           string `json:"id"`
	Cwd          string `json:"cwd"`
	ImportedCwd  string `json:"imported_cwd,omitempty"` // the cwd an imported transcript named
	Messages     int    `json:"messages"`
	Created      string `json:"created"`
	LastRestored string `json:"last_restored,omitempty"`
	LastActivity string `json:"last_activity"` // its last event, or its last restore if later
	// Title names the session: its transcript's summary, else its first
	// prompt's first line.
	Title string `json:"title,omitempty"`
	// ImportUnfinished marks a session whose import did not finish.
	ImportUnfinished bool `json:"import_unfinished,omitempty"`
	// NewerEvents marks a session holding events written by a newer
	// reprise, which this build cannot read.
	NewerEvents bool `json:"newer_events,omitempty"`
	// SubagentOf, in a subagent's session, is its parent's session.
	SubagentOf string `json:"subagent_of,omitempty"`
}

// NewSession describes s.
func NewSession(s projection.SessionInfo) Session {
	out := Session{ID: s.ID, Cwd: s.Cwd, ImportedCwd: s.ImportedCwd, Messages: s.Messages,
		Created: FormatTime(s.Created), LastRestored: FormatTime(s.LastRestored), LastActivity: FormatTime(s.LastActivity),
		Title: s.Title, ImportUnfinished: s.Importing, NewerEvents: s.Newer}
	if s.Subagent != nil {
		out.SubagentOf = s.Subagent.Session
	}
	return out
}

// Event is one event of the log, its payload decoded.
type Event struct {
	Position  uint64         `json:"position"`
	Stream    string         `json:"stream"`
	Seq       uint64         `json:"seq"`
	Type      eventlog.Type  `json:"type"`
	Time      string         `json:"time"`
	RestoreID string         `json:"restore_id"`
	Payload   map[string]any `json:"payload"`
}

// NewEvent describes ev, its payload decoded into a map with the keys of
// the schema.
func NewEvent(ev eventlog.Event) (Event, error) {
	// Decode checks the type and version; the map keeps the schema's keys.
	if _, err := schema.Decode(ev); err != nil {
		return Event{}, err
	}
	var payload map[string]any
	if err := msgpack.Unmarshal(ev.Payload, &payload); err != nil {
		return Event{}, eventlog.Corruptf(ev.Stream, ev.Seq, "%s payload: %v", ev.Type, err)
	}
	return Event{
		Position: ev.Position, Stream: ev.Stream, Seq: ev.Seq, Type: ev.Type,
		Time: FormatTime(ev.Time), RestoreID: ev.RestoreID, Payload: jsonValues(payload).(map[string]any),
	}, nil
}

// jsonValues makes a decoded msgpack value fit for JSON: binary values
// holding JSON (transcript records and content blocks) are embedded as JSON,
// other UTF-8 ones become strings, and the rest stay bytes (base64).
func jsonValues(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = jsonValues(x)
		}
	case []any:
		for i, x := range v {
			v[i] = jsonValues(x)
		}
	case []byte:
		switch {
		case json.Valid(v):
			return json.RawMessage(v)
		case utf8.Valid(v):
			return string(v)
		}
	}
	return v
}

// Conversation is a session's conversation rebuilt from its events.
type Conversation struct {
	Session  string    `json:"session"`
	Cwd      string    `json:"cwd"`
	Created  string    `json:"created"`
	Messages []Message `json:"messages"`
}

// NewConversation describes the messages msgs of conv.
func NewConversation(conv *projection.Conversation, msgs []schema.Message) Conversation {
	out := Conversation{Session: conv.ID, Cwd: conv.Cwd, Created: FormatTime(conv.Created), Messages: make([]Message, len(msgs))}
	for i, m := range msgs {
		out.Messages[i] = NewMessage(m)
	}
	return out
}

// Message is one message. Content holds a {"type":"text","text":...}
// object per text block and every other block's JSON as it was received.
type Message struct {
	UUID       string `json:"uuid"`
	ParentUUID string `json:"parent_uuid,omitempty"`
	Role       string `json:"role"`
	Meta       bool   `json:"meta"`
	Time       string `json:"time"`
	Content    []any  `json:"content"`
}

// TextBlock is a text content block.
type TextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// NewMessage describes m.
func NewMessage(m schema.Message) Message {
	out := Message{UUID: m.UUID, ParentUUID: m.ParentUUID, Role: m.Role, Meta: m.IsMeta,
		Time: FormatTime(m.Timestamp), Content: make([]any, len(m.Content))}
	for i, b := range m.Content {
		switch {
		case json.Valid(b.Raw):
			out.Content[i] = json.RawMessage(b.Raw)
		case b.Type == "text":
			out.Content[i] = TextBlock{Type: "text", Text: b.Text}
		default:
			out.Content[i] = struct {
				Type string `json:"type"`
			}{b.Type}
		}
	}
	return out
}
