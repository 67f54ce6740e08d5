package reprise_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// TestEachSessionStartRunHasItsOwnEnvFile checks that every SessionStart
// run of one session gets a CLAUDE_ENV_FILE of its own, so that two agents
// starting a session at once never write one file, and that the run's
// record names the file its hooks were given and holds what they wrote.
func TestEachSessionStartRunHasItsOwnEnvFile(t *testing.T) {
	ctx := context.Background()
	e, path := testkit.NewEngine(t, reprise.Options{})
	testkit.Session(t, e, "s", "", "hello")
	testkit.Session(t, e, "t", "", "hello")
	hook := `echo "export RUN=$$" >> "$CLAUDE_ENV_FILE"; printf %s "$CLAUDE_ENV_FILE"`
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: hook}}); err != nil {
		t.Fatal(err)
	}
	a := testkit.Agent(t, e, "ide")
	first, err := a.Start(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Restore(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	second, err := a.Restore(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*reprise.Restore{first, second} {
		if r.EnvFile == "" || !strings.Contains(r.Context, r.EnvFile) || !strings.HasPrefix(r.Env, "export RUN=") {
			t.Fatalf("restore %s recorded env file %q and env %q; its hook was given %q", r.ID, r.EnvFile, r.Env, r.Context)
		}
	}
	if first.EnvFile == second.EnvFile || first.Env == second.Env {
		t.Fatalf("two runs shared the env file %s: %q, %q", first.EnvFile, first.Env, second.Env)
	}
	// The record survives a reopen: it is in the log, not in the Engine.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	h := testkit.Agent(t, testkit.OpenEngine(t, path, reprise.Options{}), "ide").History()
	if got := h[len(h)-1].EnvFile; got != second.EnvFile {
		t.Fatalf("the log names env file %q, want %q", got, second.EnvFile)
	}
}
