package schema

import (
	"reflect"
	"testing"
)

// TestRedactBlanksEveryTextOfAnOutcome fills every string field of a
// hook's outcome and checks that Redact blanks all but the ones the
// lifecycle keeps (name, source, status, decision, an async run's id), so that a text field added to
// HookOutcome cannot escape a vacuum unnoticed.
func TestRedactBlanksEveryTextOfAnOutcome(t *testing.T) {
	keep := map[string]bool{"Name": true, "Source": true, "Status": true, "Decision": true, "Async": true}
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
