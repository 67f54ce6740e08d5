package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresStore returns a store URL in a schema of its own on the server
// named by REPRISE_TEST_POSTGRES, dropped when t ends, or skips t when the
// variable is not set.
func postgresStore(t *testing.T) string {
	t.Helper()
	base := os.Getenv("REPRISE_TEST_POSTGRES")
	if base == "" {
		t.Skip("REPRISE_TEST_POSTGRES is not set: set it to a PostgreSQL URL, such as postgres://postgres@127.0.0.1:5432/test?sslmode=disable, to run the PostgreSQL tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("REPRISE_TEST_POSTGRES is set, but the server cannot be reached: %v", err)
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	schema := "cli_test_" + hex.EncodeToString(suffix)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
		conn.Close(ctx)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// The same commands work on a PostgreSQL store named by its URL.
func TestCommandsOnPostgres(t *testing.T) {
	c := newCLI(t)
	store := postgresStore(t)
	log := filepath.Join(c.dir, "hooks.log")
	flags := []string{"--store", store, "--agent", "ide", "--settings", lifecycleSettings(t, c, log), "--no-default-settings"}
	c.ok("--store", store, "new", "--id", "a", "--cwd", c.dir)
	c.ok("--store", store, "new", "--id", "b", "--cwd", c.dir)
	c.ok("--store", store, "append", "a", "--role", "user", "hello")
	c.ok(append([]string{"start"}, append(flags, "a")...)...)
	out := c.ok(append([]string{"resume"}, append(flags, "b")...)...)
	if !strings.Contains(out, "agent ide: resume restore a -> b") {
		t.Fatalf("resume on postgres printed %s", out)
	}
	if got := strings.Join(hookEvents(t, log), ","); got != "SessionStart startup,SessionEnd resume,SessionStart resume" {
		t.Fatalf("hooks ran for %s", got)
	}
	if out := c.ok("--store", store, "audit"); !strings.HasPrefix(out, "ok:") {
		t.Fatalf("audit: %s", out)
	}
	if out := c.ok("--store", store, "sessions"); !strings.Contains(out, "a") || !strings.Contains(out, "b") {
		t.Fatalf("sessions: %s", out)
	}
}

// Eight processes append to one session of a PostgreSQL store at once:
// each append succeeds, catching up with the others when it lost a race,
// and the session holds every message.
func TestConcurrentAppendsOnPostgres(t *testing.T) {
	c := newBinaryCLI(t)
	store := postgresStore(t)
	c.ok("--store", store, "new", "--id", "shared", "--cwd", c.dir)
	const processes = 8
	cmds := make([]*exec.Cmd, processes)
	outs := make([]bytes.Buffer, processes)
	for i := range cmds {
		cmds[i] = c.command("--store", store, "append", "shared", "--role", "user", fmt.Sprintf("from process %d", i))
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
	}
	for _, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process %d: %v: %s", i, err, outs[i].String())
		}
	}
	var conv struct {
		Messages []struct {
			UUID   string `json:"uuid"`
			Parent string `json:"parent_uuid"`
		} `json:"messages"`
	}
	c.okJSON(&conv, "--store", store, "replay", "--format", "json", "shared")
	if len(conv.Messages) != processes {
		t.Fatalf("the session holds %d messages, want %d", len(conv.Messages), processes)
	}
	for i, m := range conv.Messages[1:] {
		if m.Parent != conv.Messages[i].UUID {
			t.Errorf("message %d has parent %q, want %q", i+1, m.Parent, conv.Messages[i].UUID)
		}
	}
	if out := c.ok("--store", store, "audit"); !strings.HasPrefix(out, "ok:") {
		t.Fatalf("audit: %s", out)
	}
}
