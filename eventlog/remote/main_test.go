package remote

import (
	"os"
	"testing"

	"github.com/reprise-dev/reprise/internal/testdirs"
)

// TestMain keeps the sockets of stores whose path is too long for one
// beside them (t.TempDir's are, some) in a directory of this run's own.
func TestMain(m *testing.M) {
	os.Exit(testdirs.Run(m.Run))
}
