package projection

import (
	"testing"

	"github.com/reprise-dev/reprise/schema"
)

// TestParseTranscriptLine checks how each kind of transcript line is
// read: what is skipped, what is kept as a record, what becomes a message.
func TestParseTranscriptLine(t *testing.T) {
	tests := []struct {
		name, line string
		want       ParsedLine
		text       string // the message's first text, for messages
	}{
		{"blank", " \t\r", ParsedLine{Blank: true}, ""},
		{"not JSON", `{"type":`, ParsedLine{Invalid: "not valid JSON"}, ""},
		{"an array", `[1,2]`, ParsedLine{Invalid: "a JSON value that is not an object"}, ""},
		{"a summary record", `{"type":"summary","summary":"s","cwd":"/src"}`, ParsedLine{Typed: true, Cwd: "/src"}, ""},
		{"an untyped object", `{"a":1}`, ParsedLine{}, ""},
		{"fields of unexpected types", `{"type":"user","uuid":7}`, ParsedLine{Typed: true}, ""},
		{"a role that is not its type", `{"type":"user","message":{"role":"assistant","content":"x"}}`, ParsedLine{Typed: true}, ""},
		{"a user message", `{"type":"user","uuid":"u1","parentUuid":"u0","cwd":"/src","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}`,
			ParsedLine{Typed: true, Cwd: "/src", IsMessage: true}, "hi"},
		{"content blocks", `{"type":"assistant","uuid":"a1","message":{"role":"assistant","content":[{"type":"text","text":"yes"},{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}`,
			ParsedLine{Typed: true, IsMessage: true}, "yes"},
		{"a tool hook's context", `{"type":"attachment","uuid":"x1","attachment":{"type":"hook_additional_context","content":["lint is clean"],"hookName":"PostToolUse:Bash","toolUseID":"t1","hookEvent":"PostToolUse"}}`,
			ParsedLine{Typed: true, IsMessage: true}, "PostToolUse:Bash hook additional context: lint is clean"},
		{"a SessionStart hook's context", `{"type":"attachment","uuid":"x2","attachment":{"type":"hook_additional_context","content":["on main"],"hookName":"SessionStart","hookEvent":"SessionStart"}}`,
			ParsedLine{Typed: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseTranscriptLine([]byte(tt.line))
			if got.Blank != tt.want.Blank || got.Invalid != tt.want.Invalid || got.Typed != tt.want.Typed ||
				got.Cwd != tt.want.Cwd || got.IsMessage != tt.want.IsMessage {
				t.Fatalf("ParseTranscriptLine(%s) = %+v, want %+v", tt.line, got, tt.want)
			}
			if !got.IsMessage {
				return
			}
			if FirstText(got.Message) != tt.text || string(got.Message.Record) != tt.line {
				t.Errorf("message %+v: text %q, record %q", got.Message, FirstText(got.Message), got.Message.Record)
			}
		})
	}
	m := ParseTranscriptLine([]byte(`{"type":"user","uuid":"u1","parentUuid":"u0","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}`)).Message
	if m.UUID != "u1" || m.ParentUUID != "u0" || m.Timestamp != 1767225600000000000 {
		t.Errorf("message ids and time: %+v", m)
	}
	blocks := ParseTranscriptLine([]byte(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"yes"},{"type":"tool_use","id":"t1"}]}}`)).Message.Content
	if len(blocks) != 2 || blocks[1].Type != "tool_use" || string(blocks[1].Raw) != `{"type":"tool_use","id":"t1"}` {
		t.Errorf("blocks %+v: want the tool_use kept verbatim", blocks)
	}
}

// TestToolHookContextIsAnAttachment writes what a tool call's hooks added
// as Claude Code does, an attachment record, not a user message, and
// reads it back as the meta message the model is told.
func TestToolHookContextIsAnAttachment(t *testing.T) {
	attachment := `{"type":"hook_additional_context","content":["lint is clean"],"hookName":"PostToolUse:Bash","toolUseID":"t1","hookEvent":"PostToolUse"}`
	m := schema.Message{UUID: "x1", ParentUUID: "r1", Role: "user", IsMeta: true, Timestamp: 1_700_000_000_000_000_000,
		Content:    []schema.Block{{Type: "text", Text: "PostToolUse:Bash hook additional context: lint is clean"}},
		Attachment: []byte(attachment)}
	line, err := TranscriptLine("s1", "/src", m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"parentUuid":"r1","isSidechain":false,"userType":"external","cwd":"/src","sessionId":"s1","type":"attachment","attachment":` +
		attachment + `,"uuid":"x1","timestamp":"2023-11-14T22:13:20.000Z"}` + "\n"
	if string(line) != want {
		t.Fatalf("line\n%s\nwant\n%s", line, want)
	}
	back := ParseTranscriptLine(line)
	if !back.IsMessage || !back.Message.IsMeta || back.Message.Role != "user" || FirstText(back.Message) != FirstText(m) ||
		string(back.Message.Attachment) != attachment || back.Message.ParentUUID != "r1" {
		t.Fatalf("read back as %+v", back.Message)
	}
}
