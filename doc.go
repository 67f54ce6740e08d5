// Package reprise gives AI agent hosts a crash-safe session lifecycle.
//
// An Engine keeps every conversation in an append-only event log (a bbolt
// file by default) and changes an agent's current session through
// recorded, step-by-step paths that run the lifecycle hooks Claude Code's
// protocol defines: SessionEnd on the session left, SessionStart on the
// session entered, with the hooks' context injected as a
// <system-reminder> meta user message. Every step is an event, appended
// only when the lifecycle table accepts it from the state the log yields,
// and hooks run only after their intent is durable, so a hook never runs
// twice for one restore, even across a crash.
//
// # Usage
//
//	e, err := reprise.Open("sessions.db", reprise.Options{})
//	if err != nil { ... }
//	defer e.Close()
//	hooks, errs := hookexec.LoadAll(settingsFiles, nil) // Claude Code settings
//	e.Hooks().AddAll(hooks)
//
//	id, _ := e.CreateSession(ctx, "", "/src/app")
//	e.Append(ctx, id, reprise.Text("user", "hello"))
//
//	agent, _ := e.Agent(ctx, "ide-1") // finishes an interrupted restore first
//	agent.Start(ctx, id)               // startup: SessionStart "startup"
//	r, err := agent.Restore(ctx, other) // save, SessionEnd, load, SessionStart, inject
//
// Agents also have New, Clear, Fork, Compact, End and Stop; see
// docs/lifecycle.md and the scenario files in testdata/scenarios, which
// are the spec. A PostgreSQL store is opened with package pgstore and
// handed to New; Open takes only bbolt files, so a program that never
// imports pgstore never links its driver. Audit checks a whole store; Import and Export move
// Claude Code transcripts in and out. DeleteSession (or DeleteInactive, for
// retention) deletes a session, and Vacuum then removes its data for good.
// These live in packages of their own (audit, transfer, deletion, vacuum,
// and files for the files beside the store), which the root forwards to
// under the names above, so that it holds the Engine, the Agent and their
// options.
//
// # Caveats
//
// An Engine caches each session it touches, with its conversation, for as
// long as it is open. A bbolt store belongs to one process at a time: a
// second process gets eventlog.ErrLocked, unless it reads through the
// socket an Engine opened with Options.ServeReads serves. Restores of one agent never
// overlap; a second caller gets ErrAgentBusy. Hooks run in the
// session's working directory; one that does not exist makes command hooks
// fail, and the failure is recorded like any other. A function hook that
// ignores its context keeps its goroutine after its timeout.
//
// Files beside the store (transcripts, each SessionStart run's
// CLAUDE_ENV_FILE, spilled hook output) live in one directory per store
// (DefaultTranscriptDir for a bbolt file), which must be the user's own:
// one that is a link, another user's or writable by others is refused with
// ErrNotPrivate, and the restore goes on without the files, with a
// warning: its hooks get an empty transcript_path and no CLAUDE_ENV_FILE.
// A relative directory is made absolute when the Engine opens. Import never takes a transcript's working directory as the
// session's: a session's project hooks run only where the host or the
// user chose.
//
// Cancelling the context of an action stops it at the next step boundary
// with ErrInterrupted: the running hooks are cancelled and recorded, and
// the next call on the agent finishes the restore. Command hooks die with
// a host killed by SIGKILL, unless Options.Runner is a hookexec.Exec with
// NoSupervisor (see docs/hooks.md).
//
// On a database several hosts share, a host that cached a session learns
// that another deleted it at its next action on an agent or write to the
// session; until then it may still read it. Vacuum removes deleted sessions' text from the store, not
// from copies made before it: backups, exports, and what hooks kept.
package reprise
