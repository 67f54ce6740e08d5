package projection

import (
	"bytes"
	"encoding/json"
	"sort"
	"time"

	"github.com/reprise-dev/reprise/schema"
)

// transcriptRecord is one line of a Claude Code transcript. Field order is
// the order Claude Code writes them in.
type transcriptRecord struct {
	ParentUUID  *string           `json:"parentUuid"`
	IsSidechain bool              `json:"isSidechain"`
	AgentID     string            `json:"agentId,omitempty"`
	UserType    string            `json:"userType"`
	Cwd         string            `json:"cwd"`
	SessionID   string            `json:"sessionId"`
	Type        string            `json:"type"`
	Message     transcriptMessage `json:"message"`
	IsMeta      bool              `json:"isMeta,omitempty"`
	UUID        string            `json:"uuid"`
	Timestamp   string            `json:"timestamp"`
	// A tool_result's tool response, as the hooks got it.
	ToolUseResult json.RawMessage `json:"toolUseResult,omitempty"`
	// A compaction's summary is shown in the transcript only.
	IsCompactSummary          bool `json:"isCompactSummary,omitempty"`
	IsVisibleInTranscriptOnly bool `json:"isVisibleInTranscriptOnly,omitempty"`
}

// attachmentRecord is the record Claude Code keeps what hooks added for
// the model as, instead of a user message.
type attachmentRecord struct {
	ParentUUID  *string         `json:"parentUuid"`
	IsSidechain bool            `json:"isSidechain"`
	AgentID     string          `json:"agentId,omitempty"`
	UserType    string          `json:"userType"`
	Cwd         string          `json:"cwd"`
	SessionID   string          `json:"sessionId"`
	Type        string          `json:"type"`
	Attachment  json.RawMessage `json:"attachment"`
	UUID        string          `json:"uuid"`
	Timestamp   string          `json:"timestamp"`
}

// boundaryRecord is the system record with which Claude Code marks a
// compaction in a transcript.
type boundaryRecord struct {
	ParentUUID        *string         `json:"parentUuid"`
	LogicalParentUUID string          `json:"logicalParentUuid,omitempty"`
	IsSidechain       bool            `json:"isSidechain"`
	AgentID           string          `json:"agentId,omitempty"`
	UserType          string          `json:"userType"`
	Cwd               string          `json:"cwd"`
	SessionID         string          `json:"sessionId"`
	Type              string          `json:"type"`
	Subtype           string          `json:"subtype"`
	Content           string          `json:"content"`
	IsMeta            bool            `json:"isMeta"`
	Timestamp         string          `json:"timestamp"`
	UUID              string          `json:"uuid"`
	Level             string          `json:"level"`
	CompactMetadata   compactMetadata `json:"compactMetadata"`
}

type compactMetadata struct {
	Trigger     string `json:"trigger"`
	PreMessages int    `json:"preMessages"`
}

// lineHead is what every transcript line of one session says of it: the
// sessionId and cwd, and, in a subagent's session, that it is a
// sidechain, its agentId and its parent's sessionId, as Claude Code
// writes a subagent's transcript.
type lineHead struct {
	session, cwd, agentID string
}

// headOf is the lineHead of session id, with working directory cwd, that
// sub starts when it is a subagent's.
func headOf(id, cwd string, sub *schema.Subagent) lineHead {
	if sub != nil {
		return lineHead{session: sub.Session, cwd: cwd, agentID: sub.AgentID}
	}
	return lineHead{session: id, cwd: cwd}
}

// SessionLine renders the event of the session that created started,
// written at time at, with payload p, as its transcript line, or nil for
// events that have none, such as SessionCreated; a subagent's lines are
// its sidechain's. Export streams a session through it.
func SessionLine(created *schema.SessionCreated, at int64, p schema.Payload) ([]byte, error) {
	return headOf(created.ID, created.Cwd, created.Subagent).record(at, p)
}

func (h lineHead) record(at int64, p schema.Payload) ([]byte, error) {
	switch p := p.(type) {
	case *schema.MessageAppended:
		return h.message(p.Message)
	case *schema.TranscriptRecord:
		return append(p.Record[:len(p.Record):len(p.Record)], '\n'), nil
	case *schema.CompactBoundary:
		return h.boundary(at, p)
	}
	return nil, nil
}

// boundary renders a compaction boundary as a transcript line, newline
// included.
func (h lineHead) boundary(at int64, b *schema.CompactBoundary) ([]byte, error) {
	return encodeLine(boundaryRecord{IsSidechain: h.agentID != "", AgentID: h.agentID,
		LogicalParentUUID: b.LogicalParent, UserType: "external", Cwd: h.cwd, SessionID: h.session,
		Type: "system", Subtype: "compact_boundary", Content: "Conversation compacted",
		Timestamp: transcriptTime(at), UUID: b.UUID, Level: "info",
		CompactMetadata: compactMetadata{Trigger: b.Trigger, PreMessages: b.PreMessages},
	})
}

