// Package hookexec configures, matches and runs lifecycle hooks.
//
// A Registry holds the hooks of one Engine in configuration order. Each Hook
// answers one of Claude Code's 33 events (schema.Events), has a matcher
// over the event's matcher field, a timeout, and a body of one of Claude
// Code's five hook types, configured the way Claude Code configures them
// (LoadSettings, LoadPluginDir, LoadAll, and LoadEnabledPlugins for the
// plugins Claude Code installed under ~/.claude/plugins that settings
// enable): a shell command (Command), an HTTP POST (HTTP), a tool of an
// MCP server (MCPTool, through the host's Exec.MCP), or a question to a
// model (Prompt, through the host's Exec.Evaluator or, for agent hooks,
// Exec.AgentEvaluator). A body may also be a Go function with the shapes
// of the Copilot SDK's session hooks, or an EventFunc. The same files'
// hooks of events that are none of Claude Code's are read, to be listed,
// by LoadOtherHooks and LoadOtherPluginHooks.
//
// Scoped holds hooks that belong to one session, with Claude Code's
// session-hook options (ScopedOptions: a chosen id, an error message, a
// success callback, once). The caller runs what Scoped.Match returns and
// hands the outcomes to Scoped.Settle, which applies those options.
//
// Command hooks run as /bin/sh -c COMMAND in their own process group, read
// one JSON object on stdin and answer on stdout: plain text or a JSON
// object whose additionalContext is the context (ParseOutput), or for Stop
// hooks a {"decision": "block"} (ParseStopOutput). A non-zero exit is a
// failure that keeps stderr, except exit 2 of a Stop hook, which blocks.
// Hooks of the other types are read as a command that exited 0 with
// their answer on stdout (an http hook's body, an MCP tool's text), or,
// for a prompt or agent hook's ok: false, as exit 2 (Prompt); each of
// their failures blocks nothing unless the hook's onFailure is "block".
//
// # Usage
//
//	reg := hookexec.NewRegistry()
//	err := reg.OnSessionStart("project-info", "startup|resume",
//		func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
//			return hookexec.SessionStartOutput{AdditionalContext: "Go 1.26 module"}, nil
//		})
//	hooks, errs := hookexec.LoadAll(settingsFiles, pluginDirs) // Claude Code files
//	installed, more := hookexec.LoadEnabledPlugins(home, projectDir, settingsFiles)
//	err = reg.AddAll(append(hooks, installed...)) // warn about errs and more
//
//	var scoped hookexec.Scoped
//	id, err := scoped.AddWith(session, hook, hookexec.ScopedOptions{Once: true})
//
//	matched := hookexec.Dedupe(append(reg.Match(hookexec.SessionStart, "resume"),
//		scoped.Match(session, hookexec.SessionStart, "resume")...))
//	outcomes, context := hookexec.RunSessionStart(ctx, matched, in, env)
//	outcomes = scoped.Settle(session, matched, outcomes) // then record them
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
//
// A host that dies, even by SIGKILL, takes its command hooks with it: by
// default the process's supervisor, one /bin/sh started with the first
// hook, holds each running hook's process group and kills it when the
// host is gone, however it ended (its input is a socket only the host
// holds, which no hook inherits or can open through /proc, so it ends
// then). A hook waits at its first instruction
// until the supervisor holds it, so none runs unsupervised even for an
// instant. Exec{Supervisor: NoSupervisor} runs hooks bare, to outlive a
// killed host. A supervisor that someone else kills is replaced at the
// next hook's start or end; until then the running hooks are
// unsupervised.
//
// Configuration files (settings, hooks.json, installed_plugins.json) are
// read only when they are, or link to, a regular file of at most
// MaxConfigFileSize bytes; a FIFO or device is refused without waiting.
// A command longer than MaxCommandSize could never be started, and is
// refused where it is configured; a long one is named by CommandName, a
// digest, in outcomes and warnings.
//
// Command hooks inherit the whole environment of the process, as Claude
// Code's do, unless Exec.InheritEnv lists the only variables to pass.
//
// Command hooks need a Unix system's process groups (Linux and macOS are
// supported). Elsewhere, such as on Windows, each command hook fails with
// ErrUnsupportedPlatform without running; Go function hooks run everywhere.
//
// Session-hook options live in process only: OnSuccess runs in Settle, not
// in the log, so a run cut short by a crash never calls it, and a Once
// hook matched by two concurrent runs may run twice, but only the first
// ok outcome settled calls its OnSuccess and removes it. Settle recognises
// a scoped hook by its Source (ScopedSource) and its dedupe identity, so
// it must be called before Drop, and a hook removed meanwhile is left
// alone.
package hookexec
