package boltstore

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The attacker in these tests is user 65534 (nobody): what they plant is
// theirs. Only root can make a file of another user's, so those cases run
// as root only; the links and open directories run as anyone.
const attacker = 65534

// plantAs makes path another user's when the test runs as root, and
// reports whether it did.
func plantAs(t *testing.T, path string) bool {
	t.Helper()
	if os.Getuid() != 0 {
		return false
	}
	if err := os.Lchown(path, attacker, attacker); err != nil {
		t.Fatal(err)
	}
	return true
}

// TestOpenRefusesALinkAtThePath checks the takeover of a store in a shared
// directory: a symbolic link planted at the store's path is neither
// followed to a store elsewhere (which could name hooks that then run as
// the user) nor, dangling, to make the user's store where the attacker
// can read it.
func TestOpenRefusesALinkAtThePath(t *testing.T) {
	dir := t.TempDir()
	forged := filepath.Join(dir, "forged.db")
	s := mustOpen(t, forged, Options{})
	fill(t, s, 1, 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "reprise.db")
	if err := os.Symlink(forged, path); err != nil {
		t.Fatal(err)
	}
	for _, readOnly := range []bool{false, true} {
		s, err := Open(path, Options{ReadOnly: readOnly})
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("Open (read-only %v) through a link: %v; want ErrNotPrivate saying it is a link", readOnly, err)
		}
	}

	dangling := filepath.Join(dir, "new.db")
	target := filepath.Join(dir, "attackers-file")
	if err := os.Symlink(target, dangling); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(dangling, Options{}); !errors.Is(err, ErrNotPrivate) {
		if err == nil {
			s.Close()
		}
		t.Errorf("Open through a dangling link: %v; want ErrNotPrivate", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the store was made at the link's target: %v", err)
	}
}

// TestOpenRefusesAnotherUsersFile checks that a store file planted by
// another user, a log they wrote, is not opened: neither to run what it
// says nor to write the user's conversations into their file.
func TestOpenRefusesAnotherUsersFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reprise.db")
	s := mustOpen(t, path, Options{})
	fill(t, s, 1, 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !plantAs(t, path) {
		t.Skip("only root can make a file of another user's")
	}
	for _, readOnly := range []bool{false, true} {
		s, err := Open(path, Options{ReadOnly: readOnly})
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), "another user") {
			t.Errorf("Open (read-only %v) of another user's file: %v; want ErrNotPrivate", readOnly, err)
		}
	}
}

// TestOpenChecksTheParents checks the directories above the store as the
// transcript directory's are: under one that others may write and that is
// not sticky, or one of another user's, the store could be renamed away
// and replaced, so it is refused before anything is made; under a sticky
// one, as /tmp is, it opens.
func TestOpenChecksTheParents(t *testing.T) {
	base := t.TempDir()
	shared := filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(shared, "reprise.db")
	if s, err := Open(path, Options{}); !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), shared+", above "+path) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open under a parent of mode 0777: %v; want ErrNotPrivate naming the parent", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the store was made under the open parent: %v", err)
	}

	if err := os.Chmod(shared, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open under a sticky parent: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Through a link to the sticky directory, as /tmp may be.
	linked := filepath.Join(base, "linked")
	if err := os.Symlink(shared, linked); err != nil {
		t.Fatal(err)
	}
	s, err = Open(filepath.Join(linked, "reprise.db"), Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open through a linked parent: %v", err)
	}
	s.Close()

	theirs := filepath.Join(base, "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if !plantAs(t, theirs) {
		return
	}
	mine := filepath.Join(theirs, "mine")
	if err := os.Mkdir(mine, 0o700); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(mine, "reprise.db")
	if s, err := Open(path, Options{}); !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), "belongs to another user") {
		if err == nil {
			s.Close()
		}
		t.Errorf("Open under another user's directory: %v; want ErrNotPrivate", err)
	}
}

// TestCompactIsNotBlockedByAPlantedFile plants, where builds before made
// the compaction's file (STORE.vacuum), what another user could: a
// directory holding a file, a file of theirs, a link. Compaction used to
// remove the name and open it again, so a directory there made every
// vacuum fail, leaving the removed bytes in the store, and the name was
// open to a race. It now works in a file of its own making and leaves
// what was planted alone.
func TestCompactIsNotBlockedByAPlantedFile(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, path string){
		"directory": func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(path, "x"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			plantAs(t, path)
		},
		"another user's file": func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("theirs"), 0o644); err != nil {
				t.Fatal(err)
			}
			if !plantAs(t, path) {
				t.Skip("only root can make a file of another user's")
			}
		},
		"link": func(t *testing.T, path string) {
			theirs := filepath.Join(filepath.Dir(path), "theirs")
			if err := os.WriteFile(theirs, []byte("theirs"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(theirs, path); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			s := mustOpen(t, path, Options{})
			defer s.Close()
			want := fill(t, s, 2, 10)
			planted := path + vacuumSuffix
			plant(t, planted)
			before, err := os.Lstat(planted)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Compact(context.Background()); err != nil {
				t.Fatalf("Compact with %s planted at %s: %v", name, planted, err)
			}
			after, err := os.Lstat(planted)
			if err != nil || !os.SameFile(before, after) {
				t.Errorf("what was planted at %s was removed or replaced: %v", planted, err)
			}
			if data, err := os.ReadFile(filepath.Join(filepath.Dir(path), "theirs")); err == nil && string(data) != "theirs" {
				t.Errorf("written through the link: %q", data)
			}
			if got := readAll(t, s); !sameEvents(got, want) {
				t.Errorf("after the compaction the store reads %d events; want %d", len(got), len(want))
			}
		})
	}
}

// TestCompactRemovesKilledCompactionsFiles leaves what a compaction killed
// before its rename leaves, a hidden full copy of the store holding the
// bytes it was to remove: the next compaction removes it.
func TestCompactRemovesKilledCompactionsFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	defer s.Close()
	fill(t, s, 1, 2)
	left := filepath.Join(filepath.Dir(path), ".events.db"+vacuumSuffix+"-12345")
	if err := os.WriteFile(left, []byte("removed text"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(left); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a killed compaction's copy is left: %v", err)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ent := range entries {
		names = append(names, ent.Name())
	}
	if len(names) != 1 || names[0] != "events.db" {
		t.Errorf("beside the store after the compaction: %v; want only the store", names)
	}
	if raw, _ := os.ReadFile(path); bytes.Contains(raw, []byte("removed text")) {
		t.Error("the leftover's text is in the store")
	}
}
