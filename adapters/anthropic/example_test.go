package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/reprise-dev/reprise"
	rpanthropic "github.com/reprise-dev/reprise/adapters/anthropic"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/turn"
)

// One turn of an agent loop: rebuild the conversation the model sees from
// the Engine, send it with the SDK, and append the answer, every block of
// it and its usage, to the session.
func Example() {
	ctx := context.Background()
	e, err := reprise.Open("sessions.db", reprise.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	client := anthropic.NewClient() // the API key from ANTHROPIC_API_KEY

	id, err := e.CreateSession(ctx, "", "")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := e.Append(ctx, id, reprise.Text("user", "Why does TestRetry fail?")); err != nil {
		log.Fatal(err)
	}

	// The conversation as the model sees it: after a compaction, from the
	// summary on; injected hook context included as user text.
	conv, err := e.Conversation(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	msgs, err := rpanthropic.MessageParams(conv)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     anthropic.ModelClaudeSonnet5_5,
		MaxTokens: 1024,
		Messages:  msgs,
	})
	if err != nil {
		log.Fatal(err)
	}

	// Durably, after the session's last message; tool_use and thinking
	// blocks are kept as the API returned them.
	stored, err := rpanthropic.Append(ctx, e, id, resp)
	if err != nil {
		log.Fatal(err)
	}
	usage, _ := rpanthropic.Usage(stored)
	fmt.Println(resp.StopReason, usage.InputTokens, usage.OutputTokens)
}

// Consecutive messages of one role become one turn; a meta message, such as
// the reminder reprise injects with hook context, is user text; tool
// results open their user turn.
func ExampleMessageParams() {
	toolUse := json.RawMessage(`{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"go test ./..."}}`)
	toolResult := json.RawMessage(`{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}`)
	reminder := reprise.Text("user", "<system-reminder>\nSessionStart hook additional context: CI green\n</system-reminder>")
	reminder.IsMeta = true
	conv := []schema.Message{
		reprise.Text("user", "Run the tests."),
		reprise.Text("assistant", "Running them."),
		{Role: "assistant", Content: []schema.Block{{Type: "tool_use", Raw: toolUse}}},
		reminder,
		{Role: "user", Content: []schema.Block{{Type: "tool_result", Raw: toolResult}}},
	}
	msgs, err := rpanthropic.MessageParams(conv)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		role, blocks := "user", []anthropic.ContentBlockParamUnion(nil)
		if m.OfUser != nil {
			blocks = m.OfUser.Content
		} else {
			role, blocks = "assistant", m.OfAssistant.Content
		}
		fmt.Print(role, ":")
		for _, b := range blocks {
			fmt.Print(" ", blockType(b))
		}
		fmt.Println()
	}
	// Output:
	// user: text
	// assistant: text tool_use
	// user: tool_result text
}

// blockType returns the type of a content block param as it is sent.
func blockType(b anthropic.ContentBlockParamUnion) string {
	data, _ := json.Marshal(b)
	var v struct{ Type string }
	json.Unmarshal(data, &v)
	return v.Type
}

// A durable turn with the SDK: the runner of package turn takes the model
// call as a function, and records each answer, as FromResponse makes it,
// before it acts on it; a host killed in the turn calls Resume in its next
// process and the turn goes on from the log.
func Example_turnRunner() {
	ctx := context.Background()
	e, err := reprise.Open("sessions.db", reprise.Options{ClaudeSettings: true})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	client := anthropic.NewClient()
	agent, err := e.Agent(ctx, "my-host")
	if err != nil {
		log.Fatal(err)
	}
	r, err := agent.New(ctx, "", "/src/app")
	if err != nil {
		log.Fatal(err)
	}
	model := func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
		msgs, err := rpanthropic.MessageParams(conv)
		if err != nil {
			return reprise.Message{}, err
		}
		resp, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 1024, Messages: msgs,
		})
		if err != nil {
			return reprise.Message{}, err
		}
		parent := ""
		if len(conv) > 0 {
			parent = conv[len(conv)-1].UUID
		}
		return rpanthropic.FromResponse(resp, rpanthropic.Line{Session: r.To, Cwd: "/src/app", Parent: parent})
	}
	runner := &turn.Runner{Engine: e, Agent: agent, Model: model,
		Tools: map[string]turn.Tool{"Read": {Repeatable: true, Run: func(ctx context.Context, c turn.Call) (reprise.ToolResult, error) {
			return reprise.ToolResult{Output: json.RawMessage(`"package main"`)}, nil
		}}}}
	out, err := runner.Run(ctx, "What does main.go do?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Requests)
}
