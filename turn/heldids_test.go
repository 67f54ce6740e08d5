package turn

import (
	"encoding/json"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/projection"
)

// TestHeldIDsFindsEveryWayJSONWritesAnID checks the shortcut heldIDs takes
// past blocks that cannot hold an id: an id written escaped, or an id
// that JSON must escape, is still found, and one only mentioned in a
// call's input is not taken for its id.
func TestHeldIDsFindsEveryWayJSONWritesAnID(t *testing.T) {
	block := func(raw string) reprise.Message {
		if !json.Valid([]byte(raw)) {
			t.Fatalf("not JSON: %s", raw)
		}
		return reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "tool_use", Raw: json.RawMessage(raw)}}}
	}
	conv := []reprise.Message{
		block(`{"type":"tool_use","id":"plain","name":"Bash","input":{}}`),
		block(`{"type":"tool_use","id":"t\u0031","name":"Bash","input":{}}`),
		block(`{"type":"tool_use","id":"quo\"te","name":"Bash","input":{}}`),
		block(`{"type":"tool_use","id":"other","name":"Bash","input":{"note":"mentions \"inputonly\""}}`),
		block(`{"type":"tool_use","id":"other2","name":"Bash","input":{"note":"inputonly2"}}`),
		reprise.Text("user", `"plain2"`),
	}
	for _, c := range []struct {
		id   string
		held bool
	}{{"plain", true}, {"t1", true}, {`quo"te`, true}, {"inputonly", false}, {"inputonly2", false}, {"plain2", false}, {"absent", false}} {
		use := block(`{"type":"tool_use","id":` + mustQuote(t, c.id) + `,"name":"Bash","input":{}}`)
		if got := heldIDs(conv, projection.ToolUses(use))[c.id]; got != c.held {
			t.Errorf("heldIDs says %q is held: %v; want %v", c.id, got, c.held)
		}
	}
}

func mustQuote(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
