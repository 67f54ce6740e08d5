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

// Options configure ToMessages. The zero value maps what it can and reports
// the rest.
type Options struct {
	// Strict makes ToMessages fail with a *LossError when anything of the
	// conversation cannot be sent, instead of dropping it.
	Strict bool
}

// Loss is one part of a conversation that ToMessages did not send, or one
// part of a response that FromCompletion did not keep.
type Loss struct {
	// Message is the index of the message in the conversation (0 for a
	// response); UUID its uuid, when it has one.
	Message int
	UUID    string
	// Block is the index of the block in the message's content, or -1 when
	// the loss is about the message as a whole or a field of a response.
	Block int
	// Type is the block's type ("thinking", "image", ...) or, for a
	// response, the field that was not kept ("audio", "choices", ...).
	Type   string
	Reason string
}

func (l Loss) String() string {
	where := fmt.Sprintf("message %d", l.Message)
	if l.Block >= 0 {
		where += fmt.Sprintf(" block %d", l.Block)
	}
	return fmt.Sprintf("%s (%s): %s", where, l.Type, l.Reason)
}

// ErrLoss is matched by the *LossError ToMessages returns in strict mode.
var ErrLoss = errors.New("reprise/adapters/openai: conversation does not map losslessly")

// LossError lists what a strict ToMessages could not send.
type LossError struct {
	Losses []Loss
}

func (e *LossError) Error() string {
	parts := make([]string, len(e.Losses))
	for i, l := range e.Losses {
		parts[i] = l.String()
	}
	return ErrLoss.Error() + ": " + strings.Join(parts, "; ")
}

func (e *LossError) Unwrap() error { return ErrLoss }

