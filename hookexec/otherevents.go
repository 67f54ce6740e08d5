package hookexec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// OtherHook is a hook that a settings file or a plugin's hooks.json
// configures and this package does not run: one of an event that is none
// of Claude Code's. It is listed, never run.
type OtherHook struct {
	Event   string // the event, as the file names it
	Matcher string // the group's matcher, as written
	Type    string // "command", "prompt", "http", ...
	// Text is the command, else the prompt, else the URL; in a plugin's
	// command every ${CLAUDE_PLUGIN_ROOT} is replaced by PluginRoot.
	Text       string
	Timeout    time.Duration // as configured; 0 when absent
	Source     string        // the file's path, or "plugin:" and the plugin's directory
	PluginRoot string        // the plugin's absolute directory; "" for a settings file
}

// LoadOtherHooks reads the settings file at path as LoadSettings does and
// returns the hooks it configures that LoadSettings does not load (see
// OtherHook), event by event in name order, each event's in file order. The groups of
// an event that do not have a settings file's shape are skipped, each
// adding one error to bad; the other events still load. err is the file's
// own error, as LoadSettings returns it.
func LoadOtherHooks(path string) (hooks []OtherHook, bad []error, err error) {
	return loadOtherHooks(path, path, "")
}

// LoadOtherPluginHooks is LoadOtherHooks for the plugin in dir, whose
// hooks LoadPluginDir reads.
func LoadOtherPluginHooks(dir string) (hooks []OtherHook, bad []error, err error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("hookexec: plugin directory: %w", err)
	}
	return loadOtherHooks(filepath.Join(root, "hooks", "hooks.json"), "plugin:"+root, root)
}

// loadOtherHooks reads the hooks file at path, with its hooks' source and
// the plugin root ("" for none).
func loadOtherHooks(path, source, root string) ([]OtherHook, []error, error) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, nil, err
	}
	var f struct {
		Hooks map[string]json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, nil, settingsJSONError(data, path, err)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return nil, nil, fmt.Errorf("%w: %s: not a JSON object", ErrBadConfig, path)
	}
	events := make([]string, 0, len(f.Hooks))
	for ev := range f.Hooks {
		events = append(events, ev)
	}
	sort.Strings(events)
	var hooks []OtherHook
	var bad []error
	for _, ev := range events {
		var groups []settingsGroup
		if err := json.Unmarshal(f.Hooks[ev], &groups); err != nil {
			bad = append(bad, fmt.Errorf("%w: %s: hooks.%s: %w", ErrBadConfig, path, ev, err))
			continue
		}
		known := slices.Contains(Events, Event(ev))
		for _, g := range groups {
			for _, e := range g.Hooks {
				if known {
					continue // LoadSettings loads it
				}
				text := cmp.Or(e.Command, e.Prompt, e.URL)
				if root != "" {
					text = strings.ReplaceAll(text, pluginRootVar, root)
				}
				hooks = append(hooks, OtherHook{
					Event: ev, Matcher: g.Matcher, Type: e.Type, Text: text,
					Timeout: time.Duration(e.Timeout * float64(time.Second)),
					Source:  source, PluginRoot: root,
				})
			}
		}
	}
	return hooks, bad, nil
}
