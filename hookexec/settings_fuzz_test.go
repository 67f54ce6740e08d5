package hookexec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseSettings feeds arbitrary bytes to the parser of Claude Code
// settings files and plugin hooks.json files. A file it refuses must give
// an ErrBadConfig error naming the file; the hooks of a file it accepts
// must all be valid and accepted by a Registry. It must never panic. The
// seed corpus is every settings and plugin fixture of testdata, plus the
// cases in testdata/fuzz/FuzzParseSettings.
func FuzzParseSettings(f *testing.F) {
	for _, pattern := range []string{"testdata/settings/*.json", "testdata/plugins/*/hooks/hooks.json"} {
		paths, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "/home/dev/.claude/settings.json"
		hooks, err := parseSettings(data, path, "user")
		if err != nil && OnlyMatchers(err) {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("parseSettings(%q) = %v: a matcher error not naming the file", data, err)
			}
			err = nil // the hooks of the other matchers load
		}
		if err != nil {
			if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), path) {
				t.Fatalf("parseSettings(%q) = %v: not ErrBadConfig naming the file", data, err)
			}
			if hooks != nil {
				t.Fatalf("parseSettings(%q) failed but returned hooks %+v", data, hooks)
			}
			return
		}
		for i, h := range hooks {
			c, _ := h.Body.(Command)
			switch {
			case validate(h) != nil:
				t.Fatalf("hook %d of %q is invalid: %v", i, data, validate(h))
			case h.Type() == "" || h.Name == "":
				t.Fatalf("hook %d of %q has type %q and name %q", i, data, h.Type(), h.Name)
			case h.IsCommand() && (strings.TrimSpace(c.Line) == "" || h.Name != c.Line):
				t.Fatalf("hook %d of %q has command %q and name %q", i, data, c.Line, h.Name)
			case h.Source != "user" || h.Timeout < 0 || c.Shell != "" && c.Shell != "bash":
				t.Fatalf("hook %d of %q: source %q, timeout %v, shell %q", i, data, h.Source, h.Timeout, c.Shell)
			}
			if again, err := ParseMatcherFor(h.Event, h.Matcher.String()); err != nil && !h.Matcher.Match("x") && !again.Match("x") {
				continue // a bad matcher stays bad, and matches nothing
			} else if err != nil {
				t.Fatalf("hook %d of %q has a matcher that does not parse again: %v", i, data, err)
			}
		}
		if err := NewRegistry().AddAll(hooks); err != nil {
			t.Fatalf("a registry refuses the hooks of %q: %v", data, err)
		}
	})
}
