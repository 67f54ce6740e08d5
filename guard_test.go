package reprise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/schema"
)

// TestAGuardIsNeverClosedUnderAnotherEngine is the bbolt side of the
// promise that a guard about to deny a call is never closed under it. A
// bbolt file has one process: a second one cannot open it while the first
// runs the guard, and a second Engine of the same process, opening the
// agent afresh, leaves the guard to the first and gets ErrAgentBusy for
// its call, while the first records the deny.
func TestAGuardIsNeverClosedUnderAnotherEngine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first, path := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
	testkit.Session(t, first, "a", dir, "hello")
	if _, err := testkit.Agent(t, first, "ide").Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	started, gate := filepath.Join(dir, "started"), filepath.Join(dir, "gate")
	line := fmt.Sprintf(`touch '%s'; i=0; while [ ! -e '%s' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; echo 'no rm' >&2; exit 2`, started, gate)
	if err := first.Hooks().Add(hookexec.Hook{Event: hookexec.PreToolUse, Body: hookexec.Command{Line: line}, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	call := reprise.ToolCall{ID: "toolu_1", Name: "Bash", Input: json.RawMessage(`{"command":"rm -rf /tmp/x"}`), Permission: hookexec.Allow, AddToolUse: true}
	done := make(chan *reprise.ToolDecision, 1)
	go func() {
		d, err := testkit.Agent(t, first, "ide").PreToolUse(ctx, call)
		if err != nil {
			t.Errorf("the first Engine: %v", err)
		}
		done <- d
	}()
	deadline := time.Now().Add(20 * time.Second)
	for _, err := os.Stat(started); err != nil; _, err = os.Stat(started) {
		if time.Now().After(deadline) {
			t.Fatal("the guard did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}

	if s, err := boltstore.Open(path, boltstore.Options{Timeout: 100 * time.Millisecond}); !errors.Is(err, eventlog.ErrLocked) {
		if err == nil {
			s.Close()
		}
		t.Errorf("opening the file again while the guard runs: %v, want ErrLocked", err)
	}
	second := reprise.New(first.Store(), reprise.Options{Logger: testkit.Discard, TranscriptDir: t.TempDir()})
	two, err := second.Agent(ctx, "ide")
	if err != nil {
		t.Fatalf("the second Engine opens the agent: %v", err)
	}
	if d, err := two.PreToolUse(ctx, call); !errors.Is(err, reprise.ErrAgentBusy) {
		t.Errorf("the second Engine asks about the guarded call: %+v, %v; want ErrAgentBusy", d, err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if d := <-done; d == nil || d.Decision != hookexec.Deny {
		t.Fatalf("the first Engine: %+v, want deny", d)
	}
	d, err := testkit.Agent(t, reprise.New(first.Store(), reprise.Options{Logger: testkit.Discard, TranscriptDir: t.TempDir()}), "ide").PreToolUse(ctx, call)
	if err != nil || d.Decision != hookexec.Deny || len(d.Outcomes) != 1 || d.Outcomes[0].Status != schema.HookOK {
		t.Errorf("the log after: %+v, %v; want the guard's deny, its hook ok", d, err)
	}
}
