// Package hookexec configures, matches and runs lifecycle hooks.
//
// A Registry holds the hooks of one Engine in configuration order. Each Hook
// answers one event (SessionStart, SessionEnd or Stop), has a matcher over
// the event's source or reason, a timeout, and a body: a shell command
// configured the way Claude Code configures it (LoadSettings, LoadPluginDir,
// LoadAll), or a Go function with the shapes of the Copilot SDK's session
// hooks. Scoped holds hooks that belong to one session.
//
// Command hooks run as /bin/sh -c COMMAND in their own process group, read
// one JSON object on stdin and answer on stdout: plain text or a JSON
// object whose additionalContext is the context (ParseOutput), or for Stop
// hooks a {"decision": "block"} (ParseStopOutput). A non-zero exit is a
// failure that keeps stderr, except exit 2 of a Stop hook, which blocks.
//
// # Usage
//
//	reg := hookexec.NewRegistry()
//	err := reg.OnSessionStart("project-info", "startup|resume",
//		func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
//			return hookexec.SessionStartOutput{AdditionalContext: "Go 1.26 module"}, nil
//		})
//	hooks, errs := hookexec.LoadAll(settingsFiles, pluginDirs) // Claude Code files
//	err = reg.AddAll(hooks)
//	matched := hookexec.Dedupe(reg.Match(hookexec.SessionStart, "resume"))
//	outcomes, context := hookexec.RunSessionStart(ctx, matched, in, env)
//
// # Caveats
//
// All matching hooks run in parallel. A hook that fails, panics or runs past
// its timeout is recorded in its outcome and contributes no context; it
// never stops the others. A command hook that times out is killed with its
// whole process group; one that exits normally but leaves a background
// child holding its output is read for 2 more seconds, then left alone. A
// function hook that ignores its context keeps its goroutine until it
// returns, but the run does not wait for it.
package hookexec
