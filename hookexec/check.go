package hookexec

import (
	"context"

	"github.com/reprise-dev/reprise/schema"
)

// Check is the body of a function hook after Claude Code's session
// function hooks: Fn looks at the session's conversation and returns true
// when the action may go on, false to block it, in which case ErrorMessage
// is what the model or the user is told. It serves every event: a false
// denies a PreToolUse or PermissionRequest, blocks a Stop (the message
// becomes the next user message), a UserPromptSubmit, a PreCompact or,
// after a tool, a PostToolUse; on SessionStart and SessionEnd, which
// nothing blocks, it is a failure. Messages are shared: read them, never
// change them. Fn should return when ctx is done.
type Check struct {
	Fn           func(ctx context.Context, messages []schema.Message) (bool, error)
	ErrorMessage string
}

func (c Check) runsOn(Event) bool { return c.Fn != nil }

// call runs c on msgs as the hooks of h's event answer.
func (c Check) call(msgs []schema.Message) call {
	return func(ctx context.Context, h Hook) (answer, error) {
		ok, err := c.Fn(ctx, msgs)
		if err != nil || ok {
			return answer{}, err
		}
		reason := c.ErrorMessage
		if reason == "" {
			reason = "blocked by " + h.Name
		}
		switch h.Event {
		case PreToolUse, PermissionRequest:
			return answer{decision: Deny, reason: reason}, nil
		case PostToolUse, PostToolUseFailure:
			return answer{decision: "block", reason: reason}, nil
		case SessionStart, SessionEnd:
			return answer{}, errCheckFailed{reason}
		}
		return answer{block: true, text: reason}, nil
	}
}

// errCheckFailed is a check that failed where nothing can be blocked.
type errCheckFailed struct{ reason string }

func (e errCheckFailed) Error() string { return e.reason }
