package search

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// Kind says what a hit was found in.
type Kind string

// The kinds of hit.
const (
	// KindSession is a session's own record: its id, its working
	// directory, and a subagent's type and description.
	KindSession Kind = "session"
	// KindMessage is the text of a message, meta messages (injected
	// context) and thinking included.
	KindMessage Kind = "message"
	// KindTool is a tool call's input (a tool_use block) or its output (a
	// tool_result block), in a message.
	KindTool Kind = "tool"
	// KindHook is what hooks said in a step of an agent's stream: their
	// output and errors, the context they gave, their reasons.
	KindHook Kind = "hook"
)

// document is one piece of an event's text, as the index keeps it: the
// Part'th document of the event at Position.
type document struct {
	Position  uint64
	Part      int
	Kind      Kind
	Session   string // the session the text belongs to; deleting it removes the document
	Stream    string
	Seq       uint64
	Time      int64
	UUID      string // the message's uuid, for messages and tool blocks
	ToolUseID string // the call, for tool blocks
	Text      string
}

// indexed are the event types that hold text the index keeps.
var indexed = map[eventlog.Type]bool{
	schema.TypeSessionCreated:      true,
	schema.TypeMessageAppended:     true,
	schema.TypeSessionEndHookRan:   true,
	schema.TypeSessionStartHookRan: true,
	schema.TypeStopHookRan:         true,
	schema.TypePromptHookRan:       true,
	schema.TypePreCompactHookRan:   true,
	schema.TypeToolHookRan:         true,
	schema.TypeToolDecided:         true,
	schema.TypeAsyncHookEnded:      true,
	schema.TypeHookEventRan:        true,
}

// documents returns the documents of ev, whose decoded payload is p, in
// the order of their parts. The same event always gives the same
// documents: a hit names its event and part, and is read back through
// this function.
func documents(ev eventlog.Event, p schema.Payload) []document {
	var docs []document
	add := func(d document) {
		if strings.TrimSpace(d.Text) == "" {
			return
		}
		d.Position, d.Part, d.Stream, d.Seq, d.Time = ev.Position, len(docs), ev.Stream, ev.Seq, ev.Time
		docs = append(docs, d)
	}
	switch p := p.(type) {
	case *schema.SessionCreated:
		var t text
		t.add(projection.SessionID(ev.Stream), p.Cwd, p.ImportedCwd)
		if sub := p.Subagent; sub != nil {
			t.add(sub.Type, sub.Description)
		}
		add(document{Kind: KindSession, Session: projection.SessionID(ev.Stream), Text: t.String()})
	case *schema.MessageAppended:
		messageDocuments(projection.SessionID(ev.Stream), p.Message, add)
	default:
		if session, said := hookText(p); said != "" {
			add(document{Kind: KindHook, Session: session, Text: said})
		}
	}
	return docs
}

// messageDocuments adds the documents of message m of session: its text
// as one, then one for each tool_use and tool_result block.
func messageDocuments(session string, m schema.Message, add func(document)) {
	var t text
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			t.add(b.Text)
		case "thinking":
			var th struct {
				Thinking string `json:"thinking"`
			}
			if json.Unmarshal(b.Raw, &th) == nil {
				t.add(th.Thinking)
			}
		}
	}
	add(document{Kind: KindMessage, Session: session, UUID: m.UUID, Text: t.String()})
	for _, b := range m.Content {
		var call struct {
			ID      string          `json:"id"`
			UseID   string          `json:"tool_use_id"`
			Name    string          `json:"name"`
			Input   json.RawMessage `json:"input"`
			Content json.RawMessage `json:"content"`
		}
		if (b.Type != "tool_use" && b.Type != "tool_result") || json.Unmarshal(b.Raw, &call) != nil {
			continue
		}
		var t text
		id := call.ID
		if b.Type == "tool_use" {
			t.add(call.Name)
			t.addJSON(call.Input)
		} else {
			id = call.UseID
			t.addJSON(call.Content)
		}
		add(document{Kind: KindTool, Session: session, UUID: m.UUID, ToolUseID: id, Text: t.String()})
	}
}

// hookText returns the session a hook step ran on and what its hooks said
// there: the text schema.Redact blanks when that session is vacuumed,
// with the hooks' names.
func hookText(p schema.Payload) (session, said string) {
	var t text
	switch p := p.(type) {
	case *schema.SessionEndHookRan:
		session = p.Session
		t.outcomes(p.Outcomes)
	case *schema.SessionStartHookRan:
		session = p.Session
		t.outcomes(p.Outcomes)
		t.add(p.Context, p.Env)
	case *schema.StopHookRan:
		session = p.Session
		t.outcomes(p.Outcomes)
		t.add(p.Reason, p.Context)
	case *schema.PromptHookRan:
		session = p.Session
		t.outcomes(p.Outcomes)
		t.add(p.Context, p.Reason)
	case *schema.PreCompactHookRan:
		session = p.Session
		t.outcomes(p.Outcomes)
		t.add(p.Reason, p.Instructions)
	case *schema.ToolHookRan:
		session = p.Session
		t.outcomes(p.Outcomes)
		t.add(p.Tool, p.Reason, p.Context)
		t.addJSON(p.Replacement)
	case *schema.ToolDecided:
		session = p.Session
		t.add(p.Reason, p.Context)
	case *schema.AsyncHookEnded:
		session = p.Session
		t.outcomes([]schema.HookOutcome{p.Outcome})
		t.add(p.Context)
	case *schema.HookEventRan:
		session = p.Session
		t.outcomes(p.Outcomes)
		t.add(p.Value, p.Reason, p.Feedback, p.Context, p.StopReason, p.SystemMessage, p.Env)
		t.addJSON(p.Fields)
	}
	return session, t.String()
}

// text gathers the pieces of a document's text, a line each.
type text struct{ strings.Builder }

// add adds each non-empty piece.
func (t *text) add(pieces ...string) {
	for _, s := range pieces {
		if s == "" {
			continue
		}
		if t.Len() > 0 {
			t.WriteByte('\n')
		}
		t.WriteString(s)
	}
}

// outcomes adds what each hook said, after its name: the command or
// function that ran, so that a search for a script finds its runs.
func (t *text) outcomes(outs []schema.HookOutcome) {
	for _, o := range outs {
		t.add(o.Name, o.Error, o.Stderr, o.Summary, o.Reason, o.StopReason, o.SystemMessage, o.Request, o.Answer)
		t.add(o.Cleanup...)
	}
}

// addJSON adds the string values of the JSON value raw, in order, unless
// they are the "type" of an object: its keys and punctuation are not what
// anyone searches for. Invalid JSON adds nothing.
func (t *text) addJSON(raw []byte) {
	if len(raw) == 0 {
		return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return
	}
	t.addValue(v)
}

func (t *text) addValue(v any) {
	switch v := v.(type) {
	case string:
		t.add(v)
	case []any:
		for _, x := range v {
			t.addValue(x)
		}
	case map[string]any:
		// encoding/json's maps have no order: walk them by sorted key, so
		// that an event always gives the same text.
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if k != "type" {
				t.addValue(v[k])
			}
		}
	}
}
