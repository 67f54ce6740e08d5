package projection

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/reprise-dev/reprise/schema"
)

// ParsedLine is what one line of a Claude Code transcript holds, as an
// import reads it.
type ParsedLine struct {
	// Blank says the line is empty or holds only spaces: no record.
	Blank bool
	// Invalid says why the line is not a JSON object; "" when it is one.
	Invalid string
	// Typed says the record has a "type", as every Claude Code record does.
	Typed bool
	// Cwd is the record's working directory, if it names one.
	Cwd string
	// Message is a user or assistant record as a message, when IsMessage;
	// its Record is the line itself, not a copy.
	Message   schema.Message
	IsMessage bool
}

// ParseTranscriptLine reads raw, one line of a transcript without its
// newline. A record whose fields have unexpected types is still an object:
// it is kept verbatim as a record rather than a message.
func ParseTranscriptLine(raw []byte) ParsedLine {
	if isBlank(raw) {
		return ParsedLine{Blank: true}
	}
	trimmed := bytes.TrimSpace(raw)
	switch {
	case !json.Valid(trimmed):
		return ParsedLine{Invalid: "not valid JSON"}
	case trimmed[0] != '{':
		return ParsedLine{Invalid: "a JSON value that is not an object"}
	}
	var rec transcriptInput
	if json.Unmarshal(raw, &rec) != nil {
		var typed struct {
			Type string `json:"type"`
		}
		return ParsedLine{Typed: json.Unmarshal(raw, &typed) == nil && typed.Type != ""}
	}
	line := ParsedLine{Typed: rec.Type != "", Cwd: rec.Cwd}
	line.Message, line.IsMessage = rec.message(raw)
	return line
}

// transcriptInput is the part of a transcript record an import looks at.
type transcriptInput struct {
	Type       string  `json:"type"`
	UUID       string  `json:"uuid"`
	ParentUUID *string `json:"parentUuid"`
	IsMeta     bool    `json:"isMeta"`
	Cwd        string  `json:"cwd"`
	Timestamp  string  `json:"timestamp"`
	Message    *struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	Attachment json.RawMessage `json:"attachment"`
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// message turns a user or assistant record into a message; ok is false
// for any other record.
func (rec transcriptInput) message(raw []byte) (schema.Message, bool) {
	var m schema.Message
	if text, ok := toolHookContext(rec.Attachment); rec.Type == "attachment" && ok {
		m = schema.Message{UUID: rec.UUID, Role: "user", IsMeta: true, Content: []schema.Block{{Type: "text", Text: text}},
			Attachment: rec.Attachment, Record: raw}
	} else {
		if (rec.Type != "user" && rec.Type != "assistant") || rec.Message == nil || rec.Message.Role != rec.Type {
			return schema.Message{}, false
		}
		blocks, ok := Content(rec.Message.Content)
		if !ok {
			return schema.Message{}, false
		}
		m = schema.Message{UUID: rec.UUID, Role: rec.Type, IsMeta: rec.IsMeta, Content: blocks, Record: raw}
	}
	if rec.ParentUUID != nil {
		m.ParentUUID = *rec.ParentUUID
	}
	if t, err := time.Parse(time.RFC3339Nano, rec.Timestamp); err == nil {
		m.Timestamp = t.UnixNano()
	}
	return m, true
}

// toolHookContext is the text the model is told of an attachment record
// that holds what a tool call's hooks added, as Claude Code words it; ok is
// false for any other attachment, which an import keeps as a record.
func toolHookContext(attachment json.RawMessage) (text string, ok bool) {
	var a struct {
		Type      string   `json:"type"`
		Content   []string `json:"content"`
		HookName  string   `json:"hookName"`
		HookEvent string   `json:"hookEvent"`
	}
	if len(attachment) == 0 || json.Unmarshal(attachment, &a) != nil || a.Type != "hook_additional_context" || len(a.Content) == 0 {
		return "", false
	}
	switch schema.HookEvent(a.HookEvent) {
	case schema.HookPreToolUse, schema.HookPostToolUse, schema.HookPostToolUseFailure:
		return a.HookName + " hook additional context: " + strings.Join(a.Content, "\n"), true
	}
	return "", false
}

// Content reads a message's content as the Messages API and transcripts
// write it: a string is one text block; an array keeps text blocks as text
// and every other block (tool_use, tool_result, image, ...) as its JSON,
// verbatim. Text keeps its bytes, valid UTF-8 or not. False when content
// is neither.
func Content(content json.RawMessage) ([]schema.Block, bool) {
	if text, ok := UnquoteJSON(content); ok {
		return []schema.Block{{Type: "text", Text: text}}, true
	}
	var items []json.RawMessage
	if json.Unmarshal(content, &items) != nil {
		return nil, false
	}
	blocks := make([]schema.Block, 0, len(items))
	for _, item := range items {
		var b struct {
			Type string          `json:"type"`
			Text json.RawMessage `json:"text"`
		}
		if json.Unmarshal(item, &b) != nil {
			return nil, false
		}
		if b.Type == "text" {
			text, ok := UnquoteJSON(b.Text)
			if !ok && b.Text != nil && string(b.Text) != "null" {
				return nil, false
			}
			blocks = append(blocks, schema.Block{Type: "text", Text: text})
			continue
		}
		blocks = append(blocks, schema.Block{Type: b.Type, Raw: append([]byte(nil), item...)})
	}
	return blocks, true
}
