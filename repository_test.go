package reprise_test

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// maxTrackedSize is the largest file the repository tracks outside a
// testdata directory: anything bigger is a build output or a data file
// committed by mistake.
const maxTrackedSize = 1 << 20

// TestRepositoryTracksNoLargeFiles checks that git tracks no file over
// maxTrackedSize outside testdata, so that a binary left by go build is
// never published. It skips outside a git checkout, as in a source archive.
func TestRepositoryTracksNoLargeFiles(t *testing.T) {
	gitbin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git command on PATH")
	}
	if _, err := os.Stat(".git"); err != nil {
		t.Skip("not a git checkout: ", err)
	}
	out, err := exec.Command(gitbin, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	paths := strings.Split(string(bytes.TrimSuffix(out, []byte{0})), "\x00")
	if len(paths) < 10 || !slices.Contains(paths, "go.mod") {
		t.Fatalf("git ls-files listed %d files without go.mod: %q", len(paths), paths)
	}
	for _, path := range paths {
		if slices.Contains(strings.Split(path, "/"), "testdata") {
			continue
		}
		info, err := os.Lstat(path)
		if os.IsNotExist(err) {
			continue // deleted, and not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > maxTrackedSize {
			t.Errorf("%s is tracked and holds %.1f MB: remove it with git rm, or move test data under testdata", path, float64(info.Size())/(1<<20))
		}
	}
}
