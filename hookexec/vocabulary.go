package hookexec

import "github.com/reprise-dev/reprise/schema"

// The log records sources and reasons in the Copilot SDK's words, which
// Go function hooks receive as they are. Command hooks speak Claude Code's
// protocol, which has fewer words: they receive, and their matchers
// select, the nearest Claude Code word. docs/hooks.md has the table.

// CommandSource is the source a command hook receives for s: Claude Code
// calls a brand-new session startup, and has no "new".
func CommandSource(s schema.Source) schema.Source {
	if s == schema.SourceNew {
		return schema.SourceStartup
	}
	return s
}

// CommandReason is the reason a command hook receives for r: Claude Code's
// clear, resume, logout, prompt_input_exit and other.
func CommandReason(r schema.Reason) schema.Reason {
	switch r {
	case schema.ReasonUserExit:
		return schema.ReasonPromptInputExit
	case schema.ReasonComplete, schema.ReasonError, schema.ReasonAbort, schema.ReasonTimeout:
		return schema.ReasonOther
	}
	return r
}

// FunctionReason is the reason a Go function hook receives for r: the
// Copilot SDK's complete, error, abort, timeout, user_exit, and resume.
// Ends the user asked for (clear, logout, leaving the prompt) are
// user_exit; other is complete.
func FunctionReason(r schema.Reason) schema.Reason {
	switch r {
	case schema.ReasonClear, schema.ReasonLogout, schema.ReasonPromptInputExit:
		return schema.ReasonUserExit
	case schema.ReasonOther:
		return schema.ReasonComplete
	}
	return r
}

// Selects reports whether h runs for value, the source, reason or trigger
// of its event as the log records it, translated to the words h receives.
func (h Hook) Selects(value string) bool {
	if h.If != "" && !toolEvent(h.Event) {
		return false // Claude Code evaluates "if" on tool calls only
	}
	if value == AnyTool && (toolEvent(h.Event) || generic(h.Event)) {
		return true
	}
	if h.configured() {
		switch h.Event {
		case SessionStart:
			value = string(CommandSource(schema.Source(value)))
		case SessionEnd:
			value = string(CommandReason(schema.Reason(value)))
		}
	} else if h.Event == SessionEnd {
		value = string(FunctionReason(schema.Reason(value)))
	}
	return h.Matcher.Match(value)
}
