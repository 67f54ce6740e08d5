package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/turn"
)

// rule is one permission rule: a tool name, and what of its calls it
// covers ("" for all of them), as Claude Code writes them: Bash,
// Bash(npm run test *), Read(src/**), Edit(/docs/**).
type rule struct {
	tool, spec string
	origin     string // where it was written, for messages
}

// rules are the permission rules that apply to a session, by what they
// say: deny, ask or allow.
type rules struct {
	deny, ask, allow []rule
}

// settingsPermissions is the part of a settings file that holds rules.
type settingsPermissions struct {
	Permissions struct {
		Allow []string `json:"allow"`
		Deny  []string `json:"deny"`
		Ask   []string `json:"ask"`
	} `json:"permissions"`
}

// maxSettingsSize bounds a settings file read for its rules, as reprise
// bounds the ones it reads for hooks.
const maxSettingsSize = hookexec.MaxConfigFileSize

// loadRules reads the rules of Claude Code's settings files for a session
// whose project is project (~/.claude/settings.json, then the project's
// .claude/settings.json and .claude/settings.local.json), then adds
// --allowed-tools and --disallowed-tools. A file that is missing is
// skipped; one that cannot be read is skipped with a warning on warn, as
// reprise skips a broken settings file's hooks.
func loadRules(home, project string, allowed, disallowed []string, warn io.Writer) rules {
	var rs rules
	for _, loc := range hookexec.DefaultSettingsPaths(home, project) {
		p, err := readPermissions(loc.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			fmt.Fprintf(warn, "permissions of %s skipped: %v\n", loc.Path, err)
			continue
		}
		rs.deny = append(rs.deny, parseRules(p.Permissions.Deny, loc.Path)...)
		rs.ask = append(rs.ask, parseRules(p.Permissions.Ask, loc.Path)...)
		rs.allow = append(rs.allow, parseRules(p.Permissions.Allow, loc.Path)...)
	}
	rs.allow = append(rs.allow, parseRules(allowed, "--allowed-tools")...)
	rs.deny = append(rs.deny, parseRules(disallowed, "--disallowed-tools")...)
	return rs
}

func readPermissions(path string) (settingsPermissions, error) {
	var p settingsPermissions
	f, err := os.Open(path)
	if err != nil {
		return p, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return p, err
	}
	if !info.Mode().IsRegular() || info.Size() > maxSettingsSize {
		return p, fmt.Errorf("not a regular file of at most %d bytes", maxSettingsSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSettingsSize))
	if err != nil {
		return p, err
	}
	return p, json.Unmarshal(data, &p)
}

// parseRules reads rules written as Tool or Tool(specifier); an empty one
// is skipped.
func parseRules(texts []string, origin string) []rule {
	var out []rule
	for _, text := range texts {
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		r := rule{tool: text, origin: origin}
		if open := strings.IndexByte(text, '('); open > 0 && strings.HasSuffix(text, ")") {
			r.tool, r.spec = text[:open], strings.TrimSpace(text[open+1:len(text)-1])
		}
		if r.spec == "*" {
			r.spec = ""
		}
		out = append(out, r)
	}
	return out
}

// splitToolList splits the value of --allowed-tools as Claude Code splits
// --allowedTools: at commas and spaces outside parentheses, so that
// "Bash(git log *),Read" and "Bash(git log *) Read" are two rules each.
func splitToolList(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch {
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case (c == ',' || c == ' ') && depth == 0:
			if part := strings.TrimSpace(s[start:i]); part != "" {
				out = append(out, part)
			}
			start = i + 1
		}
	}
	if part := strings.TrimSpace(s[start:]); part != "" {
		out = append(out, part)
	}
	return out
}

// toolList is a repeatable flag of rules.
type toolList []string

func (l *toolList) String() string { return strings.Join(*l, ",") }
func (l *toolList) Set(s string) error {
	*l = append(*l, splitToolList(s)...)
	return nil
}