func transcriptTime(nanos int64) string {
	return time.Unix(0, nanos).UTC().Format("2006-01-02T15:04:05.000Z")
}

// encodeLine marshals v as one transcript line. Claude Code writes <, > and
// & as they are, so HTML escaping is off.
func encodeLine(v any) ([]byte, error) {
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return line.Bytes(), nil // Encode ends the line with a newline
}

type transcriptMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type textBlock struct {
	Type string `json:"type"`
	Text any    `json:"text"` // a string, or its literal (jsonText)
}

type bareBlock struct {
	Type string `json:"type"`
}

// TranscriptLine renders m, a message of session id whose working directory
// is cwd, as one line of a Claude Code transcript, newline included. An
// imported message gives back its original line. A user message made of one
// text block has a string content, as Claude Code writes typed prompts;
// other messages have an array of blocks, non-text blocks copied verbatim
// from their JSON. A message with an Attachment is its attachment record.
func TranscriptLine(id, cwd string, m schema.Message) ([]byte, error) {
	return lineHead{session: id, cwd: cwd}.message(m)
}

func (h lineHead) message(m schema.Message) ([]byte, error) {
	if m.Record != nil {
		return append(m.Record[:len(m.Record):len(m.Record)], '\n'), nil
	}
	var parent *string
	if m.ParentUUID != "" {
		parent = &m.ParentUUID
	}
	if json.Valid(m.Attachment) {
		return encodeLine(attachmentRecord{ParentUUID: parent, IsSidechain: h.agentID != "", AgentID: h.agentID, UserType: "external", Cwd: h.cwd, SessionID: h.session,
			Type: "attachment", Attachment: m.Attachment, UUID: m.UUID, Timestamp: transcriptTime(m.Timestamp)})
	}
	rec := transcriptRecord{IsSidechain: h.agentID != "", AgentID: h.agentID,
		UserType: "external", Cwd: h.cwd, SessionID: h.session, Type: m.Role,
		Message: transcriptMessage{Role: m.Role, Content: transcriptContent(m)},
		IsMeta:  m.IsMeta, UUID: m.UUID,
		Timestamp:        transcriptTime(m.Timestamp),
		IsCompactSummary: m.Summary, IsVisibleInTranscriptOnly: m.Summary,
	}
	if json.Valid(m.ToolUseResult) {
		rec.ToolUseResult = m.ToolUseResult
	}
	rec.ParentUUID = parent
	return encodeLine(rec)
}

func transcriptContent(m schema.Message) any {
	if m.Role == "user" && len(m.Content) == 1 && m.Content[0].Type == "text" && m.Content[0].Raw == nil {
		return jsonText(m.Content[0].Text)
	}
	blocks := make([]any, len(m.Content))
	for i, b := range m.Content {
		switch {
		case json.Valid(b.Raw):
			blocks[i] = json.RawMessage(b.Raw)
		case b.Type == "text":
			blocks[i] = textBlock{Type: "text", Text: jsonText(b.Text)}
		default:
			blocks[i] = bareBlock{Type: b.Type}
		}
	}
	return blocks
}

// Entries returns how many transcript lines c renders to: one per message
// and one per kept record.
func (c *Conversation) Entries() int { return len(c.Messages) + len(c.Kept) }

// line is record as one line: with its newline, added only when missing
// (a compaction boundary's record has one already).
func line(record []byte) []byte {
	if n := len(record); n > 0 && record[n-1] == '\n' {
		return record
	}
	return append(record[:len(record):len(record)], '\n')
}

// Transcript calls fn with each transcript line of c, in order, skipping the
// first from entries. The line passed to fn is only valid during the call.
func (c *Conversation) Transcript(from int, fn func(line []byte) error) error {
	// Message i is entry i plus the kept records before it, so the messages
	// before from-len(c.Kept) all lie before entry from: start after them.
	start := max(0, min(from-len(c.Kept), len(c.Messages)))
	k := sort.Search(len(c.Kept), func(j int) bool { return c.Kept[j].Before >= start })
	entry := start + k
	emit := func(line func() ([]byte, error)) error {
		defer func() { entry++ }()
		if entry < from {
			return nil
		}
		b, err := line()
		if err != nil {
			return err
		}
		return fn(b)
	}
	for i := start; i <= len(c.Messages); i++ {
		for ; k < len(c.Kept) && c.Kept[k].Before == i; k++ {
			record := c.Kept[k].Record
			if err := emit(func() ([]byte, error) { return line(record), nil }); err != nil {
				return err
			}
		}
		if i == len(c.Messages) {
			break
		}
		m := c.Messages[i]
		if err := emit(func() ([]byte, error) { return headOf(c.ID, c.Cwd, c.Subagent).message(m) }); err != nil {
			return err
		}
	}
	return nil
}
