package hookexec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reprise-dev/reprise/internal/private"
	"github.com/reprise-dev/reprise/schema"
)

// pluginRootVar is replaced by the plugin directory in plugin commands.
const pluginRootVar = "${CLAUDE_PLUGIN_ROOT}"

// settingsEvents is the part of a Claude Code settings file's, or a
// plugin's hooks/hooks.json's, "hooks" object that this package reads: a
// struct type with one []settingsGroup field for each event it runs, named and tagged as the event: decoding into it
// reports a malformed group at its place in the file, while a malformed
// event this package does not run cannot fail the file.
var settingsEvents = func() reflect.Type {
	fields := make([]reflect.StructField, len(Events))
	for i, e := range Events {
		fields[i] = reflect.StructField{Name: string(e), Type: reflect.TypeFor[[]settingsGroup](),
			Tag: reflect.StructTag(`json:"` + string(e) + `"`)}
	}
	return reflect.StructOf(fields)
}()

// settingsGroup is one matcher and the hooks it selects.
type settingsGroup struct {
	Matcher string          `json:"matcher"`
	Hooks   []settingsEntry `json:"hooks"`
}

// settingsEntry is one hook of a group, of any of the five types.
type settingsEntry struct {
	Type    string    `json:"type"`
	Command string    `json:"command"`
	Args    *[]string `json:"args"`    // present: exec form
	Timeout float64   `json:"timeout"` // seconds
	// http
	URL            string            `json:"url"`
	Headers        map[string]string `json:"headers"`
	AllowedEnvVars []string          `json:"allowedEnvVars"`
	// prompt and agent
	Prompt          string `json:"prompt"`
	Model           string `json:"model"`
	ContinueOnBlock bool   `json:"continueOnBlock"`
	// mcp_tool
	Server string          `json:"server"`
	Tool   string          `json:"tool"`
	Input  json.RawMessage `json:"input"`
	Shell  string          `json:"shell"`
	If     string          `json:"if"`
	// Once is honoured only in frontmatter (AddFrontmatter); of Claude
	// Code's internal keys, rewakeMessage is read, as plugins use it, and
	// cloud and rewakeSummary (a line for Claude Code's terminal) are not
	// (docs/hooks.md).
	OnFailure     string `json:"onFailure"`
	StatusMessage string `json:"statusMessage"`
	Once          bool   `json:"once"`
	Async         bool   `json:"async"`
	AsyncRewake   bool   `json:"asyncRewake"`
	RewakeMessage string `json:"rewakeMessage"`
}

// LoadSettings reads one Claude Code settings file and returns its hooks
// of every type ("command", "http", "mcp_tool", "prompt", "agent") of the
// events this package knows, event by event in the order of
// Events, each in file order. Each hook's Name and Command are the
// configured command and its Source is path. Each event matches on the
// field schema.Events names for it; the matchers of events that have none
// (Stop, UserPromptSubmit) are ignored, as Claude Code ignores them.
//
// The file must be a JSON object. Hooks of other events and keys this
// package does not know (or reads and ignores, such as "cloud") are
// skipped without error. A "timeout" is in seconds and may
// be fractional; an absent or zero timeout leaves the default for the hook's
// kind. A "shell" of "bash" runs the command with bash, "powershell" with
// pwsh (a configuration error where pwsh is not installed); another shell
// is a configuration error. "args" makes the hook exec form (Command.Args).
//
// The file may be a symbolic link, but what it leads to must be a regular
// file of at most MaxConfigFileSize bytes; a FIFO or device is refused
// without waiting on it.
//
// A missing file returns an error matching os.ErrNotExist. A malformed,
// oversized or irregular file returns an error matching ErrBadConfig. A
// matcher that is not a regular expression Go can compile (Claude Code's
// are JavaScript's, which has lookarounds) matches nothing, as Claude Code
// ignores an invalid one: the file's hooks are returned with an error
// matching ErrBadMatcher (and not ErrBadConfig: see OnlyMatchers) that
// names each such matcher.
func LoadSettings(path string) ([]Hook, error) {
	return loadHooksFile(path, path)
}

