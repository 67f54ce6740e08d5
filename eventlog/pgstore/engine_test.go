package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// readSide returns the lines the tests' command hooks wrote to path.
func readSide(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(data), " ", "_"))
}

// lastRestore opens db in a new Engine without hooks and returns agent ide's
// current session and its restores.
func lastRestore(t *testing.T, db *testDB, dir string) (current string, history []reprise.Transition) {
	t.Helper()
	e := newEngine(t, db.open(t, pgstore.Options{}), dir)
	a, err := e.Agent(context.Background(), agentID)
	if err != nil {
		t.Fatal(err)
	}
	return a.Current(), a.History()
}

func statuses(outcomes []schema.HookOutcome) string {
	var s []string
	for _, o := range outcomes {
		s = append(s, o.Status)
	}
	return strings.Join(s, ",")
}

// TestTwoProcessesRestoreOneAgent has two processes restore the same agent
// at once: one restores, running each hook once, and the other is told a
// restore is in progress.
func TestTwoProcessesRestoreOneAgent(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	dir := t.TempDir()
	side, gate := filepath.Join(dir, "side"), filepath.Join(dir, "gate")
	setupAgent(t, db, dir)

	// The SessionEnd hook holds the winner's restore until the loser has
	// answered, so the two restores overlap.
	end := fmt.Sprintf(`echo end >> '%s'; i=0; while [ ! -e '%s' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done`, side, gate)
	start := fmt.Sprintf(`echo start >> '%s'`, side)
	env := []string{envStoreURL + "=" + db.url, envDir + "=" + dir, envEndHook + "=" + end, envStartHook + "=" + start, envWaitGo + "=1"}
	hosts := []*testkit.Child{startHelper(t, "restore", env...), startHelper(t, "restore", env...)}
	for _, h := range hosts {
		if l := h.Line(t); l != "ready" {
			t.Fatalf("helper said %q, want ready", l)
		}
	}
	for _, h := range hosts {
		if _, err := h.Stdin.Write([]byte("go\n")); err != nil {
			t.Fatal(err)
		}
	}
	answers := make(chan string, len(hosts))
	for _, h := range hosts {
		go func() {
			select {
			case l, ok := <-h.Lines:
				if ok {
					answers <- l
					return
				}
			case <-h.Done:
			}
			<-h.Done
			answers <- fmt.Sprintf("exited (%v): %s", h.Err, h.Stderr)
		}()
	}
	first := <-answers
	if !strings.HasPrefix(first, "busy:") || !strings.Contains(first, reprise.ErrAgentBusy.Error()) {
		t.Fatalf("first answer %q, want busy: %v", first, reprise.ErrAgentBusy)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if second := <-answers; !strings.HasPrefix(second, "restored ") {
		t.Fatalf("second answer %q, want restored", second)
	}
	for _, h := range hosts {
		h.Wait(t)
	}

	if got := readSide(t, side); strings.Join(got, " ") != "end start" {
		t.Errorf("the hooks ran %q, want SessionEnd once, then SessionStart once", got)
	}
	current, history := lastRestore(t, db, dir)
	if current != toID || len(history) != 2 {
		t.Fatalf("agent at %q after %d restores, want %q after the startup restore and one runtime restore", current, len(history), toID)
	}
	r := history[1]
	if r.From != fromID || r.To != toID || statuses(r.EndOutcomes) != schema.HookOK || statuses(r.StartOutcomes) != schema.HookOK {
		t.Errorf("restore %s -> %s with SessionEnd %q and SessionStart %q; want %s -> %s, each hook ok",
			r.From, r.To, statuses(r.EndOutcomes), statuses(r.StartOutcomes), fromID, toID)
	}
}

// TestKilledMidRestoreIsRolledForward kills a process with SIGKILL while
// its SessionEnd hook runs; the next process to open the agent finishes the
// restore without running that hook again.
func TestKilledMidRestoreIsRolledForward(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	dir := t.TempDir()
	side := filepath.Join(dir, "side")
	setupAgent(t, db, dir)

	end := fmt.Sprintf(`echo "end $$" >> '%s'; sleep 30`, side)
	start := fmt.Sprintf(`echo start >> '%s'`, side)
	h := startHelper(t, "restore", envStoreURL+"="+db.url, envDir+"="+dir, envEndHook+"="+end, envStartHook+"="+start)
	var hookPID int
	waitFor(t, "the SessionEnd hook to start", func() bool {
		lines := readSide(t, side)
		if len(lines) == 0 {
			return false
		}
		pid, err := strconv.Atoi(strings.TrimPrefix(lines[0], "end_"))
		if err != nil {
			t.Fatalf("side file says %q", lines)
		}
		hookPID = pid
		return true
	})
	if err := syscall.Kill(h.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(-hookPID, syscall.SIGKILL) // the hook runs in a process group of its own
	<-h.Done

	// The next host, with hooks of its own.
	again := fmt.Sprintf(`echo end-again >> '%s'`, side)
	e := newEngine(t, db.open(t, pgstore.Options{}), dir)
	if err := addCommandHooks(e.Hooks(), again, start); err != nil {
		t.Fatal(err)
	}
	var a *reprise.Agent
	waitFor(t, "the dead host's lock to be released", func() bool {
		var err error
		a, err = e.Agent(context.Background(), agentID)
		if errors.Is(err, reprise.ErrAgentBusy) {
			return false
		}
		if err != nil {
			t.Fatalf("Agent: %v", err)
		}
		return true
	})
	if a.Current() != toID {
		t.Errorf("after the roll-forward the agent is at %q, want %q", a.Current(), toID)
	}
	if got := readSide(t, side); len(got) != 2 || got[1] != "start" {
		t.Errorf("the hooks ran %q, want the killed SessionEnd, then SessionStart once, and no SessionEnd again", got)
	}
	history := a.History()
	if len(history) != 2 {
		t.Fatalf("%d restores, want 2", len(history))
	}
	r := history[1]
	if !r.EndInterrupted || statuses(r.EndOutcomes) != schema.HookInterrupted || statuses(r.StartOutcomes) != schema.HookOK {
		t.Errorf("the rolled-forward restore has SessionEnd %q (interrupted %v) and SessionStart %q; want interrupted, then ok",
			statuses(r.EndOutcomes), r.EndInterrupted, statuses(r.StartOutcomes))
	}
}

// TestConnectionLossMidRestore cuts every connection of the store while a
// restore appends: the caller gets ErrConnection, the log holds only whole
// steps, and the next attempt rolls the restore forward without running the
// SessionEnd hook again.
func TestConnectionLossMidRestore(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	dir := t.TempDir()
	setupAgent(t, db, dir)
	ctx := context.Background()
	s := db.open(t, pgstore.Options{})
	e := newEngine(t, s, dir)

	var ends, starts atomic.Int32
	entered, proceed := make(chan struct{}), make(chan struct{})
	if err := e.Hooks().OnSessionEnd("hold", "", func(ctx context.Context, in hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
		if ends.Add(1) == 1 {
			close(entered)
			<-proceed
		}
		return hookexec.SessionEndOutput{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.Hooks().OnSessionStart("count", "", func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		starts.Add(1)
		return hookexec.SessionStartOutput{AdditionalContext: "back on " + in.SessionID}, nil
	}); err != nil {
		t.Fatal(err)
	}
	a, err := e.Agent(ctx, agentID)
	if err != nil {
		t.Fatal(err)
	}
	result := make(chan error, 1)
	go func() {
		_, err := a.Restore(ctx, toID)
		result <- err
	}()
	<-entered
	release := db.holdCounter(t) // the step after the hook waits for the counter
	close(proceed)
	db.waitForLockWait(t)
	db.terminate(t)
	err = <-result
	if !errors.Is(err, pgstore.ErrConnection) {
		t.Fatalf("Restore cut off by a lost connection: err = %v, want ErrConnection", err)
	}
	t.Logf("the caller got: %v", err)
	release()

	var last eventlog.Type
	if err := s.ReadStream(ctx, projection.AgentStream(agentID), 0, func(ev eventlog.Event) error {
		last = ev.Type
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if last != schema.TypeSessionEndHookStarted {
		t.Fatalf("the agent's log ends with %s, want the SessionEnd intent", last)
	}

	r, err := a.Restore(ctx, toID)
	if err != nil || r != nil {
		t.Fatalf("the next Restore = %v, %v; want nil, nil after rolling the cut-off restore forward", r, err)
	}
	if a.Current() != toID || ends.Load() != 1 || starts.Load() != 1 {
		t.Errorf("agent at %q after %d SessionEnd and %d SessionStart runs; want %q after one of each", a.Current(), ends.Load(), starts.Load(), toID)
	}
	history := a.History()
	done := history[len(history)-1]
	if !done.EndInterrupted || statuses(done.StartOutcomes) != schema.HookOK || done.InjectedUUID == "" {
		t.Errorf("restore with SessionEnd %q (interrupted %v), SessionStart %q, injected %q; want interrupted, ok, a reminder",
			statuses(done.EndOutcomes), done.EndInterrupted, statuses(done.StartOutcomes), done.InjectedUUID)
	}
}
