package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/schema"
)

// TestRmThenVacuumBlanksFires deletes a session on which an agent fired
// events whose command hooks gave context, a block's reason, a stop
// reason, a message for the user, hookSpecificOutput and a
// CLAUDE_ENV_FILE, with input and a matched value of the session's own:
// after the vacuum none of those texts is in the store's file, while the
// agent's log still shows each fire and the audit still counts them.
func TestRmThenVacuumBlanksFires(t *testing.T) {
	ctx := context.Background()
	c := newCLI(t)
	dirA := c.mkdir("a")
	// The hooks read what they answer from files of the session's
	// directory, so that no text is in their commands, which the log keeps
	// as the hooks' names.
	secrets := map[string]string{
		"context":  "CTXSECRET0123",
		"system":   "SYSSECRET0123",
		"stop":     "STOPSECRET0123",
		"reason":   "REASONSECRET0123",
		"specific": "SPECSECRET0123",
		"env":      "ENVSECRET0123",
		"fields":   "FIELDSSECRET0123",
		"value":    "VALUESECRET0123",
	}
	answer, _ := json.Marshal(map[string]any{"continue": false, "stopReason": secrets["stop"], "systemMessage": secrets["system"],
		"hookSpecificOutput": map[string]any{"hookEventName": "Notification", "additionalContext": secrets["context"]}})
	c.writeFile("a/notify.json", string(answer))
	c.writeFile("a/reason.txt", secrets["reason"])
	c.writeFile("a/worktree.txt", "/tmp/"+secrets["specific"])
	c.writeFile("a/env.txt", "export TOKEN="+secrets["env"])
	settings := c.writeFile("fire.json", `{"hooks": {
		"Notification": [{"hooks": [{"type": "command", "command": "cat notify.json"}]}],
		"TaskCreated": [{"hooks": [{"type": "command", "command": "cat reason.txt >&2; exit 2"}]}],
		"WorktreeCreate": [{"hooks": [{"type": "command", "command": "cat worktree.txt"}]}],
		"Setup": [{"hooks": [{"type": "command", "command": "cat env.txt >> \"$CLAUDE_ENV_FILE\""}]}]}}`)

	if err := os.MkdirAll(filepath.Dir(c.store), 0o700); err != nil {
		t.Fatal(err)
	}
	e := testkit.OpenEngine(t, c.store, reprise.Options{TranscriptDir: reprise.DefaultTranscriptDir(c.store), Logger: testkit.Discard})
	hooks, err := hookexec.LoadSettings(settings)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Hooks().AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "a", dirA, "hello")
	testkit.Session(t, e, "b", c.mkdir("b"), "nothing here")
	agent := testkit.Agent(t, e, "ide")
	if _, err := agent.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		event      schema.HookEvent
		id, fields string
	}{
		{schema.HookNotification, "n1", `{"message": "` + secrets["fields"] + `", "notification_type": "` + secrets["value"] + `"}`},
		{schema.HookTaskCreated, "task-1", `{"task_id": "1", "task_subject": "ship"}`},
		{schema.HookWorktreeCreate, "wt-1", `{"name": "feature"}`},
		{schema.HookSetup, "setup-1", `{"trigger": "init"}`},
	} {
		if _, err := agent.Fire(ctx, f.event, f.id, json.RawMessage(f.fields)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := agent.Restore(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	store := readFile(t, c.store)
	for what, s := range secrets {
		if !bytes.Contains(store, []byte(s)) {
			t.Fatalf("the %s text %s is not in the store; the test proves nothing", what, s)
		}
	}

	c.ok("rm", "a")
	c.ok("vacuum")
	store = readFile(t, c.store)
	for what, s := range secrets {
		if bytes.Contains(store, []byte(s)) {
			t.Errorf("the %s text %s is still in the store's file after the vacuum", what, s)
		}
	}
	log := c.ok("log", "--agent", "ide")
	if strings.Count(log, " HookEventRan ") != 4 || strings.Contains(log, "SECRET") {
		t.Errorf("log --agent ide after the vacuum:\n%s", log)
	}
	if out := c.ok("audit"); !strings.HasPrefix(out, "ok:") ||
		!strings.HasSuffix(out, "; fires: Notification 1, Setup 1, TaskCreated 1 (1 blocked), WorktreeCreate 1\n") {
		t.Errorf("audit after the vacuum:\n%s", out)
	}
}