// LoadPluginDir reads the hooks of the plugin in dir from
// dir/hooks/hooks.json, which has the shape of a settings file. Every
// ${CLAUDE_PLUGIN_ROOT} in a command (and in an exec-form hook's program
// and arguments) is replaced by the absolute, cleaned dir, which is also
// each hook's PluginRoot; each hook's Source is "plugin:" followed by that
// dir. The plugin's id is its name (plugin.json's, else the directory's)
// followed by "@inline", as Claude Code names a plugin it was given by
// directory; its data directory (PluginDataDir) is each hook's PluginData.
//
// A plugin without hooks/hooks.json returns an error matching
// os.ErrNotExist; other errors follow LoadSettings.
func LoadPluginDir(dir string) ([]Hook, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("hookexec: plugin directory: %w", err)
	}
	return loadPlugin(root, pluginName(root)+"@inline", nil)
}

// loadPlugin reads the hooks of the plugin id in root, with its options.
func loadPlugin(root, id string, options map[string]string) ([]Hook, error) {
	path := filepath.Join(root, "hooks", "hooks.json")
	hooks, err := loadPluginHooksFile(path, root)
	if err != nil && !OnlyMatchers(err) && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	more, merr := manifestHooks(root)
	switch {
	case errors.Is(err, fs.ErrNotExist) && merr == nil && more == nil:
		return nil, err // neither hooks/hooks.json nor a manifest's hooks
	case merr != nil && !OnlyMatchers(merr):
		return nil, merr
	case errors.Is(err, fs.ErrNotExist):
		err = nil
	}
	hooks, err = append(hooks, more...), errors.Join(err, merr)
	data := PluginDataDir(id)
	env := make([]string, 0, len(options))
	for _, k := range slices.Sorted(maps.Keys(options)) {
		env = append(env, "CLAUDE_PLUGIN_OPTION_"+optionVar(k)+"="+options[k])
	}
	for i := range hooks {
		c := hooks[i].Body.(Command)
		c.PluginRoot, c.PluginData, c.PluginEnv = root, data, env
		c.Line = strings.ReplaceAll(c.Line, pluginRootVar, root)
		if c.Args == nil && strings.Contains(c.Line, "${user_config.") {
			// As in Claude Code: a shell would parse the value again.
			c.Unrunnable = "a plugin hook's shell-form command names ${user_config.*}: use the exec form (\"args\") or read $CLAUDE_PLUGIN_OPTION_<KEY>"
		}
		if c.Args != nil {
			words := append([]string{c.Line}, c.Args...)
			for j, w := range words {
				w = strings.ReplaceAll(strings.ReplaceAll(w, pluginRootVar, root), pluginDataVar, data)
				var missing error
				if words[j], missing = userConfig(w, options); missing != nil {
					c.Unrunnable = missing.Error()
				}
			}
			c.Line, c.Args = words[0], words[1:]
		}
		if err := checkCommand(append([]string{c.Line}, c.Args...)...); err != nil {
			return nil, fmt.Errorf("%w: %s: with %s replaced, %w", ErrBadConfig, path, pluginRootVar, err)
		}
		hooks[i].Body, hooks[i].Name = c, CommandName(c.String())
	}
	return hooks, err
}

// loadPluginHooksFile reads a plugin's hooks file at path, which must have
// a top-level "hooks" (or "modules": Claude Code's JavaScript hooks
// modules, which reprise does not run).
func loadPluginHooksFile(path, root string) ([]Hook, error) {
	file, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(file, &top) == nil && top["hooks"] == nil && top["modules"] == nil {
		// Claude Code refuses such a file ("expected record"), where
		// reading it as no hooks would hide the mistake.
		return nil, fmt.Errorf("%w: %s: no top-level \"hooks\" object: a plugin's hooks.json has the shape {\"hooks\": {EVENT: [...]}}", ErrBadConfig, path)
	}
	return parseSettings(file, path, "plugin:"+root)
}

