package hookexec

import (
	"fmt"
	"regexp"
	"strings"
)

// Matcher selects hooks by the event's source (SessionStart) or reason
// (SessionEnd), following Claude Code's rules: "", "*" match everything;
// words joined by "|" are exact alternatives; anything else is an unanchored
// regular expression.
type Matcher struct {
	text  string
	any   bool
	words []string
	re    *regexp.Regexp
}

var exactList = regexp.MustCompile(`^[A-Za-z0-9_|]+$`)

// ParseMatcher compiles a matcher. An invalid regular expression returns an
// error matching ErrBadMatcher.
func ParseMatcher(text string) (Matcher, error) {
	switch {
	case text == "" || text == "*":
		return Matcher{text: text, any: true}, nil
	case exactList.MatchString(text):
		return Matcher{text: text, words: strings.Split(text, "|")}, nil
	}
	re, err := regexp.Compile(text)
	if err != nil {
		return Matcher{}, fmt.Errorf("%w %q: %v", ErrBadMatcher, text, err)
	}
	return Matcher{text: text, re: re}, nil
}

// Match reports whether value (a source or reason) is selected. The zero
// Matcher, like "", selects everything.
func (m Matcher) Match(value string) bool {
	switch {
	case m.any, m.re == nil && m.words == nil:
		return true
	case m.re != nil:
		return m.re.MatchString(value)
	}
	for _, w := range m.words {
		if w == value {
			return true
		}
	}
	return false
}

// String returns the matcher as written.
func (m Matcher) String() string { return m.text }
