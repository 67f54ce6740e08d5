// Package hookexec configures, matches and runs lifecycle hooks.
//
// A Registry holds the hooks of one Engine in configuration order. Each Hook
// answers one event (SessionStart or SessionEnd), has a matcher over the
// event's source or reason, a timeout, and a body: a Go function with the
// shapes of the Copilot SDK's session hooks.
//
// # Usage
//
//	reg := hookexec.NewRegistry()
//	err := reg.OnSessionStart("project-info", "startup|resume",
//		func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
//			return hookexec.SessionStartOutput{AdditionalContext: "Go 1.26 module"}, nil
//		})
//	hooks := reg.Match(hookexec.SessionStart, "resume")
//	outcomes, context := hookexec.RunSessionStart(ctx, hooks, in)
//
// # Caveats
//
// All matching hooks run in parallel. A hook that fails, panics or runs past
// its timeout is recorded in its outcome and contributes no context; it
// never stops the others. A function hook that ignores its context keeps
// its goroutine until it returns, but the run does not wait for it.
package hookexec
