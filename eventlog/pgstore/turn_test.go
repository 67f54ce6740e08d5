package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/turn"
)

// TestTwoProcessesCannotBothFinishATurn leaves a turn cut off after the
// model's answer, as a dead host leaves it, then has two Engines on their
// own connections (two processes, as PostgreSQL sees them) resume it at
// once: while the first runs the call, the second gets ErrAgentBusy, and
// the call runs once.
func TestTwoProcessesCannotBothFinishATurn(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	dead := reprise.New(db.open(t, pgstore.Options{}), reprise.Options{Logger: testkit.Discard})
	if _, err := dead.CreateSession(ctx, "s", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	agent, err := dead.Agent(ctx, "ide")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Prompt(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	use, _ := json.Marshal(map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]string{}})
	if _, err := dead.Append(ctx, "s", reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "tool_use", Raw: use}}}); err != nil {
		t.Fatal(err)
	}

	runs := 0
	entered, leave := make(chan struct{}), make(chan struct{})
	runner := func() *turn.Runner {
		e := reprise.New(db.open(t, pgstore.Options{}), reprise.Options{Logger: testkit.Discard})
		a, err := e.Agent(ctx, "ide")
		if err != nil {
			t.Fatal(err)
		}
		return &turn.Runner{Engine: e, Agent: a,
			Model: func(context.Context, []reprise.Message) (reprise.Message, error) {
				return reprise.Text("assistant", "done"), nil
			},
			Tools: map[string]turn.Tool{"Bash": {Run: func(ctx context.Context, c turn.Call) (reprise.ToolResult, error) {
				runs++
				close(entered)
				<-leave
				return reprise.ToolResult{Output: json.RawMessage(`"ok"`)}, nil
			}}},
			Permission: func(turn.Call) string { return reprise.ToolAllow }}
	}
	first, second := runner(), runner()
	done := make(chan error, 1)
	go func() {
		_, err := first.Resume(ctx)
		done <- err
	}()
	<-entered
	if _, err := second.Resume(ctx); !errors.Is(err, reprise.ErrAgentBusy) {
		t.Errorf("the second process: %v, want ErrAgentBusy", err)
	}
	close(leave)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out, err := second.Resume(ctx)
	if err != nil || out.Resumed || runs != 1 {
		t.Errorf("after the first finished: %+v, %v; the call ran %d times; want nothing left and 1 run", out, err, runs)
	}
}
