package schema

import (
	"reflect"
	"testing"
)

// TestRedactBlanksEveryTextOfAnOutcome fills every string field of a
// hook's outcome and checks that Redact blanks all but the ones the
// lifecycle keeps (name, source, status, decision, the hook's type, an async run's id), so that a text field added to
// HookOutcome cannot escape a vacuum unnoticed.
func TestRedactBlanksEveryTextOfAnOutcome(t *testing.T) {
	keep := map[string]bool{"Name": true, "Source": true, "Status": true, "Decision": true, "Type": true, "Async": true}
	var o HookOutcome
	v := reflect.ValueOf(&o).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			f.SetString("secret " + v.Type().Field(i).Name)
		case reflect.Slice: // []byte and []string: JSON and lists of text
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		}
	}
	p := &ToolHookRan{Session: "a", Outcomes: []HookOutcome{o}}
	if !Redact(p, func(s string) bool { return s == "a" }) {
		t.Fatal("Redact changed nothing")
	}
	got := reflect.ValueOf(p.Outcomes[0])
	for i := range got.NumField() {
		name := got.Type().Field(i).Name
		if f := got.Field(i); f.Kind() == reflect.String && !keep[name] && f.String() != "" {
			t.Errorf("HookOutcome.%s survives the redaction: %q", name, f.String())
		}
		if f := got.Field(i); f.Kind() == reflect.Slice && !f.IsNil() {
			t.Errorf("HookOutcome.%s survives the redaction", name)
		}
	}
}

// The text fields this build added to agent-stream payloads go with a
// deleted session: an async hook's context and outcome, a Stop's
// feedback, a compaction's hook instructions and the summary a host made.
func TestRedactBlanksTheNewerTexts(t *testing.T) {
	gone := func(s string) bool { return s == "a" }
	async := &AsyncHookEnded{Session: "a", Event: HookUserPromptSubmit, Context: "secret context",
		Outcome: HookOutcome{Name: "h", Status: HookOK, Async: "r1", Stderr: "secret stderr", Specific: []byte(`{"x":1}`)}}
	stop := &StopHookRan{Session: "a", Context: "secret feedback"}
	compact := &PreCompactHookRan{Session: "a", Instructions: "secret instructions", Summary: "secret summary"}
	for _, p := range []Payload{async, stop, compact} {
		if !Redact(p, gone) {
			t.Errorf("Redact changed nothing in %T", p)
		}
	}
	if async.Context != "" || async.Outcome.Stderr != "" || async.Outcome.Specific != nil ||
		async.Outcome.Name != "h" || async.Outcome.Async != "r1" || async.Outcome.Status != HookOK {
		t.Errorf("async end after Redact: %+v", async)
	}
	if stop.Context != "" || compact.Instructions != "" || compact.Summary != "" {
		t.Errorf("after Redact: stop %+v, compaction %+v", stop, compact)
	}
	kept := &AsyncHookEnded{Session: "b", Context: "kept"}
	if Redact(kept, gone) || kept.Context != "kept" {
		t.Errorf("another session's async end was redacted: %+v", kept)
	}
}
