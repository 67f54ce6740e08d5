package audit_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/audit"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/schema"
)

// fireSettings are command hooks for the fires of these tests: a
// Notification hook that answers with context, a TaskCreated hook that
// blocks with exit 2, a Setup hook that fails, a PreToolUse hook, and a
// PostToolBatch hook whose context reaches the model.
const fireSettings = `{"hooks": {
	"Notification": [{"hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"Notification\", \"additionalContext\": \"told\"}}'"}]}],
	"TaskCreated": [{"hooks": [{"type": "command", "command": "echo 'no tasks today' >&2; exit 2"}]}],
	"Setup": [{"hooks": [{"type": "command", "command": "exit 1"}]}],
	"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}],
	"PostToolBatch": [{"hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolBatch\", \"additionalContext\": \"batch seen\"}}'"}]}]}}`

// fired runs, on agent ide of a new store with session s current, two
// Notification fires, a TaskCreated one its hook blocks, a Setup one
// whose hook fails, and then more, and returns the events of the log.
func fired(t *testing.T, more func(context.Context, *reprise.Engine, *reprise.Agent)) []eventlog.Event {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	e := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	hooks, err := hookexec.LoadSettings(testkit.WriteFile(t, filepath.Join(dir, "settings.json"), fireSettings))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Hooks().AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "s", dir, "hello")
	testkit.Session(t, e, "t", dir, "hello")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		event  schema.HookEvent
		id     string
		fields string
	}{
		{schema.HookNotification, "n1", `{"message": "waiting"}`},
		{schema.HookNotification, "n2", `{"message": "still waiting"}`},
		{schema.HookTaskCreated, "task-1", `{"task_id": "1", "task_subject": "ship"}`},
		{schema.HookSetup, "setup-1", `{"trigger": "init"}`},
	} {
		if _, err := a.Fire(ctx, f.event, f.id, json.RawMessage(f.fields)); err != nil {
			t.Fatal(err)
		}
	}
	if more != nil {
		more(ctx, e, a)
	}
	return testkit.Events(t, e.Store())
}

