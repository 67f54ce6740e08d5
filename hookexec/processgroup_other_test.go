//go:build !unix

package hookexec_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// Without Unix process groups a command hook fails, saying that command
// hooks need a Unix system, without running; a Go function hook of the
// same event still runs and gives its context.
func TestCommandHooksFailWithoutUnix(t *testing.T) {
	dir := t.TempDir()
	m, _ := hookexec.ParseMatcher("")
	hooks := []hookexec.Hook{
		{Event: hookexec.SessionStart, Name: "command", Matcher: m, Body: hookexec.Command{Line: "echo ran > ran.txt"}, Timeout: 10 * time.Second},
		startHook("func", 10*time.Second, func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			return hookexec.SessionStartOutput{AdditionalContext: "from Go"}, nil
		}),
	}
	outcomes, text := hookexec.RunSessionStart(context.Background(), hooks, hookexec.SessionStartInput{SessionID: "s1", Source: "startup"}, hookexec.CommandEnv{ProjectDir: dir})
	if len(outcomes) != 2 {
		t.Fatalf("%d outcomes, want 2", len(outcomes))
	}
	o := outcomes[0]
	if o.Status != schema.HookFailed || !strings.HasPrefix(o.Error, hookexec.ErrUnsupportedPlatform.Error()) || !strings.Contains(o.Error, "need a Unix") {
		t.Errorf("command hook outcome %+v, want failed with %q, saying command hooks need a Unix", o, hookexec.ErrUnsupportedPlatform)
	}
	if o := outcomes[1]; o.Status != schema.HookOK {
		t.Errorf("function hook outcome %+v, want ok", o)
	}
	if text != "from Go" {
		t.Errorf("context %q, want the function hook's alone", text)
	}
}
