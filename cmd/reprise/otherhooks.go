package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/reprise-dev/reprise/hookexec"
)

// claudeEventOrder is the order in which hooks lists the events reprise
// does not run, as Claude Code documents them; others follow by name.
var claudeEventOrder = []string{
	"PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure",
	"Notification", "SubagentStart", "SubagentStop",
}

// foundGroup is one matcher group of a settings file, read only to list
// its hooks.
type foundGroup struct {
	Matcher string `json:"matcher"`
	Hooks   []struct {
		Type    string  `json:"type"`
		Command string  `json:"command"`
		Prompt  string  `json:"prompt"`
		URL     string  `json:"url"`
		Timeout float64 `json:"timeout"` // seconds
	} `json:"hooks"`
}

// otherEventHooks reads the settings files at paths and the hooks.json of
// the plugin directories, and returns, one entry per event, the hooks they
// configure for events reprise does not run, each event marked as not run.
// The same event and command found in several places is listed once, at
// its first place. Files that are missing are skipped; those that cannot
// be read were already reported when the hooks were loaded, so they are
// skipped quietly; a group of an unrun event that does not parse is
// reported as a warning.
func otherEventHooks(paths, pluginDirs []string, stderr io.Writer) []hookEventJSON {
	byEvent := map[string][]hookJSON{}
	seen := map[[2]string]bool{}
	read := func(path, source, root string) {
		data, err := readSmallFile(path)
		if err != nil {
			return
		}
		var f struct {
			Hooks map[string]json.RawMessage `json:"hooks"`
		}
		if json.Unmarshal(data, &f) != nil {
			return
		}
		for event, raw := range f.Hooks {
			if slices.Contains(hookexec.Events, hookexec.Event(event)) {
				continue
			}
			var groups []foundGroup
			if err := json.Unmarshal(raw, &groups); err != nil {
				warn(stderr, "%s: hooks.%s: %v", path, event, err)
				continue
			}
			for _, g := range groups {
				for _, h := range g.Hooks {
					name := h.Command
					switch {
					case name == "" && h.Prompt != "":
						name = h.Prompt
					case name == "" && h.URL != "":
						name = h.URL
					}
					if root != "" {
						name = strings.ReplaceAll(name, "${CLAUDE_PLUGIN_ROOT}", root)
					}
					k := [2]string{event, h.Type + "\x00" + name}
					if seen[k] {
						continue
					}
					seen[k] = true
					x := hookJSON{Name: name, Type: h.Type, Matcher: g.Matcher,
						TimeoutMS: h.Timeout * float64(time.Second/time.Millisecond), Source: source, PluginRoot: root}
					if h.Type == "command" {
						x.Command = name
					}
					byEvent[event] = append(byEvent[event], x)
				}
			}
		}
	}
	for _, p := range paths {
		read(p, p, "")
	}
	for _, dir := range pluginDirs {
		root, err := filepath.Abs(dir)
		if err != nil {
			continue
		}
		read(filepath.Join(root, "hooks", "hooks.json"), "plugin:"+root, root)
	}
	names := make([]string, 0, len(byEvent))
	for ev := range byEvent {
		names = append(names, ev)
	}
	rank := func(ev string) int {
		if i := slices.Index(claudeEventOrder, ev); i >= 0 {
			return i
		}
		return len(claudeEventOrder)
	}
	sort.Slice(names, func(i, j int) bool {
		if ri, rj := rank(names[i]), rank(names[j]); ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	out := make([]hookEventJSON, 0, len(names))
	for _, ev := range names {
		out = append(out, hookEventJSON{Event: ev, Run: false, Hooks: byEvent[ev]})
	}
	return out
}

// readSmallFile reads the settings file at path if it is a regular file
// (a symbolic link to one is fine) of at most hookexec.MaxConfigFileSize
// bytes. It never waits on a FIFO: the file is opened non-blocking and
// checked before it is read.
func readSmallFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if info.Size() > hookexec.MaxConfigFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, hookexec.MaxConfigFileSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, hookexec.MaxConfigFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > hookexec.MaxConfigFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, hookexec.MaxConfigFileSize)
	}
	return data, nil
}