// block is the union of the Anthropic content block fields this package
// reads from a Block's Raw JSON.
type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// Arguments are tool call arguments that were not a compact JSON
	// object, kept as the model wrote them (see FromCompletion); when
	// present they are sent instead of Input.
	Arguments *string `json:"openai_arguments"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	// image, document
	Source *source `json:"source"`
	Title  string  `json:"title"`
	// openai_refusal
	Refusal string `json:"refusal"`
}

type source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

// RefusalBlockType is the type of the block FromCompletion makes of a
// refusal: {"type":"openai_refusal","refusal":"..."}. ToMessages sends it
// back as the assistant message's refusal.
const RefusalBlockType = "openai_refusal"

// ToMessages returns the chat completion messages for conv, a reprise
// conversation such as Engine.Conversation returns, in order, and the
// blocks it could not send. See docs/adapters.md for the whole mapping. In short:
//
//   - user text and images (base64 as a data URL, or a URL) become a user
//     message; a base64 PDF document becomes a file part. Meta messages
//     (the <system-reminder> context reprise injects) are user messages
//     like any other, their text unchanged: chat completions have no meta
//     flag, and a system message in the middle of a conversation would
//     change how models weigh it.
//   - tool_result blocks become tool messages (tool_call_id, content text),
//     placed before the rest of their user message, as the chat format
//     wants them right after the assistant's tool calls. Content that is
//     neither a string nor an array of blocks (a Go tool's JSON output)
//     is sent as the text of its JSON; an error result (is_error, such as
//     the denial reprise records for a refused call) keeps its text, which
//     says what went wrong, and loses only the flag.
//   - assistant text becomes the assistant content; tool_use blocks become
//     function tool calls (id, name, arguments = the input JSON).
//   - blocks of type ResponseBlockType are metadata and are skipped.
//   - thinking, redacted_thinking and every other block kind have no chat
//     equivalent: they are dropped and reported, as are images in an
//     assistant message or inside a tool result, a tool result's is_error
//     flag, and image or document sources that are neither base64 nor URL.
//
// A message of which nothing could be sent is left out, with a Loss whose
// Block is -1. With opts.Strict, any loss makes ToMessages return no
// messages and a *LossError (matching ErrLoss) listing them.
func ToMessages(conv []schema.Message, opts Options) ([]openai.ChatCompletionMessageParamUnion, []Loss, error) {
	c := converter{out: make([]openai.ChatCompletionMessageParamUnion, 0, len(conv))}
	for i, m := range conv {
		c.msg, c.uuid = i, m.UUID
		switch m.Role {
		case "user":
			c.user(m)
		case "assistant":
			c.assistant(m)
		default:
			c.lose(-1, m.Role, "a role the chat format does not take from a conversation")
		}
	}
	if opts.Strict && len(c.losses) > 0 {
		return nil, c.losses, &LossError{Losses: c.losses}
	}
	return c.out, c.losses, nil
}

type converter struct {
	out    []openai.ChatCompletionMessageParamUnion
	losses []Loss
	msg    int
	uuid   string
}

func (c *converter) lose(blk int, typ, reason string) {
	c.losses = append(c.losses, Loss{Message: c.msg, UUID: c.uuid, Block: blk, Type: typ, Reason: reason})
}

// decode reads b's Raw JSON; a text block without Raw needs none.
func (c *converter) decode(j int, b schema.Block) (block, bool) {
	var d block
	if b.Type == "text" && b.Raw == nil {
		return block{Type: "text", Text: b.Text}, true
	}
	if err := json.Unmarshal(b.Raw, &d); err != nil {
		c.lose(j, b.Type, "its JSON cannot be read: "+err.Error())
		return d, false
	}
	if b.Type == "text" {
		d.Text = b.Text
	}
	return d, true
}

func (c *converter) user(m schema.Message) {
	var parts []openai.ChatCompletionContentPartUnionParam
	texts, lost, tools := 0, false, 0
	for j, b := range m.Content {
		if b.Type == ResponseBlockType {
			continue
		}
		d, ok := c.decode(j, b)
		if !ok {
			lost = true
			continue
		}
		switch b.Type {
		case "text":
			parts = append(parts, openai.TextContentPart(d.Text))
			texts++
		case "image":
			url, ok := c.sourceURL(j, b.Type, d.Source)
			if !ok {
				lost = true
				continue
			}
			parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: url}))
		case "document":
			part, ok := c.document(j, d)
			if !ok {
				lost = true
				continue
			}
			parts = append(parts, part)
		case "tool_result":
			c.out = append(c.out, c.toolResult(j, d))
			tools++
		default:
			c.lose(j, b.Type, "no chat completion equivalent in a user message; dropped")
			lost = true
		}
	}
	switch {
	case len(parts) == 0 && tools > 0:
	case len(parts) == 0 && lost:
		c.lose(-1, "user", "nothing of the message could be sent; left out")
	case len(parts) == texts && texts <= 1:
		text := ""
		if texts == 1 {
			text = *parts[0].GetText()
		}
		c.out = append(c.out, openai.UserMessage(text))
	default:
		c.out = append(c.out, openai.UserMessage(parts))
	}
}

// sourceURL returns the image_url of an image source: a data URL for
// base64 data, the URL itself for a URL source.
func (c *converter) sourceURL(j int, typ string, s *source) (string, bool) {
	switch {
	case s == nil:
		c.lose(j, typ, "no source; dropped")
	case s.Type == "base64":
		return "data:" + s.MediaType + ";base64," + s.Data, true
	case s.Type == "url":
		return s.URL, true
	default:
		c.lose(j, typ, fmt.Sprintf("source type %q has no chat completion equivalent; dropped", s.Type))
	}
	return "", false
}

// document maps a base64 PDF document to a file part (file_data as a data
// URL, filename from the title).
func (c *converter) document(j int, d block) (openai.ChatCompletionContentPartUnionParam, bool) {
	if d.Source == nil || d.Source.Type != "base64" || d.Source.MediaType != "application/pdf" {
		c.lose(j, "document", "only base64 PDF documents map to a file part; dropped")
		return openai.ChatCompletionContentPartUnionParam{}, false
	}
	file := openai.ChatCompletionContentPartFileFileParam{
		FileData: openai.String("data:application/pdf;base64," + d.Source.Data),
	}
	if d.Title != "" {
		file.Filename = openai.String(d.Title)
	}
	return openai.FileContentPart(file), true
}

// toolResult maps a tool_result block to a tool message. Its content is a
// string, or an array of blocks of which only text blocks can be sent, or
// any other JSON (a Go tool's output, as reprise's Agent.PostToolUse
// records it), which is sent as the text of that JSON.
func (c *converter) toolResult(j int, d block) openai.ChatCompletionMessageParamUnion {
	if d.IsError {
		c.lose(j, "tool_result", "is_error has no chat completion equivalent; the content is sent as a plain tool result")
	}
	var text string
	if len(d.Content) == 0 || string(d.Content) == "null" || json.Unmarshal(d.Content, &text) == nil {
		return openai.ToolMessage(text, d.ToolUseID)
	}
	var items []block
	if err := json.Unmarshal(d.Content, &items); err != nil {
		var compact bytes.Buffer
		json.Compact(&compact, d.Content) // valid JSON: it was decoded
		return openai.ToolMessage(compact.String(), d.ToolUseID)
	}
	parts := make([]openai.ChatCompletionContentPartTextParam, 0, len(items))
	for _, it := range items {
		if it.Type != "text" {
			c.lose(j, "tool_result", fmt.Sprintf("a %q block inside a tool result cannot be sent in a tool message; dropped", it.Type))
			continue
		}
		parts = append(parts, openai.ChatCompletionContentPartTextParam{Text: it.Text})
	}
	if len(parts) == 0 {
		return openai.ToolMessage("", d.ToolUseID)
	}
	return openai.ToolMessage(parts, d.ToolUseID)
}

func (c *converter) assistant(m schema.Message) {
	var (
		texts   []string
		refusal string
		calls   []openai.ChatCompletionMessageToolCallUnionParam
		lost    bool
	)
	for j, b := range m.Content {
		if b.Type == ResponseBlockType {
			continue
		}
		d, ok := c.decode(j, b)
		if !ok {
			lost = true
			continue
		}
		switch b.Type {
		case "text":
			texts = append(texts, d.Text)
		case "tool_use":
			args := string(d.Input)
			if d.Arguments != nil {
				args = *d.Arguments
			} else if args == "" {
				args = "{}"
			}
			calls = append(calls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       d.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: d.Name, Arguments: args},
				},
			})
		case RefusalBlockType:
			refusal += d.Refusal
		case "thinking", "redacted_thinking":
			c.lose(j, b.Type, "chat completions take no reasoning back; dropped")
			lost = true
		default:
			c.lose(j, b.Type, "no chat completion equivalent in an assistant message; dropped")
			lost = true
		}
	}
	var p openai.ChatCompletionAssistantMessageParam
	switch {
	case len(texts) == 1:
		p.Content.OfString = openai.String(texts[0])
	case len(texts) > 1:
		for _, t := range texts {
			p.Content.OfArrayOfContentParts = append(p.Content.OfArrayOfContentParts,
				openai.ChatCompletionAssistantMessageParamContentArrayOfContentPartUnion{
					OfText: &openai.ChatCompletionContentPartTextParam{Text: t},
				})
		}
	case len(calls) == 0 && refusal == "" && lost:
		c.lose(-1, "assistant", "nothing of the message could be sent; left out")
		return
	case len(calls) == 0 && refusal == "":
		p.Content.OfString = openai.String("")
	}
	if refusal != "" {
		p.Refusal = openai.String(refusal)
	}
	p.ToolCalls = calls
	c.out = append(c.out, openai.ChatCompletionMessageParamUnion{OfAssistant: &p})
}
