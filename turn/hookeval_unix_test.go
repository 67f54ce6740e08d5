//go:build unix

package turn_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAgentToolsRefuseAFIFO checks that Read refuses a FIFO at once, where
// opening it to read would wait for a writer, and that Grep passes it by.
func TestAgentToolsRefuseAFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	began := time.Now()
	r := callTool(t, dir, "Read", map[string]any{"file_path": "pipe"})
	if !r.isError || !strings.Contains(r.text, "not a regular file") {
		t.Errorf("Read of a FIFO gave %q (error %v); want it refused", r.text, r.isError)
	}
	if r := callTool(t, dir, "Grep", map[string]any{"pattern": "x"}); r.isError || r.text != "No matches" {
		t.Errorf("Grep past a FIFO gave %q (error %v)", r.text, r.isError)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("the calls took %v: a FIFO was waited on", d)
	}
}