// manifestHooks reads the hooks that the plugin's
// .claude-plugin/plugin.json adds with its "hooks" field, as Claude Code
// does: the path of a hooks file relative to the plugin root, hooks inline
// ({EVENT: [...]}), or a list of either. A plugin without a manifest, or
// whose manifest has no hooks, has none.
func manifestHooks(root string) ([]Hook, error) {
	path := filepath.Join(root, ".claude-plugin", "plugin.json")
	data, err := readConfigFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var manifest struct {
		Hooks json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		return nil, settingsJSONError(data, path, err)
	}
	entries := []json.RawMessage{manifest.Hooks}
	if raw := bytes.TrimSpace(manifest.Hooks); len(raw) > 0 && raw[0] == '[' {
		if err := json.Unmarshal(raw, &entries); err != nil {
			return nil, settingsJSONError(data, path, err)
		}
	}
	var hooks []Hook
	var bad []error
	for _, entry := range entries {
		entry = bytes.TrimSpace(entry)
		var file string
		switch {
		case len(entry) == 0 || bytes.Equal(entry, []byte("null")):
			continue
		case json.Unmarshal(entry, &file) == nil:
			target := filepath.Join(root, filepath.FromSlash(file))
			if rel, err := filepath.Rel(root, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return nil, fmt.Errorf("%w: %s: hooks: %q is outside the plugin", ErrBadConfig, path, file)
			}
			hs, err := loadPluginHooksFile(target, root)
			if err != nil && !OnlyMatchers(err) {
				return nil, err
			}
			hooks, bad = append(hooks, hs...), append(bad, err)
		default:
			wrapped := append(append([]byte(`{"hooks":`), entry...), '}')
			hs, err := parseSettings(wrapped, path, "plugin:"+root)
			if err != nil && !OnlyMatchers(err) {
				return nil, err
			}
			hooks, bad = append(hooks, hs...), append(bad, err)
		}
	}
	return hooks, errors.Join(bad...)
}

// pluginDataVar is replaced by the plugin's data directory in exec-form
// plugin hooks; shell-form ones read it from their environment.
const pluginDataVar = "${CLAUDE_PLUGIN_DATA}"

// userConfigRef is a ${user_config.KEY} reference.
var userConfigRef = regexp.MustCompile(`\$\{user_config\.([^}]+)\}`)

// userConfig replaces each ${user_config.KEY} in w by the plugin option
// KEY, and says which one is not set.
func userConfig(w string, options map[string]string) (string, error) {
	var missing error
	w = userConfigRef.ReplaceAllStringFunc(w, func(ref string) string {
		key := userConfigRef.FindStringSubmatch(ref)[1]
		v, ok := options[key]
		if !ok && missing == nil {
			missing = fmt.Errorf("plugin option %q is not set: give it in pluginConfigs of a settings file", key)
		}
		return v
	})
	return w, missing
}

// optionVar is the name of a plugin option's variable after
// CLAUDE_PLUGIN_OPTION_: the key upper-cased, each character other than
// a letter, digit or '_' made '_'.
func optionVar(key string) string {
	return strings.ToUpper(strings.Map(func(r rune) rune {
		if r == '_' || r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}, key))
}

// pluginName is the name of the plugin in root: its
// .claude-plugin/plugin.json's "name", else the directory's name.
func pluginName(root string) string {
	if data, err := readConfigFile(filepath.Join(root, ".claude-plugin", "plugin.json")); err == nil {
		var manifest struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(data, &manifest) == nil && manifest.Name != "" {
			return manifest.Name
		}
	}
	return filepath.Base(root)
}

