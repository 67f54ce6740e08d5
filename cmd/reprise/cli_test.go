package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var commands = []string{"new", "append", "start", "resume", "sessions", "log", "replay", "audit", "import", "export", "hooks", "clear", "compact", "fork", "end", "stop", "prompt", "demo"}

func TestHelpEverywhere(t *testing.T) {
	c := newCLI(t)
	root := c.ok("--help")
	for _, name := range commands {
		if !strings.Contains(root, "  "+name+" ") {
			t.Errorf("reprise --help does not list %s:\n%s", name, root)
		}
		out := c.ok(name, "--help")
		if !strings.Contains(out, "Examples:\n  reprise "+name) || !strings.Contains(out, "--store") || !strings.Contains(out, "--json") {
			t.Errorf("reprise %s --help lacks examples or global flags:\n%s", name, out)
		}
	}
}

func TestBadUsageExitsWith2(t *testing.T) {
	c := newCLI(t)
	c.session("s1", "hello")
	for _, args := range [][]string{
		{},
		{"sesions"},
		{"sessions", "extra"},
		{"sessions", "--no-such-flag"},
		{"new", "--id", "../escape"},
		{"new", "--id", strings.Repeat("x", 129)},
		{"new", "--id", "tab\there"},
		{"append", "s1", "--role", "system", "hi"},
		{"append", "s1", "hi"},
		{"append", "s1", "--role", "user"},
		{"append", "s1", "--role", "user", "a", "b"},
		{"start", "s1"},
		{"start", "--agent", "a/b", "s1"},
		{"resume", "--agent", "ide"},
		{"log"},
		{"log", "s1", "--agent", "ide"},
		{"replay", "s1", "--format", "xml"},
		{"replay", "s1", "--format", "text", "--json"},
		{"import"},
		{"import", "a.jsonl", "--id", "a..b"},
		{"export"},
		{"hooks", "--event", "PreToolUse"},
		{"hooks", "--source", ""},
		{"demo", "--json"},
	} {
		r := c.fails(exitUsage, args...)
		if !strings.Contains(r.stderr, "--help' for usage") {
			t.Errorf("reprise %s: no usage hint: %s", strings.Join(args, " "), r.stderr)
		}
	}
	if r := c.run("sesions"); !strings.Contains(r.stderr, "did you mean sessions?") {
		t.Errorf("no suggestion: %s", r.stderr)
	}
}

func TestStoreLocation(t *testing.T) {
	c := newCLI(t)
	// REPRISE_STORE, set by newCLI.
	c.ok("new", "--id", "in-env-store")
	if _, err := os.Stat(c.store); err != nil {
		t.Fatalf("store not at $REPRISE_STORE: %v", err)
	}
	// --store wins over REPRISE_STORE.
	other := filepath.Join(c.dir, "other.db")
	c.ok("--store", other, "new", "--id", "in-other")
	if out := c.ok("--store", other, "sessions"); !strings.Contains(out, "in-other") || strings.Contains(out, "in-env-store") {
		t.Fatalf("--store ignored:\n%s", out)
	}
	// Without either: $XDG_STATE_HOME/reprise/reprise.db, else
	// ~/.local/state/reprise/reprise.db.
	os.Unsetenv(storeEnv) // restored when the test ends
	c.ok("new", "--id", "in-xdg")
	if _, err := os.Stat(filepath.Join(os.Getenv("XDG_STATE_HOME"), "reprise", "reprise.db")); err != nil {
		t.Fatalf("store not under XDG_STATE_HOME: %v", err)
	}
	os.Unsetenv("XDG_STATE_HOME")
	c.ok("new", "--id", "in-home")
	if _, err := os.Stat(filepath.Join(c.home, ".local", "state", "reprise", "reprise.db")); err != nil {
		t.Fatalf("store not under ~/.local/state: %v", err)
	}
	// A read-only command does not create a store.
	r := c.fails(exitFailure, "--store", filepath.Join(c.dir, "none.db"), "sessions")
	if !strings.Contains(r.stderr, "no store at") {
		t.Fatalf("stderr = %s", r.stderr)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n$`)

func TestNewAndAppend(t *testing.T) {
	c := newCLI(t)
	id := c.ok("new")
	if !uuidRE.MatchString(id) {
		t.Fatalf("new printed %q, want a UUID", id)
	}
	id = strings.TrimSpace(id)
	var created struct{ Session, Cwd string }
	// A working directory must exist: hooks run in it.
	if r := c.fails(exitFailure, "new", "--id", "named", "--cwd", "sub/dir"); !strings.Contains(r.stderr, "working directory does not exist") {
		t.Fatalf("new --cwd missing: %s", r.stderr)
	}
	if err := os.MkdirAll(filepath.Join(c.dir, "sub", "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	c.okJSON(&created, "new", "--id", "named", "--cwd", "sub/dir")
	if created.Session != "named" || created.Cwd != filepath.Join(c.dir, "sub", "dir") {
		t.Fatalf("new --json = %+v", created)
	}
	c.fails(exitFailure, "new", "--id", "named")

	first := strings.TrimSpace(c.ok("append", id, "--role", "user", "hello"))
	r := c.runIn(strings.NewReader("from stdin\n"), "append", id, "--role", "assistant", "-")
	if r.code != exitOK {
		t.Fatalf("append -: %d %s", r.code, r.stderr)
	}
	var meta messageJSON
	c.okJSON(&meta, "append", id, "--role", "user", "--meta", "context")
	if !meta.Meta || meta.Role != "user" || meta.UUID == "" || meta.ParentUUID != strings.TrimSpace(r.stdout) {
		t.Fatalf("append --json = %+v", meta)
	}
	c.fails(exitFailure, "append", "missing", "--role", "user", "hi")

	var conv conversationJSON
	c.okJSON(&conv, "replay", id)
	var texts []string
	for _, m := range conv.Messages {
		texts = append(texts, m.Role+":"+m.Content[0].(map[string]any)["text"].(string))
	}
	if got := strings.Join(texts, " | "); got != "user:hello | assistant:from stdin | user:context" || conv.Messages[0].UUID != first {
		t.Fatalf("conversation = %s", got)
	}
	if conv.Cwd != c.dir {
		t.Fatalf("cwd = %q, want the process's %q", conv.Cwd, c.dir)
	}
}

func TestSessions(t *testing.T) {
	c := newCLI(t)
	c.session("one", "a", "b")
	c.session("two")
	c.ok("start", "--agent", "ide", "--no-default-settings", "two")
	out := c.ok("sessions")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.HasPrefix(lines[1], "one ") || !strings.HasPrefix(lines[2], "two ") {
		t.Fatalf("sessions:\n%s", out)
	}
	var list []sessionJSON
	c.okJSON(&list, "sessions")
	if len(list) != 2 || list[0].ID != "one" || list[0].Messages != 2 || list[0].Cwd != c.dir ||
		list[0].LastRestored != "" || list[1].LastRestored == "" || !validTime(list[1].Created) {
		t.Fatalf("sessions --json = %+v", list)
	}
}
