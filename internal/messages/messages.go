// Package messages is a small client of the Anthropic Messages API, over
// net/http alone, that asks a model the questions of prompt and agent
// hooks: Client.Models is the turn.Models that turn's hook evaluators
// take, one POST /v1/messages per answer, without streaming.
//
// The client is configured as the reprise command and the example agent
// are, from the environment (FromEnv):
//
//   - ANTHROPIC_BASE_URL: the API's base URL, https://api.anthropic.com
//     when unset;
//   - ANTHROPIC_API_KEY: the key sent as x-api-key;
//   - ANTHROPIC_AUTH_TOKEN: a token sent as "Authorization: Bearer", for
//     gateways that take one (both are sent when both are set);
//   - ANTHROPIC_SMALL_FAST_MODEL: the model asked when a hook names none,
//     claude-haiku-4-5 when unset, as hooks want a quick, cheap answer.
//
// A conversation's messages (schema.Message) become the request's
// messages as the API wants them: consecutive messages of one role are
// one turn, a user turn's tool_result blocks come first, a text block is
// sent as its text, and every other block as the JSON reprise stored for
// it (see requestMessages for the exceptions). The answer comes back as
// an assistant message with the response's blocks, in order: a text
// block as its Text, a tool_use (or any other) block as its JSON.
//
// A response that is not 2xx is an *APIError with the API's own message.
// Response bodies are read up to MaxResponse bytes; a request ends when
// its context does.
package messages

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/turn"
)

// Defaults of a Client whose fields are left zero.
const (
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultModel is the model asked when neither the hook nor the
	// Client names one.
	DefaultModel = "claude-haiku-4-5"
	// DefaultMaxTokens bounds an answer's tokens.
	DefaultMaxTokens = 4096
)

// APIVersion is the anthropic-version header every request carries.
const APIVersion = "2023-06-01"

// MaxResponse is the most bytes of a response body the client reads; a
// longer body is an error.
const MaxResponse = 8 << 20

// maxErrorBody is the most bytes of an error response read for its
// message.
const maxErrorBody = 64 << 10

// Client asks the Messages API. Its zero value asks Anthropic's API with
// no credentials, which the API refuses; FromEnv fills it in.
type Client struct {
	// BaseURL is the API's base URL, without /v1; DefaultBaseURL when "".
	// A path in it is kept (a gateway's prefix).
	BaseURL string
	// APIKey is sent as x-api-key, AuthToken as a Bearer token; each is
	// left out when "".
	APIKey, AuthToken string
	// HTTP sends the requests; http.DefaultClient when nil. The request's
	// context bounds each one.
	HTTP *http.Client
	// DefaultModel is the model asked for a name of ""; DefaultModel when
	// "".
	DefaultModel string
	// MaxTokens is each request's max_tokens; DefaultMaxTokens when 0.
	MaxTokens int
}

// FromEnv returns the Client the environment describes (see the package
// documentation): ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY,
// ANTHROPIC_AUTH_TOKEN and ANTHROPIC_SMALL_FAST_MODEL.
func FromEnv() Client {
	return Client{
		BaseURL:      os.Getenv("ANTHROPIC_BASE_URL"),
		APIKey:       os.Getenv("ANTHROPIC_API_KEY"),
		AuthToken:    os.Getenv("ANTHROPIC_AUTH_TOKEN"),
		DefaultModel: os.Getenv("ANTHROPIC_SMALL_FAST_MODEL"),
	}
}

// Models returns the turn.Models that asks through c: the Model for name
// (c's default model when "") sends each conversation with system as the
// system prompt (none when "") and tools offered (none when empty), and
// returns the response as an assistant message.
func (c Client) Models() turn.Models {
	return func(name, system string, tools []turn.ToolSpec) turn.Model {
		model := cmp.Or(name, c.DefaultModel, DefaultModel)
		return func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
			return c.ask(ctx, model, system, tools, conv)
		}
	}
}

// APIError is an answer of the API that is not 2xx.
type APIError struct {
	Status int    // the HTTP status code
	Type   string // the error's type, such as "invalid_request_error"; "" when the body has none
	// Message is the API's message, or the start of the body when it is
	// not the API's error JSON.
	Message   string
	RequestID string // the request-id header, when given
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "messages API: %d %s", e.Status, http.StatusText(e.Status))
	if e.Type != "" {
		b.WriteString(": " + e.Type)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RequestID != "" {
		b.WriteString(" (request " + e.RequestID + ")")
	}
	return b.String()
}

