package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/hookexec"
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
	dead := reprise.New(db.open(t, pgstore.Options{}), reprise.Options{Logger: testkit.Discard, TranscriptDir: t.TempDir()})
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
		e := reprise.New(db.open(t, pgstore.Options{}), reprise.Options{Logger: testkit.Discard, TranscriptDir: t.TempDir()})
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
			Permission: func(turn.Call) string { return hookexec.Allow }}
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

// TestAHostWhoseTurnLockIsLostStops ends the database session of a host's
// turn lock while its tool runs, as pg_terminate_backend does: the host is
// told through its context at once, and stops before it writes another
// step, so that the host that takes the turn next is the only one asking
// the model; the conversation has one answer after the tool's result, not
// two in a row.
func TestAHostWhoseTurnLockIsLostStops(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	dir := t.TempDir()
	ctx := context.Background()
	setup := newEngine(t, db.open(t, pgstore.Options{}), dir)
	testkit.Session(t, setup, "s", dir)
	if _, err := testkit.Agent(t, setup, agentID).Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}

	use, _ := json.Marshal(map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]string{"command": "sleep 2"}})
	asked := map[string]int{}
	entered, noticed, leave := make(chan struct{}), make(chan error, 1), make(chan struct{})
	runner := func(name string, store *pgstore.Store) *turn.Runner {
		e := newEngine(t, store, dir)
		return &turn.Runner{Engine: e, Agent: testkit.Agent(t, e, agentID),
			Model: func(ctx context.Context, conv []reprise.Message) (reprise.Message, error) {
				asked[name]++
				if conv[len(conv)-1].Role == "user" && len(conv) == 1 {
					return reprise.Message{Role: "assistant", Content: []reprise.Block{{Type: "tool_use", Raw: use}}}, nil
				}
				return reprise.Text("assistant", "done"), nil
			},
			Tools: map[string]turn.Tool{"Bash": {Run: func(ctx context.Context, c turn.Call) (reprise.ToolResult, error) {
				close(entered)
				select {
				case <-ctx.Done():
					noticed <- context.Cause(ctx)
				case <-time.After(20 * time.Second):
					noticed <- errors.New("not told")
				}
				<-leave // a tool that goes on regardless
				return reprise.ToolResult{Output: json.RawMessage(`"slept"`)}, nil
			}}},
			Permission: func(turn.Call) string { return hookexec.Allow }}
	}
	firstStore := db.open(t, pgstore.Options{})
	first := runner("first", firstStore)
	done := make(chan error, 1)
	go func() {
		_, err := first.Run(ctx, "sleep")
		done <- err
	}()
	<-entered
	db.terminateLock(t, firstStore, "turn/"+agentID)
	if cause := <-noticed; !errors.Is(cause, eventlog.ErrLockLost) {
		t.Fatalf("the first host's tool, once the turn lock was lost: %v, want ErrLockLost", cause)
	}

	second := runner("second", db.open(t, pgstore.Options{}))
	second.Tools = nil // the call is interrupted: the tool is not Repeatable, it does not run again
	out, err := second.Resume(ctx)
	if err != nil || !out.Resumed {
		t.Fatalf("the second host: %+v, %v", out, err)
	}
	close(leave)
	if err := <-done; !errors.Is(err, eventlog.ErrLockLost) {
		t.Errorf("the first host: %v, want ErrLockLost", err)
	}
	if asked["first"] != 1 || asked["second"] != 1 {
		t.Errorf("model requests: %v, want one from each host", asked)
	}
	conv, err := newEngine(t, db.open(t, pgstore.Options{}), dir).Conversation(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range conv {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, " "); got != "user assistant user assistant" {
		t.Errorf("the conversation: %s, want the prompt, the call, its result and one answer", got)
	}
}
