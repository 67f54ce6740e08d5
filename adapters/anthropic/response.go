package anthropic

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/internal/uuid"
	"github.com/reprise-dev/reprise/schema"
)

// ErrNoJSON is returned by FromResponse for a response that does not carry
// the JSON it was decoded from: one built in Go rather than returned by
// Messages.New or accumulated from a stream up to message_stop.
var ErrNoJSON = errors.New("anthropic adapter: response has no JSON")

// ErrNoUsage is returned by Usage for a message whose Record holds no usage.
var ErrNoUsage = errors.New("anthropic adapter: message has no usage")

// Line places a message in its session's transcript: the fields of the
// Claude Code transcript line FromResponse writes into the message's Record
// besides the response itself. Append fills it from the Engine.
type Line struct {
	Session string // the session's id (sessionId)
	Cwd     string // the session's working directory (cwd)
	// Parent is the uuid of the message this one follows, the session's
	// last, saved or pending (parentUuid); "" for a session's first.
	Parent string
	// UUID is the message's uuid; "" means a new random UUID.
	UUID string
	// Time is when the message was made; zero means now. It is kept to
	// the millisecond, as a transcript line has it.
	Time time.Time
	// RequestID is the response's request-id header (requestId), when the
	// caller has it (option.WithResponseInto); "" leaves it out.
	RequestID string
	// AgentID, in a subagent's session, is its agent_id: the line is then
	// a sidechain of its parent's session, which Session names, as Claude
	// Code writes a subagent's transcript. Append fills both from the
	// session.
	AgentID string
}

// assistantLine is the transcript line Claude Code writes for an assistant
// message, its fields in Claude Code's order. Message is the response as
// the API returned it.
type assistantLine struct {
	ParentUUID  *string         `json:"parentUuid"`
	IsSidechain bool            `json:"isSidechain"`
	AgentID     string          `json:"agentId,omitempty"`
	UserType    string          `json:"userType"`
	Cwd         string          `json:"cwd"`
	SessionID   string          `json:"sessionId"`
	Message     json.RawMessage `json:"message"`
	RequestID   string          `json:"requestId,omitempty"`
	Type        string          `json:"type"`
	UUID        string          `json:"uuid"`
	Timestamp   string          `json:"timestamp"`
}

// FromResponse returns resp, a Messages API response, as an assistant
// message to append to a session placed at.
//
// Every content block of the response is kept, in order: a text block as
// Text (with its JSON in Raw too when it carries more than its text, such
// as citations), any other block as its JSON from the response, verbatim.
// The message's Record is the transcript line Claude Code writes for an
// assistant message: at's fields around the whole response (id, model,
// content, stop_reason, usage, and any field this SDK does not know), so
// that the Engine's export writes it as Claude Code would and Usage reads
// the usage back. The message's UUID and Timestamp are set to the line's.
func FromResponse(resp *anthropic.Message, at Line) (schema.Message, error) {
	if resp == nil || resp.RawJSON() == "" {
		return schema.Message{}, ErrNoJSON
	}
	var body bytes.Buffer
	if err := json.Compact(&body, []byte(resp.RawJSON())); err != nil {
		return schema.Message{}, fmt.Errorf("anthropic adapter: response JSON: %w", err)
	}
	var shape struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(body.Bytes(), &shape); err != nil {
		return schema.Message{}, fmt.Errorf("anthropic adapter: response JSON: %w", err)
	}
	if shape.Role != "assistant" {
		return schema.Message{}, fmt.Errorf("anthropic adapter: response has role %q, not assistant", shape.Role)
	}
	blocks := make([]schema.Block, 0, len(shape.Content))
	for i, raw := range shape.Content {
		b, err := responseBlock(raw)
		if err != nil {
			return schema.Message{}, fmt.Errorf("anthropic adapter: response block %d: %w", i, err)
		}
		blocks = append(blocks, b)
	}

	if at.UUID == "" {
		at.UUID = newUUID()
	}
	if at.Time.IsZero() {
		at.Time = time.Now()
	}
	at.Time = at.Time.UTC().Truncate(time.Millisecond)
	line := assistantLine{IsSidechain: at.AgentID != "", AgentID: at.AgentID,
		UserType: "external", Cwd: at.Cwd, SessionID: at.Session,
		Message: body.Bytes(), RequestID: at.RequestID,
		Type: "assistant", UUID: at.UUID, Timestamp: at.Time.Format("2006-01-02T15:04:05.000Z"),
	}
	if at.Parent != "" {
		line.ParentUUID = &at.Parent
	}
	record, err := encodeLine(line)
	if err != nil {
		return schema.Message{}, err
	}
	return schema.Message{
		UUID: at.UUID, ParentUUID: at.Parent, Role: "assistant",
		Timestamp: at.Time.UnixNano(), Content: blocks, Record: record,
	}, nil
}

