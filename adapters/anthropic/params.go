package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/reprise-dev/reprise/schema"
)

// ErrUnmappable is returned for a message or block that has no place in a
// Messages API request: a role other than user or assistant, or a non-text
// block whose stored JSON is missing, is not an object, or names another
// type than the block.
var ErrUnmappable = errors.New("anthropic adapter: message cannot be sent")

// MessageParams returns conv, a conversation as Engine.Conversation returns
// it, as the messages of a Messages API request.
//
// Consecutive messages of one role are merged into one turn, their blocks
// in order, since the API wants user and assistant turns to alternate.
// Meta messages are user messages like any other (Claude Code sends its
// isMeta reminders so): their text joins the user turn they fall in. In a
// user turn, the tool_result blocks are moved before the other blocks,
// keeping their order, as the API requires tool results to open the turn
// that answers a tool_use. A message without a block is skipped.
//
// A text block is sent as a text block param of its Text, unless it has
// stored JSON (FromResponse keeps it for a text block with citations),
// which is then sent verbatim. Every other block is sent as its stored
// JSON, verbatim, whatever its type, with one exception: a tool_result
// whose content is neither a string nor an array of blocks (a Go tool's
// JSON output, as Agent.PostToolUse records it) has that JSON sent as its
// content's text, since the API takes no other content.
func MessageParams(conv []schema.Message) ([]anthropic.MessageParam, error) {
	out := make([]anthropic.MessageParam, 0, len(conv))
	var role string
	// The turn being built: its tool_result blocks, then its other blocks.
	var results, rest []anthropic.ContentBlockParamUnion
	flush := func() {
		blocks := append(results, rest...)
		results, rest = nil, nil
		if len(blocks) == 0 {
			return
		}
		if role == "user" {
			out = append(out, anthropic.MessageParam{OfUser: &anthropic.UserMessageParam{Content: blocks}})
		} else {
			out = append(out, anthropic.MessageParam{OfAssistant: &anthropic.AssistantMessageParam{Content: blocks}})
		}
	}
	for i, m := range conv {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, fmt.Errorf("%w: message %d (%s) has role %q", ErrUnmappable, i, m.UUID, m.Role)
		}
		if len(m.Content) == 0 {
			continue
		}
		if m.Role != role {
			flush()
			role = m.Role
		}
		for j, b := range m.Content {
			if strings.HasPrefix(b.Type, openAIPrefix) {
				continue // the OpenAI adapter's own bookkeeping, such as the response's usage
			}
			p, err := BlockParam(b)
			if err != nil {
				return nil, fmt.Errorf("message %d (%s) block %d: %w", i, m.UUID, j, err)
			}
			if role == "user" && b.Type == "tool_result" {
				results = append(results, p)
			} else {
				rest = append(rest, p)
			}
		}
	}
	flush()
	return out, nil
}

// BlockParam returns b as a content block of a request: a text block made
// of its Text when it has no stored JSON, otherwise its stored JSON
// verbatim, but for a tool_result's content that is neither a string nor
// an array, which is sent as the text of its JSON.
func BlockParam(b schema.Block) (anthropic.ContentBlockParamUnion, error) {
	if b.Type == "text" && b.Raw == nil {
		return anthropic.NewTextBlock(b.Text), nil
	}
	if err := checkRaw(b); err != nil {
		return anthropic.ContentBlockParamUnion{}, err
	}
	raw := b.Raw
	if b.Type == "tool_use" && bytes.Contains(raw, []byte(`"`+openAIPrefix)) {
		raw = withoutOpenAIFields(raw)
	}
	if b.Type == "tool_result" {
		raw = withSendableContent(raw)
	}
	return param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(raw)), nil
}

// withSendableContent returns a tool_result block's JSON with a content
// the Messages API takes: a string or an array of blocks. reprise records
// a Go tool's output as whatever JSON the host gave (Agent.PostToolUse),
// such as Bash's {"stdout": ...} object; such content is sent as a string
// holding that JSON, compact, so that the model reads what the tool gave
// and the request is not refused. Anything else stays as stored.
func withSendableContent(raw []byte) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return raw
	}
	content := bytes.TrimSpace(obj["content"])
	if len(content) == 0 || content[0] == '"' || content[0] == '[' || bytes.Equal(content, []byte("null")) {
		return raw
	}
	var text bytes.Buffer
	if json.Compact(&text, content) != nil {
		return raw
	}
	s, err := json.Marshal(text.String())
	if err != nil {
		return raw
	}
	obj["content"] = s
	out, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return out
}

// openAIPrefix starts the block types and fields the OpenAI adapter keeps
// for itself (an "openai_response" block holding a response's usage, an
// "openai_arguments" field on a tool_use whose arguments were not compact
// JSON). They mean nothing to the Messages API, which rejects them, so a
// conversation answered through OpenAI is sent without them.
const openAIPrefix = "openai_"

// withoutOpenAIFields returns a block's JSON object without its members
// named with openAIPrefix; the rest stays as stored.
func withoutOpenAIFields(raw []byte) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return raw
	}
	for k := range obj {
		if strings.HasPrefix(k, openAIPrefix) {
			delete(obj, k)
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return out
}

// checkRaw verifies that b's stored JSON is an object of b's type.
func checkRaw(b schema.Block) error {
	trimmed := bytes.TrimSpace(b.Raw)
	if len(trimmed) == 0 {
		return fmt.Errorf("%w: %s block has no stored JSON", ErrUnmappable, b.Type)
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return fmt.Errorf("%w: %s block's stored JSON is not an object", ErrUnmappable, b.Type)
	}
	if t := blockType(trimmed); t != b.Type {
		return fmt.Errorf("%w: %s block's stored JSON has type %q", ErrUnmappable, b.Type, t)
	}
	return nil
}

// blockType returns the "type" of a block's JSON object, or "".
func blockType(raw []byte) string {
	var b struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &b) != nil {
		return ""
	}
	return b.Type
}
