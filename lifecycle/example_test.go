package lifecycle_test

import (
	"fmt"
	"strconv"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
)

// A startup restore of session s, driven by hand: what an Engine does with
// a real store and real hooks, here with the outcomes made up.
func ExampleStep() {
	agent := projection.NewAgent("ide")
	sessions := map[string]*lifecycle.Session{"s": {ID: "s", Head: 1}}
	ids := 0
	in := lifecycle.Input{
		Agent: agent, Action: lifecycle.Action{Kind: lifecycle.Start, To: "s"}, Sessions: sessions,
		Now: 1, NewID: func() string { ids++; return "id" + strconv.Itoa(ids) },
	}
	hook := hookexec.Hook{Event: hookexec.SessionStart, Name: "echo ctx", Body: hookexec.Command{Line: "echo ctx"}}
	head := map[string]uint64{"agent/ide": 0, "session/s": 1}
	for {
		ready, err := lifecycle.Step(in)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		for i, rec := range ready.Records {
			head[rec.Stream]++
			ev := eventlog.Event{Stream: rec.Stream, Seq: head[rec.Stream], Type: rec.Type, Time: rec.Time, RestoreID: rec.RestoreID}
			if rec.Stream == "agent/ide" {
				if err := agent.ApplyDecoded(ev, ready.Payloads[i]); err != nil {
					fmt.Println("error:", err)
					return
				}
			}
			fmt.Printf("append %s %s\n", rec.Stream, rec.Type)
		}
		in.Outcome = nil
		switch eff := ready.Effect.(type) {
		case nil:
			if agent.State == "active" {
				return
			}
		case lifecycle.MatchHooks:
			fmt.Println("effect: match", eff.Event, eff.Value)
			in.Outcome = lifecycle.HooksMatched{Hooks: []hookexec.Hook{hook}}
		case lifecycle.RunHooks:
			fmt.Println("effect: run", eff.Event, "on", eff.Session)
			in.Outcome = lifecycle.HooksRan{Context: "ctx"}
		}
	}
	// Output:
	// append agent/ide SessionLoaded
	// effect: match SessionStart startup
	// append agent/ide SessionStartHookStarted
	// effect: run SessionStart on s
	// append agent/ide SessionStartHookRan
	// append session/s MessageAppended
	// append agent/ide ContextInjected
}
