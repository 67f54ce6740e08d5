package hookexec_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/hookexec"
)

// fakeHome is a home directory holding Claude Code's installed-plugins
// layout: ~/.claude/plugins/installed_plugins.json and the plugins' files
// under ~/.claude/plugins/cache/<marketplace>/<name>/<version>.
type fakeHome struct {
	t       *testing.T
	dir     string
	records map[string][]map[string]string // id -> install records
}

func newFakeHome(t *testing.T) *fakeHome {
	t.Helper()
	return &fakeHome{t: t, dir: t.TempDir(), records: map[string][]map[string]string{}}
}

// write writes body to path under the home, creating directories.
func (h *fakeHome) write(rel, body string) string {
	h.t.Helper()
	path := filepath.Join(h.dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return path
}

// install puts plugin id (name@marketplace) in the cache with hooksJSON as
// its hooks/hooks.json ("" for none), records a user install of it, and
// returns its directory.
func (h *fakeHome) install(id, hooksJSON string) string {
	h.t.Helper()
	name, market, _ := strings.Cut(id, "@")
	rel := filepath.Join(".claude", "plugins", "cache", market, name, "1.0.0")
	dir := filepath.Join(h.dir, rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.t.Fatal(err)
	}
	if hooksJSON != "" {
		h.write(filepath.Join(rel, "hooks", "hooks.json"), hooksJSON)
	}
	h.record(id, map[string]string{"scope": "user", "installPath": dir, "version": "1.0.0"})
	return dir
}

// record adds an install record of id and rewrites installed_plugins.json.
func (h *fakeHome) record(id string, r map[string]string) {
	h.t.Helper()
	h.records[id] = append(h.records[id], r)
	data, err := json.Marshal(map[string]any{"version": 2, "plugins": h.records})
	if err != nil {
		h.t.Fatal(err)
	}
	h.write(filepath.Join(".claude", "plugins", "installed_plugins.json"), string(data))
}

// settings writes a settings file at rel enabling plugins as given and
// returns its path.
func (h *fakeHome) settings(rel string, enabled map[string]bool) string {
	h.t.Helper()
	data, err := json.Marshal(map[string]any{"enabledPlugins": enabled})
	if err != nil {
		h.t.Fatal(err)
	}
	return h.write(rel, string(data))
}

// pluginHooks is a hooks.json whose SessionStart hook runs script in the
// plugin.
func pluginHooks(script string) string {
	return `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/` + script + `"}]}]}}`
}

const userSettings = ".claude/settings.json"

func TestInstalledPluginsPath(t *testing.T) {
	want := filepath.Join("h", ".claude", "plugins", "installed_plugins.json")
	if got := hookexec.InstalledPluginsPath("h"); got != want {
		t.Errorf("InstalledPluginsPath = %q, want %q", got, want)
	}
}

func TestEnabledInstalledPluginsAreLoaded(t *testing.T) {
	h := newFakeHome(t)
	lint := h.install("lint@tools", pluginHooks("lint.sh"))
	fmtDir := h.install("fmt@tools", pluginHooks("fmt.sh"))
	h.install("idle@tools", pluginHooks("idle.sh")) // installed, never enabled
	h.install("off@tools", pluginHooks("off.sh"))   // installed, disabled
	settings := h.settings(userSettings, map[string]bool{"lint@tools": true, "fmt@tools": true, "off@tools": false})

	hooks, errs := hookexec.LoadEnabledPlugins(h.dir, "", []string{settings})
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	want := []string{fmtDir + "/fmt.sh", lint + "/lint.sh"} // in plugin id order
	if got := commands(hooks); !reflect.DeepEqual(got, want) {
		t.Fatalf("commands %v, want %v", got, want)
	}
	for i, dir := range []string{fmtDir, lint} {
		c := hooks[i].Body.(hookexec.Command)
		if hooks[i].Source != "plugin:"+dir || c.PluginRoot != dir || hooks[i].Event != hookexec.SessionStart {
			t.Errorf("hook %d: source %q, plugin root %q, event %s", i, hooks[i].Source, c.PluginRoot, hooks[i].Event)
		}
	}
	plugins, _ := hookexec.EnabledPlugins(h.dir, "", []string{settings})
	wantPlugins := []hookexec.InstalledPlugin{{ID: "fmt@tools", Dir: fmtDir, Scope: "user"}, {ID: "lint@tools", Dir: lint, Scope: "user"}}
	if !reflect.DeepEqual(plugins, wantPlugins) {
		t.Errorf("EnabledPlugins = %+v, want %+v", plugins, wantPlugins)
	}
}

func TestLaterSettingsDecideWhetherAPluginIsEnabled(t *testing.T) {
	h := newFakeHome(t)
	h.install("a@m", pluginHooks("a.sh"))
	h.install("b@m", pluginHooks("b.sh"))
	proj := t.TempDir()
	user := h.settings(userSettings, map[string]bool{"a@m": true, "b@m": false})
	project := filepath.Join(proj, ".claude", "settings.json")
	local := filepath.Join(proj, ".claude", "settings.local.json")
	for path, enabled := range map[string]map[string]bool{
		project: {"a@m": false},
		local:   {"b@m": true},
	} {
		data, _ := json.Marshal(map[string]any{"enabledPlugins": enabled})
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plugins, errs := hookexec.EnabledPlugins(h.dir, proj, []string{user, project, local})
	if len(errs) != 0 || len(plugins) != 1 || plugins[0].ID != "b@m" {
		t.Errorf("plugins %+v, errors %v; want b@m alone (a disabled by the project, b enabled locally)", plugins, errs)
	}
}

func TestBrokenPluginHooksAreNamedAndOthersStillLoad(t *testing.T) {
	h := newFakeHome(t)
	h.install("broken@m", `{"hooks": {"SessionStart": [`)
	good := h.install("good@m", pluginHooks("ok.sh"))
	settings := h.settings(userSettings, map[string]bool{"broken@m": true, "good@m": true})
	hooks, errs := hookexec.LoadEnabledPlugins(h.dir, "", []string{settings})
	if got := commands(hooks); !reflect.DeepEqual(got, []string{good + "/ok.sh"}) {
		t.Errorf("commands %v, want the good plugin's", got)
	}
	if len(errs) != 1 || !errors.Is(errs[0], hookexec.ErrBadConfig) || !strings.Contains(errs[0].Error(), "broken@m") {
		t.Errorf("errors %v, want one ErrBadConfig naming broken@m", errs)
	}
}

func TestEnabledPluginsThatCannotBeFound(t *testing.T) {
	h := newFakeHome(t)
	gone := h.install("gone@m", pluginHooks("x.sh"))
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	good := h.install("good@m", pluginHooks("ok.sh"))
	settings := h.settings(userSettings, map[string]bool{"gone@m": true, "missing@m": true, "good@m": true})
	hooks, errs := hookexec.LoadEnabledPlugins(h.dir, "", []string{settings})
	if got := commands(hooks); !reflect.DeepEqual(got, []string{good + "/ok.sh"}) {
		t.Errorf("commands %v", got)
	}
	if len(errs) != 2 {
		t.Fatalf("errors %v, want one for gone@m and one for missing@m", errs)
	}
	for i, id := range []string{"gone@m", "missing@m"} {
		if !errors.Is(errs[i], fs.ErrNotExist) || !strings.Contains(errs[i].Error(), id) {
			t.Errorf("error %d: %v, want fs.ErrNotExist naming %s", i, errs[i], id)
		}
	}
	if !strings.Contains(errs[0].Error(), "not cached at "+gone) {
		t.Errorf("error %v does not say where the plugin should be", errs[0])
	}
}

func TestNothingInstalledMakesEveryEnabledPluginAnError(t *testing.T) {
	h := newFakeHome(t)
	settings := h.settings(userSettings, map[string]bool{"a@m": true})
	hooks, errs := hookexec.LoadEnabledPlugins(h.dir, "", []string{settings})
	if hooks != nil || len(errs) != 1 || !errors.Is(errs[0], fs.ErrNotExist) || !strings.Contains(errs[0].Error(), "a@m") {
		t.Errorf("hooks %v, errors %v", hooks, errs)
	}
}

func TestPluginWithoutHooksHasNoHooksAndNoError(t *testing.T) {
	h := newFakeHome(t)
	h.install("quiet@m", "")
	settings := h.settings(userSettings, map[string]bool{"quiet@m": true})
	hooks, errs := hookexec.LoadEnabledPlugins(h.dir, "", []string{settings})
	if len(hooks) != 0 || len(errs) != 0 {
		t.Errorf("hooks %v, errors %v", hooks, errs)
	}
}

func TestInstalledPluginsFileIsReadOnlyWhenAPluginIsEnabled(t *testing.T) {
	h := newFakeHome(t)
	h.write(filepath.Join(".claude", "plugins", "installed_plugins.json"), "{broken")
	none := h.settings(userSettings, map[string]bool{"a@m": false})
	if hooks, errs := hookexec.LoadEnabledPlugins(h.dir, "", []string{none, filepath.Join(h.dir, "missing.json")}); hooks != nil || errs != nil {
		t.Errorf("nothing enabled: hooks %v, errors %v", hooks, errs)
	}
	some := h.settings(".claude/other.json", map[string]bool{"a@m": true})
	hooks, errs := hookexec.LoadEnabledPlugins(h.dir, "", []string{some})
	if hooks != nil || len(errs) != 1 || !errors.Is(errs[0], hookexec.ErrBadConfig) || !strings.Contains(errs[0].Error(), "installed_plugins.json") {
		t.Errorf("broken installed_plugins.json: hooks %v, errors %v", hooks, errs)
	}
}

func TestEnabledPluginsMustBeAnObject(t *testing.T) {
	h := newFakeHome(t)
	h.install("a@m", pluginHooks("a.sh"))
	bad := h.write(".claude/bad.json", `{"enabledPlugins": ["a@m"]}`)
	good := h.settings(userSettings, map[string]bool{"a@m": true})
	odd := h.write(".claude/odd.json", `{"enabledPlugins": {"a@m": "yes", "b@m": null}}`) // not true or false: ignored
	broken := h.write(".claude/broken.json", `{"enabledPlugins": `)                       // LoadSettings reports it
	plugins, errs := hookexec.EnabledPlugins(h.dir, "", []string{bad, good, odd, broken})
	if len(plugins) != 1 || plugins[0].ID != "a@m" {
		t.Errorf("plugins %+v, want a@m", plugins)
	}
	if len(errs) != 1 || !errors.Is(errs[0], hookexec.ErrBadConfig) || !strings.Contains(errs[0].Error(), bad) {
		t.Errorf("errors %v, want one ErrBadConfig naming %s", errs, bad)
	}
}

func TestInstallRecordChoice(t *testing.T) {
	h := newFakeHome(t)
	proj := filepath.Join(h.dir, "src", "app")
	mk := func(rel string) string {
		dir := filepath.Join(h.dir, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	userDir, projDir, otherDir := mk("cache/user"), mk("cache/proj"), mk("cache/other")
	h.record("p@m", map[string]string{"scope": "project", "projectPath": "/elsewhere", "installPath": otherDir})
	h.record("p@m", map[string]string{"scope": "user", "installPath": userDir})
	h.record("p@m", map[string]string{"scope": "local", "projectPath": proj + "/", "installPath": projDir})
	h.record("only@m", map[string]string{"scope": "project", "projectPath": "/elsewhere", "installPath": otherDir})
	h.record("tilde@m", map[string]string{"scope": "user", "installPath": "~/cache/user"})
	h.record("rel@m", map[string]string{"scope": "user", "installPath": "cache/m/rel/2.0.0"})
	relDir := mk(".claude/plugins/cache/m/rel/2.0.0")
	settings := h.settings(userSettings, map[string]bool{"p@m": true, "only@m": true, "tilde@m": true, "rel@m": true})

	dirs := func(projectDir string) map[string]string {
		plugins, errs := hookexec.EnabledPlugins(h.dir, projectDir, []string{settings})
		if len(errs) != 0 {
			t.Fatalf("errors: %v", errs)
		}
		out := map[string]string{}
		for _, p := range plugins {
			out[p.ID] = p.Dir
		}
		return out
	}
	want := map[string]string{"p@m": projDir, "only@m": otherDir, "tilde@m": userDir, "rel@m": relDir}
	if got := dirs(proj); !reflect.DeepEqual(got, want) {
		t.Errorf("in the project: %v, want %v", got, want)
	}
	want["p@m"] = userDir
	if got := dirs(t.TempDir()); !reflect.DeepEqual(got, want) {
		t.Errorf("elsewhere: %v, want %v", got, want)
	}
}

func TestVersionOneInstalledPluginsFile(t *testing.T) {
	h := newFakeHome(t)
	dir := filepath.Join(h.dir, "cache", "a")
	h.write(filepath.Join("cache", "a", "hooks", "hooks.json"), pluginHooks("a.sh"))
	data, _ := json.Marshal(map[string]any{"version": 1, "plugins": map[string]any{
		"a@m": map[string]string{"version": "1.0.0", "installPath": dir},
		"b@m": 42,
	}})
	h.write(filepath.Join(".claude", "plugins", "installed_plugins.json"), string(data))
	settings := h.settings(userSettings, map[string]bool{"a@m": true, "b@m": true})
	hooks, errs := hookexec.LoadEnabledPlugins(h.dir, "", []string{settings})
	if got := commands(hooks); !reflect.DeepEqual(got, []string{dir + "/a.sh"}) {
		t.Errorf("commands %v", got)
	}
	if len(errs) != 1 || !errors.Is(errs[0], hookexec.ErrBadConfig) || !strings.Contains(errs[0].Error(), "b@m") {
		t.Errorf("errors %v, want one ErrBadConfig naming b@m's record", errs)
	}
}

// TestPluginFilesMustBeRegularAndSmall checks each plugin file reprise
// reads, a plugin's hooks/hooks.json and installed_plugins.json, made a
// FIFO, a link to /dev/zero or an oversize file: each is refused at once
// with ErrBadConfig naming it, and the other plugins still load.
func TestPluginFilesMustBeRegularAndSmall(t *testing.T) {
	hostile := map[string]func(t *testing.T, path string){
		"FIFO": func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"link to /dev/zero": func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		},
		"oversize": func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(`{"x": "`+strings.Repeat("a", hookexec.MaxConfigFileSize)+`"}`), 0o600); err != nil {
				t.Fatal(err)
			}
		},
	}
	good := `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo good"}]}]}}`
	for kind, plant := range hostile {
		for _, file := range []string{"hooks.json", "installed_plugins.json"} {
			t.Run(kind+" "+file, func(t *testing.T) {
				h := newFakeHome(t)
				h.install("good@market", good)
				bad := h.install("bad@market", "")
				path := filepath.Join(bad, "hooks", "hooks.json")
				if file == "installed_plugins.json" {
					path = hookexec.InstalledPluginsPath(h.dir)
					if err := os.Remove(path); err != nil {
						t.Fatal(err)
					}
				} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				plant(t, path)
				settings := h.settings("settings.json", map[string]bool{"good@market": true, "bad@market": true})
				done := make(chan struct{})
				var hooks []hookexec.Hook
				var errs []error
				go func() {
					defer close(done)
					hooks, errs = hookexec.LoadEnabledPlugins(h.dir, t.TempDir(), []string{settings})
				}()
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					t.Fatal("LoadEnabledPlugins is still reading")
				}
				if len(errs) != 1 || !errors.Is(errs[0], hookexec.ErrBadConfig) || !strings.Contains(errs[0].Error(), path) {
					t.Fatalf("errors %v, want one ErrBadConfig naming %s", errs, path)
				}
				if file == "hooks.json" && (len(hooks) != 1 || hooks[0].CommandLine() != "echo good") {
					t.Errorf("the good plugin's hooks: %v", hooks)
				}
			})
		}
	}
}
