package reprise_test

import (
	"os"
	"testing"
)

// TestMain keeps the data directories that plugin hooks get, made before
// they run and under the user's ~/.claude otherwise, and the directory of
// the sockets of stores whose path is too long for one beside them, under
// the system's temporary directory otherwise, in a directory of this
// run's own.
func TestMain(m *testing.M) {
	data, err := os.MkdirTemp("", "reprise-plugin-data-")
	if err != nil {
		panic(err)
	}
	os.Setenv("CLAUDE_CODE_PLUGIN_CACHE_DIR", data)
	os.Setenv("XDG_RUNTIME_DIR", data)
	code := m.Run()
	os.RemoveAll(data)
	os.Exit(code)
}
