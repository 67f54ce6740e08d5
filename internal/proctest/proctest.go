// Package proctest watches the processes a test starts: whether one still
// runs, waiting for a pid a process writes to a file, and failing when
// processes outlive what should have ended them. It depends on nothing of
// reprise, so that the tests of any package can use it.
package proctest

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Alive reports whether process pid exists and is not a zombie. Without
// /proc a zombie counts as alive.
func Alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return exists(pid)
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// WaitPid waits up to 30 s for a pid to appear in file. On failure it
// adds what describe returns (the stderr of the process that should have
// written it, say), if describe is not nil.
func WaitPid(tb testing.TB, file string, describe func() string) int {
	tb.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		data, _ := os.ReadFile(file)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			msg := "no pid in " + file
			if describe != nil {
				msg += "; " + describe()
			}
			tb.Fatal(msg)
		}
	}
}

// AssertGone fails unless every named process is gone within 5 s; then it
// kills those still running, so that none outlives the test.
func AssertGone(tb testing.TB, pids map[string]int) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for name, pid := range pids {
		for Alive(pid) {
			if time.Now().After(deadline) {
				for _, p := range pids {
					kill(p)
				}
				tb.Fatalf("the %s (pid %d) still runs", name, pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
