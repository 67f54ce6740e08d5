package projection_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// titled returns an outcome whose hook answered with sessionTitle title.
func titled(title string) schema.HookOutcome {
	spec, err := json.Marshal(map[string]string{"sessionTitle": title})
	if err != nil {
		panic(err)
	}
	return schema.HookOutcome{Name: "t", Status: schema.HookOK, Specific: spec}
}

// hookTitle folds the session s, created with a first prompt, and the
// agent events of agent, each encoded as the log keeps it, and returns
// the title of s.
func hookTitle(t *testing.T, agent ...schema.Payload) string {
	t.Helper()
	s, ag := &log{stream: "session/s"}, &log{stream: "agent/x"}
	x := projection.NewIndex()
	events := []eventlog.Event{
		s.next(t, &schema.SessionCreated{ID: "s", Cwd: "/w"}, ""),
		s.next(t, msg("1", "", "the first prompt"), ""),
	}
	for _, p := range agent {
		events = append(events, ag.next(t, p, "r"))
	}
	for _, ev := range events {
		if err := x.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := x.Sessions()
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows = %+v, %v", rows, err)
	}
	return rows[0].Title
}

func started(source schema.Source, outs ...schema.HookOutcome) *schema.SessionStartHookRan {
	return &schema.SessionStartHookRan{Session: "s", Source: source, Outcomes: outs}
}

func prompted(outs ...schema.HookOutcome) *schema.PromptHookRan {
	return &schema.PromptHookRan{Session: "s", Outcomes: outs, MessageUUID: "2"}
}

// A hook's sessionTitle names the session as Claude Code takes it: from
// SessionStart on startup, resume and fork (not clear or compact), and
// from UserPromptSubmit when the prompt went on; the last one given wins.
func TestHooksTitleTheSession(t *testing.T) {
	blocked := prompted(titled("blocked"))
	blocked.Blocked, blocked.Reason, blocked.MessageUUID = true, "no", ""
	halt := titled("halted")
	halt.Halt = true
	cut := started(schema.SourceStartup, titled("cut short"))
	cut.Interrupted = true
	other := schema.HookOutcome{Name: "other", Status: schema.HookOK, Specific: []byte(`{"reloadSkills":true}`)}
	number := schema.HookOutcome{Name: "n", Status: schema.HookOK, Specific: []byte(`{"sessionTitle":7}`)}
	empty := titled("")

	for _, tc := range []struct {
		name   string
		events []schema.Payload
		want   string
	}{
		{"no hook gives one", []schema.Payload{started(schema.SourceStartup, other)}, "the first prompt"},
		{"startup", []schema.Payload{started(schema.SourceStartup, titled("Fix the build"))}, "Fix the build"},
		{"a new session", []schema.Payload{started(schema.SourceNew, titled("New one"))}, "New one"},
		{"resume", []schema.Payload{started(schema.SourceResume, titled("Resumed"))}, "Resumed"},
		{"fork", []schema.Payload{started(schema.SourceFork, titled("Forked"))}, "Forked"},
		{"clear is ignored", []schema.Payload{started(schema.SourceClear, titled("Cleared"))}, "the first prompt"},
		{"compact is ignored", []schema.Payload{started(schema.SourceCompact, titled("Compacted"))}, "the first prompt"},
		{"an interrupted run is ignored", []schema.Payload{cut}, "the first prompt"},
		{"the last hook of a run wins", []schema.Payload{started(schema.SourceStartup, titled("first"), other, titled("second"), empty, number)}, "second"},
		{"a later run wins", []schema.Payload{started(schema.SourceStartup, titled("at start")), prompted(titled("on prompt"))}, "on prompt"},
		{"a run without one keeps it", []schema.Payload{prompted(titled("on prompt")), prompted(other), started(schema.SourceCompact, titled("x"))}, "on prompt"},
		{"a blocked prompt's hooks give none", []schema.Payload{started(schema.SourceStartup, titled("kept")), blocked}, "kept"},
		{"a halted prompt's hooks give none", []schema.Payload{started(schema.SourceStartup, titled("kept")), prompted(titled("x"), halt)}, "kept"},
		{"a blank one gives none", []schema.Payload{started(schema.SourceStartup, titled("kept")), prompted(titled(" \t\n\u200b "))}, "kept"},
	} {
		if got := hookTitle(t, tc.events...); got != tc.want {
			t.Errorf("%s: title %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A hook's title stays over the summary record of an imported transcript
// and over prompts; a hook's title on another session, or on none that
// exists, changes nothing.
func TestHookTitleWinsAndStaysOnItsSession(t *testing.T) {
	s, o, ag := &log{stream: "session/s"}, &log{stream: "session/o"}, &log{stream: "agent/x"}
	x := projection.NewIndex()
	for _, ev := range []eventlog.Event{
		s.next(t, &schema.SessionCreated{ID: "s", Cwd: "/w"}, ""),
		o.next(t, &schema.SessionCreated{ID: "o", Cwd: "/w"}, ""),
		ag.next(t, started(schema.SourceStartup, titled("From the hook")), "r"),
		s.next(t, msg("1", "", "a prompt"), ""),
		s.next(t, &schema.TranscriptRecord{Record: []byte(`{"type":"summary","summary":"A summary"}`)}, ""),
		o.next(t, msg("1", "", "other's prompt"), ""),
		ag.next(t, &schema.SessionStartHookRan{Session: "gone", Source: schema.SourceStartup, Outcomes: []schema.HookOutcome{titled("nowhere")}}, "r"),
	} {
		if err := x.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := x.Sessions()
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows = %+v, %v", rows, err)
	}
	got := map[string]string{rows[0].ID: rows[0].Title, rows[1].ID: rows[1].Title}
	if got["s"] != "From the hook" || got["o"] != "other's prompt" {
		t.Fatalf("titles = %q", got)
	}
	if rows[0].Messages+rows[1].Messages != 2 || rows[0].LastRestored != 0 || rows[1].LastRestored != 0 {
		t.Fatalf("a hook's title changed more than the title: %+v", rows)
	}
}

// A hostile title is shown on one line: runs of control and format
// characters become one space, and it keeps its first HookTitleLength
// characters. Markup stays text for the views to escape.
func TestHookTitleIsMadeFitToShow(t *testing.T) {
	long := strings.Repeat("é", projection.HookTitleLength+50)
	for _, tc := range []struct{ give, want string }{
		{"  Fix\nthe\r\n\tbuild  ", "Fix the build"},
		{"a\x1b[31mred\x1b[0m\x07", "a [31mred [0m"},
		{"zero\u200bwidth\u2028line\u2029para\u0085next", "zero width line para next"},
		{"<script>alert(1)</script>", "<script>alert(1)</script>"},
		{long, long[:2*projection.HookTitleLength]},
		{"\x00\x01 lead", "lead"},
	} {
		if got := hookTitle(t, started(schema.SourceStartup, titled(tc.give))); got != tc.want {
			t.Errorf("title of %q = %q, want %q", tc.give, got, tc.want)
		}
	}
}
