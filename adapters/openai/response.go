package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/reprise-dev/reprise/schema"
)

// ResponseBlockType is the type of the block FromCompletion adds last to
// every message it makes, keeping what the response said about itself:
//
//	{"type":"openai_response","id":"chatcmpl-...","model":"...","created":1700000000,
//	 "finish_reason":"tool_calls","system_fingerprint":"...","service_tier":"...",
//	 "usage":{...the response's usage object, verbatim...}}
//
// It is stored like any other non-text block (Raw, JSON verbatim), so the
// log, Fork, Export (as one more block of the assistant line's content) and
// Import keep it; ToMessages skips it. Read it back with [Response].
// Hosts that hand the same conversation to another model API should skip
// blocks of this type, as ToMessages does.
const ResponseBlockType = "openai_response"

// ResponseInfo is the content of a ResponseBlockType block.
type ResponseInfo struct {
	Type              string `json:"type"`
	ID                string `json:"id,omitempty"`
	Model             string `json:"model,omitempty"`
	Created           int64  `json:"created,omitempty"`
	FinishReason      string `json:"finish_reason,omitempty"`
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
	ServiceTier       string `json:"service_tier,omitempty"`
	// Usage is the response's usage object as the API sent it.
	Usage json.RawMessage `json:"usage,omitempty"`
}

// CompletionUsage decodes Usage with the SDK's type; ok is false when the
// response had no usage.
func (r ResponseInfo) CompletionUsage() (u openai.CompletionUsage, ok bool, err error) {
	if len(r.Usage) == 0 || string(r.Usage) == "null" {
		return u, false, nil
	}
	if err := json.Unmarshal(r.Usage, &u); err != nil {
		return u, false, err
	}
	return u, true, nil
}

// Response returns the ResponseBlockType block of m; ok is false when m has
// none (it did not come from FromCompletion).
func Response(m schema.Message) (info ResponseInfo, ok bool, err error) {
	for _, b := range m.Content {
		if b.Type != ResponseBlockType {
			continue
		}
		if err := json.Unmarshal(b.Raw, &info); err != nil {
			return info, false, fmt.Errorf("reprise/adapters/openai: %s block: %w", ResponseBlockType, err)
		}
		return info, true, nil
	}
	return info, false, nil
}

// ErrNoChoice is returned by FromCompletion for a response without choices.
var ErrNoChoice = errors.New("reprise/adapters/openai: chat completion has no choice")

// FromCompletion returns the first choice of resp as an assistant message
// to append (UUID and Timestamp left for the Engine to fill), and what of
// the response it did not keep.
//
// The message's content is, in order: the text as one text block (none
// when the content is empty or null), the refusal as a RefusalBlockType
// block, each function tool call as an Anthropic tool_use block
// {"type":"tool_use","id":...,"name":...,"input":<arguments>} whose input
// is the arguments JSON, and a ResponseBlockType block with the usage.
// Arguments that are not a compact JSON object (models may write anything)
// are also kept as written, in the block's "openai_arguments" string, the
// input being their compact form, or {} when they are not an object; the
// arguments ToMessages sends back are then exactly as the model wrote them. So ToMessages of the conversation
// with this message sends back the assistant message the API returned.
//
// Not kept, and reported as losses: choices after the first, audio,
// annotations, logprobs, the deprecated function_call and custom tool
// calls.
func FromCompletion(resp *openai.ChatCompletion) (schema.Message, []Loss, error) {
	if resp == nil || len(resp.Choices) == 0 {
		return schema.Message{}, nil, ErrNoChoice
	}
	var losses []Loss
	lose := func(field, reason string) {
		losses = append(losses, Loss{Block: -1, Type: field, Reason: reason})
	}
	if n := len(resp.Choices); n > 1 {
		lose("choices", fmt.Sprintf("only the first of %d choices is kept", n))
	}
	ch := resp.Choices[0]
	msg := ch.Message
	m := schema.Message{Role: "assistant"}
	if msg.Content != "" {
		m.Content = append(m.Content, schema.Block{Type: "text", Text: msg.Content})
	}
	if msg.Refusal != "" {
		raw, err := json.Marshal(struct {
			Type    string `json:"type"`
			Refusal string `json:"refusal"`
		}{RefusalBlockType, msg.Refusal})
		if err != nil {
			return schema.Message{}, nil, err
		}
		m.Content = append(m.Content, schema.Block{Type: RefusalBlockType, Raw: raw})
	}
	for _, tc := range msg.ToolCalls {
		if tc.Type != "function" {
			lose("tool_calls", fmt.Sprintf("a %q tool call (%s) has no tool_use equivalent; dropped", tc.Type, tc.ID))
			continue
		}
		raw, err := toolUse(tc.ID, tc.Function.Name, tc.Function.Arguments)
		if err != nil {
			return schema.Message{}, nil, err
		}
		m.Content = append(m.Content, schema.Block{Type: "tool_use", Raw: raw})
	}
	if present(msg.JSON.Audio.Raw()) {
		lose("audio", "audio output is not kept")
	}
	if len(msg.Annotations) > 0 {
		lose("annotations", "annotations are not kept")
	}
	if present(ch.JSON.Logprobs.Raw()) {
		lose("logprobs", "log probabilities are not kept")
	}
	if present(msg.JSON.FunctionCall.Raw()) {
		lose("function_call", "the deprecated function_call is not kept")
	}
	info := ResponseInfo{
		Type: ResponseBlockType, ID: resp.ID, Model: resp.Model, Created: resp.Created,
		//lint:ignore SA1019 the API still sends system_fingerprint, and the block keeps the response as it came
		FinishReason: ch.FinishReason, SystemFingerprint: resp.SystemFingerprint,
		ServiceTier: string(resp.ServiceTier),
	}
	if u := resp.JSON.Usage.Raw(); present(u) {
		info.Usage = json.RawMessage(u)
	}
	raw, err := json.Marshal(info)
	if err != nil {
		return schema.Message{}, nil, fmt.Errorf("reprise/adapters/openai: usage: %w", err)
	}
	m.Content = append(m.Content, schema.Block{Type: ResponseBlockType, Raw: raw})
	return m, losses, nil
}

// present says whether a raw response field holds a value.
func present(raw string) bool {
	raw = strings.TrimSpace(raw)
	return raw != "" && raw != "null"
}

// toolUse writes a tool_use block. Arguments that are a compact JSON
// object are the input as they are. Others could not come back byte for
// byte from the input alone (an export compacts it, and the input of a
// tool_use is an object), so they are also kept as written in
// openai_arguments, the input being their compact form, or {} when they
// are not a JSON object.
func toolUse(id, name, args string) ([]byte, error) {
	idJSON, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
	nameJSON, err := json.Marshal(name)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(`{"type":"tool_use","id":`)
	buf.Write(idJSON)
	buf.WriteString(`,"name":`)
	buf.Write(nameJSON)
	buf.WriteString(`,"input":`)
	var compact bytes.Buffer
	isObject := json.Compact(&compact, []byte(args)) == nil && compact.Len() > 0 && compact.Bytes()[0] == '{'
	switch {
	case isObject && compact.String() == args:
		buf.WriteString(args)
	default:
		if isObject {
			buf.Write(compact.Bytes())
		} else {
			buf.WriteString(`{}`)
		}
		argsJSON, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		buf.WriteString(`,"openai_arguments":`)
		buf.Write(argsJSON)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
