package projection

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
)

// transcriptRecord is one line of a Claude Code transcript. Field order is
// the order Claude Code writes them in.
type transcriptRecord struct {
	ParentUUID  *string           `json:"parentUuid"`
	IsSidechain bool              `json:"isSidechain"`
	UserType    string            `json:"userType"`
	Cwd         string            `json:"cwd"`
	SessionID   string            `json:"sessionId"`
	Type        string            `json:"type"`
	Message     transcriptMessage `json:"message"`
	IsMeta      bool              `json:"isMeta,omitempty"`
	UUID        string            `json:"uuid"`
	Timestamp   string            `json:"timestamp"`
}

type transcriptMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type bareBlock struct {
	Type string `json:"type"`
}

// TranscriptLine renders m, a message of session id whose working directory
// is cwd, as one line of a Claude Code transcript, newline included. An
// imported message gives back its original line. A user message made of one
// text block has a string content, as Claude Code writes typed prompts;
// other messages have an array of blocks, non-text blocks copied verbatim
// from their JSON.
func TranscriptLine(id, cwd string, m eventlog.Message) ([]byte, error) {
	if m.Record != nil {
		return append(m.Record[:len(m.Record):len(m.Record)], '\n'), nil
	}
	rec := transcriptRecord{
		UserType: "external", Cwd: cwd, SessionID: id, Type: m.Role,
		Message: transcriptMessage{Role: m.Role, Content: transcriptContent(m)},
		IsMeta:  m.IsMeta, UUID: m.UUID,
		Timestamp: time.Unix(0, m.Timestamp).UTC().Format("2006-01-02T15:04:05.000Z"),
	}
	if m.ParentUUID != "" {
		rec.ParentUUID = &m.ParentUUID
	}
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false) // Claude Code writes <, > and & as they are
	if err := enc.Encode(rec); err != nil {
		return nil, err
	}
	return line.Bytes(), nil // Encode ends the line with a newline
}

func transcriptContent(m eventlog.Message) any {
	if m.Role == "user" && len(m.Content) == 1 && m.Content[0].Type == "text" && m.Content[0].Raw == nil {
		return m.Content[0].Text
	}
	blocks := make([]any, len(m.Content))
	for i, b := range m.Content {
		switch {
		case json.Valid(b.Raw):
			blocks[i] = json.RawMessage(b.Raw)
		case b.Type == "text":
			blocks[i] = textBlock{Type: "text", Text: b.Text}
		default:
			blocks[i] = bareBlock{Type: b.Type}
		}
	}
	return blocks
}

// Entries returns how many transcript lines c renders to: one per message
// and one per kept record.
func (c *Conversation) Entries() int { return len(c.Messages) + len(c.Kept) }

// Transcript calls fn with each transcript line of c, in order, skipping the
// first from entries. The line passed to fn is only valid during the call.
func (c *Conversation) Transcript(from int, fn func(line []byte) error) error {
	entry, k := 0, 0
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
	for i := 0; i <= len(c.Messages); i++ {
		for ; k < len(c.Kept) && c.Kept[k].Before == i; k++ {
			record := c.Kept[k].Record
			if err := emit(func() ([]byte, error) { return append(record[:len(record):len(record)], '\n'), nil }); err != nil {
				return err
			}
		}
		if i == len(c.Messages) {
			break
		}
		m := c.Messages[i]
		if err := emit(func() ([]byte, error) { return TranscriptLine(c.ID, c.Cwd, m) }); err != nil {
			return err
		}
	}
	return nil
}
