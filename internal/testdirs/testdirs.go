// Package testdirs keeps what reprise writes outside a store's own files,
// when tests run it, in a directory of the test run's own: the sockets of
// stores whose path is too long for one beside them (under
// $XDG_RUNTIME_DIR, else the system's temporary directory) and the data
// directories plugin hooks get before they run (under ~/.claude unless
// $CLAUDE_CODE_PLUGIN_CACHE_DIR names another). It imports nothing of
// reprise, so that any package's TestMain can use it.
package testdirs

import "os"

// Run points both at a new temporary directory, runs the tests (a
// TestMain's m.Run), removes the directory and returns their code, for
// TestMain to exit with.
func Run(tests func() int) int {
	dir, err := os.MkdirTemp("", "reprise-test-dirs-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.Setenv("XDG_RUNTIME_DIR", dir)
	os.Setenv("CLAUDE_CODE_PLUGIN_CACHE_DIR", dir)
	return tests()
}
