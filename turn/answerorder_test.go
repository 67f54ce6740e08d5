package turn

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/reprise-dev/reprise"
)

// TestInAnswerOrderCopiesOnlyWhatItMoves checks that a conversation
// whose results already follow their answers' order is given back
// itself, and that one whose results do not is ordered in a copy, the
// conversation it was given left as it was.
func TestInAnswerOrderCopiesOnlyWhatItMoves(t *testing.T) {
	use := func(ids ...string) reprise.Message {
		m := reprise.Message{Role: "assistant", UUID: "a-" + ids[0]}
		for _, id := range ids {
			m.Content = append(m.Content, reprise.ToolUseBlock(id, "Bash", json.RawMessage(`{}`)))
		}
		return m
	}
	result := func(id string) reprise.Message {
		m := resultsMessage([]reprise.ToolResult{{ID: id, Output: json.RawMessage(`"ok"`)}})
		m.UUID = "r-" + id
		return m
	}
	meta := func(uuid string) reprise.Message {
		m := reprise.Text("user", "<system-reminder>context</system-reminder>")
		m.IsMeta, m.UUID = true, uuid
		return m
	}
	uuids := func(conv []reprise.Message) []string {
		var out []string
		for _, m := range conv {
			out = append(out, m.UUID)
		}
		return out
	}

	inOrder := []reprise.Message{reprise.Text("user", "go"), use("t1", "t2"), result("t1"), meta("m1"), result("t2"), use("t3"), result("t3")}
	got := inAnswerOrder(inOrder)
	if len(got) != len(inOrder) || &got[0] != &inOrder[0] {
		t.Errorf("a conversation in order came back as a copy: %q", uuids(got))
	}

	// t2 finished before t1, and t4 before t3: both answers' results
	// are moved, each with the meta message after it.
	disorder := []reprise.Message{reprise.Text("user", "go"), use("t1", "t2"), result("t2"), result("t1"), meta("m1"),
		use("t3", "t4"), result("t4"), meta("m4"), result("t3"), reprise.Text("user", "next")}
	disorder[0].UUID, disorder[len(disorder)-1].UUID = "u1", "u2"
	before := uuids(disorder)
	got = inAnswerOrder(disorder)
	want := []string{"u1", "a-t1", "r-t1", "m1", "r-t2", "a-t3", "r-t3", "r-t4", "m4", "u2"}
	if !slices.Equal(uuids(got), want) {
		t.Errorf("ordered: %q, want %q", uuids(got), want)
	}
	if !slices.Equal(uuids(disorder), before) {
		t.Errorf("the conversation given was changed: %q, was %q", uuids(disorder), before)
	}
}
