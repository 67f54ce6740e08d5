package web_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/web"
)

// fireRow is a fire's row of an agent page, as the tests read it.
type fireRow struct {
	ID         string   `json:"id"`
	Kind       string   `json:"kind"`
	Steps      []string `json:"steps"`
	InProgress bool     `json:"in_progress"`
	Hooks      []struct {
		Event   string             `json:"event"`
		Hooks   []jsonview.Outcome `json:"hooks"`
		Running []string           `json:"running"`
		Status  []string           `json:"status"`
	} `json:"hooks"`
	Fire *struct {
		Event    string          `json:"event"`
		Value    string          `json:"value"`
		Fields   json.RawMessage `json:"fields"`
		Ran      bool            `json:"ran"`
		Blocked  bool            `json:"blocked"`
		Reason   string          `json:"reason"`
		Specific json.RawMessage `json:"specific"`
		Env      string          `json:"env"`
	} `json:"fire"`
	Tool *struct {
		Name string `json:"name"`
	} `json:"tool"`
}

// An agent's fires, run with real command hooks, are rows of its
// timeline beside its restores: the event, the fire id, what the matchers
// selected on and the input, each hook and how it ended, and what they
// decided together, a block, context, the env file; the events page
// shows their steps as any other, and the audit page counts them.
func TestAgentPageShowsEachFireAsARow(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	hooks, err := hookexec.LoadSettings(testkit.WriteFile(t, filepath.Join(dir, "settings.json"), `{"hooks": {
		"Notification": [{"matcher": "idle_prompt", "hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"Notification\", \"additionalContext\": \"the user is away\"}}'"}]}],
		"TaskCreated": [{"hooks": [{"type": "command", "command": "echo 'no tasks today' >&2; exit 2"}]}],
		"Setup": [{"hooks": [{"type": "command", "command": "echo 'export PATH_ADDED=1' >> \"$CLAUDE_ENV_FILE\""}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Hooks().AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "s1", dir, "hello")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		event      schema.HookEvent
		id, fields string
	}{
		{schema.HookNotification, "n1", `{"message": "waiting for you", "notification_type": "idle_prompt"}`},
		{schema.HookNotification, "n2", `{"message": "signed in", "notification_type": "auth_success"}`},
		{schema.HookTaskCreated, "task-1", `{"task_id": "1", "task_subject": "ship"}`},
		{schema.HookSetup, "setup-1", `{"trigger": "init"}`},
	} {
		if _, err := a.Fire(ctx, f.event, f.id, json.RawMessage(f.fields)); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(web.New(e, web.Options{Logger: testkit.Discard, AuditWait: time.Minute}))
	t.Cleanup(srv.Close)
	s := &served{srv: srv}

	var page struct {
		Runs []fireRow `json:"runs"`
	}
	s.api(t, "/agents/ide", &page)
	if len(page.Runs) != 5 || page.Runs[0].Kind != "restore" {
		t.Fatalf("runs %+v; want the startup and four fires", page.Runs)
	}
	n1, n2, task, setup := page.Runs[1], page.Runs[2], page.Runs[3], page.Runs[4]
	for _, r := range page.Runs[1:] {
		if r.Kind != "fire" || r.Fire == nil || !r.Fire.Ran || r.InProgress || r.Tool != nil {
			t.Fatalf("run %s: %+v; want a fire's row, done", r.ID, r)
		}
	}
	if n1.ID != "n1" || n1.Fire.Event != "Notification" || n1.Fire.Value != "idle_prompt" ||
		string(n1.Fire.Fields) != `{"message":"waiting for you","notification_type":"idle_prompt"}` ||
		!slices.Equal(n1.Steps, []string{"HookEventStarted", "HookEventRan"}) ||
		len(n1.Hooks) != 1 || len(n1.Hooks[0].Hooks) != 1 || n1.Hooks[0].Hooks[0].Status != "ok" {
		t.Errorf("n1: %+v, fire %+v", n1, n1.Fire)
	}
	if n2.ID != "n2" || !slices.Equal(n2.Steps, []string{"HookEventRan"}) || len(n2.Hooks) != 1 || len(n2.Hooks[0].Hooks) != 0 {
		t.Errorf("n2, which no hook matched: %+v", n2)
	}
	if task.ID != "task-1" || !task.Fire.Blocked || task.Fire.Reason != "no tasks today" {
		t.Errorf("task-1: %+v", task.Fire)
	}
	if setup.ID != "setup-1" || setup.Fire.Env != "export PATH_ADDED=1\n" {
		t.Errorf("setup-1: %+v", setup.Fire)
	}

	body := s.page(t, "/agents/ide")
	row := func(id string) string {
		i := strings.Index(body, `id="fire-`+id+`"`)
		if i < 0 {
			t.Fatalf("no row for fire %s:\n%s", id, body)
		}
		r, _, _ := strings.Cut(body[i:], "</li>")
		return r
	}
	contains(t, "n1's row", row("n1"), `<span class="kind">fire Notification</span>`, "fire n1", "<dd>idle_prompt</dd>",
		`&#34;notification_type&#34;: &#34;idle_prompt&#34;`, `<span class="hook ok">ok</span> echo`, "the user is away",
		`>Notification hooks</span>`, `>Notification ran</span>`)
	contains(t, "n2's row", row("n2"), "no hook ran", `>Notification, no hook matched</span>`)
	contains(t, "task-1's row", row("task-1"), `<span class="badge block">blocked</span>`, "<dt>blocked by its hooks</dt><dd>no tasks today</dd>",
		`>TaskCreated blocked</span>`)
	contains(t, "setup-1's row", row("setup-1"), "<dt>CLAUDE_ENV_FILE</dt><dd><pre>export PATH_ADDED=1\n</pre>")

	// The events page shows a fire's steps as it shows any event: the
	// input as JSON, the hooks' answers.
	var events struct {
		Events []jsonview.Event `json:"events"`
	}
	s.api(t, "/events?stream=agent/ide&type=HookEventRan", &events)
	if len(events.Events) != 4 {
		t.Fatalf("%d HookEventRan events, want 4", len(events.Events))
	}
	if p := events.Events[0].Payload; p["id"] != "n1" || p["context"] != "the user is away" {
		t.Errorf("n1's outcome on the events page: %v", p)
	}
	if fields, _ := json.Marshal(events.Events[1].Payload["fields"]); string(fields) != `{"message":"signed in","notification_type":"auth_success"}` {
		t.Errorf("n2's input on the events page: %s", fields)
	}

	contains(t, "audit page", s.page(t, "/audit"), "fires: Notification 2, Setup 1, TaskCreated 1 (1 blocked)</p>")
	var rep jsonview.Audit
	s.api(t, "/audit", &rep)
	if len(rep.Fires) != 3 || rep.Fires[0].Event != "Notification" || rep.Fires[0].Fired != 2 || rep.Fires[0].Hooks["ok"] != 1 {
		t.Errorf("audit fires: %+v", rep.Fires)
	}
}

// A fire whose hooks may be running is in progress, its hooks shown
// running with their status messages, and the audit page links its row;
// its id, a tool call's too as PermissionDenied's is, makes a row of its
// own beside the call's. A fire whose context reached the model links the
// message that took it.
func TestFireWhoseHooksMayBeRunningIsInProgress(t *testing.T) {
	running := agentRun{id: "toolu_1", steps: []schema.Payload{
		&schema.HookEventStarted{Event: schema.HookPermissionDenied, Session: "s1", ID: "toolu_1", Value: "Bash",
			Fields: []byte(`{"tool_name":"Bash","tool_use_id":"toolu_1","reason":"auto mode"}`), Hooks: []string{"retry.sh"}, Status: []string{"Deciding"}},
	}}
	batch := agentRun{id: "batch-toolu_1", steps: []schema.Payload{
		&schema.HookEventRan{Event: schema.HookPostToolBatch, Session: "s1", ID: "batch-toolu_1", Context: "batch seen", MessageUUID: "m-batch",
			Outcomes: []schema.HookOutcome{{Name: "batch.sh", Status: schema.HookOK, ContextLen: len("batch seen")}}},
	}}
	meta := schema.Message{UUID: "m-batch", Role: "user", IsMeta: true, Content: []schema.Block{{Type: "text", Text: "batch seen"}}}
	s := serveAgent(t, web.Options{AuditWait: time.Minute}, []schema.Message{meta}, startup("r1", "s1", "", ""),
		toolCall("toolu_1", "s1", "Bash", []byte(`{"command":"rm -rf build"}`)), batch, running)
	var page struct {
		Runs []fireRow `json:"runs"`
	}
	s.api(t, "/agents/a1", &page)
	if len(page.Runs) != 4 {
		t.Fatalf("%d runs, want the restore, the tool call and two fires: %+v", len(page.Runs), page.Runs)
	}
	call, fire := page.Runs[1], page.Runs[3]
	if call.Kind != "tool" || call.Tool == nil || call.Fire != nil || call.InProgress || len(call.Steps) != 3 {
		t.Errorf("the tool call: %+v", call)
	}
	if fire.Kind != "fire" || fire.ID != "toolu_1" || fire.Fire == nil || fire.Fire.Ran || !fire.InProgress ||
		len(fire.Hooks) != 1 || !slices.Equal(fire.Hooks[0].Running, []string{"retry.sh"}) || !slices.Equal(fire.Hooks[0].Status, []string{"Deciding"}) {
		t.Errorf("the fire: %+v", fire)
	}
	body := s.page(t, "/agents/a1")
	i := strings.Index(body, `id="fire-toolu_1"`)
	if i < 0 || !strings.Contains(body, `id="run-toolu_1"`) {
		t.Fatalf("the page lacks the fire's row or the call's:\n%s", body)
	}
	row, _, _ := strings.Cut(body[i:], "</li>")
	contains(t, "the running fire's row", row, `<span class="kind">fire PermissionDenied</span>`, `<span class="badge warn">in progress</span>`,
		`<span class="hook running">running</span> retry.sh <span class="status">Deciding</span>`, "none recorded: its hooks may be running")
	i = strings.Index(body, `id="fire-batch-toolu_1"`)
	if i < 0 {
		t.Fatalf("the page lacks the batch's row:\n%s", body)
	}
	row, _, _ = strings.Cut(body[i:], "</li>")
	contains(t, "the batch's row", row, `<span class="kind">fire PostToolBatch</span>`, "batch seen",
		`sent to the model as <a href="/sessions/s1#m-m-batch">message m-batch</a>`)
	contains(t, "audit page", s.page(t, "/audit"), `<p class="verdict ok">ok:`, `href="/agents/a1#fire-toolu_1"`, "fire toolu_1 (PermissionDenied): hooks started with no outcome recorded yet")
}
