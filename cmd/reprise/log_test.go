package main

import (
	"encoding/json"
	"strings"
	"testing"

	"time"

	"github.com/reprise-dev/reprise/internal/testkit"
)

// validTime reports whether s is an RFC 3339 time in UTC.
func validTime(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil && strings.HasSuffix(s, "Z")
}

// logJSON runs log --json with args and decodes its lines.
func logJSON(t *testing.T, c *cli, args ...string) []eventJSON {
	t.Helper()
	var evs []eventJSON
	for line := range strings.Lines(c.ok(append([]string{"log", "--json"}, args...)...)) {
		evs = append(evs, decodeEvent(t, line))
	}
	return evs
}

// decodeEvent decodes one line of log --json.
func decodeEvent(t *testing.T, line string) eventJSON {
	t.Helper()
	var ev eventJSON
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	return ev
}

func TestLogSession(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hello <world>", "hi")
	evs := logJSON(t, c, "s")
	if len(evs) != 3 {
		t.Fatalf("%d events, want 3", len(evs))
	}
	for i, ev := range evs {
		if ev.Stream != "session/s" || ev.Seq != uint64(i+1) || ev.Position == 0 || !validTime(ev.Time) || ev.RestoreID != "" {
			t.Fatalf("event %d = %+v", i, ev)
		}
	}
	if evs[0].Type != "SessionCreated" || evs[0].Payload["id"] != "s" || evs[0].Payload["cwd"] != c.dir {
		t.Fatalf("SessionCreated = %+v", evs[0])
	}
	msg := evs[1].Payload["msg"].(map[string]any)
	content := msg["content"].([]any)[0].(map[string]any)
	if evs[1].Type != "MessageAppended" || msg["role"] != "user" || content["text"] != "hello <world>" || msg["uuid"] == "" {
		t.Fatalf("MessageAppended = %+v", evs[1])
	}
	if parent := evs[2].Payload["msg"].(map[string]any)["parent"]; parent != msg["uuid"] {
		t.Fatalf("parent = %v, want %v", parent, msg["uuid"])
	}

	out := c.ok("log", "s")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "SessionCreated") || !strings.Contains(lines[1], `user "hello <world>"`) {
		t.Fatalf("log:\n%s", out)
	}
	c.fails(exitFailure, "log", "nope")
}

func TestLogAgent(t *testing.T) {
	c := newCLI(t)
	c.session("a", "hello")
	c.session("b")
	settings := c.writeFile("hooks.json", testkit.Settings(t, []string{"echo context"}, []string{"true"}))
	c.ok("start", "--agent", "ide", "--settings", settings, "a")
	c.ok("resume", "--agent", "ide", "--settings", settings, "b")
	evs := logJSON(t, c, "--agent", "ide")
	var types []string
	for _, ev := range evs {
		types = append(types, string(ev.Type))
		if ev.Stream != "agent/ide" || ev.RestoreID == "" {
			t.Fatalf("event = %+v", ev)
		}
	}
	want := "SessionLoaded SessionStartHookStarted SessionStartHookRan ContextInjected " +
		"SaveAttempted SessionEndHookStarted SessionEndHookRan SessionLoaded SessionStartHookStarted SessionStartHookRan ContextInjected"
	if strings.Join(types, " ") != want {
		t.Fatalf("types = %v", types)
	}
	ran := evs[9].Payload
	outcome := ran["outcomes"].([]any)[0].(map[string]any)
	if ran["context"] != "context" || outcome["name"] != "echo context" || outcome["status"] != "ok" || outcome["source"] != settings {
		t.Fatalf("SessionStartHookRan payload = %+v", ran)
	}
	if evs[4].RestoreID != evs[10].RestoreID || evs[0].RestoreID == evs[4].RestoreID {
		t.Fatal("restore ids do not group the restores")
	}
	out := c.ok("log", "--agent", "ide")
	if strings.Count(out, "\n") != 11 || !strings.Contains(out, "SaveAttempted            a -> b saved=0") {
		t.Fatalf("log --agent:\n%s", out)
	}
	c.fails(exitFailure, "log", "--agent", "nobody")
}
