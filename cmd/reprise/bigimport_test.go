//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// peakEnv, when set in the environment of the test binary, makes it run
// the command its arguments name, as a small parent, and write the peak
// resident set of that command, in bytes, to the file peakEnv names.
//
// The test cannot measure its own child: Linux counts in a child's peak the
// peak of the process it was forked from, and in-process tests make the
// test binary large.
const peakEnv = "REPRISE_TEST_PEAK_RSS"

func init() {
	if path := os.Getenv(peakEnv); path != "" {
		os.Exit(measurePeak(path, os.Args[1:]))
	}
}

// measurePeak runs args with the process's standard streams, writes its
// peak resident set to path and returns its exit code.
func measurePeak(path string, args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, peakEnv+"=") })
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Linux reports ru_maxrss in kilobytes.
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	if err := os.WriteFile(path, []byte(strconv.FormatInt(peak, 10)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return cmd.ProcessState.ExitCode()
}

// A transcript much larger than the memory the import may use is imported
// in bounded memory: the child process's peak resident set stays well under
// the file's size. It runs the binary, since the peak is a process's.
func TestImportLargeTranscriptBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and imports a 200 MB transcript")
	}
	const size = 200 << 20
	const limit = 150 << 20
	c := newBinaryCLI(t)
	path := filepath.Join(c.dir, "big.jsonl")
	lines, written := writeTranscript(t, path, size)

	peakFile := filepath.Join(c.dir, "peak")
	cmd := exec.Command(os.Args[0], c.binary, "--json", "import", path, "--id", "big")
	cmd.Dir, cmd.Env = c.dir, append(os.Environ(), peakEnv+"="+peakFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("import: %v\n%s", err, stderr.String())
	}
	var rep importJSON
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Messages != lines || rep.Bytes != written || len(rep.Skipped) != 0 {
		t.Fatalf("import --json = %+v, want %d messages of %d bytes", rep, lines, written)
	}
	if stderr.Len() != 0 {
		t.Fatalf("stderr is not a terminal, yet: %q", stderr.String())
	}
	data, err := os.ReadFile(peakFile)
	if err != nil {
		t.Fatal(err)
	}
	peak, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported %d MB in %v; peak RSS %d MB", written>>20, time.Since(start).Round(time.Millisecond), peak>>20)
	if peak >= limit {
		t.Fatalf("peak RSS %d MB, want under %d MB", peak>>20, limit>>20)
	}
}
