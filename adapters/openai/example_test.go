package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/openai/openai-go/v3"
	"github.com/reprise-dev/reprise"
	repriseopenai "github.com/reprise-dev/reprise/adapters/openai"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/turn"
)

// One turn of an agent loop: rebuild the conversation the model sees,
// send it, and keep the answer, usage included, in the session.
func Example() {
	ctx := context.Background()
	e, err := reprise.Open("sessions.db", reprise.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	id, err := e.CreateSession(ctx, "", ".")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := e.Append(ctx, id, reprise.Text("user", "What is the retry policy?")); err != nil {
		log.Fatal(err)
	}

	conv, err := e.Conversation(ctx, id) // compaction respected
	if err != nil {
		log.Fatal(err)
	}
	msgs, losses, err := repriseopenai.ToMessages(conv, repriseopenai.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range losses {
		log.Printf("not sent: %s", l) // e.g. thinking blocks
	}

	client := openai.NewClient() // OPENAI_API_KEY from the environment
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT5_5,
		Messages: append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a careful assistant.")}, msgs...),
	})
	if err != nil {
		log.Fatal(err)
	}
	answer, _, err := repriseopenai.FromCompletion(resp)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := e.Append(ctx, id, answer); err != nil {
		log.Fatal(err)
	}
}

// FromCompletion keeps tool calls as tool_use blocks and the usage in a
// block of its own, which Response reads back.
func ExampleFromCompletion() {
	var resp openai.ChatCompletion
	_ = json.Unmarshal([]byte(`{
	  "id": "chatcmpl-1", "object": "chat.completion", "created": 1767607205, "model": "gpt-4o",
	  "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
	    "role": "assistant", "content": null, "refusal": null,
	    "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"config.yaml\"}"}}]}}],
	  "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}}`), &resp)

	answer, losses, err := repriseopenai.FromCompletion(&resp)
	if err != nil {
		log.Fatal(err)
	}
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Files: reprise.NewMemoryFiles()})
	defer e.Close()
	ctx := context.Background()
	id, _ := e.CreateSession(ctx, "demo", ".")
	stored, err := e.Append(ctx, id, answer)
	if err != nil {
		log.Fatal(err)
	}
	for _, b := range stored.Content {
		fmt.Printf("%s %s\n", b.Type, b.Raw)
	}
	info, _, _ := repriseopenai.Response(stored)
	usage, _, _ := info.CompletionUsage()
	fmt.Println("losses:", len(losses), "total tokens:", usage.TotalTokens)
	// Output:
	// tool_use {"type":"tool_use","id":"call_1","name":"read_file","input":{"path":"config.yaml"}}
	// openai_response {"type":"openai_response","id":"chatcmpl-1","model":"gpt-4o","created":1767607205,"finish_reason":"tool_calls","usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}
	// losses: 0 total tokens: 19
}

// The model of a durable turn (package turn): the runner records the
// answer FromCompletion makes before it acts on its tool calls.
func Example_turnModel() {
	client := openai.NewClient()
	var model turn.Model = func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
		msgs, _, err := repriseopenai.ToMessages(conv, repriseopenai.Options{})
		if err != nil {
			return reprise.Message{}, err
		}
		resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: openai.ChatModelGPT5_5, Messages: msgs})
		if err != nil {
			return reprise.Message{}, err
		}
		answer, _, err := repriseopenai.FromCompletion(resp)
		return answer, err
	}
	_ = &turn.Runner{Model: model} // with the Engine, the Agent and the tools
}
