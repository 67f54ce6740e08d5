package web

import (
	"context"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// LastPosition finds the last event's position with a few short reads, on
// an empty log, on logs of every length up to 70, and after a vacuum left
// gaps in the positions.
func TestLastPosition(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{AllowMissingCwd: true, Logger: testkit.Discard})
	check := func() {
		t.Helper()
		var want uint64
		if err := e.Store().ReadAll(ctx, 1, func(ev eventlog.Event) error { want = ev.Position; return nil }); err != nil {
			t.Fatal(err)
		}
		got, err := LastPosition(ctx, e.Store())
		if err != nil || got != want {
			t.Fatalf("LastPosition = %d, %v; want %d", got, err, want)
		}
	}
	check()
	for i := range 70 {
		if i%7 == 0 {
			testkit.Session(t, e, "s"+itoa(i), "/nowhere")
		} else if _, err := e.Append(ctx, "s"+itoa(i-i%7), reprise.Text("user", "hi")); err != nil {
			t.Fatal(err)
		}
		check()
	}
	if err := e.DeleteSession(ctx, "s63"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	check()
}
