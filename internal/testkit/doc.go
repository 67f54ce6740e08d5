// Package testkit is the shared set-up of reprise's tests: temporary bbolt
// stores and Engines over them, sessions with messages, the events of a
// store and a store written from events, hook scripts and Claude Code
// settings files, a home directory of the test's own, a fixed clock and id
// source, and helper processes that hold a store or are killed mid-run.
//
// # Usage
//
// Every helper takes the test's testing.TB, fails it at the first error and
// removes what it made when the test ends:
//
//	e, path := testkit.NewEngine(t, reprise.Options{})
//	testkit.Session(t, e, "a", "", "hello", "hi") // user, then assistant
//	agent := testkit.Agent(t, e, "ide")
//	evs := testkit.Events(t, e.Store())
//	crashed := testkit.WriteStore(t, evs[:5]) // what a process dying there leaves
//
// A test that runs code reading the user's directories (the CLI, Claude
// Code's ~/.claude settings) first calls Home, which points HOME and the XDG
// directories at temporary ones.
//
// Helper processes are the test binary itself: the package's TestMain runs
// the helper's part when it finds its variable in the environment, and the
// test starts it with StartChild, reads its lines and releases or kills it.
//
// # Caveats
//
// Only tests import testkit; no package of the library or the command may.
// It imports the root package, so the root package's own internal tests and
// those of the packages the root package imports (boltstore, eventlog, ...)
// cannot use it; their external tests (package x_test) can.
//
// Home uses testing.TB.Setenv, so a test that calls it cannot be parallel.
//
// Abs and Script name files relative to the directory the test binary
// started in, which go test sets to the package's directory, so they keep
// working after a test moves with testing.T.Chdir.
package testkit
