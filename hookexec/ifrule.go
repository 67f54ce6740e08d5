package hookexec

import (
	"encoding/json"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// A hook's "if" is a permission rule, as Claude Code 2.1.328 writes them
// in settings files: a tool name ("Bash", "mcp__memory__create"), an MCP
// server ("mcp__memory", "mcp__memory__*"), or a tool name with a content
// pattern in parentheses ("Bash(git *)", "Edit(*.ts)",
// "WebFetch(domain:example.com)"). Claude Code evaluates it on the tool
// events only (PreToolUse, PostToolUse, PostToolUseFailure,
// PermissionRequest, PermissionDenied): a hook with an "if" on any other
// event never runs.

// ifRule is a parsed "if".
type ifRule struct {
	tool    string // the tool, or the MCP server (mcp__server)
	content string // the pattern inside the parentheses; "" for none
}

var ifRuleSyntax = regexp.MustCompile(`^([^()\s]+)(?:\((.*)\))?$`)

// parseIf parses rule, and reports false when it is not a permission rule.
func parseIf(rule string) (ifRule, bool) {
	m := ifRuleSyntax.FindStringSubmatch(strings.TrimSpace(rule))
	if m == nil {
		return ifRule{}, false
	}
	r := ifRule{tool: strings.TrimSuffix(m[1], "__*"), content: m[2]}
	if r.content == "*" {
		r.content = ""
	}
	return r, true
}

// ifHolds says whether h's "if" lets it run for the call in, with the
// session's working directory cwd. A hook without one always may. When
// the rule names the call's tool but its pattern cannot be evaluated for
// that tool (a tool whose input this package does not know, a rule it
// cannot parse), the hook runs, so that a gate fails closed, and why is
// the warning.
func ifHolds(rule string, in ToolInput) (holds bool, warning string) {
	if rule == "" {
		return true, ""
	}
	r, ok := parseIf(rule)
	if !ok {
		return true, "its if condition " + rule + " is not a permission rule; the hook runs"
	}
	if !r.namesTool(in.ToolName) {
		return false, ""
	}
	if r.content == "" {
		return true, ""
	}
	var input map[string]any
	_ = json.Unmarshal(in.ToolInput, &input)
	text := func(keys ...string) (string, bool) {
		for _, k := range keys {
			if s, ok := input[k].(string); ok {
				return s, true
			}
		}
		return "", false
	}
	switch canonicalTool(in.ToolName) {
	case "Bash":
		if command, ok := text("command"); ok {
			return commandMatches(r.content, command), ""
		}
	case "Read", "Edit", "Write", "MultiEdit", "NotebookEdit":
		if file, ok := text("file_path", "notebook_path", "path"); ok {
			return pathMatches(r.content, file, in.Cwd), ""
		}
	case "WebFetch":
		if raw, ok := text("url"); ok {
			if domain, ok := strings.CutPrefix(r.content, "domain:"); ok {
				u, err := url.Parse(raw)
				host := ""
				if err == nil {
					host = u.Hostname()
				}
				return host == domain || strings.HasSuffix(host, "."+domain), ""
			}
		}
	}
	return true, "its if condition " + rule + " cannot be evaluated for " + in.ToolName + " calls; the hook runs"
}

// namesTool reports whether the rule's tool is tool, one of the other
// names Claude Code knows it by, or the MCP server it belongs to.
func (r ifRule) namesTool(tool string) bool {
	if r.tool == tool || strings.HasPrefix(tool, r.tool+"__") && strings.HasPrefix(r.tool, "mcp__") {
		return true
	}
	for _, name := range toolNames[tool] {
		if r.tool == name {
			return true
		}
	}
	return false
}

// canonicalTool is the built-in tool that tool is, or stands in for.
func canonicalTool(tool string) string {
	switch tool {
	case "mcp__workspace__bash":
		return "Bash"
	case "mcp__workspace__web_fetch":
		return "WebFetch"
	}
	return tool
}

// commandMatches reports whether a Bash rule's pattern matches command,
// or one of the simple commands it joins with &&, ||, ;, | or a newline:
// "npm run test:*" is a prefix ("npm run test" and what follows a space);
// otherwise '*' matches any text, "\*" a star, and the pattern must match
// the whole command ("git *" matches "git status" but not "gitk").
func commandMatches(pattern, command string) bool {
	parts := append([]string{command}, commandSeparators.Split(command, -1)...)
	for _, part := range parts {
		part = strings.TrimSpace(part)
		if prefix, ok := strings.CutSuffix(pattern, ":*"); ok {
			if part == prefix || strings.HasPrefix(part, prefix+" ") {
				return true
			}
			continue
		}
		if wildcard(pattern).MatchString(part) {
			return true
		}
	}
	return false
}

var commandSeparators = regexp.MustCompile(`&&|\|\||[;|\n]`)

// wildcard compiles a pattern in which '*' matches any text and "\*" a
// star into an anchored regular expression.
func wildcard(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^`)
	for i := 0; i < len(pattern); i++ {
		switch {
		case pattern[i] == '\\' && i+1 < len(pattern) && pattern[i+1] == '*':
			b.WriteString(`\*`)
			i++
		case pattern[i] == '*':
			b.WriteString(`(?s:.*)`)
		default:
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

// pathMatches reports whether a file rule's pattern matches file, in the
// way of a .gitignore line: a pattern without '/' matches the file's name
// in any directory ("*.ts"); "//abs/..." is an absolute path, "~/..." one
// in the home directory, and any other pattern with a '/' is relative to cwd; '*' matches within a
// name, "**" across directories.
func pathMatches(pattern, file, cwd string) bool {
	if !filepath.IsAbs(file) {
		file = filepath.Join(cwd, file)
	}
	file = filepath.ToSlash(filepath.Clean(file))
	if !strings.Contains(strings.TrimSuffix(pattern, "/"), "/") {
		ok, _ := path.Match(pattern, path.Base(file))
		return ok
	}
	switch {
	case strings.HasPrefix(pattern, "//"):
		pattern = pattern[1:]
	case strings.HasPrefix(pattern, "~/"):
		home, _ := os.UserHomeDir()
		pattern = filepath.ToSlash(home) + pattern[1:]
	case strings.HasPrefix(pattern, "/"):
		pattern = filepath.ToSlash(cwd) + pattern
	default:
		pattern = filepath.ToSlash(cwd) + "/" + pattern
	}
	return globPath(pattern).MatchString(file)
}

// globPath compiles a path pattern, with '*' and '?' within a name and
// "**" across names, into an anchored regular expression.
func globPath(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^`)
	for i := 0; i < len(pattern); i++ {
		switch {
		case strings.HasPrefix(pattern[i:], "**/"):
			b.WriteString(`(?:.*/)?`)
			i += 2
		case strings.HasPrefix(pattern[i:], "**"):
			b.WriteString(`.*`)
			i++
		case pattern[i] == '*':
			b.WriteString(`[^/]*`)
		case pattern[i] == '?':
			b.WriteString(`[^/]`)
		default:
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}
