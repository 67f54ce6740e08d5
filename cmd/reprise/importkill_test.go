//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An import killed with SIGKILL part way leaves a session that says so:
// sessions marks it, audit reports it, importing into its id again fails
// and names --resume, and --resume appends the rest, so that the session
// exports the whole file and the audit is clean.
func TestKilledImportIsVisibleAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and imports a 40 MB transcript")
	}
	c := newBinaryCLI(t)
	path := filepath.Join(c.dir, "big.jsonl")
	lines, _ := writeTranscript(t, path, 40<<20)

	cmd, stderr, exited := c.startBinary("import", path, "--id", "big")
	// The importing process holds the file and serves its reads: sessions
	// sees the batches as they are committed.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// The store may not be made yet, nor served.
		var list []sessionJSON
		r := c.run("--json", "sessions")
		if r.code == exitOK && json.Unmarshal([]byte(r.stdout), &list) == nil && len(list) == 1 && list[0].Messages >= 2000 {
			if !list[0].ImportUnfinished {
				t.Fatalf("a running import is not marked: %+v", list[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no batch of the import committed in 30 s: %s", stderr.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited

	// A kill between an acknowledged append and its apply leaves the
	// write-ahead log ahead of the file: a read command applies it first.
	var list []sessionJSON
	c.okJSON(&list, "sessions")
	if len(list) != 1 || !list[0].ImportUnfinished || list[0].Messages >= lines {
		t.Fatalf("after the kill, sessions = %+v; want big marked unfinished with fewer than %d messages", list, lines)
	}
	if out := c.ok("sessions"); !strings.Contains(out, "big (import unfinished)") {
		t.Fatalf("sessions does not mark the import:\n%s", out)
	}
	r := c.fails(exitFailure, "audit")
	if !strings.Contains(r.stdout, "unfinished-import") || !strings.Contains(r.stdout, "reprise import --resume --id big") {
		t.Fatalf("audit after the kill:\n%s", r.stdout)
	}
	r = c.fails(exitFailure, "import", path, "--id", "big")
	if !strings.Contains(r.stderr, "did not finish") || !strings.Contains(r.stderr, "reprise import --resume --id big "+path) {
		t.Fatalf("import again: %s", r.stderr)
	}
	// Nothing else adds to it meanwhile, or the resume could not follow.
	for _, args := range [][]string{{"append", "big", "--role", "user", "in between"}, {"start", "--agent", "ide", "--no-default-settings", "big"}} {
		if r := c.fails(exitFailure, args...); !strings.Contains(r.stderr, "unfinished import") {
			t.Fatalf("%s on the unfinished import: %s", args[0], r.stderr)
		}
	}

	c.ok("import", path, "--id", "big", "--resume")
	c.ok("audit")
	list = nil
	c.okJSON(&list, "sessions")
	if len(list) != 1 || list[0].ImportUnfinished || list[0].Messages != lines {
		t.Fatalf("after --resume, sessions = %+v; want %d messages", list, lines)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := []byte(c.ok("export", "big")); !bytes.Equal(got, want) {
		t.Fatalf("the resumed session exports %d bytes, the file has %d", len(got), len(want))
	}
	r = c.fails(exitFailure, "import", path, "--id", "big", "--resume")
	if !strings.Contains(r.stderr, "session already exists: big") {
		t.Fatalf("resuming a finished import: %s", r.stderr)
	}
}