// check audits the bbolt store at path.
func check(t *testing.T, path string) *audit.Report {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := audit.Check(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// without returns evs less the n-th (from 1) event of type typ, each
// stream renumbered as a writer that appended the rest would have.
func without(t *testing.T, evs []eventlog.Event, typ eventlog.Type, n int) []eventlog.Event {
	t.Helper()
	i := index(t, evs, typ, n)
	return renumber(append(append([]eventlog.Event(nil), evs[:i]...), evs[i+1:]...))
}

// index returns the index of the n-th (from 1) event of type typ in evs.
func index(t *testing.T, evs []eventlog.Event, typ eventlog.Type, n int) int {
	t.Helper()
	seen := 0
	for i, ev := range evs {
		if ev.Type == typ {
			if seen++; seen == n {
				return i
			}
		}
	}
	t.Fatalf("no %s number %d", typ, n)
	return 0
}

// renumber gives evs consecutive sequences in each stream.
func renumber(evs []eventlog.Event) []eventlog.Event {
	seqs := map[string]uint64{}
	out := make([]eventlog.Event, len(evs))
	for i, ev := range evs {
		seqs[ev.Stream]++
		ev.Seq = seqs[ev.Stream]
		out[i] = ev
	}
	return out
}

// The audit counts the fires the log records by event, with how they
// ended and how their hooks did, and their hooks among every hook run.
func TestAuditCountsFiresByEvent(t *testing.T) {
	rep := check(t, testkit.WriteStore(t, fired(t, nil)))
	if len(rep.Violations) != 0 || len(rep.InProgress) != 0 {
		t.Fatalf("violations %v, in progress %v", rep.Violations, rep.InProgress)
	}
	want := []audit.FireCount{
		{Event: schema.HookNotification, Fired: 2, Hooks: map[string]int{schema.HookOK: 2}},
		{Event: schema.HookSetup, Fired: 1, Hooks: map[string]int{schema.HookFailed: 1}},
		{Event: schema.HookTaskCreated, Fired: 1, Blocked: 1, Hooks: map[string]int{schema.HookOK: 1}},
	}
	if !reflect.DeepEqual(rep.Fires, want) {
		t.Fatalf("fires = %+v\nwant %+v", rep.Fires, want)
	}
	// The startup's SessionStart run has no hooks: the four fires' hooks
	// are every run; Setup's failed, TaskCreated's blocked with exit 2.
	if rep.HooksRun != 4 || rep.HooksFailed != 1 || rep.HooksInterrupted != 0 {
		t.Fatalf("hooks: %d run, %d failed, %d interrupted", rep.HooksRun, rep.HooksFailed, rep.HooksInterrupted)
	}
}

// A log that ends with a fire's hooks started and no outcome, as a process
// killed while they run leaves it, has the fire in progress, as it has a
// tool call whose hooks started; once the next process loads the agent
// and closes them as interrupted, the audit counts the fire as such.
func TestAuditReportsAFireCutByACrashAsInProgress(t *testing.T) {
	evs := fired(t, nil)
	cut := index(t, evs, schema.TypeHookEventRan, 2) // n2's outcome
	path := testkit.WriteStore(t, evs[:cut])
	rep := check(t, path)
	if len(rep.Violations) != 0 || len(rep.InProgress) != 1 {
		t.Fatalf("violations %v, in progress %v", rep.Violations, rep.InProgress)
	}
	p := rep.InProgress[0]
	if p.Agent != "ide" || p.Stream != "agent/ide" || p.Seq != evs[cut-1].Seq || p.ID != "n2" || p.Lane != "fire" || p.State != "fire-hooks" ||
		p.Detail != "fire n2 (Notification): hooks started with no outcome recorded yet" {
		t.Fatalf("in progress: %+v", p)
	}

	e := testkit.OpenEngine(t, path, reprise.Options{Logger: testkit.Discard})
	testkit.Agent(t, e, "ide") // closes the orphan as interrupted
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	rep = check(t, path)
	if len(rep.Violations) != 0 || len(rep.InProgress) != 0 {
		t.Fatalf("after the next load: violations %v, in progress %v", rep.Violations, rep.InProgress)
	}
	want := audit.FireCount{Event: schema.HookNotification, Fired: 2, Interrupted: 1, Hooks: map[string]int{schema.HookOK: 1, schema.HookInterrupted: 1}}
	if len(rep.Fires) != 1 || !reflect.DeepEqual(rep.Fires[0], want) || rep.HooksInterrupted != 1 {
		t.Fatalf("fires after the next load: %+v, %d hooks interrupted", rep.Fires, rep.HooksInterrupted)
	}
}

// A tool call whose hooks started with no outcome is in progress too, and
// named so that a tool name with a newline forges no line of the report.
func TestAuditReportsAToolCallsOpenHooksAsInProgress(t *testing.T) {
	evs := fired(t, func(ctx context.Context, e *reprise.Engine, a *reprise.Agent) {
		if _, err := e.Append(ctx, "s", reprise.Message{Role: "assistant", Content: []reprise.Block{reprise.ToolUseBlock("toolu_1", "Bash", json.RawMessage(`{"command":"ls"}`))}}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_1", Name: "Bash", Permission: hookexec.Allow}); err != nil {
			t.Fatal(err)
		}
	})
	cut := index(t, evs, schema.TypeToolHookRan, 1)
	rep := check(t, testkit.WriteStore(t, evs[:cut]))
	if len(rep.Violations) != 0 || len(rep.InProgress) != 1 {
		t.Fatalf("violations %v, in progress %v", rep.Violations, rep.InProgress)
	}
	if p := rep.InProgress[0]; p.ID != "toolu_1" || p.Lane != "tool" || p.Seq != evs[cut-1].Seq ||
		!strings.HasPrefix(p.Detail, "tool call toolu_1 (Bash): hooks started in state ") {
		t.Fatalf("in progress: %+v", p)
	}
}

// A fire's hooks run once: an outcome recorded twice, or an intent after
// the outcome, is a double hook run at the second step; a lifecycle step
// after an intent without outcome is an unresolved intent. Each is a
// violation, never in progress.
func TestAuditFindsAFireLaneOutOfItsRules(t *testing.T) {
	evs := fired(t, func(ctx context.Context, _ *reprise.Engine, a *reprise.Agent) {
		if _, err := a.Restore(ctx, "t"); err != nil {
			t.Fatal(err)
		}
	})
	twice := func(typ eventlog.Type, n int) []eventlog.Event {
		i := index(t, evs, typ, n)
		return renumber(append(append(append([]eventlog.Event(nil), evs[:i+1]...), evs[i]), evs[i+1:]...))
	}
	intent := evs[index(t, evs, schema.TypeHookEventStarted, 1)]
	after := func() []eventlog.Event {
		// n1's intent again, right after n2's outcome.
		i := index(t, evs, schema.TypeHookEventRan, 2)
		return renumber(append(append(append([]eventlog.Event(nil), evs[:i+1]...), intent), evs[i+1:]...))
	}
	for _, tc := range []struct {
		name   string
		log    []eventlog.Event
		kind   string
		seq    func([]eventlog.Event) uint64
		detail string
	}{
		{"outcome twice", twice(schema.TypeHookEventRan, 1), audit.DoubleHookRun,
			func(l []eventlog.Event) uint64 { return l[index(t, l, schema.TypeHookEventRan, 2)].Seq }, "HookEventRan of fire n1, in state done"},
		{"intent twice", twice(schema.TypeHookEventStarted, 1), audit.DoubleHookRun,
			func(l []eventlog.Event) uint64 { return l[index(t, l, schema.TypeHookEventStarted, 2)].Seq }, "HookEventStarted of fire n1, in state fire-hooks"},
		{"intent after the outcome", after(), audit.DoubleHookRun,
			func(l []eventlog.Event) uint64 { return l[index(t, l, schema.TypeHookEventStarted, 3)].Seq }, "HookEventStarted of fire n1, in state done"},
		{"lifecycle step after an open intent", without(t, evs, schema.TypeHookEventRan, 4), audit.Unresolved,
			func(l []eventlog.Event) uint64 { return l[index(t, l, schema.TypeSaveAttempted, 1)].Seq }, "fire setup-1 (Setup) left with hooks started"},
	} {
		rep := check(t, testkit.WriteStore(t, tc.log))
		if len(rep.Violations) != 1 || len(rep.InProgress) != 0 {
			t.Fatalf("%s: violations %v, in progress %v", tc.name, rep.Violations, rep.InProgress)
		}
		v := rep.Violations[0]
		if v.Kind != tc.kind || v.Stream != "agent/ide" || v.Seq != tc.seq(tc.log) || !strings.Contains(v.Detail, tc.detail) {
			t.Errorf("%s: %v; want %s at agent/ide#%d saying %q", tc.name, v, tc.kind, tc.seq(tc.log), tc.detail)
		}
	}
}

// A fire whose context reached the model names the meta message it
// appended to the session: the audit checks the session holds it, as it
// checks a restore's.
func TestAuditFindsAFiresInjectedMessageMissing(t *testing.T) {
	evs := fired(t, func(ctx context.Context, e *reprise.Engine, a *reprise.Agent) {
		if _, err := e.Append(ctx, "s", reprise.Message{Role: "assistant", Content: []reprise.Block{reprise.ToolUseBlock("toolu_1", "Bash", json.RawMessage(`{"command":"ls"}`))}}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_1", Name: "Bash", Permission: hookexec.Allow}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_1", Output: json.RawMessage(`{"stdout":""}`)}); err != nil {
			t.Fatal(err)
		}
	})
	rep := check(t, testkit.WriteStore(t, evs))
	if len(rep.Violations) != 0 || len(rep.Fires) != 4 || rep.Fires[1].Event != schema.HookPostToolBatch || rep.Fires[1].Fired != 1 {
		t.Fatalf("violations %v, fires %+v; want a clean log with a PostToolBatch", rep.Violations, rep.Fires)
	}
	// The batch's meta message is the session's last.
	last := -1
	for i, ev := range evs {
		if ev.Stream == "session/s" && ev.Type == schema.TypeMessageAppended {
			last = i
		}
	}
	broken := renumber(append(append([]eventlog.Event(nil), evs[:last]...), evs[last+1:]...))
	rep = check(t, testkit.WriteStore(t, broken))
	if len(rep.Violations) != 1 || rep.Violations[0].Kind != audit.MissingInjected ||
		!strings.HasPrefix(rep.Violations[0].Detail, "fire batch-toolu_1 injected message ") {
		t.Fatalf("violations %v; want the batch's message missing", rep.Violations)
	}
}
