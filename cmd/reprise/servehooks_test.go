package main

import (
	"encoding/json"
	"net/http"
	"testing"
)

// serve's health page counts the demo's hook runs, and counts the runs of
// a restore made while it serves at the next request.
func TestServeCountsHookRuns(t *testing.T) {
	c := newCLI(t)
	c.mkdir("state")
	c.ok("demo", "--store", c.store)
	s := startServe(t, "serve", "--addr", "127.0.0.1:0")
	runs := func() int {
		t.Helper()
		status, body := s.get(t, "/api/hooks?window=all")
		if status != http.StatusOK {
			t.Fatalf("/api/hooks = %d %s", status, body)
		}
		var res struct{ Hooks []struct{ Runs int } }
		if err := json.Unmarshal([]byte(body), &res); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, h := range res.Hooks {
			n += h.Runs
		}
		return n
	}
	before := runs()
	if before == 0 {
		t.Fatal("/api/hooks counts no run of the demo's hooks")
	}
	settings := c.writeFile("settings.json", `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo counted"}]}]}}`)
	c.session("health", "hello")
	c.ok("start", "--agent", "health-check", "--settings", settings, "health")
	if after := runs(); after != before+1 {
		t.Errorf("after a start with one hook, /api/hooks counts %d runs; want %d", after, before+1)
	}
}
