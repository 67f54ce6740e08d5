package hookexec_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// fixture returns the path of a settings file in testdata/settings.
func fixture(name string) string { return filepath.Join("testdata", "settings", name) }

// installSettings copies the fixture named from to path, creating its
// directory.
func installSettings(t *testing.T, from, path string) {
	t.Helper()
	data, err := os.ReadFile(fixture(from))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeSettings writes a settings file with body and returns its path.
func writeSettings(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustLoadSettings(t *testing.T, path string) []hookexec.Hook {
	t.Helper()
	hooks, err := hookexec.LoadSettings(path)
	if err != nil {
		t.Fatalf("LoadSettings(%s): %v", path, err)
	}
	return hooks
}

// commands lists the hooks' commands, in order.
func commands(hooks []hookexec.Hook) []string {
	out := make([]string, len(hooks))
	for i, h := range hooks {
		out[i] = h.CommandLine()
	}
	return out
}

// matching keeps the hooks of event whose matcher selects value, as the
// Engine does before it dedupes.
func matching(hooks []hookexec.Hook, event hookexec.Event, value string) []hookexec.Hook {
	var out []hookexec.Hook
	for _, h := range hooks {
		if h.Event == event && h.Matcher.Match(value) {
			out = append(out, h)
		}
	}
	return out
}

func TestDefaultSettingsPaths(t *testing.T) {
	managed := t.TempDir()
	t.Setenv(hookexec.ManagedSettingsEnv, managed)
	home, proj := filepath.Join("h", "ann"), filepath.Join("src", "app")
	policy := hookexec.SettingsLocation{Path: filepath.Join(managed, "managed-settings.json"), Scope: "managed"}
	want := []hookexec.SettingsLocation{
		{Path: filepath.Join(home, ".claude", "settings.json"), Scope: "user"},
		{Path: filepath.Join(proj, ".claude", "settings.json"), Scope: "project"},
		{Path: filepath.Join(proj, ".claude", "settings.local.json"), Scope: "local"},
		policy,
	}
	if got := hookexec.DefaultSettingsPaths(home, proj); !reflect.DeepEqual(got, want) {
		t.Errorf("both: %v, want %v", got, want)
	}
	if got := hookexec.DefaultSettingsPaths(home, ""); !reflect.DeepEqual(got, []hookexec.SettingsLocation{want[0], policy}) {
		t.Errorf("no project: %v", got)
	}
	if got := hookexec.DefaultSettingsPaths("", proj); !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("no home: %v", got)
	}
	if got := hookexec.DefaultSettingsPaths("", ""); !reflect.DeepEqual(got, want[3:]) {
		t.Errorf("neither: %v", got)
	}
	// The drop-in files of managed-settings.d come after, in name order.
	dropIns := filepath.Join(managed, "managed-settings.d")
	if err := os.MkdirAll(dropIns, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"20-b.json", "10-a.json", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dropIns, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := hookexec.DefaultSettingsPaths("", "")
	if len(got) != 3 || got[1].Path != filepath.Join(dropIns, "10-a.json") || got[2].Path != filepath.Join(dropIns, "20-b.json") || got[2].Scope != "managed" {
		t.Errorf("with drop-ins: %v", got)
	}
}

// Managed settings' hooks run with the others; allowManagedHooksOnly
// leaves only theirs, a managed disableAllHooks none, and another file's
// disableAllHooks all but the managed ones, plugins included.
func TestManagedSettingsDecideWhichHooksRun(t *testing.T) {
	managed := t.TempDir()
	t.Setenv(hookexec.ManagedSettingsEnv, managed)
	dir := t.TempDir()
	write := func(path, command, extra string) {
		t.Helper()
		text := `{` + extra + `"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "` + command + `"}]}]}}`
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	user, policy := filepath.Join(dir, "settings.json"), filepath.Join(managed, "managed-settings.json")
	plugin := t.TempDir()
	if err := os.MkdirAll(filepath.Join(plugin, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(plugin, "hooks", "hooks.json"), "echo plugin", "")
	for _, tc := range []struct {
		userExtra, managedExtra string
		want                    []string
	}{
		{"", "", []string{"echo user", "echo managed", "echo plugin"}},
		{"", `"allowManagedHooksOnly": true, `, []string{"echo managed"}},
		{`"allowManagedHooksOnly": true, `, "", []string{"echo user", "echo managed", "echo plugin"}}, // read from managed settings only
		{`"disableAllHooks": true, `, "", []string{"echo managed"}},
		{"", `"disableAllHooks": true, `, []string{}},
	} {
		write(user, "echo user", tc.userExtra)
		write(policy, "echo managed", tc.managedExtra)
		hooks, errs := hookexec.LoadAll([]string{user, policy}, []string{plugin})
		if len(errs) != 0 || !reflect.DeepEqual(commands(hooks), tc.want) {
			t.Errorf("user %q, managed %q: %q (%v), want %q", tc.userExtra, tc.managedExtra, commands(hooks), errs, tc.want)
		}
	}
}

func TestUserProjectAndLocalSettingsMergeInOrder(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	locs := hookexec.DefaultSettingsPaths(home, proj)
	for i, from := range []string{"user.json", "project.json", "local.json"} {
		installSettings(t, from, locs[i].Path)
	}
	var paths []string
	for _, l := range locs {
		paths = append(paths, l.Path)
	}
	hooks, errs := hookexec.LoadAll(paths, nil)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	want := []struct {
		event           hookexec.Event
		command, source string
	}{
		{hookexec.SessionStart, "echo shared", locs[0].Path},
		{hookexec.SessionStart, "echo user", locs[0].Path},
		{hookexec.SessionEnd, "echo user-end", locs[0].Path},
		{hookexec.SessionStart, "echo shared", locs[1].Path},
		{hookexec.SessionStart, "echo project", locs[1].Path},
		{hookexec.SessionStart, "echo local", locs[2].Path},
	}
	if len(hooks) != len(want) {
		t.Fatalf("loaded %q, want %d hooks", commands(hooks), len(want))
	}
	reg := hookexec.NewRegistry()
	for i, h := range hooks {
		w := want[i]
		if h.Event != w.event || h.CommandLine() != w.command || h.Name != w.command || h.Source != w.source {
			t.Errorf("hook %d = %s %q %q from %s, want %s %q from %s", i, h.Event, h.Name, h.CommandLine(), h.Source, w.event, w.command, w.source)
		}
		if err := reg.Add(h); err != nil {
			t.Errorf("Registry.Add(%q): %v", h.Name, err)
		}
	}
	if hooks[0].Timeout != 30*time.Second || hooks[1].Timeout != 0 {
		t.Errorf("timeouts %v, %v; want 30s, 0", hooks[0].Timeout, hooks[1].Timeout)
	}
	if shell(hooks[5]) != "bash" || shell(hooks[0]) != "" {
		t.Errorf("shells %q, %q; want bash, empty", shell(hooks[5]), shell(hooks[0]))
	}
	if got := commands(reg.Match(hookexec.SessionStart, "startup")); !reflect.DeepEqual(got, []string{"echo shared", "echo user", "echo local"}) {
		t.Errorf("startup matched %q", got)
	}
}

func TestDedupeKeepsTheFirstOfTheSameCommand(t *testing.T) {
	hooks, errs := hookexec.LoadAll([]string{fixture("user.json"), fixture("project.json")}, nil)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	got := hookexec.Dedupe(matching(hooks, hookexec.SessionStart, "resume"))
	if want := []string{"echo shared", "echo user", "echo project"}; !reflect.DeepEqual(commands(got), want) {
		t.Fatalf("deduped %q, want %q", commands(got), want)
	}
	if got[0].Source != fixture("user.json") || got[0].Timeout != 30*time.Second {
		t.Errorf("kept the copy from %s with timeout %v, want the first", got[0].Source, got[0].Timeout)
	}

	endHook := hookexec.Hook{Event: hookexec.SessionEnd, Name: "end", Body: hookexec.Command{Line: "echo shared"}}
	fn := hookexec.Hook{Event: hookexec.SessionEnd, Name: "f"}
	got = hookexec.Dedupe([]hookexec.Hook{fn, hooks[0], endHook, fn, hooks[3], endHook})
	if names := hookexec.Names(got); !reflect.DeepEqual(names, []string{"f", "echo shared", "end", "f"}) {
		t.Errorf("deduped %q: events differ and function hooks are all kept", names)
	}
}

// Claude Code keeps a plugin's copy of a command apart from a settings
// file's: the same "echo same" in both runs twice, while two plugins'
// copies are two, and two settings files' copies one.
func TestDedupeKeepsAPluginsCopyApartFromTheSettings(t *testing.T) {
	dir := t.TempDir()
	hooksJSON := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo same"}]}]}}`
	for _, rel := range []string{"user.json", "project.json", "p1/hooks/hooks.json", "p2/hooks/hooks.json"} {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(hooksJSON), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hooks, errs := hookexec.LoadAll([]string{filepath.Join(dir, "user.json"), filepath.Join(dir, "project.json")},
		[]string{filepath.Join(dir, "p1"), filepath.Join(dir, "p2")})
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	got := hookexec.Dedupe(hooks)
	var sources []string
	for _, h := range got {
		sources = append(sources, h.Source)
	}
	want := []string{filepath.Join(dir, "user.json"), "plugin:" + filepath.Join(dir, "p1"), "plugin:" + filepath.Join(dir, "p2")}
	if !reflect.DeepEqual(sources, want) {
		t.Fatalf("deduped to copies from %q, want %q", sources, want)
	}
}

// Claude Code keys a command hook by shell, command, arguments and "if":
// an exec-form and a shell-form copy of one command both run, as do two
// copies in different shells; "bash" is the shell a hook without one has.
func TestDedupeKeysOnShellAndArguments(t *testing.T) {
	cmd := func(name string, c hookexec.Command) hookexec.Hook {
		return hookexec.Hook{Event: hookexec.Stop, Name: name, Body: c}
	}
	hooks := []hookexec.Hook{
		cmd("shell form", hookexec.Command{Line: "node '/p/a b.js'"}),
		cmd("exec form", hookexec.Command{Line: "node", Args: []string{"/p/a b.js"}}),
		cmd("exec form again", hookexec.Command{Line: "node", Args: []string{"/p/a b.js"}}),
		cmd("no arguments", hookexec.Command{Line: "node", Args: []string{}}),
		cmd("bash named", hookexec.Command{Line: "node '/p/a b.js'", Shell: "bash"}),
		cmd("powershell", hookexec.Command{Line: "node '/p/a b.js'", Shell: "powershell"}),
	}
	want := []string{"shell form", "exec form", "no arguments", "powershell"}
	if got := hookexec.Names(hookexec.Dedupe(hooks)); !reflect.DeepEqual(got, want) {
		t.Fatalf("deduped %q, want %q", got, want)
	}
}

func TestPluginDirSubstitutesPluginRoot(t *testing.T) {
	dir := filepath.Join("testdata", "plugins", "formatter")
	root, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := hookexec.LoadPluginDir(dir + "/./")
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 1 {
		t.Fatalf("loaded %q", commands(hooks))
	}
	h := hooks[0]
	want := root + "/scripts/x.sh --root " + root
	if h.CommandLine() != want || h.Name != want {
		t.Errorf("command %q, name %q; want %q", h.CommandLine(), h.Name, want)
	}
	if c := h.Body.(hookexec.Command); c.PluginRoot != root || h.Source != "plugin:"+root {
		t.Errorf("root %q, source %q; want %q", c.PluginRoot, h.Source, root)
	}
	if h.Event != hookexec.SessionStart || h.Matcher.String() != "startup" || h.Timeout != 10*time.Second {
		t.Errorf("hook %+v", h)
	}
}

func TestUnknownKeysAndEventsAreIgnored(t *testing.T) {
	hooks := mustLoadSettings(t, fixture("unknown_keys.json"))
	if len(hooks) != 2 {
		t.Fatalf("loaded %q, want the SessionStart and PreToolUse hooks, and not the SomeFutureEvent one", commands(hooks))
	}
	if h := hooks[0]; h.CommandLine() != "cat NOTES.md" || shell(h) != "" || h.Matcher.String() != "startup" {
		t.Errorf("hook %+v", h)
	}
	if h := hooks[1]; h.Event != hookexec.PreToolUse || h.CommandLine() != "gofmt -l ." || !h.Selects("Write") || h.Selects("Bash") {
		t.Errorf("tool hook %+v", h)
	}
}

// TestEveryHookTypeLoads checks that a hook of each of the five types
// loads with what its keys say, and none is skipped.
func TestEveryHookTypeLoads(t *testing.T) {
	hooks := mustLoadSettings(t, fixture("types.json"))
	want := []struct {
		typ  schema.HookType
		name string
		body hookexec.Body
	}{
		{schema.HookPrompt, "prompt: Summarise the project", hookexec.Prompt{Text: "Summarise the project"}},
		{schema.HookHTTP, "http: http://localhost:8080/start", hookexec.HTTP{URL: "http://localhost:8080/start"}},
		{schema.HookAgent, "agent: Check the build", hookexec.Prompt{Text: "Check the build", Agent: true}},
		{schema.HookMCPTool, "mcp_tool: memory save", hookexec.MCPTool{Server: "memory", Tool: "save", Input: json.RawMessage(`{"text": "${last_assistant_message}"}`)}},
		{schema.HookCommand, "echo only-me", hookexec.Command{Line: "echo only-me"}},
	}
	if len(hooks) != len(want) {
		t.Fatalf("loaded %d hooks, want %d", len(hooks), len(want))
	}
	for i, w := range want {
		h := hooks[i]
		if h.Type() != w.typ || h.Name != w.name || !reflect.DeepEqual(h.Body, w.body) {
			t.Errorf("hook %d: type %q, name %q, body %#v; want %q, %q, %#v", i, h.Type(), h.Name, h.Body, w.typ, w.name, w.body)
		}
	}
	if got := hookexec.Timeout(hooks[1]); got != 5*time.Second {
		t.Errorf("the http hook's timeout is %v, want its 5 s", got)
	}
	if got := hookexec.Timeout(hooks[0]); got != hookexec.DefaultPromptTimeout {
		t.Errorf("the prompt hook's timeout is %v, want the default %v", got, hookexec.DefaultPromptTimeout)
	}
	if got := hookexec.Timeout(hooks[2]); got != hookexec.DefaultAgentTimeout {
		t.Errorf("the agent hook's timeout is %v, want the default %v", got, hookexec.DefaultAgentTimeout)
	}
}

func TestSettingsMatchers(t *testing.T) {
	hooks := mustLoadSettings(t, fixture("matchers.json"))
	cases := map[string][]string{
		"resume":  {"echo word", "echo words", "echo regexp", "echo empty", "echo absent"},
		"startup": {"echo words", "echo regexp", "echo empty", "echo absent"},
		"clear":   {"echo empty", "echo absent"},
		"resumed": {"echo empty", "echo absent"},
	}
	for value, want := range cases {
		if got := commands(matching(hooks, hookexec.SessionStart, value)); !reflect.DeepEqual(got, want) {
			t.Errorf("%q matched %q, want %q", value, got, want)
		}
	}
}

func TestTimeoutsAreSeconds(t *testing.T) {
	hooks := mustLoadSettings(t, fixture("timeouts.json"))
	want := []time.Duration{500 * time.Millisecond, 0, 0, 30 * time.Second}
	if len(hooks) != len(want) {
		t.Fatalf("loaded %q", commands(hooks))
	}
	for i, h := range hooks {
		if h.Timeout != want[i] {
			t.Errorf("%s: timeout %v, want %v", h.Name, h.Timeout, want[i])
		}
	}
}

// A matcher Go cannot compile matches nothing, with an error that names
// the file and the matcher, and the rest of the file loads: Claude Code
// ignores such a matcher with a warning, where reprise used to refuse the
// whole file. A JavaScript lookahead, valid for Claude Code, says why Go
// cannot run it.
func TestAnInvalidMatcherMatchesNothingAndTheFileLoads(t *testing.T) {
	path := fixture("bad_matcher.json")
	hooks, err := hookexec.LoadSettings(path)
	if !errors.Is(err, hookexec.ErrBadMatcher) || errors.Is(err, hookexec.ErrBadConfig) || !hookexec.OnlyMatchers(err) {
		t.Fatalf("err = %v, want ErrBadMatcher alone", err)
	}
	if msg := err.Error(); !strings.Contains(msg, path+": hooks.SessionEnd[0].matcher") {
		t.Errorf("message %q does not name the file and matcher", msg)
	}
	if len(hooks) != 1 || hooks[0].Matcher.Match("clear") || hooks[0].Matcher.Match("") {
		t.Fatalf("hooks %+v: want the one hook, matching nothing", hooks)
	}

	lookahead := filepath.Join(t.TempDir(), "settings.json")
	data := `{"hooks": {"PreToolUse": [
		{"matcher": "^(?!Read)Bash", "hooks": [{"type": "command", "command": "echo js"}]},
		{"matcher": "Edit, Bash", "hooks": [{"type": "command", "command": "echo list"}]}]}}`
	if err := os.WriteFile(lookahead, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	hooks, errs := hookexec.LoadAll([]string{lookahead}, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "JavaScript") || !strings.Contains(errs[0].Error(), "^(?!Read)Bash") {
		t.Fatalf("errors %v: want one naming the lookahead and why", errs)
	}
	if len(hooks) != 2 || hooks[0].Matcher.Match("Bash") || !hooks[1].Matcher.Match("Bash") {
		t.Fatalf("hooks %+v: want the lookahead's matching nothing and the list's matching Bash", hooks)
	}
}

func TestSyntaxErrorNamesFileLineAndColumn(t *testing.T) {
	path := fixture("syntax.json")
	_, err := hookexec.LoadSettings(path)
	if !errors.Is(err, hookexec.ErrBadConfig) {
		t.Fatalf("err = %v, want ErrBadConfig", err)
	}
	// Line 6 lacks the comma that should end line 5; its key starts at
	// column 9.
	if msg := err.Error(); !strings.Contains(msg, path+":6:9: invalid character") {
		t.Errorf("message %q, want %s:6:9", msg, path)
	}
}

func TestWrongTypeNamesFileLineAndColumn(t *testing.T) {
	path := fixture("wrong_type.json")
	_, err := hookexec.LoadSettings(path)
	if !errors.Is(err, hookexec.ErrBadConfig) {
		t.Fatalf("err = %v, want ErrBadConfig", err)
	}
	// The column is that of the closing quote of "ten": encoding/json
	// reports where the value it rejected ends.
	want := path + ":6:68: hooks.SessionStart.hooks.timeout: got string, want number"
	if msg := err.Error(); !strings.Contains(msg, want) {
		t.Errorf("message %q, want %q", msg, want)
	}
}

func TestMalformedSettingsAreBadConfig(t *testing.T) {
	cases := []struct{ name, body, where string }{
		{"hooks array", `{"hooks": []}`, ":1:11: hooks: got array, want object"},
		{"matcher number", `{"hooks": {"SessionEnd": [{"matcher": 1}]}}`, ":1:39: hooks.SessionEnd.matcher: got number, want string"},
		{"top-level array", `[]`, ":1:1: the file: got array, want object"},
		{"null", `null`, ": not a JSON object"},
		{"empty", ``, ":1:1: unexpected end of JSON input"},
		{"empty command", `{"hooks": {"SessionStart": [{"hooks": [
			{"type": "command", "command": "echo ok"},
			{"type": "command", "command": " "}]}]}}`, ": hooks.SessionStart[0].hooks[1].command: empty"},
		{"missing type", `{"hooks": {"SessionEnd": [{}, {"hooks": [{"command": "echo"}]}]}}`, ": hooks.SessionEnd[1].hooks[0].type: missing"},
		{"negative timeout", `{"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}}`, ": hooks.SessionEnd[0].hooks[0].timeout: -1 seconds is out of range"},
		{"huge timeout", `{"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "x", "timeout": 1e12}]}]}}`, ": hooks.SessionEnd[0].hooks[0].timeout: 1e+12 seconds is out of range"},
		{"overflowing number", `{"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "x", "timeout": 1e999}]}]}}`, ":1:89: hooks.SessionEnd.hooks.timeout: 1e999 is out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeSettings(t, c.body)
			hooks, err := hookexec.LoadSettings(path)
			if !errors.Is(err, hookexec.ErrBadConfig) || hooks != nil {
				t.Fatalf("got %q, %v; want ErrBadConfig", commands(hooks), err)
			}
			if msg := err.Error(); !strings.Contains(msg, path+c.where) {
				t.Errorf("message %q, want %q", msg, path+c.where)
			}
		})
	}
}

func TestMissingFiles(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "settings.json")
	if _, err := hookexec.LoadSettings(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadSettings: err = %v, want os.ErrNotExist", err)
	}
	noHooks := filepath.Join("testdata", "plugins", "nohooks")
	if _, err := hookexec.LoadPluginDir(noHooks); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadPluginDir: err = %v, want os.ErrNotExist", err)
	}
	hooks, errs := hookexec.LoadAll([]string{missing, fixture("local.json")}, []string{noHooks})
	if len(errs) != 0 || !reflect.DeepEqual(commands(hooks), []string{"echo local"}) {
		t.Errorf("LoadAll = %q, %v; want the local hook and no errors", commands(hooks), errs)
	}
	_, errs = hookexec.LoadAll(nil, []string{filepath.Join(t.TempDir(), "gone")})
	if len(errs) != 1 || !errors.Is(errs[0], os.ErrNotExist) {
		t.Errorf("a missing plugin directory: errors %v, want one", errs)
	}
}

func TestLoadAllKeepsGoingPastABadFile(t *testing.T) {
	settings := []string{fixture("local.json"), fixture("syntax.json"), fixture("types.json")}
	plugin, err := filepath.Abs(filepath.Join("testdata", "plugins", "formatter"))
	if err != nil {
		t.Fatal(err)
	}
	hooks, errs := hookexec.LoadAll(settings, []string{plugin})
	if len(errs) != 1 || !errors.Is(errs[0], hookexec.ErrBadConfig) || !strings.Contains(errs[0].Error(), fixture("syntax.json")) {
		t.Fatalf("errors %v, want one naming syntax.json", errs)
	}
	want := []string{"echo local", "prompt: Summarise the project", "http: http://localhost:8080/start", "agent: Check the build",
		"mcp_tool: memory save", "echo only-me", plugin + "/scripts/x.sh --root " + plugin}
	if got := hookexec.Names(hooks); !reflect.DeepEqual(got, want) {
		t.Errorf("loaded %q, want %q", got, want)
	}
}

func shell(h hookexec.Hook) string { return h.Body.(hookexec.Command).Shell }

func TestConfigFilesMustBeRegularAndSmall(t *testing.T) {
	dir := t.TempDir()
	real := writeSettings(t, `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo linked"}]}]}}`)
	linked := filepath.Join(dir, "linked.json")
	if err := os.Symlink(real, linked); err != nil {
		t.Fatal(err)
	}
	if got := commands(mustLoadSettings(t, linked)); !reflect.DeepEqual(got, []string{"echo linked"}) {
		t.Errorf("settings behind a symlink: %v", got)
	}

	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"x": "`+strings.Repeat("a", hookexec.MaxConfigFileSize)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, zero, dir, big} {
		done := make(chan error, 1)
		go func() { _, err := hookexec.LoadSettings(path); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, hookexec.ErrBadConfig) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: %v, want ErrBadConfig naming the file", path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: LoadSettings is still reading", path)
		}
	}

	plugin := t.TempDir()
	if err := os.Mkdir(filepath.Join(plugin, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(plugin, "hooks", "hooks.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := hookexec.LoadPluginDir(plugin); !errors.Is(err, hookexec.ErrBadConfig) {
		t.Errorf("plugin hooks.json that is a FIFO: %v, want ErrBadConfig", err)
	}
}

func TestPromptAndPreCompactHooksAreLoaded(t *testing.T) {
	path := writeSettings(t, `{"hooks": {
  "PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": "echo before compact"}]}],
  "UserPromptSubmit": [{"matcher": "ignored", "hooks": [{"type": "command", "command": "echo prompt"}]}],
  "SessionStart": [{"hooks": [{"type": "command", "command": "echo start"}]}]
}}`)
	hooks := mustLoadSettings(t, path)
	if got := commands(hooks); !reflect.DeepEqual(got, []string{"echo start", "echo prompt", "echo before compact"}) {
		t.Fatalf("loaded %q", got)
	}
	if h := hooks[1]; h.Event != hookexec.UserPromptSubmit || h.Matcher.String() != "" {
		t.Errorf("UserPromptSubmit hook %+v: want no matcher", h)
	}
	if h := hooks[2]; h.Event != hookexec.PreCompact || !h.Matcher.Match("manual") || h.Matcher.Match("auto") {
		t.Errorf("PreCompact hook %+v: want it to match the manual trigger only", h)
	}
	if err := hookexec.NewRegistry().AddAll(hooks); err != nil {
		t.Errorf("registry refused them: %v", err)
	}
}

// TestCommandSizeCap checks that a command longer than the system can run
// is refused by every way in, in an error that does not repeat it, and
// that a long command that can run is named by a digest.
func TestCommandSizeCap(t *testing.T) {
	tooLong := strings.Repeat("é", hookexec.MaxCommandSize/2) + "; echo x"
	fits := "echo " + strings.Repeat("é", 2000)
	body, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": tooLong}}}}}})
	_, err := hookexec.LoadSettings(writeSettings(t, string(body)))
	if !errors.Is(err, hookexec.ErrBadConfig) || len(err.Error()) > 1024 {
		t.Errorf("settings with a %d-byte command: %.300v", len(tooLong), err)
	}
	for _, add := range []func(hookexec.Hook) error{
		hookexec.NewRegistry().Add,
		func(h hookexec.Hook) error { _, err := new(hookexec.Scoped).Add("s", h); return err },
	} {
		err := add(hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: tooLong}})
		if !errors.Is(err, hookexec.ErrBadHook) || len(err.Error()) > 1024 {
			t.Errorf("adding a %d-byte command: %.300v", len(tooLong), err)
		}
	}
	name := hookexec.CommandName(fits)
	if len(name) > 1024 || !utf8.ValidString(name) || !strings.HasPrefix(name, "echo é") || !strings.Contains(name, "sha256 ") {
		t.Errorf("CommandName of %d bytes = %q", len(fits), name)
	}
	if other := hookexec.CommandName(fits + "x"); other == name {
		t.Error("two long commands share a name")
	}
	if got := hookexec.CommandName("echo short"); got != "echo short" {
		t.Errorf("CommandName of a short command = %q", got)
	}
}

