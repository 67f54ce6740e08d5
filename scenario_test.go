package reprise_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/internal/scenario"
)

// TestScenarios runs the lifecycle spec, the files of testdata/scenarios
// (see package internal/scenario for their language), on the in-memory
// twins of the Engine's boundary; files named real-*.txt run a second time
// with real hook commands and files on disk, and must print the same. Run
// with -rewrite to regenerate the expected output.
func TestScenarios(t *testing.T) {
	paths, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no scenario files")
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		t.Run(name, func(t *testing.T) { scenario.Run(t, path, false) })
		if strings.HasPrefix(name, "real-") {
			t.Run(name+"/real-hooks", func(t *testing.T) { scenario.Run(t, path, true) })
		}
	}
}
