package vacuum_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/vacuum"
)

// TestRunPurgesRemovesFilesAndForgets checks a run over a deleted session:
// its files are removed and counted, the purge is written with its record,
// the caller is told what went, and a second run finds nothing to do.
func TestRunPurgesRemovesFilesAndForgets(t *testing.T) {
	ctx := context.Background()
	store := eventlog.NewMemoryStore()
	for i, p := range []schema.Payload{&schema.SessionCreated{ID: "gone"},
		&schema.MessageAppended{Message: schema.Message{UUID: "m1", Role: "user"}}, &schema.SessionDeleted{ID: "gone"}} {
		rec, err := schema.NewRecord("session/gone", p, 1, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Append(ctx, []eventlog.Expect{{Stream: "session/gone", Seq: uint64(i)}}, []eventlog.Record{rec}); err != nil {
			t.Fatal(err)
		}
	}
	var removed, forgotten []string
	env := vacuum.Env{
		Now:         func() int64 { return 2 },
		RemoveFiles: func(id string) (int, error) { removed = append(removed, id); return 3, nil },
		Forget: func(_ context.Context, gone map[string]bool) {
			for id := range gone {
				forgotten = append(forgotten, id)
			}
		},
	}
	rep, err := vacuum.Run(ctx, store, env)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Events != 2 || rep.Files != 3 || len(removed) != 1 || len(forgotten) != 1 || forgotten[0] != "gone" {
		t.Fatalf("report %+v, removed %v, forgotten %v", rep, removed, forgotten)
	}
	if head, _ := store.Head(ctx, schema.VacuumStream); head != 1 {
		t.Fatalf("%s head %d, want the one Vacuumed record", schema.VacuumStream, head)
	}
	env.RemoveFiles = func(string) (int, error) { return 0, nil }
	forgotten = nil
	if rep, err := vacuum.Run(ctx, store, env); err != nil || rep.Events != 0 || forgotten != nil {
		t.Fatalf("a second run: %+v, %v, forgotten %v", rep, err, forgotten)
	}
}

// TestRunNeedsAPurger checks that a store that cannot remove events is
// ErrNoVacuum.
func TestRunNeedsAPurger(t *testing.T) {
	store := struct{ eventlog.Store }{eventlog.NewMemoryStore()}
	if _, err := vacuum.Run(context.Background(), store, vacuum.Env{}); !errors.Is(err, vacuum.ErrNoVacuum) {
		t.Fatalf("Run = %v, want ErrNoVacuum", err)
	}
}
