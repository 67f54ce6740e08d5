package main

import (
	"context"
	"slices"
	"strings"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/messages"
	"github.com/reprise-dev/reprise/turn"
)

// hookModels returns the models prompt hooks ask: the Messages API at
// --base-url (else $ANTHROPIC_BASE_URL), with the agent's credentials,
// and for a hook that names no model $ANTHROPIC_SMALL_FAST_MODEL, else
// messages.DefaultModel, rather than the agent's own --model: a hook's
// question wants a quick answer.
func hookModels(cfg config) turn.Models {
	c := messages.FromEnv()
	if cfg.baseURL != "" {
		c.BaseURL = cfg.baseURL
	}
	return c.Models()
}

// promptEvaluator answers prompt hooks with one request to the model
// models gives for the hook's model: the hook's system prompt, and the
// session's transcript (Stop's hooks have one) followed by the hook's
// prompt as a user message. The answer is the text of the model's
// reply, which the hook reads as its verdict.
func promptEvaluator(models turn.Models) hookexec.Evaluator {
	return func(ctx context.Context, q hookexec.Question) (string, error) {
		conv := append(slices.Clone(q.Transcript), reprise.Text("user", q.Prompt))
		m, err := models(q.Model, q.System, nil)(ctx, conv)
		if err != nil {
			return "", err
		}
		var text strings.Builder
		for _, b := range m.Content {
			if b.Type == "text" {
				text.WriteString(b.Text)
			}
		}
		return text.String(), nil
	}
}
