package projection

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/reprise-dev/reprise/schema"
)

func use(ids ...string) schema.Message {
	m := schema.Message{Role: "assistant"}
	for _, id := range ids {
		raw, _ := json.Marshal(map[string]string{"type": "tool_use", "id": id, "name": "Bash"})
		m.Content = append(m.Content, schema.Block{Type: "tool_use", Raw: raw})
	}
	return m
}

func result(ids ...string) schema.Message {
	m := schema.Message{Role: "user"}
	for _, id := range ids {
		raw, _ := json.Marshal(map[string]string{"type": "tool_result", "tool_use_id": id})
		m.Content = append(m.Content, schema.Block{Type: "tool_result", Raw: raw})
	}
	return m
}

// record is an assistant record of the Messages API answer answer, as
// Claude Code writes one per content block.
func record(answer string, ids ...string) schema.Message {
	m := use(ids...)
	m.Record, _ = json.Marshal(map[string]any{"message": map[string]string{"id": answer}})
	return m
}

// LastCalls names the last answer's calls and the open ones, wherever
// the saved messages end and the pending ones begin, as the ledger's
// open calls are.
func TestLastCallsOfTheLastAnswer(t *testing.T) {
	text := schema.Message{Role: "user", Content: []schema.Block{{Type: "text", Text: "go"}}}
	for _, c := range []struct {
		name        string
		msgs        []schema.Message
		calls, open []string
	}{
		{"none", []schema.Message{text}, nil, nil},
		{"an answer without calls", []schema.Message{text, use(), text}, nil, nil},
		{"open", []schema.Message{text, use("a", "b")}, []string{"a", "b"}, []string{"a", "b"}},
		{"one resulted", []schema.Message{text, use("a", "b"), result("b")}, []string{"a", "b"}, []string{"a"}},
		{"all resulted, with meta after", []schema.Message{use("x"), result("x"), use("a", "b"), result("a"), result("b"), text},
			[]string{"a", "b"}, nil},
		{"records of one answer", []schema.Message{text, record("msg_1", "a"), record("msg_1", "b"), result("a")},
			[]string{"a", "b"}, []string{"b"}},
		{"records of two answers", []schema.Message{record("msg_1", "a"), record("msg_2", "b")}, []string{"b"}, []string{"b"}},
	} {
		for split := 0; split <= len(c.msgs); split++ {
			calls, open, from := LastCalls(c.msgs[:split], c.msgs[split:])
			if !slices.Equal(calls, c.calls) || !slices.Equal(open, c.open) {
				t.Errorf("%s, %d saved: calls %q, open %q; want %q, %q", c.name, split, calls, open, c.calls, c.open)
			}
			if len(calls) > 0 && (from >= len(c.msgs) || len(ToolUses(c.msgs[from])) == 0 || ToolUses(c.msgs[from])[0].ID != calls[0]) {
				t.Errorf("%s, %d saved: the answer begins at %d", c.name, split, from)
			}
			var l ToolUseLedger
			for _, m := range c.msgs {
				l.Add(m)
			}
			if !slices.Equal(l.open, c.open) && (len(l.open) > 0 || len(c.open) > 0) {
				t.Errorf("%s: the ledger has %q open, LastCalls %q", c.name, l.open, open)
			}
		}
	}
}