// Configuration errors Claude Code reports are errors naming the file: a
// hook type its event does not take, a type that does not exist, and a
// plugin's hooks.json without its top-level "hooks".
func TestConfigurationErrorsClaudeCodeReports(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"http on SessionStart": {`{"hooks": {"SessionStart": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:1/"}]}]}}`,
			"hooks.SessionStart[0].hooks[0].type: http hooks do not run on SessionStart"},
		"prompt on PreCompact": {`{"hooks": {"PreCompact": [{"hooks": [{"type": "prompt", "prompt": "p"}]}]}}`,
			"prompt hooks do not run on PreCompact"},
		"no such type": {`{"hooks": {"Stop": [{"hooks": [{"type": "script", "command": "x"}]}]}}`,
			`"script" is not a hook type`},
		"no such onFailure": {`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "onFailure": "retry"}]}]}}`,
			`onFailure: "retry" is neither continue nor block`},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := hookexec.LoadSettings(path)
			if !errors.Is(err, hookexec.ErrBadConfig) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBadConfig naming the file and %q", err, tc.want)
			}
		})
	}
	plugin := t.TempDir()
	if err := os.MkdirAll(filepath.Join(plugin, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The events at the top, as a settings file's "hooks" value: a common
	// mistake that loaded silently as no hooks.
	bare := `{"SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}`
	if err := os.WriteFile(filepath.Join(plugin, "hooks", "hooks.json"), []byte(bare), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := hookexec.LoadPluginDir(plugin); !errors.Is(err, hookexec.ErrBadConfig) || !strings.Contains(err.Error(), `no top-level "hooks"`) {
		t.Fatalf("hooks.json without hooks: %v", err)
	}
}