// call is what a rule is matched against: a tool call, the directory it
// runs in, and the home directory that ~ names.
type call struct {
	tool  string
	input json.RawMessage
	cwd   string // the session's project, where Bash runs and relative paths start
	home  string
}

// permission is what the rules say of c, in Claude Code's order: a deny
// rule wins, then an ask rule, then an allow rule; hookexec.Allow for
// a Read inside the project, which Claude Code reads without asking, and
// for an Agent call, which hands work to a subagent whose own calls are
// asked about; ""
// when nothing applies (reprise then weighs the hooks' answer, and a call
// nobody decides is asked about).
func (rs rules) permission(c call) (decision string, why *rule) {
	if r := firstMatch(rs.deny, c, anyPart); r != nil {
		return hookexec.Deny, r
	}
	if r := firstMatch(rs.ask, c, anyPart); r != nil {
		return hookexec.Ask, r
	}
	if r := firstMatch(rs.allow, c, everyPart); r != nil {
		return hookexec.Allow, r
	}
	if c.tool == "Read" {
		if p, ok := filePath(c); ok && within(p, c.cwd) {
			return hookexec.Allow, nil
		}
	}
	if isAgentTool(c.tool) {
		return hookexec.Allow, nil
	}
	return "", nil
}

// How a Bash rule meets a compound command: a deny or ask rule applies
// when it matches any part of it; an allow rule only when every part
// matches an allow rule, so that allowing `git status` does not allow
// `git status && rm -rf ~`.
const (
	anyPart   = false
	everyPart = true
)

// firstMatch returns the first of list that covers c.
func firstMatch(list []rule, c call, every bool) *rule {
	if c.tool != "Bash" {
		for i := range list {
			if list[i].covers(c) {
				return &list[i]
			}
		}
		return nil
	}
	var in struct {
		Command string `json:"command"`
	}
	json.Unmarshal(c.input, &in)
	for i := range list { // a rule for every Bash call covers any command
		if list[i].tool == "Bash" && list[i].spec == "" {
			return &list[i]
		}
	}
	parts, plain := splitCommand(in.Command)
	if every && !plain {
		return nil // a substitution runs what no prefix shows
	}
	var found *rule
	for _, part := range parts {
		var r *rule
		for i := range list {
			if list[i].tool == "Bash" && matchCommand(list[i].spec, part) {
				r = &list[i]
				break
			}
		}
		if r != nil && !every {
			return r
		}
		if r == nil && every {
			return nil
		}
		found = r
	}
	return found
}

// covers tells whether r covers the call c of a tool other than Bash: a
// rule of the tool without a specifier covers every call, a path rule the
// calls on paths it matches. Edit rules cover Write, as Claude Code's
// Edit rules cover every tool that edits files.
func (r rule) covers(c call) bool {
	if isAgentTool(r.tool) && isAgentTool(c.tool) {
		return r.spec == "" || r.spec == subagentTypeOf(c.input)
	}
	if r.tool != c.tool && !(r.tool == "Edit" && c.tool == "Write") {
		return false
	}
	if r.spec == "" {
		return true
	}
	p, ok := filePath(c)
	return ok && matchPath(r.spec, p, c.cwd, c.home)
}

// isAgentTool tells whether tool is the Agent tool, by its name or its
// former one, which rules may use too: Task(Explore) is Agent(Explore).
func isAgentTool(tool string) bool { return tool == turn.AgentTool || tool == turn.TaskTool }

// subagentTypeOf returns the subagent_type an Agent call names, the
// default when it names none: what an Agent(TYPE) rule matches.
func subagentTypeOf(input json.RawMessage) string {
	var in struct {
		Type string `json:"subagent_type"`
	}
	json.Unmarshal(input, &in)
	if in.Type == "" {
		return reprise.DefaultSubagentType
	}
	return in.Type
}

// filePath returns the absolute path a Read or Write call names.
func filePath(c call) (string, bool) {
	var in struct {
		Path string `json:"file_path"`
	}
	if json.Unmarshal(c.input, &in) != nil || in.Path == "" {
		return "", false
	}
	return resolve(in.Path, c.cwd), true
}

