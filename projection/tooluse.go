package projection

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/reprise-dev/reprise/schema"
)

// ToolUseLedger follows the tool calls of a conversation message by
// message, to tell whether the next message keeps it one the Messages API
// takes: every tool_use has an id, no id is used twice, and an answer
// comes only once every call of the answer before it has its tool_result.
// Assistant messages that are records of one answer (Claude Code writes a
// record per content block, each with the answer's message id) count as
// one answer. Its zero value is the ledger of an empty conversation. It is
// not safe for concurrent use.
type ToolUseLedger struct {
	ids    map[string]bool // every tool_use id seen
	open   []string        // the last answer's calls without a tool_result, in order
	answer bool            // the last message is an assistant one
	last   string          // the Messages API id of that answer, from its record; "" when unknown
}

// Check returns why appending m after the messages Add was given would
// break the conversation (an error matching ErrEmptyToolUseID,
// ErrDuplicateToolUse or ErrToolCallsOpen), or nil. It changes nothing.
func (l *ToolUseLedger) Check(m schema.Message) error {
	return l.check(m, nil)
}

// CheckAfter is Check for m appended after pending, messages not given to
// Add (a host's messages not saved yet). Only an answer is read against
// pending, and only as far back as it needs: a host that buffers many
// messages before it saves them pays for each one once.
func (l *ToolUseLedger) CheckAfter(pending []schema.Message, m schema.Message) error {
	if m.Role != "assistant" || len(pending) == 0 {
		return l.check(m, nil)
	}
	// Where the calls stand after pending: from its last answer, or, with
	// none, from the ledger's, less the results pending holds.
	t := ToolUseLedger{ids: map[string]bool{}}
	last := -1
	for i := len(pending) - 1; i >= 0; i-- {
		if pending[i].Role == "assistant" {
			last = i
			break
		}
	}
	rest := pending
	if last >= 0 {
		for last > 0 && pending[last-1].Role == "assistant" && answerID(pending[last]) != "" && answerID(pending[last-1]) == answerID(pending[last]) {
			last-- // the first record of that answer
		}
		rest = pending[last:]
	} else {
		t.open, t.answer, t.last = slices.Clone(l.open), l.answer, l.last
		if len(t.open) == 0 {
			rest = pending[len(pending)-1:] // user messages open no call
		}
	}
	for _, p := range rest {
		t.Add(p)
	}
	seen := func(id string) bool { return l.ids[id] }
	if ids, _ := toolUseIDs(m); len(ids) > 0 {
		held := map[string]bool{}
		for _, p := range pending {
			if p.Role == "assistant" {
				pids, _ := toolUseIDs(p)
				for _, id := range pids {
					held[id] = true
				}
			}
		}
		seen = func(id string) bool { return held[id] || l.ids[id] }
	}
	return t.check(m, seen)
}

func (l *ToolUseLedger) check(m schema.Message, seen func(string) bool) error {
	if seen == nil {
		seen = func(id string) bool { return l.ids[id] }
	}
	if m.Role != "assistant" {
		return nil
	}
	ids, err := toolUseIDs(m)
	if err != nil {
		return err
	}
	if len(l.open) > 0 && !(l.answer && l.last != "" && answerID(m) == l.last) {
		return fmt.Errorf("%w: the calls %s of the answer before have no tool_result; give each one a result first (an error tool_result for a call that was interrupted)",
			ErrToolCallsOpen, quoteIDs(l.open))
	}
	for i, id := range ids {
		if seen(id) || slices.Contains(ids[:i], id) {
			return fmt.Errorf("%w: tool_use id %q is used already in this session", ErrDuplicateToolUse, id)
		}
	}
	return nil
}

// Add folds m into the ledger, whatever Check says of it.
func (l *ToolUseLedger) Add(m schema.Message) {
	switch m.Role {
	case "assistant":
		id := answerID(m)
		if !l.answer || l.last == "" || id != l.last {
			l.open = l.open[:0]
		}
		ids, _ := toolUseIDs(m)
		for _, u := range ids {
			if l.ids == nil {
				l.ids = map[string]bool{}
			}
			l.ids[u] = true
			l.open = append(l.open, u)
		}
		l.answer, l.last = true, id
	case "user":
		l.answer = false
		if len(l.open) == 0 {
			return
		}
		for _, r := range ToolResults(m) {
			for i, id := range l.open {
				if id == r {
					l.open = append(l.open[:i], l.open[i+1:]...)
					break
				}
			}
		}
	}
}

