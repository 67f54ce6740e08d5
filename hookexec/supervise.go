package hookexec

import (
	"os"
	"os/exec"
)

// SupervisorArg is the first argument Exec gives its Supervisor: the one
// that makes MaybeSupervise run the hook supervisor instead of returning.
const SupervisorArg = "__reprise-hook-supervisor"

// SelfExecutable names, for Exec.Supervisor, the executable of the
// running program itself.
const SelfExecutable = "/proc/self/exe"

// ShellSupervisor names, for Exec.Supervisor, the supervisor the hook's
// own shell runs: a short script, with no executable of the host's to
// start, so a program need not call MaybeSupervise for it.
const ShellSupervisor = "shell"

// MaybeSupervise runs the hook supervisor when the process was started as
// one (its first argument is SupervisorArg) and then exits with the hook's
// status, never returning. Otherwise it returns at once. A program whose
// Exec.Supervisor is its own executable calls it first thing in main.
//
// The supervisor runs on Linux only: it starts the hook's command line in
// its own process group, with its standard input, output and error, waits
// for it and ends as the hook ended. When the process that started it dies,
// even by SIGKILL, it kills the whole process group, so the hook and its
// children do not outlive reprise.
func MaybeSupervise() {
	if len(os.Args) < 2 || os.Args[1] != SupervisorArg {
		return
	}
	os.Exit(supervise(os.Args[2:]))
}

// supervised makes cmd, a hook's command in a process group of its own,
// start through supervisor, where the system has supervision: none, the
// hook's shell (ShellSupervisor), or an executable that calls
// MaybeSupervise.
func supervised(cmd *exec.Cmd, supervisor string) {
	switch supervisor {
	case "":
	case ShellSupervisor:
		superviseShell(cmd)
	default:
		superviseCommand(cmd, supervisor)
	}
}
