package testkit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Fataler is the part of testing.TB that Script needs; rapid's T has it too.
type Fataler interface {
	Helper()
	Fatal(args ...any)
}

// startDir is the working directory the test binary started in: the
// directory of the package under test, whatever a test changes it to.
var startDir, startErr = os.Getwd()

// Abs returns the absolute path of rel, a path relative to the directory of
// the package under test, even after a test changed its working directory.
func Abs(tb Fataler, rel string) string {
	tb.Helper()
	if startErr != nil {
		tb.Fatal(startErr)
	}
	return filepath.Join(startDir, rel)
}

// Script returns the absolute path of testdata/hooks/name in the package
// under test.
func Script(tb Fataler, name string) string {
	tb.Helper()
	return Abs(tb, filepath.Join("testdata", "hooks", name))
}

// WriteFile writes data to path, making its directories, and returns path.
func WriteFile(tb testing.TB, path, data string) string {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Settings returns a Claude Code settings file whose SessionStart hooks,
// matching "startup|resume", run the start commands, and whose SessionEnd
// hooks, matching every reason, run the end commands.
func Settings(tb testing.TB, start, end []string) string {
	tb.Helper()
	group := func(matcher string, commands []string) []any {
		var hooks []any
		for _, c := range commands {
			hooks = append(hooks, map[string]any{"type": "command", "command": c})
		}
		return []any{map[string]any{"matcher": matcher, "hooks": hooks}}
	}
	b, err := json.MarshalIndent(map[string]any{"hooks": map[string]any{
		"SessionStart": group("startup|resume", start),
		"SessionEnd":   group("", end),
	}}, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// Home points HOME and the XDG base directories (config, cache, state,
// data) at new directories of the test's own, so that code reading or
// writing the user's files touches only them. It returns HOME.
func Home(tb testing.TB) string {
	tb.Helper()
	root := tb.TempDir()
	home := filepath.Join(root, "home")
	tb.Setenv("HOME", home)
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"} {
		tb.Setenv(v, filepath.Join(root, v))
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		tb.Fatal(err)
	}
	return home
}
