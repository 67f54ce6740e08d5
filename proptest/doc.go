// Package proptest holds the property, crash and concurrency suites of
// reprise. It has no API; everything is in its tests.
//
// TestEngineStateMachine drives a real Engine on a real bbolt file with
// random sequences of actions, drawn and shrunk by pgregory.net/rapid, and
// compares it after each action with a model written as plainly as
// possible: sessions are lists of messages, agents are a current session
// and a list of restores, and a restore is a fixed sequence of steps whose
// hooks act out the behaviour they were given. The actions are: create a
// session (a new id, or one that exists); append a durable message; buffer
// one; save; a startup restore (Start) to an existing session or to the
// current one, or to a missing id or ""; a runtime restore (Restore) to
// another session, or to a missing id, the current session or ""; New
// (with a fresh id, or one that is taken), Clear and End, and End with a
// bad reason or without a current session; change what a registered hook
// does (function hooks: return context, return nothing, fail, panic;
// command hooks from a settings file: print text or JSON, print nothing,
// exit 2); add and remove session-scoped function and command hooks, among
// them hooks that hang until their timeout and a duplicate of a registered
// command; delete a session no agent is on (and try to create it again),
// and vacuum, after which the restores into deleted sessions must read
// with their context blanked and the audit must accept the gaps; close and
// reopen the store; and crash: the store fails every
// append from the k-th append of a Start, a Restore, an End or a message
// on, before or after writing it, as if the process had died there, and a
// new Engine opens the file and rolls forward. Two agents share the
// Engine. Every hook run appends a line to a side file, so runs are
// observed, not taken from the log. Fork, Compact and Stop are actions
// too.
//
// Fired events are actions as well: Agent.Fire of Notification, Setup
// (trigger init, which a function hook matches, or maintenance, which no
// hook matches) or TaskCreated, with an id drawn from a pool of three per
// agent, so that ids come back, for the same event or another one, with
// or without a current session. A function hook runs on each (it can
// return context, nothing, fail, panic, or try to End the session while
// it runs) and a command hook on Notification and TaskCreated; every
// compaction fires PostCompact, whose function hook can do the same but
// meddle. CrashInFire kills the process (in effect) at the append of a new
// fire's intent or of its outcome, before or after writing it, and
// CrashInCompact at any append of a compaction or of its PostCompact. The
// fire actions are keyed in lower case, after the older ones, so that
// adding them moved none of those and the kept .fail files replay as
// before.
//
// After every action it checks that the current session of each agent,
// every conversation (roles, texts, meta flags, parent links) and every
// buffered message equal the model's; that the hook runs since the last
// action are exactly the model's, phase by phase, so that each restore ran
// at most one SessionEnd phase and one SessionStart phase, in that order,
// on the right sessions with the right source or reason; that every
// restore of the log has the model's steps, hooks, outcome statuses,
// interrupted flags, context and injected message, and that injected
// context is one meta message, last in its session at the time, only when
// non-empty; that conversations and agents rebuilt from the log equal the
// live ones, and the session index agrees; that Engine.HooksFor lists the
// model's hooks for every session, so session-scoped hooks come and go as
// they should; that reprise.Audit finds no violation and counts the
// model's restores and interrupted hooks; and, for fires, that the hooks
// of one fire id never run twice in a case, across crashes and reopens;
// that a fire of a recorded id runs nothing and returns what the first
// answer said; that the fire table (fsm.ApplyFire) accepts the fire steps
// of every agent stream, that no step but a tool call's or a fire's comes
// between a fire's HookEventStarted and its HookEventRan, and that every
// fire id of the model, and every compaction's PostCompact, has exactly
// one HookEventRan with the model's hooks, statuses and interrupted flag
// (interrupted when a crash cut it); and that End tried by a hook while
// its fire runs fails with ErrAgentBusy.
//
// TestCrashPoints kills real processes. For each seed it draws a scenario
// (sessions, durable and buffered messages, hook behaviours, which restore
// and which message the points hit), and for each crash point and each
// kind of hooks (Go functions, or command hooks running
// testdata/hooks/hook.sh) it runs the test binary again as a child that
// plays the scenario against a bbolt file. The child's store reports
// "before" and "after" points around the chosen append and blocks there;
// a hook reports the "running" points and blocks after the other hooks of
// its phase have run. "Before SessionEndHookRan" and "before
// SessionStartHookRan" are the points between the hooks' end and the
// record of their outcome. The child reports each message it knows to be
// durable on a FIFO before it goes on. The parent kills the child with
// SIGKILL when it reports the chosen point (and the blocked hook's process
// group), opens the store, which rolls the interrupted restore forward,
// and checks the side file of hook runs (no line twice, and exactly the
// model's runs), the agent's restores, every conversation, every message
// the child acknowledged, and the audit; a second open must run no hook.
//
// TestTwoAgentsRestoreIntoOneSession and TestConcurrentRestoresOfOneAgent
// race restores, in one Engine and in two Engines sharing a store that
// locks streams, as processes sharing a database do.
//
// Fuzz targets live beside the code they test: FuzzUnmarshalEnvelope and
// FuzzEnvelopeRoundTrip in eventlog, FuzzParseSettings and FuzzParseOutput
// in hookexec, FuzzImport in the root package. Their seed corpora in each
// package's testdata/fuzz run as ordinary tests.
//
// # Usage
//
// The default run is what CI does, and takes seconds:
//
//	go test -race ./proptest
//
// It is deterministic: the state machine test uses a fixed rapid seed and
// the crash test fixed scenario seeds. To try other cases, or to size a
// run, use rapid's flags or these variables:
//
//	go test ./proptest -rapid.seed=7 -rapid.checks=500 -rapid.steps=60
//	REPRISE_PROPTEST_CASES=500 go test ./proptest   # state machine cases
//	REPRISE_CRASH_SEEDS=50 go test ./proptest       # crash scenarios 1..50
//	REPRISE_PROPTEST_LONG=1 go test ./proptest -v   # the long run
//
// The long run raises the cases, the crash seeds and the concurrency
// iterations, and draws a new rapid seed, which -v shows in the log. A
// failing state machine case is shrunk to a minimal sequence of actions
// and saved under testdata/rapid/TestEngineStateMachine/ as a .fail file;
// every later run replays the files found there before anything else, so
// keeping a file in the repository keeps its case as a regression test.
// Replay one alone with -rapid.failfile=PATH. A failing crash point is
// named by its subtest, for example
//
//	go test ./proptest -run 'TestCrashPoints/seed2/command/resume/before/SessionEndHookRan'
//
// and the fuzz targets run with
//
//	go test -run '^$' -fuzz '^FuzzImport$' -fuzztime 60s .
//
// docs/testing.md records the numbers of the last long run.
//
// # Caveats
//
// The state machine's crashes happen inside the test process: the store
// refuses appends as a dead process would, but memory is not lost the way
// it is when a process dies; TestCrashPoints covers real deaths. The crash
// test needs Linux (FIFOs, /proc, process groups) and skips elsewhere.
// Hooks that hang are given short timeouts and every other hook a long
// one, so that a slow machine cannot turn a working hook into a timeout,
// and hanging hooks record no run, since whether they got that far is up
// to the scheduler. Rapid .fail files depend on the order and kind of the
// draws, so changing the actions of the machine can make saved files
// replay a different case (rapid then says the file is no longer valid).
package proptest
