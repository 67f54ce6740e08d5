package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/schema"
)

// guardHook adds to e a PreToolUse command hook that writes its process
// id to started, waits until gate exists, then denies the call (exit 2)
// with reason "no rm".
func guardHook(t *testing.T, e *reprise.Engine, started, gate string) {
	t.Helper()
	line := fmt.Sprintf(`echo $$ > '%s'; i=0; while [ ! -e '%s' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; echo 'no rm' >&2; exit 2`, started, gate)
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.PreToolUse, Body: hookexec.Command{Line: line}, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// answerWithTwoCalls starts agent ide of e on a new session s whose last
// answer holds the tool calls toolu_1 and toolu_2.
func answerWithTwoCalls(t *testing.T, e *reprise.Engine, dir string) {
	t.Helper()
	ctx := context.Background()
	testkit.Session(t, e, "s", dir, "hello")
	if _, err := testkit.Agent(t, e, agentID).Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	var blocks []reprise.Block
	for _, id := range []string{"toolu_1", "toolu_2"} {
		raw, _ := json.Marshal(map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]string{"command": "rm -rf /tmp/x"}})
		blocks = append(blocks, reprise.Block{Type: "tool_use", Raw: raw})
	}
	if _, err := e.Append(ctx, "s", reprise.Message{Role: "assistant", Content: blocks}); err != nil {
		t.Fatal(err)
	}
}

func bash(id string) reprise.ToolCall {
	return reprise.ToolCall{ID: id, Name: "Bash", Input: json.RawMessage(`{"command":"rm -rf /tmp/x"}`), Permission: hookexec.Allow}
}

// TestAGuardIsNeverClosedUnderItsLiveProcess has a first Engine run a
// real PreToolUse command hook that is about to deny a call, and, while
// it runs, a second Engine on a store of its own (another process, as the
// server sees it) open the agent afresh, as every CLI command does. The
// newcomer must tell the live holder from a dead one: the guard is not
// closed as interrupted, asking about the same call or prompting gets
// ErrAgentBusy, another call of the answer is decided meanwhile, and the
// guard's deny is recorded.
func TestAGuardIsNeverClosedUnderItsLiveProcess(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	dir := t.TempDir()
	ctx := context.Background()
	started, gate := filepath.Join(dir, "started"), filepath.Join(dir, "gate")
	first := newEngine(t, db.open(t, pgstore.Options{}), dir)
	answerWithTwoCalls(t, first, dir)
	guardHook(t, first, started, gate)
	one := testkit.Agent(t, first, agentID)

	done := make(chan *reprise.ToolDecision, 1)
	go func() {
		d, err := one.PreToolUse(ctx, bash("toolu_1"))
		if err != nil {
			t.Errorf("the first process: %v", err)
		}
		done <- d
	}()
	waitFor(t, "the guard to start", func() bool { _, err := os.Stat(started); return err == nil })

	second := newEngine(t, db.open(t, pgstore.Options{}), dir)
	two, err := second.Agent(ctx, agentID)
	if err != nil {
		t.Fatalf("the second process opens the agent: %v", err)
	}
	if d, err := two.PreToolUse(ctx, bash("toolu_1")); !errors.Is(err, reprise.ErrAgentBusy) {
		t.Errorf("the second process asks about the guarded call: %+v, %v; want ErrAgentBusy", d, err)
	}
	if p, err := two.Prompt(ctx, "go on"); !errors.Is(err, reprise.ErrAgentBusy) {
		t.Errorf("the second process prompts: %+v, %v; want ErrAgentBusy", p, err)
	}
	if d, err := two.PreToolUse(ctx, bash("toolu_2")); err != nil || d.Decision != hookexec.Allow {
		t.Errorf("the second process asks about the other call: %+v, %v; want allow", d, err)
	}

	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if d := <-done; d == nil || d.Decision != hookexec.Deny {
		t.Fatalf("the first process: %+v, want deny", d)
	}
	third := newEngine(t, db.open(t, pgstore.Options{}), dir)
	d, err := testkit.Agent(t, third, agentID).PreToolUse(ctx, bash("toolu_1"))
	if err != nil || d.Decision != hookexec.Deny || d.Interrupted || statuses(d.Outcomes) != schema.HookOK {
		t.Errorf("the log after: %+v, %v; want the guard's deny, its hook ok", d, err)
	}
}

