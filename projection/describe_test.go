package projection_test

import (
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// A fire's steps are described for reprise log as a tool call's are: the
// event, the fire id and the value its matchers selected on, the hooks of
// the intent, then how each hook ended and what they decided together.
func TestDescribeFires(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    schema.Payload
		want string
	}{
		{"intent", &schema.HookEventStarted{Event: schema.HookNotification, Session: "s1", ID: "n1", Value: "permission_prompt",
			Fields: []byte(`{"message":"m"}`), Hooks: []string{"notify.sh", "log.sh"}, Status: []string{"", "Logging"}},
			`session=s1 Notification id=n1 value=permission_prompt hooks=notify.sh,log.sh status="Logging"`},
		{"intent without a matcher", &schema.HookEventStarted{Event: schema.HookTaskCreated, Session: "s1", ID: "task-1", Hooks: []string{"gate.sh"}},
			`session=s1 TaskCreated id=task-1 hooks=gate.sh`},
		{"outcome", &schema.HookEventRan{Event: schema.HookNotification, Session: "s1", ID: "n1", Value: "permission_prompt",
			Outcomes: []schema.HookOutcome{{Name: "notify.sh", Status: schema.HookOK}, {Name: "log.sh", Status: schema.HookFailed}},
			Context:  "told the model", MessageUUID: "m-1"},
			`session=s1 Notification id=n1 value=permission_prompt [notify.sh:ok log.sh:failed] context="told the model" message=m-1`},
		{"no hook matched", &schema.HookEventRan{Event: schema.HookPermissionDenied, Session: "s1", ID: "toolu_2", Value: "Bash"},
			`session=s1 PermissionDenied id=toolu_2 value=Bash []`},
		{"blocked", &schema.HookEventRan{Event: schema.HookTaskCreated, Session: "s1", ID: "task-1",
			Outcomes: []schema.HookOutcome{{Name: "gate.sh", Status: schema.HookFailed, ExitCode: 2}},
			Blocked:  true, Reason: "no tasks today", Feedback: "try tomorrow"},
			`session=s1 TaskCreated id=task-1 [gate.sh:failed] blocked reason="no tasks today" feedback="try tomorrow"`},
		{"specific and halt", &schema.HookEventRan{Event: schema.HookPermissionDenied, Session: "s1", ID: "toolu_1", Value: "Bash",
			Outcomes: []schema.HookOutcome{{Name: "retry.sh", Status: schema.HookOK}},
			Specific: []byte(`{"retry":true}`), Halt: true, StopReason: "enough"},
			`session=s1 PermissionDenied id=toolu_1 value=Bash [retry.sh:ok] specific="{\"retry\":true}" halt="enough"`},
		{"interrupted", &schema.HookEventRan{Event: schema.HookSetup, Session: "s1", ID: "setup-1", Value: "init",
			Outcomes: []schema.HookOutcome{{Name: "setup.sh", Status: schema.HookInterrupted}}, Interrupted: true},
			`session=s1 Setup id=setup-1 value=init [setup.sh:interrupted] interrupted`},
	} {
		if got := projection.Describe(tc.p); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// The host's ids and values and the hooks' text reach the line quoted or
// clipped to one line: a newline or a terminal escape in them can neither
// forge a line of reprise log nor reach the terminal.
func TestDescribeFiresForgesNoLine(t *testing.T) {
	forged := "x\n   7  2026-01-01T00:00:00Z  SessionClosed            session=s1 closed\x1b[2J"
	for _, p := range []schema.Payload{
		&schema.HookEventStarted{Event: schema.HookNotification, Session: "s1", ID: forged, Value: forged, Hooks: []string{"h"}, Status: []string{forged}},
		&schema.HookEventRan{Event: schema.HookEvent(forged), Session: "s1", ID: forged, Value: forged,
			Outcomes: []schema.HookOutcome{{Name: "h", Status: schema.HookOK}},
			Blocked:  true, Reason: forged, Feedback: forged, Context: forged, Specific: []byte(forged), Halt: true, StopReason: forged},
	} {
		got := projection.Describe(p)
		if strings.ContainsAny(got, "\n\x1b") {
			t.Errorf("%T: raw text reached the line: %q", p, got)
		}
		if !strings.Contains(got, `id="x\n   7`) || !strings.Contains(got, `value="x\n   7`) {
			t.Errorf("%T: the id and value are not quoted: %q", p, got)
		}
	}
}
