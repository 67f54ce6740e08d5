package hookexec

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/internal/testdirs"
)

// The test binary doubles as a host that other tests kill; these
// variables in its environment say when it is one.
const (
	// supervisedEnv, set to NoSupervisor, makes testEnv run command
	// hooks bare.
	supervisedEnv = "REPRISE_TEST_SUPERVISED"
	// hostEnv makes the binary a host that runs one supervised hook, with
	// the command line it names, then exits; hostSupervisorEnv names its
	// supervisor ("" for the default).
	hostEnv           = "REPRISE_TEST_HOOK_HOST"
	hostSupervisorEnv = "REPRISE_TEST_HOOK_HOST_SUPERVISOR"
)

// testSupervisor is the supervisor of the command tests: the default, or
// what supervisedEnv names.
var testSupervisor string

func TestMain(m *testing.M) {
	if line := os.Getenv(hostEnv); line != "" {
		os.Exit(runHost(line))
	}
	testSupervisor = os.Getenv(supervisedEnv)
	// Plugin hooks get a data directory made before they run.
	os.Exit(testdirs.Run(m.Run))
}

// runHost is the test binary as a host: it runs the hook line under the
// supervisor hostSupervisorEnv names in the current directory, as a SessionStart hook, and exits 0
// once it has finished.
func runHost(line string) int {
	dir, err := os.Getwd()
	if err != nil {
		return 1
	}
	h := Hook{Event: SessionStart, Name: "host-hook", Body: Command{Line: line}}
	runCommand(context.Background(), h, nil, CommandEnv{ProjectDir: dir, supervisor: os.Getenv(hostSupervisorEnv)}, time.Hour)
	return 0
}