// PluginDataDir returns the data directory of plugin id
// ("name@marketplace"), as Claude Code 2.1.328 places it:
// plugins/data/ID in the user's Claude directory (CLAUDE_CONFIG_DIR, else
// ~/.claude), or under CLAUDE_CODE_PLUGIN_CACHE_DIR when that is set, each
// character of the id other than a letter, digit, '-' or '_' made '-'. A
// hook of the plugin gets it as CLAUDE_PLUGIN_DATA, made when the hook
// runs; "" when there is no home directory.
func PluginDataDir(id string) string {
	base := os.Getenv("CLAUDE_CODE_PLUGIN_CACHE_DIR")
	if base == "" {
		config := os.Getenv("CLAUDE_CONFIG_DIR")
		if config == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return ""
			}
			config = filepath.Join(home, ".claude")
		}
		base = filepath.Join(config, "plugins")
	}
	safe := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '-'
	}, id)
	return filepath.Join(base, "data", safe)
}

// OnlyMatchers reports whether err, from LoadSettings or LoadPluginDir,
// says only that some matchers could not be compiled: the file's hooks
// were returned with it, and those of the bad matchers never run. Report
// it as a warning.
func OnlyMatchers(err error) bool {
	return errors.Is(err, ErrBadMatcher) && !errors.Is(err, ErrBadConfig)
}

// SettingsLocation is a settings file and the scope it configures:
// "user", "project", "local" or "managed".
type SettingsLocation struct {
	Path  string
	Scope string
}

// DefaultSettingsPaths returns where Claude Code keeps its settings, in the
// order they apply: the user's home/.claude/settings.json, then the
// project's projectDir/.claude/settings.json and the uncommitted
// projectDir/.claude/settings.local.json, then the managed settings an
// administrator put in ManagedSettingsDir: managed-settings.json and the
// .json files of managed-settings.d, in name order. An empty home omits the
// first; an empty projectDir omits the project's two. The files need not
// exist.
func DefaultSettingsPaths(home, projectDir string) []SettingsLocation {
	var out []SettingsLocation
	if home != "" {
		out = append(out, SettingsLocation{Path: filepath.Join(home, ".claude", "settings.json"), Scope: "user"})
	}
	if projectDir != "" {
		out = append(out,
			SettingsLocation{Path: filepath.Join(projectDir, ".claude", "settings.json"), Scope: "project"},
			SettingsLocation{Path: filepath.Join(projectDir, ".claude", "settings.local.json"), Scope: "local"},
		)
	}
	dir := ManagedSettingsDir()
	out = append(out, SettingsLocation{Path: filepath.Join(dir, "managed-settings.json"), Scope: "managed"})
	dropIns, _ := filepath.Glob(filepath.Join(dir, "managed-settings.d", "*.json"))
	slices.Sort(dropIns)
	for _, p := range dropIns {
		out = append(out, SettingsLocation{Path: p, Scope: "managed"})
	}
	return out
}

// ManagedSettingsEnv names the variable that, when set, is the managed
// settings directory in place of the platform's, so that a test or a
// sandbox keeps to a directory of its own.
const ManagedSettingsEnv = "REPRISE_MANAGED_SETTINGS_DIR"

// ManagedSettingsDir returns the directory of managed settings, where
// Claude Code 2.1.328 reads them: /Library/Application Support/ClaudeCode
// on macOS, /etc/claude-code elsewhere; ManagedSettingsEnv overrides it.
func ManagedSettingsDir() string {
	if dir := os.Getenv(ManagedSettingsEnv); dir != "" {
		return dir
	}
	if runtime.GOOS == "darwin" {
		return "/Library/Application Support/ClaudeCode"
	}
	return "/etc/claude-code"
}

// isManaged reports whether the settings file at path is a managed one.
func isManaged(path string) bool {
	dir := ManagedSettingsDir()
	return path == filepath.Join(dir, "managed-settings.json") || filepath.Dir(path) == filepath.Join(dir, "managed-settings.d")
}

// hookPolicy is what settings files say of which hooks may run: managed
// settings may allow only their own hooks (allowManagedHooksOnly) or turn
// every hook off (disableAllHooks); another file's disableAllHooks turns
// off every hook but the managed ones.
type hookPolicy struct {
	managedOnly, noneAtAll bool
	// Managed settings' allowedHttpHookUrls and httpHookAllowedEnvVars:
	// nil when no managed file sets them.
	httpURLs, httpEnv []string
}