// request is the body of POST /v1/messages.
type request struct {
	Model     string    `json:"model"`
	MaxTokens int       `json:"max_tokens"`
	System    string    `json:"system,omitempty"`
	Tools     []tool    `json:"tools,omitempty"`
	Messages  []message `json:"messages"`
}

// tool is a tool offered in a request.
type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// message is one turn of a request, its blocks as JSON.
type message struct {
	Role    string            `json:"role"`
	Content []json.RawMessage `json:"content"`
}

// response is the part of a response the client reads.
type response struct {
	Type    string            `json:"type"`
	Role    string            `json:"role"`
	Content []json.RawMessage `json:"content"`
}

// anyObject is the input schema of a tool declared without one: the API
// wants one, and an object of anything is what such a tool takes.
var anyObject = json.RawMessage(`{"type":"object"}`)

// ask sends one request and returns its answer.
func (c Client) ask(ctx context.Context, model, system string, tools []turn.ToolSpec, conv []reprise.Message) (reprise.Message, error) {
	msgs, err := requestMessages(conv)
	if err != nil {
		return reprise.Message{}, err
	}
	req := request{Model: model, MaxTokens: cmp.Or(c.MaxTokens, DefaultMaxTokens), System: system, Messages: msgs}
	for _, t := range tools {
		schema := t.InputSchema
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = anyObject
		}
		req.Tools = append(req.Tools, tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return reprise.Message{}, fmt.Errorf("messages: request: %w", err)
	}
	data, err := c.post(ctx, body)
	if err != nil {
		return reprise.Message{}, err
	}
	var resp response
	if err := json.Unmarshal(data, &resp); err != nil {
		return reprise.Message{}, fmt.Errorf("messages: response is not the API's JSON: %w", err)
	}
	if resp.Type != "message" || resp.Role != "assistant" {
		return reprise.Message{}, fmt.Errorf("messages: response is not an assistant message (type %q, role %q)", resp.Type, resp.Role)
	}
	return answer(resp.Content)
}

// post sends body to /v1/messages and returns the body of a 2xx answer.
func (c Client) post(ctx context.Context, body []byte) ([]byte, error) {
	url := strings.TrimRight(cmp.Or(c.BaseURL, DefaultBaseURL), "/") + "/v1/messages"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("anthropic-version", APIVersion)
	if c.APIKey != "" {
		req.Header.Set("x-api-key", c.APIKey)
	}
	if c.AuthToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.AuthToken)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, readError(resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("messages: reading the response: %w", err)
	}
	if len(data) > MaxResponse {
		return nil, fmt.Errorf("messages: response is over %d bytes", MaxResponse)
	}
	return data, nil
}

// readError returns the *APIError of resp, a response that is not 2xx.
func readError(resp *http.Response) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{Status: resp.StatusCode, RequestID: resp.Header.Get("request-id")}
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil && (body.Error.Type != "" || body.Error.Message != "") {
		e.Type, e.Message = body.Error.Type, body.Error.Message
	} else {
		e.Message = clip(strings.TrimSpace(string(data)), 300)
	}
	if err != nil {
		return errors.Join(e, fmt.Errorf("messages: reading the error: %w", err))
	}
	return e
}

// answer returns the blocks of a response as an assistant message.
func answer(content []json.RawMessage) (reprise.Message, error) {
	m := reprise.Message{Role: "assistant"}
	for i, raw := range content {
		var b struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			Citations json.RawMessage `json:"citations"`
		}
		if err := json.Unmarshal(raw, &b); err != nil || b.Type == "" {
			return reprise.Message{}, fmt.Errorf("messages: response block %d is not a content block", i)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return reprise.Message{}, fmt.Errorf("messages: response block %d: %w", i, err)
		}
		block := schema.Block{Type: b.Type, Raw: compact.Bytes()}
		if b.Type == "text" {
			block.Text = b.Text
			if c := bytes.TrimSpace(b.Citations); len(c) == 0 || bytes.Equal(c, []byte("null")) {
				block.Raw = nil // nothing but its text
			}
		}
		m.Content = append(m.Content, block)
	}
	return m, nil
}

// clip returns s cut to at most n bytes, at a character's start.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
