package hookexec

// gateScript goes before a supervised hook's command line: the hook's
// shell waits, on descriptor 3, for the host to say that the supervisor
// holds the hook's group, then closes it and runs the line. If the host
// dies first, or could not tell the supervisor, the descriptor ends
// without a line and the shell exits without running anything, so no
// moment exists in which a hook runs unsupervised. It is one line with
// the command's first, so the line numbers a shell reports stay the same.
const gateScript = "read -r _ <&3 || exit 1; exec 3<&-; "

// NoSupervisor, as Exec.Supervisor, runs command hooks without the
// process's supervisor: a hook then outlives a host killed by SIGKILL.
const NoSupervisor = "none"

// ShellSupervisor was a supervisor started for each hook.
//
// Deprecated: every command hook is supervised by default now, at no
// measurable cost; ShellSupervisor means the default.
const ShellSupervisor = "shell"

// SelfExecutable was a supervisor started for each hook.
//
// Deprecated: every command hook is supervised by default now, without
// starting the host's executable; SelfExecutable means the default.
const SelfExecutable = "/proc/self/exe"

// SupervisorArg was the argument that made MaybeSupervise supervise.
//
// Deprecated: nothing starts a program with it any more.
const SupervisorArg = "__reprise-hook-supervisor"

// MaybeSupervise returns at once.
//
// Deprecated: the supervisor is a shell the library starts itself, so a
// program's main need not call anything; a call can be removed.
func MaybeSupervise() {}
