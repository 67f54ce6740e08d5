// Package openai connects reprise conversations to the Chat Completions API
// of github.com/openai/openai-go/v3.
//
// Its import path is github.com/reprise-dev/reprise/adapters/openai and its
// name is openai, the same as the SDK's package; import it under another
// name next to the SDK, for example:
//
//	import (
//		"github.com/openai/openai-go/v3"
//		repriseopenai "github.com/reprise-dev/reprise/adapters/openai"
//	)
//
// It lives in its own module, so users of reprise who do not talk to
// OpenAI never download the SDK.
//
// Two functions do the work:
//
//   - [ToMessages] turns a conversation (what Agent.ModelView returns,
//     compaction and the PostToolUse hooks' updatedToolOutput respected) into the messages of a chat completion request,
//     and reports every block it could not map as a [Loss].
//   - [FromCompletion] turns the first choice of a chat completion back into
//     an assistant message to append, tool calls as Anthropic-shaped
//     tool_use blocks, and the response's usage, id, model and finish reason
//     in a block of type [ResponseBlockType], which [ToMessages] skips.
//
// The chat format has no system role in a reprise conversation: a host
// prepends its own system or developer message to what ToMessages returns.
//
// docs/adapters.md, at the repository root, has the table of what maps to
// what, and what cannot map losslessly.
package openai
