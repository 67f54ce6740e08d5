package hookexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// InstalledPlugin is a plugin that Claude Code installed and a settings
// file enabled.
type InstalledPlugin struct {
	ID    string // name@marketplace, as enabledPlugins and installed_plugins.json spell it
	Dir   string // the plugin's directory: its install path, absolute and cleaned
	Scope string // the scope of the install record used: "user", "project", "local", "managed"
}

// InstalledPluginsPath returns where Claude Code records the plugins it has
// installed: home/.claude/plugins/installed_plugins.json. The plugins'
// files live under home/.claude/plugins/cache, at the install path each
// record names.
func InstalledPluginsPath(home string) string {
	return filepath.Join(home, ".claude", "plugins", "installed_plugins.json")
}

// installedPluginsFile is the part of installed_plugins.json this package
// reads. Version 2 maps each plugin id to a list of install records, one a
// scope; version 1 mapped it to a single record. Both are accepted.
type installedPluginsFile struct {
	Plugins map[string]json.RawMessage `json:"plugins"`
}

// installRecord is one install of a plugin.
type installRecord struct {
	Scope       string `json:"scope"`
	ProjectPath string `json:"projectPath"` // project and local installs
	InstallPath string `json:"installPath"`
}

// EnabledPlugins returns the installed plugins that the settings files
// enable, sorted by id, the way Claude Code finds them: a settings file's
// "enabledPlugins" object maps "name@marketplace" to true (enabled) or
// false (disabled); the files apply in the order given, a later file's
// value overriding an earlier one's, as local settings override project
// settings, which override the user's. Values other than true and false
// are ignored. home is the directory that holds .claude (usually the user's
// home); the install records are read from InstalledPluginsPath(home).
//
// A plugin installed several times (one record per scope) is taken from the
// record whose projectPath is projectDir, else from a record without a
// projectPath (a user or managed install), else from the first record. An
// install path starting with "~/" is under home; a relative one is under
// home/.claude/plugins.
//
// Settings files that are missing, unreadable or not valid JSON are skipped
// without an error: LoadSettings (LoadAll) reports them when it loads their
// hooks. An "enabledPlugins" that is not an object is an error matching
// ErrBadConfig naming the file. Installed plugins are read only when a
// plugin is enabled. Each enabled plugin that cannot be used adds one error
// that names it, and the others are still returned: one that is not
// installed, or whose directory is missing, matches fs.ErrNotExist (Claude
// Code says "not cached"); one whose install record is malformed matches
// ErrBadConfig. An installed_plugins.json that cannot be read or parsed is
// one error, and no plugin is returned.
func EnabledPlugins(home, projectDir string, settings []string) ([]InstalledPlugin, []error) {
	enabled, errs := enabledPluginIDs(settings)
	if len(enabled) == 0 {
		return nil, errs
	}
	path := InstalledPluginsPath(home)
	records, err := readInstalledPlugins(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		records = nil // nothing installed: every enabled plugin is missing
	case err != nil:
		return nil, append(errs, err)
	}
	pluginsDir := filepath.Dir(path)
	var out []InstalledPlugin
	for _, id := range enabled {
		p, err := installedPlugin(id, records[id], home, pluginsDir, projectDir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p)
	}
	return out, errs
}

// LoadEnabledPlugins returns the hooks of the plugins EnabledPlugins finds,
// plugin by plugin in id order, each loaded like LoadPluginDir: Source
// "plugin:<dir>", ${CLAUDE_PLUGIN_ROOT} replaced by the plugin's directory.
// A plugin without hooks/hooks.json has no hooks and no error. A plugin
// whose hooks file cannot be read or parsed adds one error naming the
// plugin (and matching ErrBadConfig when the file is malformed), and the
// other plugins' hooks are still returned. The errors are for the caller to
// report as warnings; they never stop the others.
func LoadEnabledPlugins(home, projectDir string, settings []string) ([]Hook, []error) {
	if p := policyOf(settings); p.managedOnly || p.noneAtAll {
		return nil, nil // only managed settings' own hooks may run
	}
	plugins, errs := EnabledPlugins(home, projectDir, settings)
	options := pluginOptions(settings)
	var hooks []Hook
	for _, p := range plugins {
		hs, err := loadPlugin(p.Dir, p.ID, options[p.ID])
		switch {
		case errors.Is(err, fs.ErrNotExist) && !isDir(p.Dir):
			errs = append(errs, fmt.Errorf("hookexec: plugin %s: not cached at %s: %w", p.ID, p.Dir, fs.ErrNotExist))
		case errors.Is(err, fs.ErrNotExist):
			// no hooks/hooks.json: a plugin without hooks
		case err != nil && !OnlyMatchers(err):
			errs = append(errs, fmt.Errorf("hookexec: plugin %s: %w", p.ID, err))
		case err != nil:
			errs = append(errs, fmt.Errorf("hookexec: plugin %s: %w", p.ID, err))
			hooks = append(hooks, hs...)
		default:
			hooks = append(hooks, hs...)
		}
	}
	return hooks, errs
}