// apply makes http hooks keep to p's allowlists: a hook whose URL no
// pattern of allowedHttpHookUrls matches fails whenever it runs, saying
// so, and a hook's allowedEnvVars are only those httpHookAllowedEnvVars
// also lists.
func (p hookPolicy) apply(hooks []Hook) {
	for i, h := range hooks {
		b, ok := h.Body.(HTTP)
		if !ok {
			continue
		}
		if p.httpURLs != nil && !urlAllowed(b.URL, p.httpURLs) {
			b.Unrunnable = fmt.Sprintf("HTTP hook blocked: %s does not match any pattern in allowedHttpHookUrls", b.URL)
		}
		if p.httpEnv != nil {
			b.AllowedEnvVars = slices.DeleteFunc(slices.Clone(b.AllowedEnvVars), func(v string) bool { return !slices.Contains(p.httpEnv, v) })
		}
		hooks[i].Body = b
	}
}

// allowlist adds a file's list, when it sets one, to list: the result is
// not nil once any file set one, even an empty one that allows nothing.
func allowlist(list []string, file *[]string) []string {
	if file == nil {
		return list
	}
	return append(append(make([]string, 0, len(list)+len(*file)), list...), *file...)
}

// policyOf reads the hook policy of the settings files.
func policyOf(settings []string) hookPolicy {
	var p hookPolicy
	for _, path := range settings {
		data, err := readConfigFile(path)
		if err != nil {
			continue // missing, or reported by LoadSettings
		}
		var f struct {
			ManagedOnly bool      `json:"allowManagedHooksOnly"`
			DisableAll  bool      `json:"disableAllHooks"`
			HTTPURLs    *[]string `json:"allowedHttpHookUrls"`
			HTTPEnv     *[]string `json:"httpHookAllowedEnvVars"`
		}
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		if isManaged(path) {
			p.httpURLs = allowlist(p.httpURLs, f.HTTPURLs)
			p.httpEnv = allowlist(p.httpEnv, f.HTTPEnv)
		}
		switch managed := isManaged(path); {
		case managed && f.DisableAll:
			p.noneAtAll = true
		case managed && f.ManagedOnly, f.DisableAll:
			p.managedOnly = true
		}
	}
	return p
}

// LoadAll loads every settings file, then every plugin directory, and
// returns their hooks in that order. Missing settings files are skipped, as
// are plugin directories without hooks/hooks.json; a plugin directory that
// does not exist is an error. Each file that fails adds one error and the
// others still load.
func LoadAll(settings []string, pluginDirs []string) ([]Hook, []error) {
	var hooks []Hook
	var errs []error
	policy := policyOf(settings)
	if policy.noneAtAll {
		return nil, nil
	}
	for _, path := range settings {
		if policy.managedOnly && !isManaged(path) {
			continue
		}
		hs, err := LoadSettings(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil && !OnlyMatchers(err):
			errs = append(errs, err)
		case err != nil:
			errs = append(errs, err)
			hooks = append(hooks, hs...)
		default:
			hooks = append(hooks, hs...)
		}
	}
	for _, dir := range pluginDirs {
		if policy.managedOnly {
			break
		}
		hs, err := LoadPluginDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			if _, statErr := os.Stat(dir); statErr != nil {
				errs = append(errs, fmt.Errorf("hookexec: plugin directory: %w", statErr))
			}
			continue
		}
		if err != nil {
			errs = append(errs, err)
		}
		hooks = append(hooks, hs...)
	}
	policy.apply(hooks)
	return hooks, errs
}

