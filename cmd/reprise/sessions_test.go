package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sessionIDs returns the ids of sessions --json with args.
func (c *cli) sessionIDs(args ...string) string {
	c.t.Helper()
	var list []sessionJSON
	c.okJSON(&list, append([]string{"sessions"}, args...)...)
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.ID
	}
	return strings.Join(ids, ",")
}

func TestSessionsFilters(t *testing.T) {
	c := newCLI(t)
	app := c.mkdir("app")
	c.mkdir("app/sub")
	c.mkdir("apple")
	for _, s := range [][2]string{{"a1", app}, {"a2", filepath.Join(app, "sub")}, {"b1", app + "le"}, {"c1", c.dir}} {
		c.ok("new", "--id", s[0], "--cwd", s[1])
	}
	flags := []string{"--no-default-settings"}
	c.ok(append([]string{"start", "--agent", "ide", "a2"}, flags...)...)
	c.ok(append([]string{"resume", "--agent", "ide", "b1"}, flags...)...)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "a1,a2,b1,c1"},
		{[]string{"--cwd", app}, "a1,a2"},
		{[]string{"--cwd", app + "/"}, "a1,a2"},
		{[]string{"--cwd", "app"}, "a1,a2"}, // relative to the working directory
		{[]string{"--agent", "ide"}, "a2,b1"},
		{[]string{"--agent", "id", "--cwd", app}, "a2"}, // a prefix, and both filters
		{[]string{"--since", "1h"}, "a1,a2,b1,c1"},
		{[]string{"--since", "2099-01-01"}, ""},
		{[]string{"--until", "2000-01-01T00:00:00Z"}, ""},
		{[]string{"--until", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, "a1,a2,b1,c1"},
		{[]string{"--since", "7d", "--until", "0s"}, "a1,a2,b1,c1"},
	} {
		if got := c.sessionIDs(tc.args...); got != tc.want {
			t.Errorf("sessions %s = %q, want %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
	for _, bad := range []string{"yesterday", "-5m", "3w"} {
		r := c.fails(exitUsage, "sessions", "--since", bad)
		if !strings.Contains(r.stderr, "give an RFC 3339 time") {
			t.Errorf("--since %s: %s", bad, r.stderr)
		}
	}
	if r := c.fails(exitFailure, "sessions", "--agent", "nobody"); !strings.Contains(r.stderr, "agent nobody has no events") {
		t.Errorf("--agent nobody: %s", r.stderr)
	}
}

func TestSessionsTitle(t *testing.T) {
	c := newCLI(t)
	c.session("typed", "Why does TestRefund flake?\nIt fails on CI only.", "Because of the clock.")
	c.ok("new", "--id", "empty")
	transcript := c.writeFile("t.jsonl", strings.Join([]string{
		`{"type":"summary","summary":"Refund flake hunt","leafUuid":"u2"}`,
		`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"old","timestamp":"2026-11-20T10:00:00Z","cwd":"/src","message":{"role":"user","content":"first prompt"}}`,
		`{"type":"assistant","uuid":"u2","parentUuid":"u1","sessionId":"old","timestamp":"2026-11-20T10:00:01Z","cwd":"/src","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}`,
	}, "\n")+"\n")
	c.ok("import", "--id", "imported", "--cwd", c.dir, transcript)

	var list []sessionJSON
	c.okJSON(&list, "sessions")
	titles := map[string]string{}
	for _, s := range list {
		titles[s.ID] = s.Title
	}
	if titles["typed"] != "Why does TestRefund flake?" || titles["empty"] != "" || titles["imported"] != "Refund flake hunt" {
		t.Fatalf("titles = %q", titles)
	}
	out := c.ok("sessions")
	lines := strings.Split(out, "\n")
	if !strings.HasSuffix(lines[0], "LAST RESTORED  TITLE") || !strings.HasSuffix(lines[1], "  Why does TestRefund flake?") ||
		!strings.HasSuffix(lines[2], "  -") || !strings.HasSuffix(lines[3], "  Refund flake hunt") {
		t.Fatalf("sessions:\n%s", out)
	}
}

func TestSessionsFlagsParse(t *testing.T) {
	o := mustParse(t, newSessionsCmd, "sessions", "--cwd", "src", "--agent", "ide", "--since", "7d", "--until", "2026-11-20")
	if o.cwd != "src" || o.agent != "ide" || o.since != "7d" || o.until != "2026-11-20" {
		t.Fatalf("options = %+v", *o)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f, err := o.filter(now)
	if err != nil {
		t.Fatal(err)
	}
	if f.since != now.AddDate(0, 0, -7).UnixNano() || f.until != time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC).UnixNano() || !filepath.IsAbs(f.cwd) {
		t.Fatalf("filter = %+v", f)
	}
}
