package lifecycle_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// A startup restore of session s, driven by hand on the in-memory store:
// what an Engine does with a real store and real hooks, here with the
// hooks' outcomes made up.
func ExampleDriver() {
	ctx := context.Background()
	store := eventlog.NewMemoryStore()
	created, _ := schema.NewRecord("session/s", &schema.SessionCreated{ID: "s", Cwd: "/src/app"}, 1, "")
	if _, err := store.Append(ctx, []eventlog.Expect{{Stream: "session/s"}}, []eventlog.Record{created}); err != nil {
		fmt.Println("error:", err)
		return
	}
	sessions := map[string]*lifecycle.Session{"s": {ID: "s", Cwd: "/src/app", Head: 1}}
	ids := 0
	newID := func() string { ids++; return "id" + strconv.Itoa(ids) }
	agent := projection.NewAgent("ide")
	d := lifecycle.NewDriver(agent, lifecycle.Action{Kind: lifecycle.Start, To: "s"}, newID, 8)
	for !d.Done() {
		ready, err := d.Ready(sessions, 2)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if len(ready.Records) > 0 {
			evs, err := store.Append(ctx, ready.Expect, ready.Records)
			if err != nil {
				d.AppendFailed(err)
				continue
			}
			for _, ev := range evs {
				fmt.Printf("append %s %s\n", ev.Stream, ev.Type)
				if ev.Stream == "session/s" {
					sessions["s"].Head = ev.Seq
				}
			}
			if err := d.Appended(ready, evs); err != nil {
				fmt.Println("error:", err)
				return
			}
		}
		switch eff := ready.Effect.(type) {
		case lifecycle.MatchHooks:
			fmt.Println("effect: match", eff.Event, eff.Value)
			d.Performed(lifecycle.HooksMatched{Hooks: []string{"echo ctx"}})
		case lifecycle.RunHooks:
			fmt.Println("effect: run", eff.Hooks, "on", eff.Session)
			d.Performed(lifecycle.HooksRan{Outcomes: []schema.HookOutcome{{Name: "echo ctx", Status: schema.HookOK}}, Context: "ctx"})
		}
	}
	fmt.Println("agent", agent.State, "on", agent.Current)
	// Output:
	// append agent/ide SessionLoaded
	// effect: match SessionStart startup
	// append agent/ide SessionStartHookStarted
	// effect: run [echo ctx] on s
	// append agent/ide SessionStartHookRan
	// append session/s MessageAppended
	// append agent/ide ContextInjected
	// agent active on s
}