// Dedupe returns hooks without the command hooks whose event, shell,
// command, exec-form arguments and "if" equal those of an earlier one from
// the same origin, as Claude Code keys them: the same command configured
// in several settings files runs once, whatever its matcher, while a
// plugin's copy (keyed by its plugin root) and a session-scoped one such
// as a skill's frontmatter (keyed by its source) each run besides the
// settings' copy, and a shell-form and an exec-form copy of one command
// both run. Hooks of the other types are keyed by dedupeKey, "if" and
// origin too. Function hooks are all kept.
// Order is preserved. Apply it to the hooks that matched, so that a copy
// whose matcher selects the value is not lost to one whose matcher does
// not.
func Dedupe(hooks []Hook) []Hook {
	type key struct {
		event                   Event
		shell, line, args, rule string
		exec                    bool
		origin                  string
	}
	seen := make(map[key]bool)
	out := make([]Hook, 0, len(hooks))
	for _, h := range hooks {
		var k key
		switch b := h.Body.(type) {
		case Command:
			k = key{h.Event, cmp.Or(b.Shell, "bash"), b.Line, strings.Join(b.Args, "\x00"), h.If, b.Args != nil, dedupeOrigin(h)}
		case HTTP, MCPTool, Prompt:
			k = key{event: h.Event, shell: string(h.Type()), line: dedupeKey(h), rule: h.If, origin: dedupeOrigin(h)}
		default:
			out = append(out, h)
			continue
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, h)
	}
	return out
}

// dedupeOrigin is where a hook comes from as far as Dedupe tells copies
// apart: a plugin's root, a session-scoped hook's source, and "" for every
// settings file, whose copies are one.
func dedupeOrigin(h Hook) string {
	if c, ok := h.Body.(Command); ok && c.PluginRoot != "" {
		return "plugin\x00" + c.PluginRoot
	}
	if strings.HasPrefix(h.Source, "plugin:") {
		return "plugin\x00" + strings.TrimPrefix(h.Source, "plugin:")
	}
	if h.scoped != "" {
		return "scoped\x00" + h.Source
	}
	return ""
}

// dedupeKey is what makes a hook of another type than command the same
// as another, as Claude Code keys them: an http hook's URL, a prompt or
// agent hook's prompt, an mcp_tool hook's server, tool and input.
func dedupeKey(h Hook) string {
	switch b := h.Body.(type) {
	case HTTP:
		return b.URL
	case Prompt:
		return b.Text
	case MCPTool:
		return b.Server + "\x00" + b.Tool + "\x00" + string(b.Input)
	}
	return ""
}

// loadHooksFile reads and parses the hooks file at path, giving its hooks
// source.
func loadHooksFile(path, source string) ([]Hook, error) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	return parseSettings(data, path, source)
}

// MaxConfigFileSize is the largest settings file, hooks.json or
// installed_plugins.json this package reads.
const MaxConfigFileSize = 1 << 20

// readConfigFile reads a configuration file: a settings file, a plugin's
// hooks.json or Claude Code's installed_plugins.json. Symbolic links are
// followed (dotfile managers link settings files), but what they lead to
// must be a regular file of at most MaxConfigFileSize bytes: a FIFO, a
// device such as /dev/zero or a directory is refused without being read.
// The file is opened non-blocking, so opening a FIFO never waits for a
// writer.
//
// A missing file returns an error matching fs.ErrNotExist; one that is not
// a regular file or is too large, an error matching ErrBadConfig. Every
// error names path.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("hookexec: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("hookexec: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s: not a regular file but %s", ErrBadConfig, path, private.Kind(info.Mode()))
	}
	if info.Size() > MaxConfigFileSize {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrBadConfig, path, MaxConfigFileSize)
	}
	if err := checkWriters(path, info); err != nil {
		return nil, err
	}
	// The file may grow between Stat and the read: read one byte beyond the
	// cap to notice.
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("hookexec: %s: %w", path, err)
	}
	if len(data) > MaxConfigFileSize {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrBadConfig, path, MaxConfigFileSize)
	}
	return data, nil
}

