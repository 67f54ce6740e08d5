package projection_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// log builds events for one stream with consecutive sequences.
type log struct {
	stream string
	seq    uint64
}

func (l *log) next(t *testing.T, p schema.Payload, restore string) eventlog.Event {
	t.Helper()
	rec, err := schema.NewRecord(l.stream, p, int64(l.seq+1)*1000, restore)
	if err != nil {
		t.Fatal(err)
	}
	l.seq++
	return eventlog.Event{Stream: rec.Stream, Seq: l.seq, Position: l.seq, Type: rec.Type, Version: rec.Version, Time: rec.Time, RestoreID: rec.RestoreID, Payload: rec.Payload}
}

func msg(uuid, parent, text string) *schema.MessageAppended {
	return &schema.MessageAppended{Message: schema.Message{UUID: uuid, ParentUUID: parent, Role: "user", Content: []schema.Block{{Type: "text", Text: text}}}}
}

func TestConversationFoldsMessagesInOrder(t *testing.T) {
	l := &log{stream: "session/s"}
	c := projection.NewConversation("s")
	for _, ev := range []eventlog.Event{
		l.next(t, &schema.SessionCreated{ID: "s", Cwd: "/w"}, ""),
		l.next(t, msg("1", "", "hello"), ""),
		l.next(t, msg("2", "1", "again"), ""),
	} {
		if err := c.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if c.Cwd != "/w" || c.Head != 3 || len(c.Messages) != 2 || c.LastUUID() != "2" || c.Created != 1000 {
		t.Fatalf("conversation = %+v", c)
	}
	clone := c.Clone()
	clone.Messages[0].Content[0].Text = "changed"
	if c.Messages[0].Content[0].Text != "hello" {
		t.Fatal("Clone shares content with the original")
	}
}

func TestConversationRejectsBrokenStreams(t *testing.T) {
	l := &log{stream: "session/s"}
	created := l.next(t, &schema.SessionCreated{ID: "s"}, "")
	second := l.next(t, msg("1", "", "x"), "")
	cases := map[string][]eventlog.Event{
		"gap":                {created, {Stream: "session/s", Seq: 3, Type: schema.TypeMessageAppended, Version: 1, Payload: second.Payload}},
		"wrong stream":       {{Stream: "session/other", Seq: 1, Type: created.Type, Version: 1, Payload: created.Payload}},
		"message first":      {{Stream: "session/s", Seq: 1, Type: second.Type, Version: 1, Payload: second.Payload}},
		"lifecycle event":    {created, {Stream: "session/s", Seq: 2, Type: schema.TypeContextInjected, Version: 1, Payload: mustRecord(t, &schema.ContextInjected{}).Payload}},
		"unknown event type": {created, {Stream: "session/s", Seq: 2, Type: "Mystery", Version: 1}},
	}
	for name, evs := range cases {
		c := projection.NewConversation("s")
		var err error
		for _, ev := range evs {
			if err = c.Apply(ev); err != nil {
				break
			}
		}
		var ee *eventlog.EventError
		if !errors.As(err, &ee) {
			t.Errorf("%s: err = %v, want an EventError naming stream and seq", name, err)
		}
	}
}

func mustRecord(t *testing.T, p schema.Payload) eventlog.Record {
	rec, err := schema.NewRecord("x", p, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestAgentFoldsARuntimeRestore(t *testing.T) {
	l := &log{stream: "agent/ide"}
	a := projection.NewAgent("ide")
	steps := []schema.Payload{
		&schema.SessionLoaded{Session: "a", Source: "startup"},
		&schema.SessionStartHookStarted{Session: "a", Source: "startup"},
		&schema.SessionStartHookRan{Session: "a", Source: "startup"},
		&schema.ContextInjected{Session: "a"},
	}
	for _, p := range steps {
		if err := a.Apply(l.next(t, p, "r1")); err != nil {
			t.Fatal(err)
		}
	}
	steps = []schema.Payload{
		&schema.SaveAttempted{From: "a", To: "b", Saved: 2},
		&schema.SessionEndHookStarted{Session: "a", Reason: "resume", Hooks: []string{"h"}},
		&schema.SessionEndHookRan{Session: "a", Reason: "resume", Outcomes: []schema.HookOutcome{{Name: "h", Status: "ok"}}},
		&schema.SessionLoaded{Session: "b", Source: "resume", From: "a", Messages: 4},
	}
	for _, p := range steps {
		if err := a.Apply(l.next(t, p, "r2")); err != nil {
			t.Fatal(err)
		}
	}
	if a.State != fsm.Loaded || a.Current != "b" || a.Restore == nil || a.Restore.Saved != 2 || a.Restore.EndOutcomes[0].Name != "h" {
		t.Fatalf("mid-restore view = %+v / %+v", a, a.Restore)
	}
	// A step of another restore inside this one is refused.
	if err := a.Apply(l.next(t, &schema.SessionStartHookStarted{Session: "b", Source: "resume"}, "r3")); !errors.Is(err, eventlog.ErrCorrupt) {
		t.Fatalf("foreign restore id: err = %v", err)
	}
	l.seq--
	for _, p := range []schema.Payload{
		&schema.SessionStartHookStarted{Session: "b", Source: "resume"},
		&schema.SessionStartHookRan{Session: "b", Source: "resume", Context: "hi"},
		&schema.ContextInjected{Session: "b", MessageUUID: "m"},
	} {
		if err := a.Apply(l.next(t, p, "r2")); err != nil {
			t.Fatal(err)
		}
	}
	if a.State != fsm.Active || a.Restore != nil || len(a.History) != 2 {
		t.Fatalf("after restore: %+v", a)
	}
	r := a.History[1]
	if r.ID != "r2" || r.From != "a" || r.To != "b" || r.Source != "resume" || r.Context != "hi" || r.InjectedUUID != "m" || len(r.Steps) != 7 {
		t.Fatalf("restore = %+v", r)
	}
}

// A second SessionStartHookRan for one restore cannot be folded: the table
// forbids it, so an audit sees it and an Engine never appends it.
func TestAgentRefusesADoubleHookRun(t *testing.T) {
	l := &log{stream: "agent/ide"}
	a := projection.NewAgent("ide")
	for _, p := range []schema.Payload{
		&schema.SessionLoaded{Session: "a", Source: "startup"},
		&schema.SessionStartHookStarted{Session: "a", Source: "startup"},
		&schema.SessionStartHookRan{Session: "a", Source: "startup"},
	} {
		if err := a.Apply(l.next(t, p, "r1")); err != nil {
			t.Fatal(err)
		}
	}
	err := a.Apply(l.next(t, &schema.SessionStartHookRan{Session: "a", Source: "startup"}, "r1"))
	if !errors.Is(err, fsm.ErrIllegalTransition) {
		t.Fatalf("double SessionStartHookRan: err = %v", err)
	}
	if a.State != fsm.Started || a.Head != 3 {
		t.Fatalf("refused event changed the view: %+v", a)
	}
}

func TestIndexCountsMessagesAndRestores(t *testing.T) {
	s := &log{stream: "session/s"}
	ag := &log{stream: "agent/x"}
	x := projection.NewIndex()
	for _, ev := range []eventlog.Event{
		s.next(t, &schema.SessionCreated{ID: "s", Cwd: "/w"}, ""),
		s.next(t, msg("1", "", "a"), ""),
		s.next(t, msg("2", "1", "b"), ""),
		ag.next(t, &schema.SessionLoaded{Session: "s", Source: "startup"}, "r"),
	} {
		if err := x.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := x.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Messages != 2 || rows[0].Cwd != "/w" || rows[0].LastRestored != 1000 {
		t.Fatalf("index = %+v", rows)
	}
}

// TestIndexMarksNewerEventsAndGoesOn checks that events of a payload
// version newer than the build reads do not stop the index: their
// sessions are marked and every other row stays whole.
func TestIndexMarksNewerEventsAndGoesOn(t *testing.T) {
	newer := func(ev eventlog.Event) eventlog.Event {
		ev.Version = schema.Version(ev.Type) + 1
		return ev
	}
	a, b, c := &log{stream: "session/a"}, &log{stream: "session/b"}, &log{stream: "session/c"}
	ag := &log{stream: "agent/x"}
	x := projection.NewIndex()
	for _, ev := range []eventlog.Event{
		a.next(t, &schema.SessionCreated{ID: "a", Cwd: "/a"}, ""),
		newer(a.next(t, msg("1", "", "future"), "")),
		a.next(t, msg("2", "1", "now"), ""),
		newer(b.next(t, &schema.SessionCreated{ID: "b", Cwd: "/b"}, "")),
		c.next(t, &schema.SessionCreated{ID: "c", Cwd: "/c"}, ""),
		newer(c.next(t, &schema.CompactBoundary{UUID: "b1", Trigger: "manual"}, "")),
		newer(ag.next(t, &schema.SessionLoaded{Session: "a", Source: "startup"}, "r")),
	} {
		if err := x.Apply(ev); err != nil {
			t.Fatalf("%s#%d: %v", ev.Stream, ev.Seq, err)
		}
	}
	want := []projection.SessionInfo{
		{ID: "a", Cwd: "/a", Created: 1000, LastActivity: 3000, Messages: 2, Newer: true, Title: "now"}, // the first prompt it reads
		{ID: "b", Created: 1000, LastActivity: 1000, Newer: true},
		{ID: "c", Cwd: "/c", Created: 1000, LastActivity: 2000, Newer: true},
	}
	if got, err := x.Sessions(); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("index = %+v\nwant    %+v", got, want)
	}
}

// TestTranscriptHasNoBlankLineAfterACompaction checks that a compaction
// boundary, whose kept record already ends its line, is one line of the
// transcript, not a line and an empty one.
func TestTranscriptHasNoBlankLineAfterACompaction(t *testing.T) {
	c := projection.NewConversation("s")
	payloads := []schema.Payload{
		&schema.SessionCreated{ID: "s", Cwd: "/w"},
		&schema.MessageAppended{Message: schema.Message{UUID: "m1", Role: "user", Content: []schema.Block{{Type: "text", Text: "hi"}}}},
		&schema.CompactBoundary{UUID: "b1", LogicalParent: "m1", Trigger: "manual", PreMessages: 1},
		&schema.MessageAppended{Message: schema.Message{UUID: "m2", ParentUUID: "b1", Role: "user", IsMeta: true, Summary: true,
			Content: []schema.Block{{Type: "text", Text: "summary"}}}},
	}
	for i, p := range payloads {
		ev := eventlog.Event{Stream: "session/s", Seq: uint64(i + 1), Position: uint64(i + 1), Type: p.EventType(), Version: schema.Version(p.EventType()), Time: 1}
		if err := c.ApplyDecoded(ev, p); err != nil {
			t.Fatal(err)
		}
	}
	var out []byte
	if err := c.Transcript(0, func(line []byte) error { out = append(out, line...); return nil }); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != c.Entries() || strings.Contains(string(out), "\n\n") {
		t.Fatalf("%d lines for %d entries:\n%s", len(lines), c.Entries(), out)
	}
	if !strings.Contains(lines[1], "compact_boundary") {
		t.Fatalf("line 2 is not the boundary: %s", lines[1])
	}
}

// TestSessionRowsRoundTripAndDamageIsCorrupt checks the rows a store
// keeps: what the fold wrote reads back whole, and a cut or overlong row is
// ErrCorrupt naming the session, never a wrong row.
func TestSessionRowsRoundTripAndDamageIsCorrupt(t *testing.T) {
	s, ag := &log{stream: "session/s"}, &log{stream: "agent/x"}
	fold := eventlog.NewFold(func(string) ([]byte, error) { return nil, nil })
	for _, ev := range []eventlog.Event{
		s.next(t, &schema.SessionCreated{ID: "s", Cwd: "/w", ImportedCwd: "/elsewhere", Parent: "p"}, ""),
		s.next(t, &schema.ImportStarted{}, ""),
		s.next(t, msg("1", "", "a"), ""),
		ag.next(t, &schema.SessionLoaded{Session: "s", Source: "startup"}, "r"),
	} {
		if err := fold.Apply(projection.SessionIndex, ev); err != nil {
			t.Fatal(err)
		}
	}
	row, _ := fold.Get("s")
	got, err := projection.Sessions(map[string][]byte{"s": row})
	want := []projection.SessionInfo{{ID: "s", Cwd: "/w", ImportedCwd: "/elsewhere", Parent: "p", Created: 1000, Messages: 1,
		LastRestored: 1000, LastActivity: 3000, Importing: true, Title: "a"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("rows = %+v, %v\nwant   %+v", got, err, want)
	}
	for _, bad := range [][]byte{row[:20], append(bytes.Clone(row[:33]), 0xff, 0xff, 0xff, 0xff)} {
		if _, err := projection.Sessions(map[string][]byte{"s": bad}); !errors.Is(err, eventlog.ErrCorrupt) || !strings.Contains(err.Error(), " s ") {
			t.Errorf("damaged row %x: %v, want ErrCorrupt naming s", bad, err)
		}
	}
}

// A session's title is its first typed prompt's first line, unless an
// imported transcript's summary record names it.
func TestSessionTitle(t *testing.T) {
	title := func(payloads ...schema.Payload) string {
		t.Helper()
		l := &log{stream: "session/s"}
		x := projection.NewIndex()
		for _, p := range append([]schema.Payload{&schema.SessionCreated{ID: "s", Cwd: "/w"}}, payloads...) {
			if err := x.Apply(l.next(t, p, "")); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := x.Sessions()
		if err != nil || len(rows) != 1 {
			t.Fatalf("rows = %+v, %v", rows, err)
		}
		return rows[0].Title
	}
	meta := msg("m", "", "<system-reminder>context</system-reminder>")
	meta.Message.IsMeta = true
	answer := msg("a", "", "an answer")
	answer.Message.Role = "assistant"
	result := &schema.MessageAppended{Message: schema.Message{UUID: "r", Role: "user", Content: []schema.Block{{Type: "tool_result", Text: "ls output"}}}}
	summary := &schema.TranscriptRecord{Record: []byte(`{"type":"summary","summary":"Refund test flake","leafUuid":"x"}`)}
	other := &schema.TranscriptRecord{Record: []byte(`{"type":"system","content":"compacted"}`)}
	long := strings.Repeat("word ", 40)

	for _, tc := range []struct {
		name     string
		payloads []schema.Payload
		want     string
	}{
		{"none yet", nil, ""},
		{"meta, answers and tool results are no title", []schema.Payload{meta, answer, result}, ""},
		{"the first prompt's first line", []schema.Payload{meta, msg("1", "", "  Why does TestRefund flake?\nIt fails on CI."), msg("2", "1", "later")}, "Why does TestRefund flake?"},
		{"clipped", []schema.Payload{msg("1", "", long)}, projection.Clip(strings.TrimSpace(long), projection.TitleLength)},
		{"a summary record wins over a prompt", []schema.Payload{msg("1", "", "first"), other, summary, msg("2", "1", "later")}, "Refund test flake"},
	} {
		if got := title(tc.payloads...); got != tc.want {
			t.Errorf("%s: title %q, want %q", tc.name, got, tc.want)
		}
	}
}