// responseBlock returns one content block of a response, raw, as a Block.
func responseBlock(raw json.RawMessage) (schema.Block, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return schema.Block{}, err
	}
	var typ string
	if err := json.Unmarshal(fields["type"], &typ); err != nil || typ == "" {
		return schema.Block{}, fmt.Errorf("block has no type")
	}
	keep := append([]byte(nil), raw...)
	if typ != "text" {
		return schema.Block{Type: typ, Raw: keep}, nil
	}
	b := schema.Block{Type: "text"}
	if err := json.Unmarshal(fields["text"], &b.Text); err != nil {
		return schema.Block{}, fmt.Errorf("text block: %w", err)
	}
	for k, v := range fields {
		if k != "type" && k != "text" && !bytes.Equal(v, []byte("null")) {
			b.Raw = keep // citations, or a field this adapter does not know
			break
		}
	}
	return b, nil
}

// encodeLine marshals v as Claude Code writes a transcript line: <, > and &
// as they are, and here without the newline, as a Record is kept.
func encodeLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return uuid.V4(b)
}

// Usage returns the usage recorded with m: the message.usage of its Record,
// as FromResponse writes it and as Claude Code writes it in the assistant
// lines of a transcript reprise imported. A message without one is
// ErrNoUsage.
func Usage(m schema.Message) (anthropic.Usage, error) {
	var line struct {
		Message struct {
			Usage json.RawMessage `json:"usage"`
		} `json:"message"`
	}
	if len(m.Record) == 0 || json.Unmarshal(m.Record, &line) != nil {
		return anthropic.Usage{}, ErrNoUsage
	}
	if u := line.Message.Usage; len(u) == 0 || bytes.Equal(u, []byte("null")) {
		return anthropic.Usage{}, ErrNoUsage
	}
	var u anthropic.Usage
	if err := u.UnmarshalJSON(line.Message.Usage); err != nil {
		return anthropic.Usage{}, fmt.Errorf("anthropic adapter: usage: %w", err)
	}
	return u, nil
}

// appendAttempts bounds how often Append tries again after another writer
// appended to the session first.
const appendAttempts = 3

// Append appends resp to session id of e as an assistant message, durably,
// and returns it as stored: FromResponse's message, placed after the
// session's last message (saved or pending) in its working directory.
//
// When another Engine appended to the session first, the Engine's append
// fails with eventlog.ErrConflict and catches up; Append then places the
// message again and retries, a few times. The parent in the message's
// Record is read before the append, so two goroutines of one process that
// append to the same session at the same time may leave a Record naming
// a parent that is not the log's; a host appends a session's turns from
// one goroutine.
func Append(ctx context.Context, e *reprise.Engine, id string, resp *anthropic.Message) (schema.Message, error) {
	info, err := e.Session(ctx, id)
	if err != nil {
		return schema.Message{}, err
	}
	for attempt := 1; ; attempt++ {
		parent, err := lastUUID(ctx, e, id)
		if err != nil {
			return schema.Message{}, err
		}
		at := Line{Session: id, Cwd: info.Cwd, Parent: parent}
		if sub := info.Subagent; sub != nil {
			at.Session, at.AgentID = sub.Session, sub.AgentID
		}
		m, err := FromResponse(resp, at)
		if err != nil {
			return schema.Message{}, err
		}
		stored, err := e.Append(ctx, id, m)
		if errors.Is(err, eventlog.ErrConflict) && attempt < appendAttempts {
			continue
		}
		return stored, err
	}
}

// lastUUID returns the uuid of session id's last message, pending or
// saved, the parent of the next one.
func lastUUID(ctx context.Context, e *reprise.Engine, id string) (string, error) {
	pending, err := e.Pending(ctx, id)
	if err != nil {
		return "", err
	}
	if len(pending) > 0 {
		return pending[len(pending)-1].UUID, nil
	}
	conv, err := e.Conversation(ctx, id)
	if err != nil || len(conv) == 0 {
		return "", err
	}
	return conv[len(conv)-1].UUID, nil
}
