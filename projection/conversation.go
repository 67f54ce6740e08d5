package projection

import (
	"strings"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
)

// SessionStream returns the stream name of session id.
func SessionStream(id string) string { return "session/" + id }

// AgentStream returns the stream name of agent id.
func AgentStream(id string) string { return "agent/" + id }

// SessionID returns the session id of a session stream's name, "" for any
// other stream.
func SessionID(stream string) string {
	id, ok := strings.CutPrefix(stream, "session/")
	if !ok {
		return ""
	}
	return id
}

// Conversation is the fold of one session stream.
type Conversation struct {
	ID      string
	Cwd     string
	Created int64 // UTC unix nanoseconds of SessionCreated
	// Subagent, in a subagent's session, names the call that started it.
	Subagent *schema.Subagent
	Head     uint64 // sequence of the last event applied
	Messages []schema.Message
	// Kept holds transcript records that are not messages (imported ones,
	// and compaction boundaries), each with its place among the messages.
	Kept []KeptRecord
	// ViewStart is the index in Messages where the model's view begins: 0,
	// or the summary message of the last compaction.
	ViewStart int
	// Deleted is set by the SessionDeleted tombstone that ends the stream.
	// A vacuumed stream holds nothing else: Created, Cwd and Messages are
	// then empty.
	Deleted bool
	// Importing is set by ImportStarted and cleared by ImportFinished: the
	// session holds the first part of a transcript whose import is still
	// running, or whose process died.
	Importing bool
}

// KeptRecord is a transcript record kept verbatim. It came after the first
// Before messages of the conversation.
type KeptRecord struct {
	Before int
	Record []byte
}

// NewConversation returns the empty view of session id, ready for its first
// event.
func NewConversation(id string) *Conversation { return &Conversation{ID: id} }

// Apply folds the next event of the session's stream into c.
func (c *Conversation) Apply(ev eventlog.Event) error {
	if err := c.checkNext(ev); err != nil {
		return err
	}
	p, err := schema.Decode(ev)
	if err != nil {
		return err
	}
	return c.apply(ev, p)
}

// ApplyDecoded is Apply for an event whose payload p the caller already
// has, decoded or just encoded: it saves decoding it again. p becomes
// part of c.
func (c *Conversation) ApplyDecoded(ev eventlog.Event, p schema.Payload) error {
	if err := c.checkNext(ev); err != nil {
		return err
	}
	return c.apply(ev, p)
}

// checkNext verifies that ev follows c's head. A vacuum leaves only the
// tombstone of a deleted session, so the first event may be a
// SessionDeleted at any sequence.
func (c *Conversation) checkNext(ev eventlog.Event) error {
	if c.Head == 0 && ev.Type == schema.TypeSessionDeleted && ev.Stream == SessionStream(c.ID) {
		return nil
	}
	return checkNext(ev, SessionStream(c.ID), c.Head)
}

func (c *Conversation) apply(ev eventlog.Event, p schema.Payload) error {
	if c.Deleted {
		return eventlog.Corruptf(ev.Stream, ev.Seq, "%s after SessionDeleted", ev.Type)
	}
	switch p := p.(type) {
	case *schema.SessionCreated:
		if ev.Seq != 1 {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "SessionCreated after the start of the stream")
		}
		c.Cwd, c.Created, c.Subagent = p.Cwd, ev.Time, p.Subagent
	case *schema.MessageAppended:
		if ev.Seq == 1 {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "message before SessionCreated")
		}
		c.Messages = append(c.Messages, p.Message)
	case *schema.TranscriptRecord:
		if ev.Seq == 1 {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "transcript record before SessionCreated")
		}
		c.Kept = append(c.Kept, KeptRecord{Before: len(c.Messages), Record: p.Record})
	case *schema.CompactBoundary:
		if ev.Seq == 1 {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "compaction before SessionCreated")
		}
		line, err := headOf(c.ID, c.Cwd, c.Subagent).boundary(ev.Time, p)
		if err != nil {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "compaction boundary: %v", err)
		}
		c.Kept = append(c.Kept, KeptRecord{Before: len(c.Messages), Record: line})
		c.ViewStart = len(c.Messages)
	case *schema.ImportStarted:
		if ev.Seq != 2 {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "ImportStarted that does not follow SessionCreated")
		}
		c.Importing = true
	case *schema.ImportFinished:
		if !c.Importing {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "ImportFinished without ImportStarted")
		}
		c.Importing = false
	case *schema.SessionDeleted:
		if ev.Seq == 1 {
			return eventlog.Corruptf(ev.Stream, ev.Seq, "SessionDeleted before SessionCreated")
		}
		c.Deleted = true
	case nil: // registered as ignorable
	default:
		return eventlog.Corruptf(ev.Stream, ev.Seq, "%s does not belong in a session stream", ev.Type)
	}
	c.Head = ev.Seq
	return nil
}

// View returns the messages the model sees: all of them, or, after a
// compaction, the summary and what followed it. The slice aliases c.
func (c *Conversation) View() []schema.Message { return c.Messages[c.ViewStart:] }

// LastUUID returns the uuid of the last message, the parent of the next one.
func (c *Conversation) LastUUID() string {
	if len(c.Messages) == 0 {
		return ""
	}
	return c.Messages[len(c.Messages)-1].UUID
}

// checkNext verifies ev is the event that follows head on stream.
func checkNext(ev eventlog.Event, stream string, head uint64) error {
	if ev.Stream != stream {
		return eventlog.Corruptf(ev.Stream, ev.Seq, "event of %s applied to the view of %s", ev.Stream, stream)
	}
	if ev.Seq != head+1 {
		return eventlog.Corruptf(ev.Stream, ev.Seq, "sequence gap: expected %d", head+1)
	}
	return nil
}

// Clone returns a deep copy of c that shares nothing with it.
func (c *Conversation) Clone() *Conversation {
	out := *c
	out.Kept = append([]KeptRecord(nil), c.Kept...)
	out.Messages = CloneMessages(c.Messages)
	return &out
}

// CloneMessages returns a deep copy of msgs.
func CloneMessages(msgs []schema.Message) []schema.Message {
	out := make([]schema.Message, len(msgs))
	for i, m := range msgs {
		out[i] = cloneMessage(m)
	}
	return out
}

func cloneMessage(m schema.Message) schema.Message {
	m.Record = append([]byte(nil), m.Record...)
	m.Content = append([]schema.Block(nil), m.Content...)
	for i, b := range m.Content {
		m.Content[i].Raw = append([]byte(nil), b.Raw...)
		if b.Raw == nil {
			m.Content[i].Raw = nil
		}
	}
	return m
}
