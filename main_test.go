package reprise_test

import (
	"os"
	"testing"

	"github.com/reprise-dev/reprise/internal/testdirs"
)

// TestMain keeps the plugin hooks' data directories and the long-path
// stores' sockets in a directory of this run's own.
func TestMain(m *testing.M) {
	os.Exit(testdirs.Run(m.Run))
}