// checkWriters refuses, with ErrUntrusted, the configuration file at path,
// whose opened file info is, when another user could have written it: the
// file must belong to the running user or root and be writable by no one
// else, and so must every directory above it, both where path names it
// and where its symbolic links lead, or be sticky.
func checkWriters(path string, info fs.FileInfo) error {
	if !private.TrustedOwner(info) {
		return fmt.Errorf("%w: %s belongs to another user", ErrUntrusted, path)
	}
	if private.OthersMayWrite(info) {
		return fmt.Errorf("%w: %s may be written by other users (mode %04o)", ErrUntrusted, path, info.Mode().Perm())
	}
	if err := private.CheckAncestors(path, ErrUntrusted); err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil || real == path {
		return err
	}
	return private.CheckAncestors(real, ErrUntrusted)
}

// parseSettings turns the contents of the file at path into hooks.
func parseSettings(data []byte, path, source string) ([]Hook, error) {
	events := reflect.New(settingsEvents)
	if err := json.Unmarshal(data, &struct {
		Hooks any `json:"hooks"`
	}{events.Interface()}); err != nil {
		return nil, settingsJSONError(data, path, err)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return nil, fmt.Errorf("%w: %s: not a JSON object", ErrBadConfig, path)
	}
	var hooks []Hook
	var bad []error
	for k, event := range Events {
		groups := events.Elem().Field(k).Interface().([]settingsGroup)
		for i, g := range groups {
			at := fmt.Sprintf("hooks.%s[%d]", event, i)
			m, err := ParseMatcherFor(event, g.Matcher)
			if err != nil {
				// As in Claude Code, the matcher matches nothing and the
				// rest of the file loads.
				bad = append(bad, fmt.Errorf("%s: %s.matcher: %w; its hooks never run", path, at, err))
			}
			for j, e := range g.Hooks {
				h, ok, err := settingsHook(event, e)
				if err != nil {
					return nil, fmt.Errorf("%w: %s: %s.hooks[%d].%s", ErrBadConfig, path, at, j, err)
				}
				if !ok {
					continue
				}
				h.Event, h.Source, h.Matcher = event, source, m
				hooks = append(hooks, h)
			}
		}
	}
	return hooks, errors.Join(bad...)
}