// LastCalls returns the tool_use ids of the last answer of msgs followed
// by pending, those of them that no later message gives a tool_result, as
// a ledger fed both would, and the index, in msgs then pending, of that
// answer's first message: it reads back from the end only as far as that
// answer, and keeps nothing.
func LastCalls(msgs, pending []schema.Message) (calls, open []string, from int) {
	at := func(i int) *schema.Message {
		if i >= len(msgs) {
			return &pending[i-len(msgs)]
		}
		return &msgs[i]
	}
	n := len(msgs) + len(pending)
	last := n - 1
	for last >= 0 && at(last).Role != "assistant" {
		last--
	}
	if last < 0 {
		return nil, nil, n
	}
	first := last
	for id := answerID(*at(last)); id != "" && first > 0 && at(first-1).Role == "assistant" && answerID(*at(first - 1)) == id; {
		first-- // the first record of that answer
	}
	for i := first; i <= last; i++ {
		ids, _ := toolUseIDs(*at(i))
		calls = append(calls, ids...)
	}
	resulted := map[string]bool{}
	for i := last + 1; i < n; i++ {
		for _, id := range ToolResults(*at(i)) {
			resulted[id] = true
		}
	}
	for _, id := range calls {
		if !resulted[id] {
			open = append(open, id)
		}
	}
	return calls, open, first
}

// toolUseIDs returns the ids of m's tool_use blocks, in order, or an error
// matching ErrEmptyToolUseID for a block without one.
func toolUseIDs(m schema.Message) ([]string, error) {
	var ids []string
	for i, b := range m.Content {
		if b.Type != "tool_use" {
			continue
		}
		var u struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(b.Raw, &u) != nil || u.ID == "" {
			return ids, fmt.Errorf("%w: block %d", ErrEmptyToolUseID, i+1)
		}
		ids = append(ids, u.ID)
	}
	return ids, nil
}

// answerID returns the Messages API id of the answer m is a record of,
// from its transcript record; "" when it has none.
func answerID(m schema.Message) string {
	if len(m.Record) == 0 || !bytes.Contains(m.Record, []byte(`"id"`)) {
		return ""
	}
	var r struct {
		Message struct {
			ID string `json:"id"`
		} `json:"message"`
	}
	if json.Unmarshal(m.Record, &r) != nil {
		return ""
	}
	return r.Message.ID
}

// quoteIDs names ids for a message: the first few, and how many more.
func quoteIDs(ids []string) string {
	const shown = 4
	var b bytes.Buffer
	for i, id := range ids {
		if i == shown {
			fmt.Fprintf(&b, " and %d more", len(ids)-shown)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", id)
	}
	return b.String()
}

// WithToolOutputs returns msgs with the content of each tool_result whose
// call outputs holds replaced by it, as a PostToolUse hook's
// updatedToolOutput replaces what the model is told; msgs itself is not
// changed, and the messages that change are copies. A replacement that is
// a JSON string or array of content blocks is the content as it is;
// anything else is given as its JSON text.
func WithToolOutputs(msgs []schema.Message, outputs map[string][]byte) []schema.Message {
	if len(outputs) == 0 {
		return msgs
	}
	out := msgs
	copied := false
	for i, m := range msgs {
		for j, b := range m.Content {
			if b.Type != "tool_result" {
				continue
			}
			var r map[string]json.RawMessage
			if json.Unmarshal(b.Raw, &r) != nil {
				continue
			}
			var id string
			if json.Unmarshal(r["tool_use_id"], &id) != nil || outputs[id] == nil {
				continue
			}
			if !copied {
				out, copied = slices.Clone(msgs), true
			}
			if &out[i].Content[0] == &msgs[i].Content[0] {
				out[i].Content = slices.Clone(m.Content)
			}
			r["content"] = toolContent(outputs[id])
			raw, err := json.Marshal(r)
			if err == nil {
				out[i].Content[j].Raw = raw
			}
		}
	}
	return out
}

// toolContent is replacement as a tool_result's content: a string or an
// array as it is, anything else as its JSON text.
func toolContent(replacement []byte) json.RawMessage {
	t := bytes.TrimSpace(replacement)
	if len(t) > 0 && (t[0] == '"' || t[0] == '[') && json.Valid(t) {
		return t
	}
	s, _ := json.Marshal(string(t)) // a string always marshals
	return s
}
