// Package fakeapi is a stand-in for the Anthropic Messages API, for the
// agent's tests and for running the agent without a key: an HTTP handler
// that answers POST /v1/messages with what its Answer function returns
// for the request, as one JSON message or, when the request asks for a
// stream, as the Messages API's server-sent events, and keeps every
// request it answered.
package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"unicode/utf8"
)

// Block is a content block as the Messages API's JSON has it.
type Block = map[string]any

// Text returns a text block.
func Text(s string) Block { return Block{"type": "text", "text": s} }

// ToolUse returns a tool_use block calling tool name with input.
func ToolUse(id, name string, input map[string]any) Block {
	return Block{"type": "tool_use", "id": id, "name": name, "input": input}
}

// Answer is one answer of the fake model.
type Answer struct {
	Content      []Block
	StopReason   string // end_turn, tool_use, ...
	InputTokens  int
	OutputTokens int
}

// Request is a request the server answered: its number (from 1), its
// headers and body, and the part of the body the answers are made from.
type Request struct {
	N        int         `json:"-"`
	Header   http.Header `json:"-"`
	Body     []byte      `json:"-"`
	Model    string      `json:"model"`
	Stream   bool        `json:"stream"`
	Messages []Message   `json:"messages"`
}

// Message is a message of a request, its content as blocks.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Server answers the Messages API's requests with Answer.
type Server struct {
	// Answer returns the answer to req. An error is sent back as an
	// invalid_request_error.
	Answer func(req *Request) (Answer, error)

	mu       sync.Mutex
	requests []*Request
}

// Requests returns the requests answered so far, in order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		apiError(w, http.StatusNotFound, "not_found_error", r.Method+" "+r.URL.Path+": not found")
		return
	}
	body, err := io.ReadAll(r.Body)
	req := &Request{Header: r.Header, Body: body}
	if err == nil {
		err = json.Unmarshal(body, req)
	}
	if err != nil {
		// A request cut short, as when its client is killed.
		apiError(w, http.StatusBadRequest, "invalid_request_error", "bad request body: "+err.Error())
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	req.N = len(s.requests)
	s.mu.Unlock()
	a, err := s.Answer(req)
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	id := fmt.Sprintf("msg_%02d", req.N)
	w.Header().Set("request-id", fmt.Sprintf("req_%02d", req.N))
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(Block{
			"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": a.Content,
			"stop_reason": a.StopReason, "stop_sequence": nil,
			"usage": Block{"input_tokens": a.InputTokens, "output_tokens": a.OutputTokens},
		})
		return
	}
	stream(w, id, req.Model, a)
}

// stream writes a as the Messages API's events: message_start, each
// block's start, deltas and stop, message_delta and message_stop.
func stream(w http.ResponseWriter, id, model string, a Answer) {
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(typ string, data Block) {
		data["type"] = typ
		js, _ := json.Marshal(data) // maps of JSON values only
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, js)
	}
	event("message_start", Block{"message": Block{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": Block{"input_tokens": a.InputTokens, "output_tokens": 1}}})
	for i, b := range a.Content {
		// Each block in two deltas, as a stream cuts them anywhere.
		switch b["type"] {
		case "text":
			text, _ := b["text"].(string)
			event("content_block_start", Block{"index": i, "content_block": Block{"type": "text", "text": ""}})
			for _, part := range halves(text) {
				event("content_block_delta", Block{"index": i, "delta": Block{"type": "text_delta", "text": part}})
			}
		case "tool_use":
			input, _ := json.Marshal(b["input"])
			event("content_block_start", Block{"index": i, "content_block": Block{
				"type": "tool_use", "id": b["id"], "name": b["name"], "input": Block{}}})
			for _, part := range halves(string(input)) {
				event("content_block_delta", Block{"index": i, "delta": Block{"type": "input_json_delta", "partial_json": part}})
			}
		}
		event("content_block_stop", Block{"index": i})
	}
	event("message_delta", Block{"delta": Block{"stop_reason": a.StopReason, "stop_sequence": nil},
		"usage": Block{"output_tokens": a.OutputTokens}})
	event("message_stop", Block{})
}

// halves cuts s in two at a character's start near its middle.
func halves(s string) [2]string {
	i := len(s) / 2
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return [2]string{s[:i], s[i:]}
}

// apiError writes an error in the Messages API's shape.
func apiError(w http.ResponseWriter, status int, typ, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(Block{"type": "error", "error": Block{"type": typ, "message": message}})
}
