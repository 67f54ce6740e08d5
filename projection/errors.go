package projection

import "errors"

var (
	// ErrEmptyToolUseID is returned by ToolUseLedger.Check for an answer
	// with a tool_use block that has no id: no tool_result could name it.
	ErrEmptyToolUseID = errors.New("a tool_use has no id")

	// ErrDuplicateToolUse is returned by ToolUseLedger.Check for an answer
	// with a tool_use id that the conversation, or the answer itself,
	// holds already.
	ErrDuplicateToolUse = errors.New("a tool_use id is used twice")

	// ErrToolCallsOpen is returned by ToolUseLedger.Check for an answer
	// that comes while calls of the answer before it have no tool_result.
	ErrToolCallsOpen = errors.New("tool calls of the answer before have no result")
)
