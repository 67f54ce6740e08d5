package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/web"
	"github.com/reprise-dev/reprise/web/internal/fixture"
)

// healthJSON is /api/hooks's answer as a client reads it.
type healthJSON struct {
	Window, By string
	Hooks      []struct {
		Name, Source, Event, Type              string
		Runs, OK, Failed, Blocked, Interrupted int
		TimedOut                               int     `json:"timed_out"`
		P50MS                                  float64 `json:"p50_ms"`
		MaxMS                                  float64 `json:"max_ms"`
		Spark                                  []int
		FailedRuns                             []struct{ Status, Link string } `json:"failed_runs"`
	}
}

// The health page counts each hook's runs by how they ended, with their
// durations, lists those that failed most first and links each failed
// run to its event; it follows the log as it grows, with one Hooks
// shared by handlers made for each request.
func TestHooksPageShowsTheHealthOfEveryHook(t *testing.T) {
	s := fixture.New(t)
	shared := web.NewHooks()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		web.New(s.Engine, web.Options{Hooks: shared}).ServeHTTP(w, r) // afresh, as serve makes them
	}))
	t.Cleanup(srv.Close)
	v := &served{s, srv}

	var res healthJSON
	v.api(t, "/hooks", &res)
	if res.Window != "7d" || res.By != "hook" || len(res.Hooks) == 0 {
		t.Fatalf("/api/hooks = %+v; want the 7d window by hook", res)
	}
	find := func(name, event string) int {
		for i, h := range res.Hooks {
			if h.Name == name && h.Event == event {
				return i
			}
		}
		t.Fatalf("/api/hooks lists no %s hook %q: %+v", event, name, res.Hooks)
		return -1
	}
	failed := res.Hooks[find(s.Hooks["failed"], "SessionStart")]
	if failed.Failed == 0 || failed.Type != "command" || failed.Source != "fixture" || len(failed.FailedRuns) != failed.Failed+failed.Interrupted {
		t.Errorf("the failing hook: %+v; want its failures, each listed", failed)
	}
	if i := find(s.Hooks["timeout"], "SessionStart"); res.Hooks[i].TimedOut == 0 || res.Hooks[i].MaxMS < 250 {
		t.Errorf("the hook that times out: %+v; want a timeout of about 300ms", res.Hooks[i])
	}
	if res.Hooks[0].Failed+res.Hooks[0].TimedOut+res.Hooks[0].Interrupted == 0 {
		t.Errorf("the first hook listed never failed: %+v", res.Hooks[0])
	}
	path, anchor, _ := strings.Cut(failed.FailedRuns[0].Link, "#")
	if !strings.Contains(v.page(t, path), `id="`+anchor+`"`) {
		t.Errorf("a failed run's link %s does not lead to its event", failed.FailedRuns[0].Link)
	}
	body := v.page(t, "/hooks")
	contains(t, "the hooks page", body, "failed run(s)", `<svg class="spark"`, `aria-current="page">Hooks`, "<code>echo broken &gt;&amp;2; exit 3</code>")

	// A run recorded after the first request is counted at the next.
	if err := s.Engine.Hooks().Add(hookexec.Hook{Event: hookexec.SessionStart, Name: "late-check", Source: "function",
		Body: hookexec.SessionStartFunc(func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			time.Sleep(2 * time.Millisecond)
			return hookexec.SessionStartOutput{}, nil
		})}); err != nil {
		t.Fatal(err)
	}
	if _, err := testkit.Agent(t, s.Engine, "late").Start(context.Background(), s.Work); err != nil {
		t.Fatal(err)
	}
	res = healthJSON{}
	v.api(t, "/hooks", &res)
	late := res.Hooks[find("late-check", "SessionStart")]
	if late.Runs != 1 || late.OK != 1 || late.Type != "function" || late.P50MS < 2 {
		t.Errorf("the hook run after the first request: %+v; want one ok run of 2ms or more", late)
	}

	res = healthJSON{}
	v.api(t, "/hooks?by=event&window=all", &res)
	for _, h := range res.Hooks {
		if h.Name != "" || h.Event == "" {
			t.Errorf("a group by event: %+v", h)
		}
	}
	for _, bad := range []string{"window=2d", "by=colour"} {
		if status, _, body := v.get(t, "/api/hooks?"+bad, ""); status != http.StatusBadRequest {
			t.Errorf("/api/hooks?%s = %d %s, want 400", bad, status, body)
		}
	}
}
