package main

import (
	"strings"
	"testing"
)

func TestReplayFormats(t *testing.T) {
	c := newCLI(t)
	c.session("s", "Why does it flake?", "It races.\nAdd a lock.")
	c.ok("append", "s", "--role", "user", "--meta", "hook context")

	out := c.ok("replay", "s")
	for _, want := range []string{
		"session s, cwd " + c.dir + ", 3 message(s)",
		"[1] user  ", "Why does it flake?",
		"[2] assistant  ", "It races.\nAdd a lock.\n",
		"[3] user (meta)  ", "hook context",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("replay lacks %q:\n%s", want, out)
		}
	}

	var conv conversationJSON
	c.okJSON(&conv, "replay", "s")
	var again conversationJSON
	c.okJSON(&again, "replay", "s", "--format", "json")
	if conv.Session != "s" || conv.Cwd != c.dir || !validTime(conv.Created) || len(conv.Messages) != 3 ||
		conv.Messages[1].ParentUUID != conv.Messages[0].UUID || !conv.Messages[2].Meta || !validTime(conv.Messages[2].Time) ||
		len(again.Messages) != 3 || again.Messages[2].UUID != conv.Messages[2].UUID {
		t.Fatalf("replay --json = %+v", conv)
	}

	claude := c.ok("replay", "s", "--format", "claude")
	if export := c.ok("export", "s"); claude != export || strings.Count(claude, "\n") != 3 || !strings.Contains(claude, `"isMeta":true`) {
		t.Fatalf("replay --format claude:\n%s\nexport:\n%s", claude, export)
	}
	c.fails(exitFailure, "replay", "nope")
	c.fails(exitFailure, "replay", "nope", "--format", "claude")
}
