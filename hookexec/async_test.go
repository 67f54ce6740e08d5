package hookexec

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/schema"
)

// collector is a Background that hands out ids and keeps how each hook
// ended.
type collector struct {
	ends chan AsyncEnd
	ids  []string
}

func newCollector() *collector { return &collector{ends: make(chan AsyncEnd, 8)} }

func (c *collector) background(h Hook) (string, func(AsyncEnd)) {
	id := "async-" + string(rune('a'+len(c.ids)))
	c.ids = append(c.ids, id)
	return id, func(e AsyncEnd) { c.ends <- e }
}

func (c *collector) next(t *testing.T) AsyncEnd {
	t.Helper()
	select {
	case e := <-c.ends:
		return e
	case <-time.After(20 * time.Second):
		t.Fatal("the async hook never ended")
		return AsyncEnd{}
	}
}

// asyncSettings loads one UserPromptSubmit hook of the given keys from a
// settings file, as a host configures it.
func asyncSettings(t *testing.T, keys string) Hook {
	t.Helper()
	path := filepath.Join(t.TempDir(), "settings.json")
	body := `{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", ` + keys + `}]}]}}`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	hooks, err := LoadSettings(path)
	if err != nil || len(hooks) != 1 {
		t.Fatalf("load: %v, %d hooks", err, len(hooks))
	}
	return hooks[0]
}

// An async hook does not hold its step: the run returns while the hook
// still runs, with the outcome "async" under the id Background gave, and
// its exit code 2 blocks nothing. How it ended, with the context it
// printed, comes later; the step's context ending does not stop it.
func TestAsyncHookRunsInTheBackground(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	gate := filepath.Join(t.TempDir(), "gate")
	h := asyncSettings(t, `"async": true, "command": "while [ ! -e '`+gate+`' ]; do sleep 0.05; done; cat >/dev/null; echo '{\"hookSpecificOutput\":{\"hookEventName\":\"UserPromptSubmit\",\"additionalContext\":\"from the background\"}}'"`)
	if !h.Async {
		t.Fatal("async not read from the settings file")
	}
	blocker := asyncSettings(t, `"async": true, "command": "echo no >&2; exit 2"`)
	c := newCollector()
	env.Background = c.background
	ctx, cancel := context.WithCancel(context.Background())
	outcomes, blocked, _, text := RunPrompt(ctx, []Hook{h, blocker}, PromptInput{SessionID: "s", Prompt: "hi"}, env)
	cancel()
	if len(outcomes) != 2 || outcomes[0].Status != schema.HookAsync || outcomes[0].Async != "async-a" || outcomes[1].Async != "async-b" {
		t.Fatalf("outcomes %+v, want two async outcomes with their ids", outcomes)
	}
	if e := c.next(t); e.Outcome.Async != "async-b" || e.Outcome.Decision != "block" || e.Context != "" {
		t.Fatalf("the exit-2 hook's end: %+v", e)
	}
	if blocked || text != "" {
		t.Fatalf("the step got blocked=%v context %q from a hook still running", blocked, text)
	}
	select {
	case e := <-c.ends:
		t.Fatalf("ended before it was let go: %+v", e)
	case <-time.After(100 * time.Millisecond):
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e := c.next(t)
	if e.Outcome.Status != schema.HookOK || e.Outcome.Async != "async-a" || e.Context != "from the background" || e.Rewake {
		t.Fatalf("end %+v", e)
	}
}

// Without a Background the hook is waited for, as any other.
func TestAsyncHookWithoutBackgroundIsWaitedFor(t *testing.T) {
	t.Parallel()
	h := asyncSettings(t, `"async": true, "command": "echo waited"`)
	outcomes, _, _, text := RunPrompt(context.Background(), []Hook{h}, PromptInput{SessionID: "s", Prompt: "hi"}, testEnv(t))
	if len(outcomes) != 1 || outcomes[0].Status != schema.HookOK || text != "waited" {
		t.Fatalf("outcomes %+v, context %q", outcomes, text)
	}
}

// An asyncRewake hook that exits 2 asks for the model to be woken, with
// Claude Code's blocking-error line and what it wrote to stderr; one that
// exits 0 gives the model nothing, whatever it printed.
func TestAsyncRewakeHookWakesOnExitTwo(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	c := newCollector()
	env.Background = c.background
	two := asyncSettings(t, `"asyncRewake": true, "command": "echo 'tests fail' >&2; exit 2"`)
	zero := asyncSettings(t, `"asyncRewake": true, "command": "echo fine"`)
	outcomes, _, _, _ := RunPrompt(context.Background(), []Hook{two, zero}, PromptInput{SessionID: "s", Prompt: "hi"}, env)
	if len(outcomes) != 2 || outcomes[0].Status != schema.HookAsync || outcomes[1].Status != schema.HookAsync {
		t.Fatalf("outcomes %+v", outcomes)
	}
	got := map[string]AsyncEnd{}
	for range 2 {
		e := c.next(t)
		got[e.Outcome.Async] = e
	}
	woke := got[outcomes[0].Async]
	if !woke.Rewake || woke.Context != `Stop hook blocking error from command "echo 'tests fail' >&2; exit 2": tests fail` {
		t.Fatalf("exit 2: %+v", woke)
	}
	if quiet := got[outcomes[1].Async]; quiet.Rewake || quiet.Context != "" || quiet.Outcome.Status != schema.HookOK {
		t.Fatalf("exit 0: %+v", quiet)
	}
}

// An async hook ends by its own timeout, its process group killed, and
// its "onFailure": "block" blocks nothing, as in Claude Code.
func TestAsyncHookTimesOutOnItsOwn(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	c := newCollector()
	env.Background = c.background
	h := asyncSettings(t, `"async": true, "onFailure": "block", "timeout": 0.3, "command": "sleep 30"`)
	began := time.Now()
	_, blocked, _, _ := RunPrompt(context.Background(), []Hook{h}, PromptInput{SessionID: "s", Prompt: "hi"}, env)
	if blocked {
		t.Fatal("an async hook's onFailure blocked the prompt")
	}
	e := c.next(t)
	if e.Outcome.Status != schema.HookTimedOut || !strings.Contains(e.Outcome.Error, "timed out") {
		t.Fatalf("end %+v", e)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("the hook was not stopped at its timeout: %s", took)
	}
}
