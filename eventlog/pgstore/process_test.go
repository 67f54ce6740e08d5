package pgstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// The test binary runs as a helper process, another host on the same
// database, when helperEnv names a mode; the other variables configure it.
const (
	helperEnv    = "PGSTORE_TEST_HELPER"
	envStoreURL  = "PGSTORE_TEST_URL"
	envDir       = "PGSTORE_TEST_DIR"
	envStream    = "PGSTORE_TEST_STREAM"
	envEndHook   = "PGSTORE_TEST_END_HOOK"
	envStartHook = "PGSTORE_TEST_START_HOOK"
	envWaitGo    = "PGSTORE_TEST_WAIT_GO"
	envWriters   = "PGSTORE_TEST_WRITERS"
	envAppends   = "PGSTORE_TEST_APPENDS"
)

// The agent and sessions the process tests restore.
const (
	agentID = "ide"
	fromID  = "a"
	toID    = "b"
)

// runHelper runs the helper mode and returns the process's exit code. It
// reports on stdout, one line at a time.
func runHelper(mode string) int {
	var err error
	switch mode {
	case "hold-lock":
		err = helperHoldLock()
	case "restore":
		err = helperRestore()
	case "append-writers":
		err = helperAppendWriters()
	case "guard":
		err = helperGuard()
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	return 0
}

// helperHoldLock takes the lock of $PGSTORE_TEST_STREAM, says "locked" and
// holds it until its stdin closes or it is killed.
func helperHoldLock() error {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, os.Getenv(envStoreURL), pgstore.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	release, err := s.TryLock(ctx, os.Getenv(envStream))
	if err != nil {
		return err
	}
	defer release()
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// helperRestore restores agent ide to session b with the command hooks in
// $PGSTORE_TEST_END_HOOK and $PGSTORE_TEST_START_HOOK, and says "restored
// <restore id>", "busy: <error>" when another restore holds the agent, or
// "noop". With $PGSTORE_TEST_WAIT_GO set, it first says "ready" and waits
// for a line on stdin.
func helperRestore() error {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, os.Getenv(envStoreURL), pgstore.Options{})
	if err != nil {
		return err
	}
	e := reprise.New(s, reprise.Options{TranscriptDir: os.Getenv(envDir), Logger: slog.New(slog.DiscardHandler)})
	defer e.Close()
	if err := addCommandHooks(e.Hooks(), os.Getenv(envEndHook), os.Getenv(envStartHook)); err != nil {
		return err
	}
	if os.Getenv(envWaitGo) != "" {
		fmt.Println("ready")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return err
		}
	}
	var r *reprise.Transition
	a, err := e.Agent(ctx, agentID)
	if err == nil {
		r, err = a.Restore(ctx, toID)
	}
	switch {
	case errors.Is(err, reprise.ErrAgentBusy):
		fmt.Println("busy:", err)
	case err != nil:
		return err
	case r == nil:
		fmt.Println("noop")
	default:
		fmt.Println("restored", r.ID)
	}
	return nil
}

// helperAppendWriters opens a store, says "ready", waits for a line on
// stdin, then runs $PGSTORE_TEST_WRITERS goroutines that append
// $PGSTORE_TEST_APPENDS records in all, one at a time, each to a stream of
// its own named $PGSTORE_TEST_STREAM and its number, and says "done".
func helperAppendWriters() error {
	ctx := context.Background()
	writers, err := strconv.Atoi(os.Getenv(envWriters))
	if err != nil {
		return err
	}
	appends, err := strconv.ParseInt(os.Getenv(envAppends), 10, 64)
	if err != nil {
		return err
	}
	s, err := pgstore.Open(ctx, os.Getenv(envStoreURL), pgstore.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	var next atomic.Int64
	if err := appendWriters(ctx, s, os.Getenv(envStream), writers, func() bool { return next.Add(1) <= appends }); err != nil {
		return err
	}
	fmt.Println("done")
	return nil
}

// addCommandHooks registers a SessionEnd and a SessionStart command hook,
// each unless empty.
func addCommandHooks(reg *hookexec.Registry, end, start string) error {
	if end != "" {
		if err := reg.Add(hookexec.Hook{Event: hookexec.SessionEnd, Body: hookexec.Command{Line: end}, Timeout: time.Minute}); err != nil {
			return err
		}
	}
	if start != "" {
		if err := reg.Add(hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: start}, Timeout: time.Minute}); err != nil {
			return err
		}
	}
	return nil
}

// startHelper runs the test binary as a helper process in mode, with env
// added to its environment. The process is killed when tb ends.
func startHelper(tb testing.TB, mode string, env ...string) *testkit.Child {
	tb.Helper()
	return testkit.StartChild(tb, append([]string{helperEnv + "=" + mode}, env...)...)
}

// newEngine returns an Engine over s, closed when tb ends.
func newEngine(tb testing.TB, s eventlog.Store, dir string) *reprise.Engine {
	tb.Helper()
	e := reprise.New(s, reprise.Options{TranscriptDir: dir, Logger: testkit.Discard})
	tb.Cleanup(func() { _ = e.Close() })
	return e
}

// setupAgent creates sessions a and b in db, working in dir, and starts
// agent ide on a, without hooks.
func setupAgent(tb testing.TB, db *testDB, dir string) {
	tb.Helper()
	ctx := context.Background()
	e := newEngine(tb, db.open(tb, pgstore.Options{}), dir)
	for _, id := range []string{fromID, toID} {
		if _, err := e.CreateSession(ctx, id, dir); err != nil {
			tb.Fatal(err)
		}
		if _, err := e.Append(ctx, id, reprise.Text("user", "hello from "+id)); err != nil {
			tb.Fatal(err)
		}
	}
	a, err := e.Agent(ctx, agentID)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := a.Start(ctx, fromID); err != nil {
		tb.Fatal(err)
	}
	if err := e.Close(); err != nil {
		tb.Fatal(err)
	}
}
