package turn

import "encoding/json"

// ToolSpec declares a tool to a model: its name, what it does, and the
// JSON schema of its input.
type ToolSpec struct {
	Name, Description string
	InputSchema       json.RawMessage
}

// Models gives the Model that answers for the model named name ("" for
// the host's default), told system as its system prompt and offered
// tools (none when tools is empty). Prompt and agent hooks ask through
// it: a host gives one Models for both, over whatever API it uses.
type Models func(name, system string, tools []ToolSpec) Model
