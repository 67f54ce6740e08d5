package main

import (
	"github.com/reprise-dev/reprise/internal/messages"
	"github.com/reprise-dev/reprise/turn"
)

// hookModels returns the models prompt and agent hooks ask: the
// Messages API at --base-url (else $ANTHROPIC_BASE_URL), with
// $ANTHROPIC_API_KEY or $ANTHROPIC_AUTH_TOKEN, and for a hook that names
// no model $ANTHROPIC_SMALL_FAST_MODEL, else messages.DefaultModel,
// rather than the agent's own --model: a hook's question wants a quick
// answer.
func hookModels(cfg config) turn.Models {
	c := messages.FromEnv()
	if cfg.baseURL != "" {
		c.BaseURL = cfg.baseURL
	}
	return c.Models()
}
