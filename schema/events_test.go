package schema

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the table of events in docs/hooks.md from schema.Events")

// claudeCodeEvents are the 33 hook events of Claude Code 2.1.328's own
// list, sorted.
var claudeCodeEvents = []string{
	"ConfigChange", "CwdChanged", "DirectoryAdded", "Elicitation", "ElicitationResult", "FileChanged",
	"InstructionsLoaded", "MessageDisplay", "Notification", "PermissionDenied", "PermissionRequest",
	"PostCompact", "PostModelSwitch", "PostToolBatch", "PostToolUse", "PostToolUseFailure", "PreCompact",
	"PreModelSwitch", "PreToolUse", "SessionEnd", "SessionStart", "Setup", "Stop", "StopFailure",
	"SubagentStart", "SubagentStop", "TaskCompleted", "TaskCreated", "TeammateIdle", "UserPromptExpansion",
	"UserPromptSubmit", "WorktreeCreate", "WorktreeRemove",
}

func TestTheTableHasEveryEventOnce(t *testing.T) {
	var names []string
	for _, s := range Events {
		names = append(names, string(s.Event))
	}
	slices.Sort(names)
	if !slices.Equal(names, claudeCodeEvents) {
		t.Fatalf("table events:\n%v\nwant Claude Code's:\n%v", names, claudeCodeEvents)
	}
	for _, e := range HookEvents {
		if _, ok := LookupEvent(e); !ok {
			t.Errorf("HookEvents has %s, which the table lacks", e)
		}
	}
	if _, ok := LookupEvent("Bogus"); ok {
		t.Error("LookupEvent found an event Claude Code does not define")
	}
}

// Each row is whole: an event with a matcher names its field and rule, one
// without has neither; every event takes command hooks, has a timeout and
// a firer; no field is both required and optional, or one every event
// has (the subagent events make the optional agent_id and agent_type
// required).
func TestEveryRowIsWhole(t *testing.T) {
	for _, s := range Events {
		if (s.MatchOn == "") != (s.Rule == MatchNone) {
			t.Errorf("%s: matches on %q with rule %d", s.Event, s.MatchOn, s.Rule)
		}
		if !s.Accepts(HookCommand) || s.Timeout <= 0 || s.FiredBy == 0 || s.ExitTwo == 0 {
			t.Errorf("%s: incomplete row %+v", s.Event, s)
		}
		for _, f := range s.Required {
			if slices.Contains(s.Optional, f) || slices.Contains(CommonInput[:4], f) {
				t.Errorf("%s: field %s is listed twice", s.Event, f)
			}
		}
		if s.Recorded != (s.Event != HookMessageDisplay) {
			t.Errorf("%s: Recorded = %v", s.Event, s.Recorded)
		}
	}
	for _, e := range []HookEvent{HookSessionStart, HookSetup} {
		if s, _ := LookupEvent(e); s.Accepts(HookHTTP) || s.Accepts(HookPrompt) {
			t.Errorf("%s accepts http or prompt hooks; Claude Code refuses them there", e)
		}
	}
	if s, _ := LookupEvent(HookUserPromptSubmit); s.Timeout != 30*time.Second {
		t.Errorf("UserPromptSubmit's default timeout is %v, want 30s", s.Timeout)
	}
}

const (
	tableStart = "<!-- the table of events: schema.Events; go test ./schema -run TestDocsTable -update rewrites it -->"
	tableEnd   = "<!-- end of the table of events -->"
)

// docs/hooks.md prints the table as it is in the code.
func TestDocsTableMatchesTheCode(t *testing.T) {
	const path = "../docs/hooks.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start, end := strings.Index(doc, tableStart), strings.Index(doc, tableEnd)
	if start < 0 || end < start {
		t.Fatalf("%s lacks the markers of the table of events", path)
	}
	got := doc[start+len(tableStart) : end]
	want := "\n" + eventsMarkdown() + "\n"
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:start+len(tableStart)]+want+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the table of events in %s differs from schema.Events; run go test ./schema -run TestDocsTable -update", path)
}

func eventsMarkdown() string {
	var b strings.Builder
	b.WriteString("| event | matches on | input beyond the common fields (`?` optional) | output read | exit 2 | types | timeout | fired by | reprise runs it in |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range Events {
		match := "—"
		if s.MatchOn != "" {
			match = "`" + s.MatchOn + "`"
			if s.Rule == MatchNarrow {
				match += " (narrow list)"
			}
		}
		var in []string
		for _, f := range s.Required {
			in = append(in, "`"+f+"`")
		}
		for _, f := range s.Optional {
			in = append(in, "`"+f+"?`")
		}
		var out []string
		if s.PlainContext {
			out = append(out, "plain stdout")
		}
		if s.Decision {
			out = append(out, "`decision`")
		}
		for _, f := range s.Output {
			out = append(out, "`"+f+"`")
		}
		types := make([]string, len(s.Types))
		for i, ty := range s.Types {
			types[i] = string(ty)
		}
		runs := cmp.Or(s.RunBy, "Agent.Fire, reprise fire")
		if !s.Recorded {
			runs += "; not recorded"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.Event, match,
			orDash(strings.Join(in, ", ")), orDash(strings.Join(out, ", ")), s.ExitTwo,
			strings.Join(types, ", "), strconv.FormatFloat(s.Timeout.Seconds(), 'f', -1, 64)+" s", s.FiredBy, runs)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
