package main

import (
	"io"
	"slices"
	"sort"
	"time"

	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// otherEventHooks lists, one entry per event, the hooks that the settings
// files at paths and the hooks.json of the plugin directories configure
// for events reprise does not run, each event marked as not run. The same
// event and hook found in several places is listed once, at its first
// place. Files that are missing or cannot be read were already dealt with
// when the hooks were loaded, so they are skipped quietly; a group of an
// unrun event that does not parse is reported as a warning.
func otherEventHooks(paths, pluginDirs []string, stderr io.Writer) []hookEventJSON {
	byEvent := map[string][]hookJSON{}
	seen := map[[2]string]bool{}
	add := func(hooks []hookexec.OtherHook, bad []error, err error) {
		if err != nil {
			return
		}
		for _, err := range bad {
			warn(stderr, "%v", err)
		}
		for _, h := range hooks {
			k := [2]string{h.Event, h.Type + "\x00" + h.Text}
			if seen[k] {
				continue
			}
			seen[k] = true
			x := hookJSON{Name: h.Text, Type: h.Type, Matcher: h.Matcher,
				TimeoutMS: float64(h.Timeout) / float64(time.Millisecond), Source: h.Source, PluginRoot: h.PluginRoot}
			if h.Type == "command" {
				x.Command = h.Text
			}
			byEvent[h.Event] = append(byEvent[h.Event], x)
		}
	}
	for _, p := range paths {
		add(hookexec.LoadOtherHooks(p))
	}
	for _, dir := range pluginDirs {
		add(hookexec.LoadOtherPluginHooks(dir))
	}
	names := make([]string, 0, len(byEvent))
	for ev := range byEvent {
		names = append(names, ev)
	}
	// The events in the order of the table of events; names Claude Code
	// does not define follow, by name.
	rank := func(ev string) int {
		if i := slices.IndexFunc(schema.Events, func(s schema.EventSpec) bool { return string(s.Event) == ev }); i >= 0 {
			return i
		}
		return len(schema.Events)
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
