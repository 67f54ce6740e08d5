package remote

import (
	"os"
	"testing"
)

// TestMain keeps the directory of the sockets of stores whose path is too
// long for one beside them (t.TempDir's are, some), under the system's
// temporary directory otherwise, in a directory of this run's own.
func TestMain(m *testing.M) {
	runtime, err := os.MkdirTemp("", "reprise-runtime-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_RUNTIME_DIR", runtime)
	code := m.Run()
	os.RemoveAll(runtime)
	os.Exit(code)
}
