package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
)

// An end interrupted while its SessionEnd hook runs says so, on one line,
// with the agent whose next command finishes it; that command closes the
// session without running the hook again, then does its own work.
func TestInterruptedEndNamesTheAgentThatFinishesIt(t *testing.T) {
	c := newCLI(t)
	c.session("a")
	c.ok("start", "--agent", "ide", "a", "--no-default-settings")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ends := 0
	withFunctionHooks(t, func(e *reprise.Engine) error {
		return e.Hooks().OnSessionEnd("wait", "", func(hctx context.Context, _ hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
			ends++
			cancel()
			<-hctx.Done()
			return hookexec.SessionEndOutput{}, hctx.Err()
		})
	})
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"end", "--agent", "ide", "--reason", "complete", "--no-default-settings"}, strings.NewReader(""), &stdout, &stderr)
	want := "reprise: interrupted: the end of session a on agent ide stopped at a step boundary; the next command on agent ide finishes it (reprise finish --agent ide does only that)\n"
	if code != exitFailure || !strings.HasSuffix(stderr.String(), want) {
		t.Fatalf("exit %d, stderr %q; want exit 1 ending with %q", code, stderr.String(), want)
	}
	c.ok("start", "--agent", "ide", "a", "--no-default-settings")
	if ends != 1 {
		t.Fatalf("the SessionEnd hook ran %d times, want once", ends)
	}
	out := c.ok("log", "--agent", "ide")
	if !strings.Contains(out, "SessionClosed") || strings.Count(out, "SessionEndHookRan") != 1 {
		t.Fatalf("the agent's log:\n%s", out)
	}
}

// explainInterrupt leaves every other error as it is, and keeps the
// interruption matchable.
func TestExplainInterruptKeepsTheErrors(t *testing.T) {
	other := errors.New("disk full")
	if got := explainInterrupt(nil, "ide", other); got != other {
		t.Fatalf("explainInterrupt changed %v into %v", other, got)
	}
	e, err := reprise.Open(t.TempDir()+"/s.db", reprise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got := explainInterrupt(e, "ide", reprise.ErrInterrupted)
	if !errors.Is(got, reprise.ErrInterrupted) || !strings.Contains(got.Error(), "the next command on agent ide finishes it (reprise finish --agent ide does only that)") {
		t.Fatalf("explainInterrupt of an agent with no restore in its log: %v", got)
	}
}

// The exit code is the command's unless a signal came: then it is 128
// plus the signal's number.
func TestSignalExitCodes(t *testing.T) {
	in := &interrupts{}
	if got := in.exitCode(exitFailure); got != exitFailure {
		t.Fatalf("no signal: exit %d, want %d", got, exitFailure)
	}
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		in.caught.Store(sig)
		if got := in.exitCode(exitOK); got != want {
			t.Fatalf("%s: exit %d, want %d", sig, got, want)
		}
	}
}

// On a PostgreSQL store an interrupted restore is recorded up to the step
// boundary too, and the next command finishes it, the agent's lock having
// been let go.
func TestInterruptedRestoreOnPostgres(t *testing.T) {
	c := newCLI(t)
	store := postgresStore(t)
	flags := []string{"--store", store, "--agent", "ide", "--no-default-settings"}
	c.ok("--store", store, "new", "--id", "a", "--cwd", c.dir)
	c.ok("--store", store, "new", "--id", "b", "--cwd", c.dir)
	c.ok(append([]string{"start"}, append(flags, "a")...)...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ends := 0
	withFunctionHooks(t, func(e *reprise.Engine) error {
		return e.Hooks().OnSessionEnd("wait", "", func(hctx context.Context, _ hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
			ends++
			cancel()
			<-hctx.Done()
			return hookexec.SessionEndOutput{}, hctx.Err()
		})
	})
	var stdout, stderr bytes.Buffer
	code := run(ctx, append([]string{"resume"}, append(flags, "b")...), strings.NewReader(""), &stdout, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), "(reprise finish --agent ide does only that)") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if out := c.ok(append([]string{"resume"}, append(flags, "b")...)...); out != "agent ide is already on session b; nothing to do\n" {
		t.Fatalf("the finishing resume printed %q", out)
	}
	if ends != 1 {
		t.Fatalf("the SessionEnd hook ran %d times, want once", ends)
	}
	if out := c.ok("--store", store, "audit"); !strings.HasPrefix(out, "ok:") || !strings.Contains(out, "1 cancelled") {
		t.Fatalf("audit: %s", out)
	}
}
