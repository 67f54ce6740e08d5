package reprise_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/schema"
)

const pastedSecret = "here is my secret key sk-live-4f9a0c2e7b1d"

// intents returns the PromptHookStarted events of agent ide in store.
func intents(t *testing.T, store eventlog.Store) []*schema.PromptHookStarted {
	t.Helper()
	var out []*schema.PromptHookStarted
	for _, ev := range testkit.Events(t, store) {
		if ev.Type != schema.TypePromptHookStarted {
			continue
		}
		p, err := schema.Decode(ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.(*schema.PromptHookStarted))
	}
	return out
}

func digest(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// fileHolds reports whether the bbolt file at path holds text anywhere.
func fileHolds(t *testing.T, path, text string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(data, []byte(text))
}

// TestABlockedPromptLeavesNoTextInTheLog has a real UserPromptSubmit
// command hook block a prompt holding a secret: no byte of the store's
// file holds its text, the intent keeps its SHA-256 and length, and a
// prompt the hook lets through is still kept as the user's message.
func TestABlockedPromptLeavesNoTextInTheLog(t *testing.T) {
	ctx := context.Background()
	e, path := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
	testkit.Session(t, e, "a", t.TempDir(), "hello")
	agent := testkit.Agent(t, e, "ide")
	if _, err := agent.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	guard := `grep -q 'sk-live' && { echo 'the prompt holds a key' >&2; exit 2; }; true`
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.UserPromptSubmit, Body: hookexec.Command{Line: guard}, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	p, err := agent.Prompt(ctx, pastedSecret)
	if err != nil || !p.Blocked {
		t.Fatalf("the secret's prompt: %+v, %v; want blocked", p, err)
	}
	if p, err := agent.Prompt(ctx, "run the tests"); err != nil || p.Blocked {
		t.Fatalf("a harmless prompt: %+v, %v; want kept", p, err)
	}
	conv, err := e.Conversation(ctx, "a")
	if err != nil || len(conv) != 2 || conv[1].Content[0].Text != "run the tests" {
		t.Fatalf("the conversation: %+v, %v; want hello and the harmless prompt", conv, err)
	}
	got := intents(t, e.Store())
	if len(got) != 2 {
		t.Fatalf("%d prompt intents, want 2", len(got))
	}
	if in := got[0]; in.Prompt != "" || in.PromptSHA256 != digest(pastedSecret) || in.PromptLen != len(pastedSecret) {
		t.Errorf("the blocked prompt's intent: %+v; want no text, its SHA-256 and length", in)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if fileHolds(t, path, "4f9a0c2e7b1d") {
		t.Error("the store's file holds the blocked prompt's text")
	}
}

// TestVacuumForgetsBlockedPromptsOfEarlierStores writes, as builds before
// the digest did, a blocked prompt whose intent holds its text: a vacuum
// blanks that text, leaving the digest, while the session and the rest of
// the log stay, the audit stays clean, and the file no longer holds it.
func TestVacuumForgetsBlockedPromptsOfEarlierStores(t *testing.T) {
	ctx := context.Background()
	e, path := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
	testkit.Session(t, e, "a", t.TempDir(), "hello")
	if _, err := testkit.Agent(t, e, "ide").Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	store := e.Store()
	head, err := store.Head(ctx, "agent/ide")
	if err != nil {
		t.Fatal(err)
	}
	var recs []eventlog.Record
	for _, p := range []schema.Payload{
		&schema.PromptHookStarted{Session: "a", Prompt: pastedSecret, PromptID: "p1", Hooks: []string{"guard"}},
		&schema.PromptHookRan{Session: "a", Blocked: true, Reason: "the prompt holds a key",
			Outcomes: []schema.HookOutcome{{Name: "guard", Status: schema.HookOK, ExitCode: 2}}},
	} {
		rec, err := schema.NewRecord("agent/ide", p, time.Now().UnixNano(), "run-1")
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if _, err := store.Append(ctx, []eventlog.Expect{{Stream: "agent/ide", Seq: head}}, recs); err != nil {
		t.Fatal(err)
	}
	before := len(testkit.Events(t, store))

	rep, err := e.Vacuum(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rewritten != 1 || len(rep.Sessions) != 0 || rep.Events != 0 {
		t.Errorf("vacuum: %+v; want the one intent blanked and no session removed", rep)
	}
	got := intents(t, store)
	if len(got) != 1 || got[0].Prompt != "" || got[0].PromptSHA256 != digest(pastedSecret) || got[0].PromptLen != len(pastedSecret) {
		t.Errorf("the intent after the vacuum: %+v; want no text, its SHA-256 and length", got)
	}
	if after := len(testkit.Events(t, store)); after != before+1 {
		t.Errorf("%d events after the vacuum, want the %d there were and its record", after, before)
	}
	if conv, err := e.Conversation(ctx, "a"); err != nil || len(conv) != 1 {
		t.Errorf("session a after the vacuum: %d messages, %v", len(conv), err)
	}
	audit, err := reprise.Audit(ctx, store)
	if err != nil || len(audit.Violations) != 0 {
		t.Errorf("audit after the vacuum: %+v, %v", audit, err)
	}
	if again, err := e.Vacuum(ctx); err != nil || again.Rewritten != 0 {
		t.Errorf("a second vacuum: %+v, %v; want nothing left", again, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if fileHolds(t, path, "4f9a0c2e7b1d") {
		t.Error("the store's file still holds the blocked prompt's text")
	}
}
