package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/reprise-dev/reprise/schema"
)

// ErrUnsendable is returned for a conversation that has no place in a
// request: a message whose role is neither user nor assistant, or a
// block whose stored JSON is missing, not an object, or of another type.
var ErrUnsendable = errors.New("messages: message cannot be sent")

// requestMessages returns conv as a request's messages.
//
// Consecutive messages of one role are merged into one turn, since the
// API wants user and assistant turns to alternate; meta messages are
// user messages like the others, and a message with nothing to send (no
// block, or only blocks left out) is no turn. In a user turn the
// tool_result blocks come first, in their order, as the API wants the
// results of a tool_use to open the turn after it.
//
// A text block is sent as its Text (as its stored JSON when it has one,
// which keeps citations), and left out when its text is blank, which the
// API refuses. Thinking blocks are left out: the requests ask for no
// thinking, and a thinking block's signature is its own model's. Blocks
// whose type, and fields whose name, start with "openai_" are the OpenAI
// adapter's bookkeeping and are left out too. Every other block is sent
// as its stored JSON, but for a tool_result whose content is neither a
// string nor an array (a Go tool's JSON output): that content is sent as
// the text of its JSON, the only other form the API takes.
func requestMessages(conv []schema.Message) ([]message, error) {
	var out []message
	var role string
	var results, rest []json.RawMessage
	flush := func() {
		if blocks := append(results, rest...); len(blocks) > 0 {
			out = append(out, message{Role: role, Content: blocks})
		}
		results, rest = nil, nil
	}
	for i, m := range conv {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, fmt.Errorf("%w: message %d (%s) has role %q", ErrUnsendable, i, m.UUID, m.Role)
		}
		var mine, others []json.RawMessage // m's tool_result blocks, and the rest
		for j, b := range m.Content {
			raw, err := requestBlock(b)
			if err != nil {
				return nil, fmt.Errorf("message %d (%s) block %d: %w", i, m.UUID, j, err)
			}
			switch {
			case raw == nil:
			case m.Role == "user" && b.Type == "tool_result":
				mine = append(mine, raw)
			default:
				others = append(others, raw)
			}
		}
		if len(mine)+len(others) == 0 {
			continue // nothing sent: the turn around it goes on
		}
		if m.Role != role {
			flush()
			role = m.Role
		}
		results, rest = append(results, mine...), append(rest, others...)
	}
	flush()
	return out, nil
}

// openAIPrefix starts the block types and fields the OpenAI adapter
// keeps for itself in a session's messages.
const openAIPrefix = "openai_"

// requestBlock returns b as a request's content block, or nil for a block
// left out.
func requestBlock(b schema.Block) (json.RawMessage, error) {
	switch {
	case b.Type == "thinking" || b.Type == "redacted_thinking" || strings.HasPrefix(b.Type, openAIPrefix):
		return nil, nil
	case b.Type == "text" && strings.TrimSpace(b.Text) == "":
		return nil, nil
	case b.Type == "text" && b.Raw == nil:
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"text", b.Text})
	}
	obj, err := blockObject(b)
	if err != nil {
		return nil, err
	}
	changed := false
	for k := range obj {
		if strings.HasPrefix(k, openAIPrefix) {
			delete(obj, k)
			changed = true
		}
	}
	if b.Type == "tool_result" {
		if c := bytes.TrimSpace(obj["content"]); len(c) > 0 && c[0] != '"' && c[0] != '[' && !bytes.Equal(c, []byte("null")) {
			var text bytes.Buffer
			if err := json.Compact(&text, c); err != nil {
				return nil, fmt.Errorf("%w: tool_result content: %w", ErrUnsendable, err)
			}
			if obj["content"], err = json.Marshal(text.String()); err != nil {
				return nil, fmt.Errorf("tool_result content: %w", err)
			}
			changed = true
		}
	}
	if !changed {
		return json.RawMessage(b.Raw), nil
	}
	return json.Marshal(obj)
}

// blockObject returns b's stored JSON as an object, checked to be one of
// b's type.
func blockObject(b schema.Block) (map[string]json.RawMessage, error) {
	raw := bytes.TrimSpace(b.Raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: %s block has no stored JSON", ErrUnsendable, b.Type)
	}
	var obj map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
		return nil, fmt.Errorf("%w: %s block's stored JSON is not an object", ErrUnsendable, b.Type)
	}
	var typ string
	if json.Unmarshal(obj["type"], &typ) != nil || typ != b.Type {
		return nil, fmt.Errorf("%w: %s block's stored JSON has type %q", ErrUnsendable, b.Type, typ)
	}
	return obj, nil
}
