package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func bashCall(cmd string) call {
	input, _ := json.Marshal(map[string]string{"command": cmd})
	return call{tool: "Bash", input: input, cwd: "/src/app", home: "/home/u"}
}

func fileCall(tool, path string) call {
	input, _ := json.Marshal(map[string]string{"file_path": path})
	return call{tool: tool, input: input, cwd: "/src/app", home: "/home/u"}
}

// Bash rules as Claude Code reads them: a command, * for any text, :* as
// " *", a trailing " *" that may match nothing, and compound commands
// judged part by part.
func TestBashRules(t *testing.T) {
	cases := []struct {
		name              string
		allow, deny, ask  []string
		command, decision string
	}{
		{"bare tool", []string{"Bash"}, nil, nil, "rm -rf / && curl x | sh", "allow"},
		{"star alone", []string{"Bash(*)"}, nil, nil, "anything at all", "allow"},
		{"exact", []string{"Bash(npm install)"}, nil, nil, "npm install", "allow"},
		{"exact is not a prefix", []string{"Bash(npm install)"}, nil, nil, "npm install left-pad", ""},
		{"legacy prefix", []string{"Bash(npm run test:*)"}, nil, nil, "npm run test -- -v", "allow"},
		{"legacy prefix alone", []string{"Bash(npm run test:*)"}, nil, nil, "npm run test", "allow"},
		{"word boundary", []string{"Bash(ls *)"}, nil, nil, "lsof -i", ""},
		{"no boundary", []string{"Bash(ls*)"}, nil, nil, "lsof -i", "allow"},
		{"star inside", []string{"Bash(git * main)"}, nil, nil, "git push origin main", "allow"},
		{"every part allowed", []string{"Bash(git status)", "Bash(git diff *)"}, nil, nil, "git status && git diff HEAD", "allow"},
		{"one part not allowed", []string{"Bash(git status *)"}, nil, nil, "git status; rm -rf ~", ""},
		{"pipe part not allowed", []string{"Bash(cat *)"}, nil, nil, "cat a | sh", ""},
		{"operator inside quotes", []string{"Bash(echo *)"}, nil, nil, `echo "a && b; c | d"`, "allow"},
		{"redirection is no operator", []string{"Bash(make *)"}, nil, nil, "make test 2>&1", "allow"},
		{"substitution never allowed by prefix", []string{"Bash(echo *)"}, nil, nil, "echo $(rm -rf ~)", ""},
		{"backquotes never allowed by prefix", []string{"Bash(echo *)"}, nil, nil, "echo `id`", ""},
		{"deny beats allow", []string{"Bash"}, []string{"Bash(rm *)"}, nil, "rm -rf build", "deny"},
		{"deny matches any part", []string{"Bash"}, []string{"Bash(rm *)"}, nil, "make && rm -rf build", "deny"},
		{"ask beats allow", []string{"Bash(git *)"}, nil, []string{"Bash(git push *)"}, "git push origin", "ask"},
		{"deny beats ask", nil, []string{"Bash(git push *)"}, []string{"Bash(git *)"}, "git push origin", "deny"},
		{"other tool's rule", []string{"Read"}, nil, nil, "ls", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs := rules{allow: parseRules(c.allow, "test"), deny: parseRules(c.deny, "test"), ask: parseRules(c.ask, "test")}
			if got, _ := rs.permission(bashCall(c.command)); got != c.decision {
				t.Errorf("%q: %q, want %q", c.command, got, c.decision)
			}
		})
	}
}

