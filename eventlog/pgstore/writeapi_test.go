package pgstore_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/api"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// Two write servers share one PostgreSQL store, as two serve --write
// processes on one URL do: a session one creates, the other restores; a
// start on one while the other's restore of the same agent runs its hook
// is 409 agent_busy; the agent goes on through either; no hook runs
// twice.
func TestTwoWriteServersShareOneStore(t *testing.T) {
	db := newDB(t)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	hook := hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: "echo run >> '" + runs + "'; sleep 1"}}
	var urls []string
	for range 2 {
		e := newEngine(t, db.open(t, pgstore.Options{}), dir)
		if err := e.Hooks().Add(hook); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(api.New(e, api.Options{Logger: testkit.Discard}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	post := func(server int, path, body string) (int, map[string]any) {
		t.Helper()
		res, err := http.Post(urls[server]+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, out
	}
	for _, id := range []string{"a", "b"} {
		if status, out := post(0, "/api/sessions", `{"id": "`+id+`", "cwd": "`+dir+`"}`); status != http.StatusCreated {
			t.Fatalf("create %s: %d %v", id, status, out)
		}
	}
	statuses := make([]int, 2)
	bodies := make([]map[string]any, 2)
	var wg sync.WaitGroup
	for i, session := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 1 {
				time.Sleep(300 * time.Millisecond) // the first is in its hook by then
			}
			statuses[i], bodies[i] = post(i, "/api/agents/ide/start", `{"session": "`+session+`"}`)
		}()
	}
	wg.Wait()
	if statuses[0] != http.StatusOK || statuses[1] != http.StatusConflict || bodies[1]["code"] != "agent_busy" {
		t.Fatalf("two starts on two servers: %d %v, %d %v; want the first done, the second agent_busy", statuses[0], bodies[0], statuses[1], bodies[1])
	}
	status, out := post(1, "/api/agents/ide/resume", `{"session": "b"}`)
	if status != http.StatusOK || out["from"] != "a" || out["to"] != "b" {
		t.Fatalf("the other server's resume: %d %v", status, out)
	}
	if data, _ := os.ReadFile(runs); strings.Count(string(data), "run") != 2 {
		t.Errorf("SessionStart ran %d times, want twice: the start and the resume", strings.Count(string(data), "run"))
	}
}
