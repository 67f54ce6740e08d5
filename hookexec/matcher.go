package hookexec

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/reprise-dev/reprise/schema"
)

// Matcher selects hooks by the field of the event's input that the table
// of events names (schema.EventSpec.MatchOn: a source, a reason, a tool
// name, ...), following Claude Code 2.1.328's rules: "", "*" match
// everything; an exact list matches any of its words; anything else is an
// unanchored regular expression. On most events an exact list is made of
// letters, digits, '_', '-' and spaces, its words separated by '|' or ','
// ("Edit, Write", "startup,resume", "code-reviewer"); on FileChanged and
// StopFailure only letters, digits, '_' and '|' make one.
//
// A tool is also matched by the other names Claude Code 2.1.328 knows it
// by (toolNames): its former names ("Task" matches Agent calls, "KillBash"
// TaskStop calls), the family a tool belongs to ("Artifact" matches
// ArtifactComments), and the built-in tool an MCP tool of Claude Code's own
// stands in for ("Bash" matches mcp__workspace__bash).
type Matcher struct {
	text  string
	any   bool
	words []string
	re    *regexp.Regexp
	bad   bool // a pattern Go cannot compile: it matches nothing
}

var (
	wideList   = regexp.MustCompile(`^[A-Za-z0-9_|, -]+$`)
	narrowList = regexp.MustCompile(`^[A-Za-z0-9_|]+$`)
)

// toolNames are, for each tool Claude Code 2.1.328 knows by other names,
// those names: former names, family names, and the built-in tool a tool of
// its own MCP server stands in for.
var toolNames = map[string][]string{
	"Agent":                     {"Task"},
	"TaskStop":                  {"KillShell", "KillBash"},
	"ListAgents":                {"ListPeers"},
	"SendUserMessage":           {"Brief"},
	"ListMcpResourcesTool":      {"ListMcpResources"},
	"ReadMcpResourceTool":       {"ReadMcpResource"},
	"ReadMcpResourceDirTool":    {"ReadMcpResourceDir"},
	"SetGoal":                   {"ProposeGoal"},
	"ArtifactComments":          {"Artifact"},
	"ArtifactData":              {"Artifact"},
	"ArtifactCheck":             {"Artifact"},
	"mcp__workspace__bash":      {"Bash"},
	"mcp__workspace__web_fetch": {"WebFetch"},
}

// ParseMatcher compiles a matcher with the rule of most events (a list
// may use ',' and spaces). An invalid regular expression returns an error
// matching ErrBadMatcher.
func ParseMatcher(text string) (Matcher, error) {
	return parseMatcher(text, schema.MatchWide)
}

// ParseMatcherFor compiles a matcher of event's hooks, with the event's
// rule from the table of events. On an event without a matcher field it
// returns the matcher that matches everything, as Claude Code ignores the
// matcher there. An invalid regular expression returns an error matching
// ErrBadMatcher together with a Matcher that matches nothing: Claude Code
// skips such a matcher with a warning and keeps the rest of the file.
func ParseMatcherFor(event Event, text string) (Matcher, error) {
	rule := schema.MatchWide
	if spec, ok := schema.LookupEvent(event); ok {
		rule = spec.Rule
	}
	if rule == schema.MatchNone {
		return Matcher{any: true}, nil
	}
	m, err := parseMatcher(text, rule)
	if err != nil {
		return Matcher{text: text, bad: true}, err
	}
	return m, nil
}

func parseMatcher(text string, rule schema.MatchRule) (Matcher, error) {
	switch {
	case text == "" || text == "*":
		return Matcher{text: text, any: true}, nil
	case rule == schema.MatchNarrow && narrowList.MatchString(text):
		return Matcher{text: text, words: strings.Split(text, "|")}, nil
	case rule != schema.MatchNarrow && wideList.MatchString(text):
		var words []string
		for _, w := range strings.FieldsFunc(text, func(r rune) bool { return r == '|' || r == ',' }) {
			if w = strings.TrimSpace(w); w != "" {
				words = append(words, w)
			}
		}
		return Matcher{text: text, words: words}, nil
	}
	re, err := regexp.Compile(text)
	if err != nil {
		why := err.Error()
		if strings.Contains(text, "(?=") || strings.Contains(text, "(?!") || strings.Contains(text, "(?<") {
			why += " (lookarounds are JavaScript's, which Claude Code accepts and Go's regular expressions cannot express)"
		}
		return Matcher{}, fmt.Errorf("%w %q: %s", ErrBadMatcher, text, why)
	}
	return Matcher{text: text, re: re}, nil
}

// Match reports whether value (a source, a reason, a tool name...) is
// selected. The zero Matcher, like "", selects everything; one whose
// pattern did not compile selects nothing.
func (m Matcher) Match(value string) bool {
	switch {
	case m.bad:
		return false
	case m.any, m.re == nil && m.words == nil:
		return true
	case m.re != nil:
		return m.re.MatchString(value) || slices.ContainsFunc(toolNames[value], m.re.MatchString)
	}
	return slices.Contains(m.words, value) ||
		slices.ContainsFunc(toolNames[value], func(name string) bool { return slices.Contains(m.words, name) })
}

// String returns the matcher as written.
func (m Matcher) String() string { return m.text }
