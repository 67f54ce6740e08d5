package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
)

// storeEvents returns every event of the bbolt file at path.
func storeEvents(t *testing.T, path string) []eventlog.Event {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var evs []eventlog.Event
	err = s.ReadAll(context.Background(), 1, func(ev eventlog.Event) error {
		ev.Payload = append([]byte(nil), ev.Payload...)
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// logs returns what log --json prints for every stream of the store, and
// what audit prints.
func logs(t *testing.T, c *cli, store string, evs []eventlog.Event) string {
	t.Helper()
	var b strings.Builder
	seen := map[string]bool{}
	for _, ev := range evs {
		if seen[ev.Stream] {
			continue
		}
		seen[ev.Stream] = true
		kind, id, _ := strings.Cut(ev.Stream, "/")
		if kind == "agent" {
			b.WriteString(c.ok("--store", store, "log", "--json", "--agent", id))
		} else {
			b.WriteString(c.ok("--store", store, "log", "--json", id))
		}
	}
	out := c.ok("--store", store, "audit")
	if !strings.HasPrefix(out, "ok:") {
		t.Errorf("audit of %s: %s", store, out)
	}
	return b.String() + out
}

// A store copied to PostgreSQL and back is the same store, event for event.
func TestCopyToPostgresAndBack(t *testing.T) {
	c := newCLI(t)
	pg := postgresStore(t)
	src := filepath.Join(c.dir, "demo.db")
	c.ok("demo", "--store", src)
	want := storeEvents(t, src)
	if out := c.ok("--store", src, "copy", "--to", pg); out != fmt.Sprintf("copied %d events to %s\n", len(want), pg) {
		t.Errorf("copy to postgres printed %q", out)
	}
	back := filepath.Join(c.dir, "copies", "back.db")
	c.ok("--store", pg, "copy", "--to", back)
	if got := storeEvents(t, back); !reflect.DeepEqual(got, want) {
		t.Errorf("the store copied to PostgreSQL and back differs from the original")
	}
	orig := logs(t, c, src, want)
	if got := logs(t, c, pg, want); got != orig {
		t.Errorf("log and audit on the PostgreSQL copy:\n%s\nwant:\n%s", got, orig)
	}
	if got := logs(t, c, back, want); got != orig {
		t.Errorf("log and audit on the copy back:\n%s\nwant:\n%s", got, orig)
	}
	// The copies go on where the original stopped.
	var session string
	for _, ev := range want {
		if id, ok := strings.CutPrefix(ev.Stream, "session/"); ok {
			session = id
			break
		}
	}
	c.ok("--store", pg, "append", session, "--role", "user", "after the copy")
	if out := c.ok("--store", pg, "audit"); !strings.HasPrefix(out, "ok:") {
		t.Errorf("audit after appending to the copy: %s", out)
	}

	r := c.fails(exitFailure, "--store", src, "copy", "--to", back)
	if !strings.Contains(r.stderr, "holds events already") {
		t.Errorf("copy into a store with events: %s", r.stderr)
	}
	c.fails(exitUsage, "--store", src, "copy")
	c.fails(exitUsage, "--store", src, "copy", "--to", src)
}

// backup copies a store that a host holds, through the host.
func TestBackupWhileAHostHoldsTheStore(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hello", "hi")
	c.ok("start", "--agent", "ide", "s")
	h := holdServing(t, c.store)
	h.append("s", "from the host")
	backup := filepath.Join(c.dir, "backup.db")
	var got copyJSON
	c.okJSON(&got, "backup", backup)
	h.release()
	want := storeEvents(t, c.store)
	if got != (copyJSON{To: backup, Events: len(want)}) {
		t.Errorf("backup --json printed %+v", got)
	}
	if evs := storeEvents(t, backup); !reflect.DeepEqual(evs, want) {
		t.Errorf("the backup differs from the store")
	}
	if info, err := os.Stat(backup); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the backup file: %v, %v; want mode 0600", info, err)
	}
	if a, b := logs(t, c, backup, want), logs(t, c, c.store, want); a != b {
		t.Errorf("log and audit of the backup:\n%s\nwant:\n%s", a, b)
	}

	c.ok("append", "s", "--role", "user", "later")
	r := c.fails(exitFailure, "backup", backup)
	if !strings.Contains(r.stderr, "--force") {
		t.Errorf("backup over an existing file: %s", r.stderr)
	}
	c.ok("backup", "--force", backup)
	if n := len(storeEvents(t, backup)); n != len(want)+1 {
		t.Errorf("backup --force wrote %d events, want %d", n, len(want)+1)
	}
	c.fails(exitUsage, "backup", c.store)
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".backup.db") {
			t.Errorf("a temporary file is left: %s", e.Name())
		}
	}
}

// A backup killed before its rename leaves a hidden full copy of the store
// beside its target, which may hold what rm and vacuum remove later: the
// next backup to that target removes it. A copy that a running backup
// holds locked, another user's file and a link are left alone.
func TestBackupRemovesKilledBackupsCopies(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hello")
	backup := filepath.Join(c.dir, "backup.db")
	killed := c.writeFile(".backup.db.123456789", "a killed backup's copy: the secret plan")
	running := c.writeFile(".backup.db.42", "a running backup's copy")
	f, err := os.Open(running)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(c.dir, ".backup.db.555")
	if err := os.Symlink(c.writeFile("mine", "mine"), link); err != nil {
		t.Fatal(err)
	}
	kept := []string{running, link}
	if os.Getuid() == 0 {
		theirs := c.writeFile(".backup.db.777", "theirs")
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, theirs)
	}
	unrelated := c.writeFile(".backup.db.notes", "not a copy")
	kept = append(kept, unrelated)

	c.ok("backup", backup)
	if _, err := os.Lstat(killed); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the killed backup's copy is left: %v", err)
	}
	for _, path := range kept {
		if _, err := os.Lstat(path); err != nil {
			t.Errorf("%s was removed: %v", path, err)
		}
	}
}