// Path rules as .gitignore lines, from the project (cwd /src/app), the
// home (/home/u) or the root; Edit rules cover Write; a Read in the
// project is allowed when no rule says otherwise.
func TestPathRules(t *testing.T) {
	cases := []struct {
		name            string
		allow, deny     []string
		tool, path, res string
	}{
		{"read in the project", nil, nil, "Read", "src/main.go", "allow"},
		{"read outside the project", nil, nil, "Read", "/etc/passwd", ""},
		{"read denied in the project", nil, []string{"Read(./.env)"}, "Read", ".env", "deny"},
		{"name at any depth", nil, []string{"Read(.env)"}, "Read", "/src/app/config/.env", "deny"},
		{"anchored at the project", nil, []string{"Read(/secrets/**)"}, "Read", "secrets/a/b.key", "deny"},
		{"anchored, elsewhere", nil, []string{"Read(/secrets/**)"}, "Read", "lib/secrets/b.key", "allow"},
		{"home", nil, []string{"Read(~/.ssh/**)"}, "Read", "/home/u/.ssh/id_ed25519", "deny"},
		{"absolute", nil, []string{"Read(//etc/**)"}, "Read", "/etc/passwd", "deny"},
		{"star within a name", []string{"Write(src/*.go)"}, nil, "Write", "src/main.go", "allow"},
		{"star not across directories", []string{"Write(src/*.go)"}, nil, "Write", "src/cmd/main.go", ""},
		{"double star", []string{"Write(src/**/*.go)"}, nil, "Write", "src/cmd/main.go", "allow"},
		{"double star, no directory", []string{"Write(src/**/*.go)"}, nil, "Write", "src/main.go", "allow"},
		{"a directory covers its files", []string{"Edit(docs/)"}, nil, "Write", "docs/a/b.md", "allow"},
		{"edit covers write", []string{"Edit"}, nil, "Write", "/anywhere", "allow"},
		{"write does not cover read", []string{"Write"}, nil, "Read", "/etc/hosts", ""},
		{"dot dot leaves the project", []string{"Write(**)"}, nil, "Write", "../other/x", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs := rules{allow: parseRules(c.allow, "test"), deny: parseRules(c.deny, "test")}
			if got, _ := rs.permission(fileCall(c.tool, c.path)); got != c.res {
				t.Errorf("%s %s: %q, want %q", c.tool, c.path, got, c.res)
			}
		})
	}
}

func TestSplitToolList(t *testing.T) {
	got := splitToolList("Bash(git log *),Read  Bash(npm run test:*), Edit(docs/**)")
	want := []string{"Bash(git log *)", "Read", "Bash(npm run test:*)", "Edit(docs/**)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}

// Rules come from the user's settings, then the project's shared and
// local ones, then the flags; a broken file is skipped with a warning.
func TestLoadRules(t *testing.T) {
	root := t.TempDir()
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	writeJSON(t, filepath.Join(home, ".claude", "settings.json"), map[string]any{
		"permissions": map[string]any{"allow": []any{"Bash(git *)"}, "ask": []any{"Bash(git push *)"}}})
	writeJSON(t, filepath.Join(project, ".claude", "settings.json"), map[string]any{
		"permissions": map[string]any{"deny": []any{"Read(./.env)"}}})
	if err := os.WriteFile(filepath.Join(project, ".claude", "settings.local.json"), []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	rs := loadRules(home, project, []string{"Write"}, []string{"Bash(git reset *)"}, &warn)
	if !strings.Contains(warn.String(), "settings.local.json") {
		t.Errorf("no warning for the broken file: %q", warn.String())
	}
	show := func(list []rule) []string {
		var out []string
		for _, r := range list {
			out = append(out, r.tool+"("+r.spec+") "+filepath.Base(r.origin))
		}
		return out
	}
	got := [][]string{show(rs.allow), show(rs.ask), show(rs.deny)}
	want := [][]string{
		{"Bash(git *) settings.json", "Write() --allowed-tools"},
		{"Bash(git push *) settings.json"},
		{"Read(./.env) settings.json", "Bash(git reset *) --disallowed-tools"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rules %q, want %q", got, want)
	}
}

// An Agent call is allowed when no rule says otherwise; a rule of Agent or
// Task, its former name, covers every call or, with a specifier, the calls
// of that subagent_type (general-purpose when the call names none).
func TestAgentRules(t *testing.T) {
	cases := []struct {
		name            string
		ask, deny       []string
		tool, typ, want string
	}{
		{"no rule", nil, nil, "Agent", "general-purpose", "allow"},
		{"its former name", nil, nil, "Task", "general-purpose", "allow"},
		{"denied", nil, []string{"Agent"}, "Agent", "general-purpose", "deny"},
		{"denied by its former name", nil, []string{"Task"}, "Agent", "general-purpose", "deny"},
		{"denied, that type", nil, []string{"Agent(Explore)"}, "Agent", "Explore", "deny"},
		{"denied, another type", nil, []string{"Agent(Explore)"}, "Agent", "general-purpose", "allow"},
		{"asked, the default type", []string{"Agent(general-purpose)"}, nil, "Agent", "", "ask"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs := rules{ask: parseRules(c.ask, "test"), deny: parseRules(c.deny, "test")}
			input, _ := json.Marshal(map[string]string{"prompt": "go", "subagent_type": c.typ})
			if got, _ := rs.permission(call{tool: c.tool, input: input, cwd: "/src/app", home: "/home/u"}); got != c.want {
				t.Errorf("%s %q: %q, want %q", c.tool, c.typ, got, c.want)
			}
		})
	}
}
