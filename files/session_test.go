package files_test

import (
	"io"
	"slices"
	"testing"

	"github.com/reprise-dev/reprise/files"
)

// TestRemoveSessionRemovesItsFilesOnly checks which names belong to a
// session: its transcript, its env files old and new, its spilled output;
// not those of sessions whose ids start with its own.
func TestRemoveSessionRemovesItsFilesOnly(t *testing.T) {
	f := files.NewMemory()
	defer f.Close()
	theirs := []string{"a.jsonl", "a.env", "a.env-r1", "a-hook-1.txt"}
	others := []string{"ab.jsonl", "a.env-r1.env-r2", "a-hook-b-hook-1.txt", "a.env-", "a.txt"}
	for _, name := range append(slices.Clone(theirs), others...) {
		if err := f.Replace(name, func(w io.Writer) error { _, err := w.Write([]byte("x")); return err }); err != nil {
			t.Fatal(err)
		}
	}
	n, err := files.RemoveSession(f, "a")
	if err != nil || n != len(theirs) {
		t.Fatalf("RemoveSession = %d, %v; want %d", n, err, len(theirs))
	}
	left, err := f.List("")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(others)
	if !slices.Equal(left, others) {
		t.Fatalf("left %q, want %q", left, others)
	}
}
