package vacuum_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/vacuum"
)

// TestReadPlansTheDeletedSessionOnly checks what a plan removes and
// rewrites: the deleted session's events before its tombstone, the agent
// event that copied its text, and nothing of the session that stays;
// after the purge, a second Read finds nothing more to remove.
func TestReadPlansTheDeletedSessionOnly(t *testing.T) {
	ctx := context.Background()
	store := eventlog.NewMemoryStore()
	add := func(stream string, seq uint64, p schema.Payload) {
		t.Helper()
		rec, err := schema.NewRecord(stream, p, 1, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: seq}}, []eventlog.Record{rec}); err != nil {
			t.Fatal(err)
		}
	}
	text := func(s string) schema.Message {
		return schema.Message{UUID: s, Role: "user", Content: []schema.Block{{Type: "text", Text: s}}}
	}
	add("session/gone", 0, &schema.SessionCreated{ID: "gone"})
	add("session/gone", 1, &schema.MessageAppended{Message: text("the secret plan")})
	add("session/kept", 0, &schema.SessionCreated{ID: "kept"})
	add("session/kept", 1, &schema.MessageAppended{Message: text("hello")})
	add("agent/ide", 0, &schema.PromptHookStarted{Session: "gone", Prompt: "the secret plan", PromptID: "p"})
	add("session/gone", 2, &schema.SessionDeleted{ID: "gone"})

	plan, err := vacuum.Read(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plan.Gone, map[string]bool{"gone": true}) || !reflect.DeepEqual(plan.Report.Sessions, []string{"gone"}) {
		t.Fatalf("plan gone %v, report %+v; want session gone alone", plan.Gone, plan.Report)
	}
	if want := []eventlog.SeqRange{{Stream: "session/gone", First: 1, Last: 2}}; !reflect.DeepEqual(plan.Purge.Remove, want) {
		t.Errorf("removes %+v, want %+v", plan.Purge.Remove, want)
	}
	if len(plan.Purge.Rewrite) != 1 || plan.Purge.Rewrite[0].Stream != "agent/ide" || plan.Report.Rewritten != 1 {
		t.Errorf("rewrites %+v; want the agent's prompt", plan.Purge.Rewrite)
	}
	if want := []schema.PositionRange{{First: 1, Last: 2}}; !reflect.DeepEqual(plan.Record.Positions, want) {
		t.Errorf("positions %+v, want %+v", plan.Record.Positions, want)
	}
	rec, err := schema.NewRecord(schema.VacuumStream, plan.Record, 2, "")
	if err != nil {
		t.Fatal(err)
	}
	plan.Purge.Records = []eventlog.Record{rec}
	if _, err := store.Purge(ctx, plan.Purge); err != nil {
		t.Fatal(err)
	}
	again, err := vacuum.Read(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Purge.Remove) != 0 || len(again.Purge.Rewrite) != 0 || !again.Gone["gone"] {
		t.Errorf("after the purge: %+v; want nothing left to remove", again.Purge)
	}
}
