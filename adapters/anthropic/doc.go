// Package anthropic connects reprise to the Anthropic Messages API through
// github.com/anthropics/anthropic-sdk-go/v2.
//
// It is a nested module, so that users of reprise who do not talk to the
// Messages API never download the SDK. Its package name is the name of its
// directory, anthropic, like the SDK's; a program that imports both gives
// one of them another name, for example
//
//	import (
//		"github.com/anthropics/anthropic-sdk-go/v2"
//		rpanthropic "github.com/reprise-dev/reprise/adapters/anthropic"
//	)
//
// A turn of an agent loop is three calls:
//
//	conv, _ := agent.ModelView(ctx)              // compaction and hooks' tool outputs respected
//	msgs, _ := rpanthropic.MessageParams(conv)   // request messages
//	resp, _ := client.Messages.New(ctx, anthropic.MessageNewParams{Messages: msgs, ...})
//	rpanthropic.Append(ctx, e, id, resp)         // every block, and the usage
//
// # Requests
//
// MessageParams sends each block as reprise stored it: a text block as a
// text block param made of its Text, every other block (tool_use,
// tool_result, thinking with its signature, redacted_thinking, image,
// document, server tool blocks, and kinds this SDK does not know) as its
// stored JSON, verbatim. Consecutive messages of one role become one turn,
// as the API wants roles to alternate. A meta message (the
// <system-reminder> reprise injects for hook context) is sent as Claude
// Code sends it: a text block of a user turn, merged with the user
// messages around it. In a user turn, tool_result blocks come first, as
// the API requires, so a reminder injected between a tool_use and its
// result does not break the turn. reprise records the steps of a tool
// call (Agent.PreToolUse, Agent.PostToolUse) as such blocks: a denied
// call's error tool_result (is_error, the reason as its content), the
// tool's result, and the hooks' context as a meta message after it, all
// of which land in the user turn that answers the tool_use. A result whose
// content is a JSON object, as a Go tool's output may be, is sent as the
// text of that JSON, the only change MessageParams makes to a stored block.
//
// # Responses
//
// FromResponse makes an assistant message of a response: text blocks as
// Text (with their JSON too when they carry citations), every other block
// as its JSON from the response, verbatim. The
// whole response (id, model, stop reason, usage, ...) is kept in the
// message's Record as the transcript line Claude Code writes for an
// assistant message, so that reprise's export and Claude Code read it, and
// Usage reads the usage back. Append does this for a session of an
// Engine, filling the line's place (session, working directory, parent).
//
// docs/adapters.md, at the repository root, tables every mapping and what
// cannot map.
package anthropic
