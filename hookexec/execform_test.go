package hookexec

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/schema"
)

// writeScript makes an executable shell script at path.
func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// An exec-form hook runs its program with its arguments as they are
// written, no shell splitting, globbing or expanding any of them, and with
// ${CLAUDE_PROJECT_DIR} replaced; a shell-form hook with the same words
// would have split "first arg" and expanded $HOME and *.
func TestExecFormRunsTheProgramWithItsArguments(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	writeScript(t, filepath.Join(env.ProjectDir, "bin", "show"), `for a in "$@"; do printf '[%s]\n' "$a"; done`)
	path := filepath.Join(t.TempDir(), "settings.json")
	settings := `{"hooks": {"SessionStart": [{"hooks": [{"type": "command",
		"command": "${CLAUDE_PROJECT_DIR}/bin/show",
		"args": ["first arg", "$HOME", "*", "${CLAUDE_PROJECT_DIR}/x", ""]}]}]}}`
	if err := os.WriteFile(path, []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	hooks, err := LoadSettings(path)
	if err != nil || len(hooks) != 1 {
		t.Fatalf("load: %v, %d hooks", err, len(hooks))
	}
	h := hooks[0]
	if want := `'${CLAUDE_PROJECT_DIR}/bin/show' 'first arg' '$HOME' '*' '${CLAUDE_PROJECT_DIR}/x' ''`; h.Name != want {
		t.Errorf("name %q, want %q", h.Name, want)
	}
	o, text := runText(context.Background(), h, nil, env, 10*time.Second)
	want := "[first arg]\n[$HOME]\n[*]\n[" + env.ProjectDir + "/x]\n[]"
	if o.Status != schema.HookOK || text != want {
		t.Fatalf("outcome %+v, context %q; want %q", o, text, want)
	}

	// A program that is not on PATH fails as a missing command does.
	h.Body = Command{Line: "no-such-program-here", Args: []string{}}
	if o, _ := runText(context.Background(), h, nil, env, 10*time.Second); o.Status != schema.HookFailed || o.ExitCode != 127 {
		t.Fatalf("missing program: outcome %+v", o)
	}
}

// The same program with other arguments is another hook: both run. The
// same program with the same arguments, from two files, runs once.
func TestExecFormHooksAreTheSameOnlyWithTheSameArguments(t *testing.T) {
	a := Hook{Event: SessionStart, Body: Command{Line: "node", Args: []string{"a.js"}}}
	b := Hook{Event: SessionStart, Body: Command{Line: "node", Args: []string{"b.js"}}}
	bare := Hook{Event: SessionStart, Body: Command{Line: "node"}}
	a2 := a
	a2.Source = "other.json"
	gated := a
	gated.If = "Bash(git *)" // the same command under a condition is another hook, as in Claude Code
	if got := Dedupe([]Hook{a, b, bare, a2, gated}); len(got) != 4 {
		t.Fatalf("deduped to %d hooks, want a, b, bare node and the gated a", len(got))
	}
}

// A plugin's exec-form hook gets its root, data directory and options
// substituted in its words, and every plugin hook gets them in its
// environment, with Claude Code's own variables; the host's OTEL_*
// settings are not passed on.
func TestPluginHooksGetTheirRootDataAndOptions(t *testing.T) {
	t.Setenv("CLAUDE_CODE_PLUGIN_CACHE_DIR", t.TempDir())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317")
	t.Setenv("CLAUDE_PLUGIN_OPTION_STALE", "from the host")
	root := t.TempDir()
	writeScript(t, filepath.Join(root, "hooks", "show.sh"), `printf '[%s]\n' "$@"; env | grep -E '^(CLAUDE|OTEL)' | sort`)
	hooksJSON := `{"hooks": {"SessionStart": [{"hooks": [
		{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/show.sh",
		 "args": ["${CLAUDE_PLUGIN_DATA}", "level=${user_config.level}"]},
		{"type": "command", "command": "echo ${user_config.level}"}]}]}}`
	if err := os.WriteFile(filepath.Join(root, "hooks", "hooks.json"), []byte(hooksJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	hooks, err := loadPlugin(root, "tools@market", map[string]string{"level": "3", "api-url": "http://x"})
	if err != nil || len(hooks) != 2 {
		t.Fatalf("load: %v, %d hooks", err, len(hooks))
	}
	data := PluginDataDir("tools@market")
	if filepath.Base(data) != "tools-market" {
		t.Fatalf("data directory %s, want .../data/tools-market", data)
	}
	env := testEnv(t)
	outcomes, text := RunSessionStart(context.Background(), hooks, SessionStartInput{SessionID: "s1", Cwd: env.ProjectDir, Source: "startup"}, env)
	for _, want := range []string{
		"[" + data + "]", "[level=3]",
		"CLAUDECODE=1", "CLAUDE_CODE_SESSION_ID=s1", "CLAUDE_PLUGIN_DATA=" + data, "CLAUDE_PLUGIN_ROOT=" + root,
		"CLAUDE_PLUGIN_OPTION_API_URL=http://x", "CLAUDE_PLUGIN_OPTION_LEVEL=3", "CLAUDE_PROJECT_DIR=" + env.ProjectDir,
	} {
		if !strings.Contains(text, want+"\n") && !strings.HasSuffix(text, want) {
			t.Errorf("the plugin hook's output lacks %q:\n%s", want, text)
		}
	}
	for _, unwanted := range []string{"OTEL_", "from the host"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("the plugin hook's environment has %q:\n%s", unwanted, text)
		}
	}
	if info, err := os.Stat(data); err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Errorf("the data directory was not made private before the hook ran: %v %v", info, err)
	}
	// A shell would parse an option's value again: Claude Code refuses
	// ${user_config.*} in a shell-form command, and so does reprise, when
	// the hook runs.
	if o := outcomes[1]; o.Status != schema.HookFailed || !strings.Contains(o.Error, "exec form") {
		t.Errorf("shell-form hook naming an option: outcome %+v", o)
	}

	// An option the words name but the settings do not set fails the hook
	// with a message naming it.
	hooks, _ = loadPlugin(root, "tools@market", nil)
	outcomes, _ = RunSessionStart(context.Background(), hooks[:1], SessionStartInput{SessionID: "s1", Cwd: env.ProjectDir}, env)
	if o := outcomes[0]; o.Status != schema.HookFailed || !strings.Contains(o.Error, `plugin option "level" is not set`) {
		t.Errorf("unset option: outcome %+v", o)
	}
}

// A plugin enabled in settings gets the options those settings give it.
func TestEnabledPluginsGetTheirOptionsFromSettings(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CLAUDE_CODE_PLUGIN_CACHE_DIR", t.TempDir())
	root := filepath.Join(home, ".claude", "plugins", "cache", "market", "tools", "1.0.0")
	if err := os.MkdirAll(filepath.Join(root, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	hooksJSON := `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "printf", "args": ["%s", "${user_config.greeting}"]}]}]}}`
	if err := os.WriteFile(filepath.Join(root, "hooks", "hooks.json"), []byte(hooksJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	installed := `{"version": 2, "plugins": {"tools@market": [{"scope": "user", "installPath": "` + root + `"}]}}`
	if err := os.WriteFile(InstalledPluginsPath(home), []byte(installed), 0o644); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(home, ".claude", "settings.json")
	if err := os.WriteFile(settings, []byte(`{"enabledPlugins": {"tools@market": true},
		"pluginConfigs": {"tools@market": {"options": {"greeting": "hello there"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	hooks, errs := LoadEnabledPlugins(home, "", []string{settings})
	if len(errs) != 0 || len(hooks) != 1 {
		t.Fatalf("load: %v, %d hooks", errs, len(hooks))
	}
	if c := hooks[0].Body.(Command); !slicesEqual(c.Args, []string{"%s", "hello there"}) {
		t.Fatalf("args %q", c.Args)
	}
	if _, text := runText(context.Background(), hooks[0], nil, testEnv(t), 10*time.Second); text != "hello there" {
		t.Fatalf("context %q", text)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// A powershell hook needs pwsh: without it, the settings file says so.
func TestPowershellWithoutPwshIsAConfigurationError(t *testing.T) {
	if _, err := exec.LookPath(powershell); err == nil {
		t.Skip("pwsh is installed here")
	}
	path := filepath.Join(t.TempDir(), "settings.json")
	settings := `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "Write-Output hi", "shell": "powershell"}]}]}}`
	if err := os.WriteFile(path, []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadSettings(path)
	if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "pwsh") {
		t.Fatalf("err = %v, want ErrBadConfig naming the file and pwsh", err)
	}
}

// A plugin's .claude-plugin/plugin.json may add hooks with its "hooks"
// field, as Claude Code reads it: a hooks file's path relative to the
// plugin, hooks inline, or a list of either, beside hooks/hooks.json or
// without it.
func TestPluginManifestHooks(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hook := func(command string) string {
		return `{"SessionStart": [{"hooks": [{"type": "command", "command": "` + command + `"}]}]}`
	}
	write("extra/more.json", `{"hooks": `+hook("echo file")+`}`)
	write(".claude-plugin/plugin.json", `{"name": "tools", "hooks": ["./extra/more.json", `+hook("echo inline ${CLAUDE_PLUGIN_ROOT}")+`]}`)
	hooks, err := LoadPluginDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hooks {
		got = append(got, h.CommandLine())
	}
	if want := []string{"echo file", "echo inline " + root}; !slicesEqual(got, want) {
		t.Fatalf("hooks %q, want %q", got, want)
	}
	if hooks[0].Source != "plugin:"+root || hooks[0].Body.(Command).PluginData != PluginDataDir("tools@inline") {
		t.Errorf("hook %+v", hooks[0])
	}

	write("hooks/hooks.json", `{"hooks": `+hook("echo main")+`}`)
	write(".claude-plugin/plugin.json", `{"name": "tools", "hooks": "extra/more.json"}`)
	if hooks, err := LoadPluginDir(root); err != nil || len(hooks) != 2 || hooks[0].CommandLine() != "echo main" {
		t.Fatalf("beside hooks/hooks.json: %d hooks, %v", len(hooks), err)
	}
	write(".claude-plugin/plugin.json", `{"name": "tools", "hooks": "../../etc/hooks.json"}`)
	if _, err := LoadPluginDir(root); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "outside the plugin") {
		t.Fatalf("a path out of the plugin: %v", err)
	}
}
