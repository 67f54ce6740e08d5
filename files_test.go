package reprise_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// TestFilesContract runs the contract of the Engine's file seam against
// the real directory and its in-memory twin alike.
func TestFilesContract(t *testing.T) {
	impls := map[string]func(t *testing.T) reprise.Files{
		"dir":    func(t *testing.T) reprise.Files { return reprise.DirFiles(filepath.Join(t.TempDir(), "files")) },
		"memory": func(*testing.T) reprise.Files { return reprise.NewMemoryFiles() },
	}
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	for name, open := range impls {
		t.Run(name, func(t *testing.T) {
			f := open(t)
			defer f.Close()
			if _, err := f.Read("a.jsonl"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Read of a missing file: %v, want fs.ErrNotExist", err)
			}
			if err := f.Append("a.jsonl", write("x")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Append to a missing file: %v, want fs.ErrNotExist", err)
			}
			if _, err := f.Read("a.jsonl"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a failed Append created the file: %v", err)
			}
			if err := f.Replace("a.jsonl", write("one\n")); err != nil {
				t.Fatal(err)
			}
			if err := f.Append("a.jsonl", write("two\n")); err != nil {
				t.Fatal(err)
			}
			if got, err := f.Read("a.jsonl"); err != nil || string(got) != "one\ntwo\n" {
				t.Fatalf("Read = %q, %v; want one, two", got, err)
			}
			if err := f.Replace("a.jsonl", write("new\n")); err != nil {
				t.Fatal(err)
			}
			if got, _ := f.Read("a.jsonl"); string(got) != "new\n" {
				t.Fatalf("after Replace, Read = %q", got)
			}
			failed := errors.New("writer failed")
			if err := f.Replace("a.jsonl", func(io.Writer) error { return failed }); !errors.Is(err, failed) {
				t.Fatalf("Replace with a failing writer: %v", err)
			}
			if got, _ := f.Read("a.jsonl"); string(got) != "new\n" {
				t.Fatalf("a failed Replace changed the file to %q", got)
			}
			for _, bad := range []string{"", ".", "..", "../x", "a/b", "nul\x00"} {
				if err := f.Replace(bad, write("x")); !errors.Is(err, reprise.ErrFileName) {
					t.Errorf("Replace(%q) = %v, want ErrFileName", bad, err)
				}
				if _, err := f.Read(bad); !errors.Is(err, reprise.ErrFileName) {
					t.Errorf("Read(%q) = %v, want ErrFileName", bad, err)
				}
			}
			big := strings.Repeat("x", reprise.MaxFileRead+1)
			if err := f.Replace("big.env", write(big)); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Read("big.env"); !errors.Is(err, reprise.ErrFileTooLarge) {
				t.Fatalf("Read of a file over the cap: %v, want ErrFileTooLarge", err)
			}
			if !strings.HasSuffix(f.Path("a.jsonl"), "a.jsonl") {
				t.Errorf("Path = %q", f.Path("a.jsonl"))
			}
			if names, err := f.List("a"); err != nil || !slices.Equal(names, []string{"a.jsonl"}) {
				t.Errorf("List(a) = %q, %v; want a.jsonl", names, err)
			}
			if err := f.Remove("a.jsonl"); err != nil {
				t.Fatalf("Remove: %v", err)
			}
			if _, err := f.Read("a.jsonl"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Read after Remove: %v, want fs.ErrNotExist", err)
			}
			if err := f.Remove("a.jsonl"); err != nil {
				t.Errorf("Remove of a missing file: %v, want nil", err)
			}
			if names, err := f.List(""); err != nil || !slices.Equal(names, []string{"big.env"}) {
				t.Errorf("List() after Remove = %q, %v; want big.env", names, err)
			}
		})
	}
}

// TestDirFilesArePrivateAndFollowNoLinks checks the real directory: made
// 0700, files 0600, and a symbolic link, in place of the directory or of a
// file, is never followed.
func TestDirFilesArePrivateAndFollowNoLinks(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "files")
	f := reprise.DirFiles(dir)
	if err := f.Replace("s.jsonl", func(io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "s.jsonl"): 0o600} {
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", path, info.Mode().Perm(), err, want)
		}
	}
	outside := filepath.Join(base, "outside")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link.env")); err != nil {
		t.Fatal(err)
	}
	if data, err := f.Read("link.env"); err == nil {
		t.Fatalf("Read followed a link: %q", data)
	}
	if err := f.Append("link.env", func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err == nil {
		t.Fatal("Append followed a link")
	}
	if data, _ := os.ReadFile(outside); string(data) != "secret" {
		t.Fatalf("the link's target was changed to %q", data)
	}
	linked := reprise.DirFiles(filepath.Join(base, "linked"))
	if err := os.Symlink(base, filepath.Join(base, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := linked.Replace("x.jsonl", func(io.Writer) error { return nil }); err == nil {
		t.Fatal("a directory that is a symbolic link was used")
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.env"), 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if _, err := f.Read("fifo.env"); err == nil {
		t.Fatal("Read of a FIFO succeeded")
	}
}

// TestNewKeepsFilesInAPrivateTemporaryDirectory checks that an Engine given
// a store and no transcript directory writes nowhere but a temporary
// directory of its own, which its hooks can read and Close removes: never
// the user's home.
func TestNewKeepsFilesInAPrivateTemporaryDirectory(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	ctx := t.Context()
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{})
	testkit.Session(t, e, "s", t.TempDir(), "hello")
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: `test -f "$CLAUDE_ENV_FILE" && test -s "$(dirname "$CLAUDE_ENV_FILE")/s.jsonl"`}}); err != nil {
		t.Fatal(err)
	}
	r, err := testkit.Agent(t, e, "ide").Start(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if o := r.StartOutcomes[0]; o.Status != "ok" {
		t.Fatalf("the hook could not read its transcript: %+v", o)
	}
	path := e.TranscriptPath("s")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("transcript: %v", err)
	}
	dir := filepath.Dir(path)
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 || strings.HasPrefix(dir, home) {
		t.Fatalf("files in %s (%v, %v), want a private directory outside the home", dir, info.Mode().Perm(), err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after Close, %s: %v; want it removed", dir, err)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Fatalf("the Engine wrote into the home directory: %v", entries)
	}
}

