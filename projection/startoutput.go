package projection

import (
	"encoding/json"

	"github.com/reprise-dev/reprise/schema"
)

// StartOutput is what SessionStart hooks asked for beside their context,
// as Claude Code 2.1.328 gathers it from their hookSpecificOutput: the
// last initialUserMessage given, every watchPaths entry in hook order, and
// whether any asked for reloadSkills.
type StartOutput struct {
	InitialUserMessage string
	WatchPaths         []string
	ReloadSkills       bool
}

// startOutput gathers the StartOutput of a SessionStart run's outcomes.
func startOutput(outs []schema.HookOutcome) StartOutput {
	var out StartOutput
	for _, o := range outs {
		if o.Specific == nil {
			continue
		}
		var spec struct {
			Initial string   `json:"initialUserMessage"`
			Watch   []string `json:"watchPaths"`
			Reload  bool     `json:"reloadSkills"`
		}
		if json.Unmarshal(o.Specific, &spec) != nil {
			continue // a field of the wrong type: Claude Code drops the answer
		}
		if spec.Initial != "" {
			out.InitialUserMessage = spec.Initial
		}
		out.WatchPaths = append(out.WatchPaths, spec.Watch...)
		out.ReloadSkills = out.ReloadSkills || spec.Reload
	}
	return out
}
