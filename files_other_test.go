//go:build !unix

package reprise_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/reprise-dev/reprise"
)

// Where nothing tells whether a directory is the user's own, DirFiles
// writes nothing and makes no directory, refusing with ErrNotPrivate; a
// directory that does not exist holds no files, as anywhere.
func TestDirFilesRefuseWithoutUnix(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "files")
	f := reprise.DirFiles(dir)
	defer f.Close()
	err := f.Replace("a.jsonl", func(w io.Writer) error { _, err := io.WriteString(w, "x\n"); return err })
	if !errors.Is(err, reprise.ErrNotPrivate) {
		t.Fatalf("Replace: %v, want ErrNotPrivate", err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the directory was made: %v", err)
	}
	if names, err := f.List("a"); err != nil || len(names) != 0 {
		t.Fatalf("List = %q, %v; want nothing", names, err)
	}
	if err := f.Remove("a.jsonl"); err != nil {
		t.Fatalf("Remove of a missing file: %v", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := f.List("a"); !errors.Is(err, reprise.ErrNotPrivate) {
		t.Fatalf("List of a directory that exists: %v, want ErrNotPrivate", err)
	}
}
