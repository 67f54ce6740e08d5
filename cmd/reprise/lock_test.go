package main

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// readOnlyCommands are commands that only read the store, each with its
// arguments, on a store holding session s.
var readOnlyCommands = [][]string{
	{"sessions"},
	{"log", "s"},
	{"replay", "s"},
	{"audit"},
	{"export", "s"},
	{"hooks", "--session", "s"},
}

// The binary, as a user runs it, against another process holding the
// store: each command fails with exit 1 and says why, within the lock
// timeout.
func TestReadOnlyCommandsFailClearlyWhileAWriterHoldsTheStore(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("s", "hello")
	hold(t, c.store, false)
	var wg sync.WaitGroup
	for _, args := range append(readOnlyCommands, []string{"append", "s", "--role", "user", "x"}) {
		wg.Go(func() {
			start := time.Now()
			r := c.run(args...)
			if r.code != exitFailure || !strings.Contains(r.stderr, "store is locked by another process") {
				t.Errorf("reprise %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
			}
			// The lock timeout is 1 second; allow for a slow machine.
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("reprise %s took %v", strings.Join(args, " "), d)
			}
		})
	}
	wg.Wait()
}

func TestReadOnlyCommandsRunConcurrently(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hello", "hi")
	// Another reader holds the store the whole time; readers share it.
	reader := hold(t, c.store, true)
	var wg sync.WaitGroup
	for range 3 {
		for _, args := range readOnlyCommands {
			wg.Go(func() {
				if r := c.run(args...); r.code != exitOK {
					t.Errorf("reprise %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
				}
			})
		}
	}
	wg.Wait()
	// A writer waits for readers, then gives up.
	r := c.fails(exitFailure, "append", "s", "--role", "user", "x")
	if !strings.Contains(r.stderr, "store is locked by another process") {
		t.Fatalf("append while a reader holds the store: %s", r.stderr)
	}
	reader.release()
	c.ok("append", "s", "--role", "user", "x")
}
