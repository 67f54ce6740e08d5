package reprise_test

import (
	"context"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// TestFunctionHooksSeeTheSessionsMessages checks that function hooks get
// the session's saved messages, and that they get a view of the Engine's
// own, not a copy per call: two runs on an unchanged session see the same
// backing array.
func TestFunctionHooksSeeTheSessionsMessages(t *testing.T) {
	ctx := t.Context()
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Files: reprise.NewMemoryFiles()})
	defer e.Close()
	var seen [][]schema.Message
	e.Hooks().OnSessionStart("reader", "", func(_ context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		seen = append(seen, in.Messages)
		return hookexec.SessionStartOutput{}, nil
	})
	e.Hooks().OnSessionEnd("reader", "", func(_ context.Context, in hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
		seen = append(seen, in.Messages)
		return hookexec.SessionEndOutput{}, nil
	})
	for _, id := range []string{"a", "b"} {
		if _, err := e.CreateSession(ctx, id, t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	for _, text := range []string{"one", "two"} {
		if _, err := e.Append(ctx, "a", reprise.Text("user", text)); err != nil {
			t.Fatal(err)
		}
	}
	a, err := e.Agent(ctx, "ide")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Restore(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	// Start on a, then SessionEnd on a and SessionStart on b.
	if len(seen) != 3 || len(seen[0]) != 2 || len(seen[1]) != 2 || len(seen[2]) != 0 {
		t.Fatalf("hooks saw %d runs: %v", len(seen), seen)
	}
	if schemaText(seen[0][1]) != "two" || &seen[0][0] != &seen[1][0] {
		t.Fatalf("SessionStart and SessionEnd on an unchanged session saw different arrays or wrong messages")
	}
}

func schemaText(m schema.Message) string {
	if len(m.Content) == 0 {
		return ""
	}
	return m.Content[0].Text
}

// TestCancelledPromptIsNotKept checks that a prompt whose UserPromptSubmit
// hooks were cut short by the caller's cancellation is not kept: the gate
// did not answer, so it did not let the prompt through.
func TestCancelledPromptIsNotKept(t *testing.T) {
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{Files: reprise.NewMemoryFiles()})
	defer e.Close()
	if _, err := e.CreateSession(t.Context(), "a", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	e.Hooks().OnUserPromptSubmit("gate", func(hctx context.Context, _ hookexec.PromptInput) (hookexec.PromptOutput, error) {
		cancel()
		<-hctx.Done()
		return hookexec.PromptOutput{}, hctx.Err()
	})
	a, err := e.Agent(t.Context(), "ide")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Start(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	res, err := a.Prompt(ctx, "do it")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Blocked || res.Message != nil {
		t.Fatalf("result %+v: a cancelled gate let the prompt through", res)
	}
	msgs, err := e.Conversation(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 0 {
		t.Fatalf("the conversation holds %d messages, want none", len(msgs))
	}
}