// resolve makes p absolute against dir, cleaned.
func resolve(p, dir string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// within tells whether path p is dir or under it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// splitCommand splits a shell command at its operators (;, &, &&, |, ||,
// newlines) outside quotes, and reports whether it is plain: free of
// command substitution ($(...), backquotes) and process substitution.
func splitCommand(cmd string) (parts []string, plain bool) {
	plain = true
	var cur strings.Builder
	var quote rune
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			parts = append(parts, s)
		}
		cur.Reset()
	}
	rs := []rune(cmd)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case c == '\\' && i+1 < len(rs):
			cur.WriteRune(c)
			i++
			c = rs[i]
		case quote == '"':
			if c == '"' {
				quote = 0
			}
			if c == '`' || c == '$' && i+1 < len(rs) && rs[i+1] == '(' {
				plain = false
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '`' || (c == '$' || c == '<' || c == '>') && i+1 < len(rs) && rs[i+1] == '(':
			plain = false
		case c == '&' && (i > 0 && (rs[i-1] == '>' || rs[i-1] == '<') || i+1 < len(rs) && rs[i+1] == '>'):
			// a redirection (2>&1, &>file), not an operator
		case c == ';' || c == '&' || c == '|' || c == '\n':
			flush()
			continue
		}
		cur.WriteRune(c)
	}
	flush()
	return parts, plain
}

// matchCommand tells whether a Bash rule's specifier matches one command:
// the specifier is the command, where * stands for any text; a trailing
// ":*" means the same as " *"; and a single trailing " *" may match
// nothing, so that "ls *" matches "ls" and "ls -la" but not "lsof".
func matchCommand(spec, cmd string) bool {
	if strings.HasSuffix(spec, ":*") {
		spec = strings.TrimSuffix(spec, ":*") + " *"
	}
	pieces := strings.Split(spec, "*")
	var re strings.Builder
	re.WriteString("^")
	for i, p := range pieces {
		if i > 0 {
			re.WriteString(".*")
		}
		re.WriteString(regexp.QuoteMeta(p))
	}
	re.WriteString("$")
	pattern := re.String()
	if len(pieces) == 2 && strings.HasSuffix(spec, " *") {
		pattern = "^" + regexp.QuoteMeta(strings.TrimSuffix(spec, " *")) + "( .*)?$"
	}
	ok, _ := regexp.MatchString(pattern, strings.TrimSpace(cmd))
	return ok
}

// matchPath tells whether a path rule's specifier matches the absolute
// path p, read as a .gitignore line is: "//abs" is absolute, "~/p" starts
// at home, "/p" at the project (cwd), and "p" or "./p" at the current
// directory, the project here too; a pattern without a slash but at its
// end matches a name at any depth; * and ? stay within a name, ** spans
// directories; a pattern that matches a directory covers what is in it.
func matchPath(spec, p, cwd, home string) bool {
	base := cwd
	switch {
	case strings.HasPrefix(spec, "//"):
		base, spec = "/", spec[2:]
	case strings.HasPrefix(spec, "~/"):
		base, spec = home, spec[2:]
	case strings.HasPrefix(spec, "/"):
		spec = spec[1:]
	case strings.HasPrefix(spec, "./"):
		spec = spec[2:]
	default:
		if !strings.Contains(strings.TrimSuffix(spec, "/"), "/") {
			spec = "**/" + spec
		}
	}
	spec = strings.TrimSuffix(spec, "/")
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return false
	}
	re, err := regexp.Compile("^" + globRegexp(spec) + "(/.*)?$")
	return err == nil && re.MatchString(filepath.ToSlash(rel))
}

// globRegexp returns the regular expression of a gitignore glob.
func globRegexp(glob string) string {
	var re strings.Builder
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; {
		case strings.HasPrefix(glob[i:], "**/"):
			re.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(glob[i:], "**"):
			re.WriteString(".*")
			i++
		case c == '*':
			re.WriteString("[^/]*")
		case c == '?':
			re.WriteString("[^/]")
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return re.String()
}