// TestAGuardOfAKilledProcessIsClosed kills a process with SIGKILL while
// its PreToolUse guard runs: the next process to open the agent closes
// the guard as interrupted, never running it again, and the call is
// decided.
func TestAGuardOfAKilledProcessIsClosed(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	dir := t.TempDir()
	ctx := context.Background()
	started, gate := filepath.Join(dir, "started"), filepath.Join(dir, "gate")
	setup := newEngine(t, db.open(t, pgstore.Options{}), dir)
	answerWithTwoCalls(t, setup, dir)
	if err := setup.Close(); err != nil {
		t.Fatal(err)
	}

	h := startHelper(t, "guard", envStoreURL+"="+db.url, envDir+"="+dir, envStream+"="+started, envStartHook+"="+gate)
	var hookPID int
	waitFor(t, "the guard to start", func() bool {
		data, err := os.ReadFile(started)
		pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
		hookPID = pid
		return err == nil && perr == nil
	})
	if err := syscall.Kill(h.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(-hookPID, syscall.SIGKILL) // the hook runs in a process group of its own
	<-h.Done
	if err := os.Remove(started); err != nil {
		t.Fatal(err)
	}

	// The server ends the dead process's sessions, and its locks, once it
	// sees the connections close.
	next := newEngine(t, db.open(t, pgstore.Options{}), dir)
	guardHook(t, next, started, gate)
	var d *reprise.ToolDecision
	waitFor(t, "the dead process's guard to be closed", func() bool {
		a, err := next.Agent(ctx, agentID)
		if err == nil {
			d, err = a.PreToolUse(ctx, bash("toolu_1"))
		}
		if errors.Is(err, reprise.ErrAgentBusy) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return true
	})
	if len(d.Outcomes) != 1 || d.Outcomes[0].Status != schema.HookInterrupted {
		t.Errorf("the killed guard: %+v, want it closed as interrupted", d)
	}
	if _, err := os.Stat(started); err == nil {
		t.Error("the guard ran again")
	}
}

// helperGuard asks, as agent ide, about call toolu_1 with the guard hook
// that writes to $PGSTORE_TEST_STREAM and waits for
// $PGSTORE_TEST_START_HOOK, and says what was decided.
func helperGuard() error {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, os.Getenv(envStoreURL), pgstore.Options{})
	if err != nil {
		return err
	}
	e := reprise.New(s, reprise.Options{TranscriptDir: os.Getenv(envDir), Logger: testkit.Discard})
	defer e.Close()
	line := fmt.Sprintf(`echo $$ > '%s'; while [ ! -e '%s' ]; do sleep 0.05; done; exit 2`, os.Getenv(envStream), os.Getenv(envStartHook))
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.PreToolUse, Body: hookexec.Command{Line: line}, Timeout: time.Minute}); err != nil {
		return err
	}
	a, err := e.Agent(ctx, agentID)
	if err != nil {
		return err
	}
	d, err := a.PreToolUse(ctx, bash("toolu_1"))
	if err != nil {
		return err
	}
	fmt.Println(d.Decision)
	return nil
}

// TestAGuardWhoseLockIsLostIsCancelled ends the database session of a
// tool call's lock while its PreToolUse guard runs: another process may
// now close the guard, so its own process cancels it at once, as when its
// caller gives up, records that, and says the lock was lost; the call is
// then denied, its guard never run again.
func TestAGuardWhoseLockIsLostIsCancelled(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	dir := t.TempDir()
	ctx := context.Background()
	started, gate := filepath.Join(dir, "started"), filepath.Join(dir, "gate")
	s := db.open(t, pgstore.Options{})
	e := newEngine(t, s, dir)
	answerWithTwoCalls(t, e, dir)
	guardHook(t, e, started, gate)
	done := make(chan error, 1)
	go func() {
		_, err := testkit.Agent(t, e, agentID).PreToolUse(ctx, bash("toolu_1"))
		done <- err
	}()
	waitFor(t, "the guard to start", func() bool { _, err := os.Stat(started); return err == nil })
	db.terminateLock(t, s, "tool/"+agentID+"/toolu_1")
	select {
	case err := <-done:
		if !errors.Is(err, eventlog.ErrLockLost) {
			t.Errorf("the call whose lock was lost: %v, want ErrLockLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the guard still runs after its call's lock was lost")
	}
	if err := os.Remove(started); err != nil {
		t.Fatal(err)
	}
	next := newEngine(t, db.open(t, pgstore.Options{}), dir)
	guardHook(t, next, started, gate)
	d, err := testkit.Agent(t, next, agentID).PreToolUse(ctx, bash("toolu_1"))
	if err != nil || d.Decision != hookexec.Deny || statuses(d.Outcomes) != schema.HookCancelled {
		t.Errorf("the call asked again: %+v, %v; want denied, its guard cancelled", d, err)
	}
	if _, err := os.Stat(started); err == nil {
		t.Error("the guard ran again")
	}
}
