package hookexec

import "errors"

var (
	// ErrBadMatcher is returned when a matcher is not a valid regular
	// expression.
	ErrBadMatcher = errors.New("hookexec: invalid matcher")

	// ErrBadConfig is returned when a settings file or a plugin's hooks.json is
	// not valid JSON, has a value of the wrong type, or describes a hook that
	// cannot run. Its message names the file and the position of the fault: a
	// line and column for JSON errors, a path such as
	// hooks.SessionStart[0].hooks[1].command for the others.
	ErrBadConfig = errors.New("hookexec: invalid configuration")

	// ErrBadHook is returned when a hook has no body or answers an event
	// reprise does not know.
	ErrBadHook = errors.New("hookexec: invalid hook")
)

// ErrUntrusted is returned when a configuration file (a settings file, a
// plugin's hooks.json, installed_plugins.json) could have been written by
// another user: the file, or a directory above it, belongs to someone other
// than the running user or root, or may be written by other users (a
// directory that others may write is allowed only when it is sticky, as
// /tmp is). Its message names the file and what is wrong with it. A
// project directory another user re-created, in a shared /tmp for
// example, is refused this way, so its hooks never run as you.
var ErrUntrusted = errors.New("hookexec: configuration file another user could have written")

// ErrHookIDInUse is returned by Scoped.AddWith when the id asked for names
// another hook of the same session.
var ErrHookIDInUse = errors.New("hookexec: session hook id in use")

// ErrUnsupportedPlatform is returned when a command hook is run on a
// system that is not a Unix, such as Windows, and is then the error of the
// hook's failed outcome. A command hook runs in a process group of its own,
// so that a timeout or a cancel kills everything it started, and only Unix
// systems (Linux and macOS are supported) have them. Go function hooks run
// everywhere.
var ErrUnsupportedPlatform = errors.New("hookexec: command hooks are not supported on this platform")