// pluginOptions merges the plugin options of the settings files, later
// files winning key by key: pluginConfigs.ID.options, each value as text
// (a string as it is, a number, boolean or other value as JSON writes
// it). Values a plugin keeps as secrets, outside settings files, are not
// read.
func pluginOptions(settings []string) map[string]map[string]string {
	out := make(map[string]map[string]string)
	for _, path := range settings {
		data, err := readConfigFile(path)
		if err != nil {
			continue // missing, or reported by LoadSettings
		}
		var f struct {
			PluginConfigs map[string]struct {
				Options map[string]json.RawMessage `json:"options"`
			} `json:"pluginConfigs"`
		}
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		for id, c := range f.PluginConfigs {
			for k, raw := range c.Options {
				var text string
				if json.Unmarshal(raw, &text) != nil {
					text = string(bytes.TrimSpace(raw))
				}
				if out[id] == nil {
					out[id] = make(map[string]string)
				}
				out[id][k] = text
			}
		}
	}
	return out
}

// enabledPluginIDs merges the enabledPlugins of the settings files, later
// files winning, and returns the enabled ids sorted.
func enabledPluginIDs(settings []string) ([]string, []error) {
	state := make(map[string]bool)
	var errs []error
	for _, path := range settings {
		data, err := readConfigFile(path)
		if err != nil {
			continue // missing, or reported by LoadSettings
		}
		var f struct {
			EnabledPlugins json.RawMessage `json:"enabledPlugins"`
		}
		if json.Unmarshal(data, &f) != nil {
			continue // reported by LoadSettings
		}
		raw := bytes.TrimSpace(f.EnabledPlugins)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue
		}
		var values map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &values) != nil {
			errs = append(errs, fmt.Errorf("%w: %s: enabledPlugins: want an object of \"name@marketplace\": true or false", ErrBadConfig, path))
			continue
		}
		for id, v := range values {
			switch string(bytes.TrimSpace(v)) {
			case "true":
				state[id] = true
			case "false":
				state[id] = false
			}
		}
	}
	var ids []string
	for id, on := range state {
		if on {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, errs
}

// readInstalledPlugins reads installed_plugins.json at path: each plugin
// id's raw install records.
func readInstalledPlugins(path string) (map[string]json.RawMessage, error) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	var f installedPluginsFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, settingsJSONError(data, path, err)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return nil, fmt.Errorf("%w: %s: not a JSON object", ErrBadConfig, path)
	}
	return f.Plugins, nil
}

// installedPlugin picks the install record of plugin id from raw (a list of
// records, or one record) and resolves its directory.
func installedPlugin(id string, raw json.RawMessage, home, pluginsDir, projectDir string) (InstalledPlugin, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return InstalledPlugin{}, fmt.Errorf("hookexec: plugin %s is enabled but not installed: %w", id, fs.ErrNotExist)
	}
	var records []installRecord
	var err error
	if raw[0] == '[' {
		err = json.Unmarshal(raw, &records)
	} else {
		var r installRecord
		err = json.Unmarshal(raw, &r)
		records = []installRecord{r}
	}
	if err != nil {
		return InstalledPlugin{}, fmt.Errorf("%w: plugin %s: %s: install record: %w", ErrBadConfig, id, filepath.Join(pluginsDir, "installed_plugins.json"), err)
	}
	r, ok := pickInstall(records, projectDir)
	if !ok {
		return InstalledPlugin{}, fmt.Errorf("hookexec: plugin %s is enabled but not installed: %w", id, fs.ErrNotExist)
	}
	dir := r.InstallPath
	switch {
	case dir == "~" || strings.HasPrefix(dir, "~/"):
		dir = filepath.Join(home, dir[1:])
	case !filepath.IsAbs(dir):
		dir = filepath.Join(pluginsDir, dir)
	}
	dir = filepath.Clean(dir)
	if !isDir(dir) {
		return InstalledPlugin{}, fmt.Errorf("hookexec: plugin %s: not cached at %s: %w", id, dir, fs.ErrNotExist)
	}
	return InstalledPlugin{ID: id, Dir: dir, Scope: r.Scope}, nil
}

// pickInstall returns the record of projectDir's install, else of a user
// (or managed) install, else the first; records without an install path do
// not count.
func pickInstall(records []installRecord, projectDir string) (installRecord, bool) {
	var user, first *installRecord
	for i := range records {
		r := &records[i]
		if r.InstallPath == "" {
			continue
		}
		if projectDir != "" && r.ProjectPath != "" && filepath.Clean(r.ProjectPath) == filepath.Clean(projectDir) {
			return *r, true
		}
		if user == nil && r.ProjectPath == "" {
			user = r
		}
		if first == nil {
			first = r
		}
	}
	switch {
	case user != nil:
		return *user, true
	case first != nil:
		return *first, true
	}
	return installRecord{}, false
}

// isDir reports whether path is a directory, following symbolic links.
func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}