// settingsHook converts one hook entry. Its errors start with the
// offending key.
func settingsHook(event Event, e settingsEntry) (Hook, bool, error) {
	spec, _ := schema.LookupEvent(event)
	switch {
	case e.Type == "":
		return Hook{}, false, errors.New("type: missing")
	case !slices.Contains([]schema.HookType{schema.HookCommand, schema.HookHTTP, schema.HookMCPTool, schema.HookPrompt, schema.HookAgent}, schema.HookType(e.Type)):
		return Hook{}, false, fmt.Errorf("type: %q is not a hook type (command, http, mcp_tool, prompt or agent)", e.Type)
	case !spec.Accepts(schema.HookType(e.Type)):
		return Hook{}, false, fmt.Errorf("type: %s hooks do not run on %s, as Claude Code refuses them there (it takes %s)", e.Type, event, typeList(spec.Types))
	case e.Timeout < 0 || e.Timeout*float64(time.Second) >= math.MaxInt64:
		return Hook{}, false, fmt.Errorf("timeout: %v seconds is out of range", e.Timeout)
	}
	switch e.OnFailure {
	case "", "continue", OnFailureBlock:
	default:
		return Hook{}, false, fmt.Errorf("onFailure: %q is neither continue nor block", e.OnFailure)
	}
	h := Hook{If: e.If, OnFailure: e.OnFailure, StatusMessage: e.StatusMessage, once: e.Once,
		Timeout: time.Duration(math.Round(e.Timeout * float64(time.Second)))}
	switch schema.HookType(e.Type) {
	case schema.HookHTTP:
		u, err := url.Parse(e.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Hook{}, false, fmt.Errorf("url: %q is not an http or https URL", e.URL)
		}
		h.Body = HTTP{URL: e.URL, Headers: e.Headers, AllowedEnvVars: e.AllowedEnvVars}
	case schema.HookPrompt, schema.HookAgent:
		if strings.TrimSpace(e.Prompt) == "" {
			return Hook{}, false, errors.New("prompt: empty")
		}
		h.Body = Prompt{Text: e.Prompt, Model: e.Model, ContinueOnBlock: e.ContinueOnBlock, Agent: e.Type == string(schema.HookAgent)}
	case schema.HookMCPTool:
		switch {
		case e.Server == "":
			return Hook{}, false, errors.New("server: missing")
		case e.Tool == "":
			return Hook{}, false, errors.New("tool: missing")
		case len(e.Input) > 0 && !isJSONObject(e.Input) && string(e.Input) != "null":
			return Hook{}, false, errors.New("input: not a JSON object")
		}
		input := e.Input
		if string(input) == "null" {
			input = nil
		}
		h.Body = MCPTool{Server: e.Server, Tool: e.Tool, Input: append(json.RawMessage(nil), input...)}
	}
	if h.Body != nil {
		h.Name = h.defaultName()
		return h, true, nil
	}
	if strings.TrimSpace(e.Command) == "" {
		return Hook{}, false, errors.New("command: empty")
	}
	body := Command{Line: e.Command}
	if e.Args != nil {
		body.Args = append([]string{}, *e.Args...)
	}
	if err := checkCommand(append([]string{body.Line}, body.Args...)...); err != nil {
		return Hook{}, false, fmt.Errorf("command: %w", err)
	}
	switch e.Shell {
	case "", "bash":
		body.Shell = e.Shell
	case "powershell":
		if _, err := exec.LookPath(powershell); err != nil {
			return Hook{}, false, fmt.Errorf("shell: powershell hooks need %s, which is not installed here", powershell)
		}
		body.Shell = e.Shell
	default:
		return Hook{}, false, fmt.Errorf("shell: %q is not a shell hooks run in (bash or powershell)", e.Shell)
	}
	h.Name, h.Body = CommandName(body.String()), body
	h.Async, h.AsyncRewake, h.RewakeMessage = e.Async, e.AsyncRewake, e.RewakeMessage
	return h, true, nil
}

// typeList joins hook types for a message.
func typeList(types []schema.HookType) string {
	words := make([]string, len(types))
	for i, t := range types {
		words[i] = string(t)
	}
	return strings.Join(words, ", ")
}

// settingsJSONError describes a json.Unmarshal error of the file at path
// with the line and column where it happened.
func settingsJSONError(data []byte, path string, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		line, col := lineCol(data, syntax.Offset)
		return fmt.Errorf("%w: %s:%d:%d: %w", ErrBadConfig, path, line, col, syntax)
	case errors.As(err, &typ):
		line, col := lineCol(data, typ.Offset)
		field := typ.Field
		if field == "" {
			field = "the file"
		}
		if n, ok := strings.CutPrefix(typ.Value, "number "); ok {
			return fmt.Errorf("%w: %s:%d:%d: %s: %s is out of range", ErrBadConfig, path, line, col, field, n)
		}
		return fmt.Errorf("%w: %s:%d:%d: %s: got %s, want %s",
			ErrBadConfig, path, line, col, field, typ.Value, jsonKind(typ.Type))
	}
	return fmt.Errorf("%w: %s: %w", ErrBadConfig, path, err)
}

// lineCol returns the 1-based line and column of the byte that
// encoding/json read last when it stopped at offset: the offending
// character of a syntax error, or the end of a value of the wrong type.
// Columns count characters, not bytes.
func lineCol(data []byte, offset int64) (line, col int) {
	end := int(min(max(offset-1, 0), int64(len(data))))
	before := data[:end]
	line = 1 + bytes.Count(before, []byte("\n"))
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return line, 1 + utf8.RuneCount(before[lineStart:])
}

// jsonKind names the JSON value that decodes into t.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Float64:
		return "number"
	case reflect.Slice:
		return "array"
	}
	return "object"
}
