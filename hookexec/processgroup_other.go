//go:build !unix

package hookexec

import (
	"fmt"
	"os/exec"
	"runtime"
)

// commandPlatform returns ErrUnsupportedPlatform: without Unix process
// groups, a hook that times out or is cancelled could not be killed with
// what it started.
func commandPlatform() error {
	return fmt.Errorf("%w: command hooks need a Unix system such as Linux or macOS, and this is %s", ErrUnsupportedPlatform, runtime.GOOS)
}

// inOwnGroup leaves cmd as it is: execute never gets this far here, as
// commandPlatform refuses first.
func inOwnGroup(*exec.Cmd, *commandRun) {}