// TestDirFilesRecreateARemovedDirectory checks that a transcript directory
// removed while an Engine runs (a tmp cleaner) is made again on the next
// write, instead of every later write failing.
func TestDirFilesRecreateARemovedDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "files")
	f := reprise.DirFiles(dir)
	write := func(io.Writer) error { return nil }
	if err := f.Replace("a.jsonl", write); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := f.Replace("a.jsonl", write); err != nil {
		t.Fatalf("Replace after the directory was removed: %v", err)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("directory made again: %v, %v", info, err)
	}
}

// TestDirFilesRefuseAPlantedDirectory checks the shared-directory attack:
// a transcript directory that group or others may write is refused before
// anything is written, and a planted link in the user's own directory is
// neither written through nor renamed over.
func TestDirFilesRefuseAPlantedDirectory(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	f := reprise.DirFiles(open)
	err := f.Replace("s.jsonl", func(io.Writer) error { return nil })
	if !errors.Is(err, reprise.ErrNotPrivate) || !strings.Contains(err.Error(), open) {
		t.Fatalf("Replace in a directory of mode 0777: %v, want ErrNotPrivate naming it", err)
	}
	if entries, _ := os.ReadDir(open); len(entries) != 0 {
		t.Fatalf("written into the open directory: %v", entries)
	}

	// Another user's directory, even a private one, is refused too (only
	// root can make one here).
	if os.Getuid() == 0 {
		theirs := filepath.Join(base, "theirs")
		if err := os.Mkdir(theirs, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		err := reprise.DirFiles(theirs).Replace("s.jsonl", func(io.Writer) error { return nil })
		if !errors.Is(err, reprise.ErrNotPrivate) || !strings.Contains(err.Error(), "another user") {
			t.Fatalf("Replace in another user's directory: %v, want ErrNotPrivate", err)
		}
		if entries, _ := os.ReadDir(theirs); len(entries) != 0 {
			t.Fatalf("written into another user's directory: %v", entries)
		}
	}

	dir := filepath.Join(base, "files")
	mine := filepath.Join(base, "mine")
	if err := os.WriteFile(mine, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "s.env")
	if err := os.Symlink(mine, link); err != nil {
		t.Fatal(err)
	}
	f = reprise.DirFiles(dir)
	err = f.Replace("s.env", func(w io.Writer) error { _, err := io.WriteString(w, "conversation"); return err })
	if !errors.Is(err, reprise.ErrNotPrivate) || !strings.Contains(err.Error(), link) {
		t.Fatalf("Replace over a link: %v, want ErrNotPrivate naming it", err)
	}
	if got, err := os.Readlink(link); err != nil || got != mine {
		t.Fatalf("the link was replaced: %q, %v", got, err)
	}
	if data, _ := os.ReadFile(mine); string(data) != "mine" {
		t.Fatalf("written through the link: %q", data)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("files left behind: %v", entries)
	}
}

// TestDirFilesRefuseADirectoryOthersCanReplace checks the parents of the
// directory: under one that others may write and that is not sticky,
// another user could rename the private directory away and put theirs in
// its place, so it is refused; under a sticky one, as /tmp is, only its
// owner can rename it.
func TestDirFilesRefuseADirectoryOthersCanReplace(t *testing.T) {
	base := t.TempDir()
	shared := filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(shared, "cache", "transcripts")
	err := reprise.DirFiles(dir).Replace("s.jsonl", func(io.Writer) error { return nil })
	if !errors.Is(err, reprise.ErrNotPrivate) || !strings.Contains(err.Error(), shared+", above "+dir) {
		t.Fatalf("Replace under a parent of mode 0777: %v, want ErrNotPrivate naming the parent", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("written under the open parent: %v", err)
	}
	if err := os.Chmod(shared, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := reprise.DirFiles(dir).Replace("s.jsonl", func(io.Writer) error { return nil }); err != nil {
		t.Fatalf("Replace under a sticky parent: %v", err)
	}
}
