package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/web"
	"github.com/reprise-dev/reprise/web/internal/fixture"
)

// agentRun is one run of an agent: its restore id and its steps.
type agentRun struct {
	id    string
	steps []schema.Payload
}

// writeAgent appends, straight to the bbolt file at path, agent id's
// stream of runs.
func writeAgent(tb testing.TB, path, id string, runs ...agentRun) {
	tb.Helper()
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	stream := projection.AgentStream(id)
	stamp := time.Now().Add(-time.Hour).UnixNano()
	var recs []eventlog.Record
	for _, r := range runs {
		for _, p := range r.steps {
			stamp += 1000
			rec, err := schema.NewRecord(stream, p, stamp, r.id)
			if err != nil {
				tb.Fatal(err)
			}
			recs = append(recs, rec)
		}
	}
	if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: stream}}, recs); err != nil {
		tb.Fatal(err)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
}

// startup is a startup restore of session that injected context as
// message uuid.
func startup(id, session, context, uuid string) agentRun {
	return agentRun{id: id, steps: []schema.Payload{
		&schema.SessionLoaded{Session: session, Source: schema.SourceStartup},
		&schema.SessionStartHookStarted{Session: session, Source: schema.SourceStartup, Hooks: []string{"context.sh"}},
		&schema.SessionStartHookRan{Session: session, Source: schema.SourceStartup, Context: context,
			Outcomes: []schema.HookOutcome{{Name: "context.sh", Status: schema.HookOK, ContextLen: len(context)}}},
		&schema.ContextInjected{Session: session, MessageUUID: uuid},
	}}
}

// prompt is a prompt's run in session, kept as message uuid.
func prompt(id, session, text, uuid string) agentRun {
	return agentRun{id: id, steps: []schema.Payload{
		&schema.PromptHookStarted{Session: session, Prompt: text, PromptID: id, Hooks: []string{"prompt.sh"}},
		&schema.PromptHookRan{Session: session, MessageUUID: uuid,
			Outcomes: []schema.HookOutcome{{Name: "prompt.sh", Status: schema.HookOK}}},
	}}
}

// serveAgent serves a store holding session s1, of msgs, and agent a1's
// runs.
func serveAgent(t *testing.T, opts web.Options, msgs []schema.Message, runs ...agentRun) *served {
	t.Helper()
	dir := t.TempDir()
	path := writeSession(t, dir, "s1", msgs...)
	writeAgent(t, path, "a1", runs...)
	e := testkit.OpenEngine(t, path, reprise.Options{AllowMissingCwd: true, TranscriptDir: filepath.Join(dir, "files"), Logger: testkit.Discard})
	opts.Logger = testkit.Discard
	srv := httptest.NewServer(web.New(e, opts))
	t.Cleanup(srv.Close)
	return &served{srv: srv}
}

// agentPage is the API's answer for an agent page, as the tests read it.
type agentPage struct {
	Restores []jsonview.Restore `json:"restores"`
	Runs     []json.RawMessage  `json:"runs"`
	Prev     string             `json:"prev_cursor"`
	Next     string             `json:"next_cursor"`
	Cut      []struct {
		Stream        string `json:"stream"`
		Seq, Position uint64
		Bytes, Shown  int
		Whole         string `json:"whole"`
	} `json:"cut"`
}

func TestLongHookTextsAreShownCutWithALinkToTheWhole(t *testing.T) {
	context, text := longText(300<<10), longText(200<<10)
	injected := schema.Message{UUID: "ctx", Role: "user", IsMeta: true, Content: []schema.Block{{Type: "text", Text: context}}}
	// A budget that holds one of the long texts at a time: the session
	// page reads the agents once it holds no long message.
	s := serveAgent(t, web.Options{Budget: web.NewBudget(400 << 10), BudgetWait: time.Second},
		[]schema.Message{injected, textMessage("m-p", "user", text)},
		startup("r1", "s1", context, "ctx"), prompt("p1", "s1", text, "m-p"))

	status, _, answer := s.get(t, "/api/agents/a1", "")
	var page agentPage
	if status != http.StatusOK || json.Unmarshal([]byte(answer), &page) != nil {
		t.Fatalf("GET /api/agents/a1 = %d %s", status, clipped([]byte(answer)))
	}
	if len(answer) > 200<<10 {
		t.Errorf("the agent's answer is %d bytes, want it near the 64 KiB shown of each long text", len(answer))
	}
	if len(page.Restores) != 1 || len(page.Restores[0].Context) > 64<<10 || !strings.HasPrefix(context, page.Restores[0].Context) {
		t.Errorf("restores = %d, the first's context %d bytes; want one, its context's start, at most 64 KiB", len(page.Restores), len(page.Restores[0].Context))
	}
	if len(page.Cut) != 2 || page.Cut[0].Stream != "agent/a1" || page.Cut[0].Seq != 3 || page.Cut[1].Seq != 5 ||
		page.Cut[0].Bytes < len(context) || page.Cut[1].Bytes < len(text) || page.Cut[0].Shown > 65<<10 || page.Cut[1].Shown > 65<<10 || // ids and names stay whole besides
		page.Cut[0].Whole != "/api/events/"+strconv.FormatUint(page.Cut[0].Position, 10) {
		t.Fatalf("cut = %+v; want agent/a1#3 (the context) and #5 (the prompt), about 64 KiB shown, whole at /api/events/POSITION", page.Cut)
	}

	body := s.page(t, "/agents/a1")
	contains(t, "agent page", body, fmt.Sprintf(`<a href="/events/%d">`, page.Cut[0].Position), fmt.Sprintf(`<a href="/events/%d">`, page.Cut[1].Position))
	if len(body) > 400<<10 {
		t.Errorf("the page is %d bytes, want it near the 64 KiB shown of each long text", len(body))
	}

	var whole struct {
		Payload struct {
			Context string `json:"context"`
		} `json:"payload"`
	}
	status, _, got := s.get(t, page.Cut[0].Whole, "")
	if status != http.StatusOK || json.Unmarshal([]byte(got), &whole) != nil || whole.Payload.Context != context {
		t.Errorf("GET %s = %d %s; want the event with the whole context", page.Cut[0].Whole, status, clipped([]byte(got)))
	}

	var session struct {
		Injected []struct {
			Message, Agent string
		} `json:"injected"`
	}
	s.api(t, "/sessions/s1", &session)
	if len(session.Injected) != 1 || session.Injected[0].Message != "ctx" || session.Injected[0].Agent != "a1" {
		t.Errorf("the session page says %+v was injected; want message ctx, by agent a1", session.Injected)
	}
}

func TestAgentPagesAreBoundedByBytes(t *testing.T) {
	runs := []agentRun{startup("r1", "s1", "", "")}
	for i := range 40 {
		// Long prompts, and long contexts, which the page shows whole up
		// to its share of a message.
		r := prompt(fmt.Sprintf("p%d", i), "s1", longText(50<<10), fmt.Sprintf("m-%d", i))
		ran := r.steps[1].(*schema.PromptHookRan)
		ran.Context = longText(50 << 10)
		ran.Outcomes[0].ContextLen = len(ran.Context)
		runs = append(runs, r)
	}
	s := serveAgent(t, web.Options{}, nil, runs...)
	seen, cursor, pages := 0, "0", 0
	for ; pages < 10; pages++ {
		path := "/agents/a1?cursor=" + cursor
		body := s.page(t, path)
		if len(body) > 1<<20+128<<10 {
			t.Errorf("page %s is %d bytes; want about 1 MiB at most", path, len(body))
		}
		var page agentPage
		s.api(t, path, &page)
		seen += len(page.Runs)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if pages < 2 || seen != len(runs) {
		t.Fatalf("%d pages list %d runs; want the %d runs on several pages", pages+1, seen, len(runs))
	}
}

// toolRun is a tool call's row of an agent page, as the tests read it.
type toolRun struct {
	ID            string   `json:"id"`
	Kind          string   `json:"kind"`
	Steps         []string `json:"steps"`
	RolledForward bool     `json:"rolled_forward"`
	InProgress    bool     `json:"in_progress"`
	Hooks         []struct {
		Event       string             `json:"event"`
		Hooks       []jsonview.Outcome `json:"hooks"`
		Interrupted bool               `json:"interrupted"`
	} `json:"hooks"`
	Tool *struct {
		Name     string          `json:"name"`
		ToolUse  string          `json:"tool_use"`
		Session  string          `json:"session"`
		Decision string          `json:"decision"`
		Reason   string          `json:"reason"`
		Input    json.RawMessage `json:"input"`
		Result   *struct {
			Message string `json:"message"`
			Failed  bool   `json:"failed"`
			Seq     uint64 `json:"seq"`
			Whole   string `json:"whole"`
		} `json:"result"`
	} `json:"tool"`
}

// hookSummary lists a row's hooks as EVENT:NAME:STATUS.
func (r toolRun) hookSummary() []string {
	var out []string
	for _, g := range r.Hooks {
		for _, o := range g.Hooks {
			out = append(out, g.Event+":"+o.Name+":"+o.Status)
		}
	}
	return out
}

func TestAgentPageShowsEachToolCallAsARow(t *testing.T) {
	s := serve(t)
	var page struct {
		Runs []toolRun `json:"runs"`
	}
	s.api(t, "/agents/"+s.Tools, &page)
	byID := map[string]toolRun{}
	for _, r := range page.Runs {
		byID[r.ID] = r
	}
	rm, read, notes, edit := byID[s.ToolCalls[0]], byID[s.ToolCalls[1]], byID[s.ToolCalls[2]], byID[s.ToolCalls[3]]
	for _, r := range []toolRun{rm, read, notes, edit} {
		if r.Kind != "tool" || r.Tool == nil || r.Tool.ToolUse != r.ID || r.Tool.Session != s.ToolsWork {
			t.Fatalf("run %s: kind %q, tool %+v; want a tool row naming its tool_use id and session %s", r.ID, r.Kind, r.Tool, s.ToolsWork)
		}
	}

	if rm.Tool.Name != "Bash" || rm.Tool.Decision != "deny" || !strings.Contains(rm.Tool.Reason, "no rm here") ||
		!slices.Equal(rm.hookSummary(), []string{"PreToolUse:guard-rm:ok"}) || rm.Tool.Result == nil || rm.RolledForward || rm.InProgress {
		t.Errorf("the denied call: %+v, hooks %v; want Bash denied by guard-rm, its error result named", rm.Tool, rm.hookSummary())
	}
	if read.Tool.Name != "Read" || read.Tool.Decision != "allow" || read.Tool.Reason != "reads are fine" ||
		string(read.Tool.Input) != `{"file_path":"go.mod"}` ||
		!slices.Equal(read.hookSummary(), []string{"PreToolUse:" + fixture.AllowReads + ":ok", "PostToolUse:lint:ok"}) ||
		!slices.Equal(read.Steps, []string{"ToolHookStarted", "ToolHookRan", "ToolDecided", "ToolResultRecorded", "ToolHookRan"}) {
		t.Errorf("the allowed call: %+v, hooks %v, steps %v", read.Tool, read.hookSummary(), read.Steps)
	}
	if lint := read.Hooks[len(read.Hooks)-1].Hooks[0]; lint.DurationMS < 20 {
		t.Errorf("the lint hook took %v ms, want its 20 ms at least", lint.DurationMS)
	}
	if notes.Tool.Decision != "allow" || !slices.Equal(notes.hookSummary(), []string{"PermissionRequest:" + fixture.ApproveNotes + ":ok"}) ||
		notes.Tool.Result == nil || !notes.Tool.Result.Failed {
		t.Errorf("the call its PermissionRequest hook allowed: %+v, hooks %v; want allowed, its result failed", notes.Tool, notes.hookSummary())
	}
	if edit.Tool.Decision != "" || !edit.RolledForward || len(edit.Hooks) != 1 || !edit.Hooks[0].Interrupted ||
		!slices.Equal(edit.hookSummary(), []string{"PreToolUse:" + fixture.AllowReads + ":interrupted"}) {
		t.Errorf("the call whose hooks were cut short: %+v, rolled forward %v, hooks %v; want undecided, rolled forward, interrupted",
			edit.Tool, edit.RolledForward, edit.hookSummary())
	}

	// The result links to the tool_result message, whole.
	res := read.Tool.Result
	if res == nil || res.Whole != fmt.Sprintf("/api/sessions/%s/messages/%d", s.ToolsWork, res.Seq) {
		t.Fatalf("the allowed call's result is %+v; want its message, whole at /api/sessions/%s/messages/SEQ", res, s.ToolsWork)
	}
	var msg struct {
		UUID    string            `json:"uuid"`
		Content []json.RawMessage `json:"content"`
	}
	s.api(t, strings.TrimPrefix(res.Whole, "/api"), &msg)
	if msg.UUID != res.Message || len(msg.Content) != 1 || !strings.Contains(string(msg.Content[0]), "module example.com/app") {
		t.Errorf("GET %s = %+v; want the tool_result %s holding the tool's output", res.Whole, msg, res.Message)
	}

	body := s.page(t, "/agents/"+s.Tools)
	contains(t, "tools timeline", body,
		`id="run-`+s.ToolCalls[0]+`"`, `<span class="kind">tool Bash</span>`, `<span class="badge deny">deny</span>`, "no rm here",
		`<span class="hook deny">deny</span> guard-rm · `, `<span class="hook ok">ok</span> lint · `,
		`>PreToolUse hooks</span>`, `>PermissionRequest hooks</span>`, `>decided allow</span>`, `>result · PostToolUse hooks</span>`,
		`<span class="badge allow">allow</span>`, "reads are fine",
		`&#34;file_path&#34;: &#34;go.mod&#34;`, // the input, shown
		fmt.Sprintf(`href="/sessions/%s/messages/%d"`, s.ToolsWork, res.Seq),
		fmt.Sprintf(`href="/sessions/%s?cursor=%d#m-%s"`, s.ToolsWork, res.Seq, res.Message),
		`<span class="hook interrupted">interrupted</span> `+html.EscapeString(fixture.AllowReads),
	)
	row := ""
	if i := strings.Index(body, `id="run-`+s.ToolCalls[3]+`"`); i >= 0 {
		row, _, _ = strings.Cut(body[i:], "</li>")
	}
	if !strings.Contains(row, `<span class="badge warn">rolled forward</span>`) {
		t.Errorf("the call whose hooks were cut short is not marked rolled forward")
	}
}

// toolCall is a tool call in session whose PreToolUse hooks ran and
// which was allowed with input.
func toolCall(id, session, tool string, input []byte) agentRun {
	return agentRun{id: id, steps: []schema.Payload{
		&schema.ToolHookStarted{Event: schema.HookPreToolUse, Session: session, ToolUseID: id, Tool: tool, Hooks: []string{"guard.sh"}},
		&schema.ToolHookRan{Event: schema.HookPreToolUse, Session: session, ToolUseID: id, Tool: tool,
			Outcomes: []schema.HookOutcome{{Name: "guard.sh", Status: schema.HookOK, Duration: int64(3 * time.Millisecond)}}},
		&schema.ToolDecided{Session: session, ToolUseID: id, Tool: tool, Input: input, Decision: "allow"},
	}}
}

func TestToolCallWhoseHooksMayBeRunningIsInProgress(t *testing.T) {
	running := agentRun{id: "toolu_run", steps: []schema.Payload{
		&schema.ToolHookStarted{Event: schema.HookPreToolUse, Session: "s1", ToolUseID: "toolu_run", Tool: "Bash", Hooks: []string{"guard.sh"}},
	}}
	s := serveAgent(t, web.Options{}, nil, startup("r1", "s1", "", ""),
		toolCall("toolu_ran", "s1", "Read", []byte(`{"file_path":"a.go"}`)), running)
	var page struct {
		Runs []toolRun `json:"runs"`
	}
	s.api(t, "/agents/a1", &page)
	if len(page.Runs) != 3 {
		t.Fatalf("%d runs, want the restore and two tool calls", len(page.Runs))
	}
	ran, run := page.Runs[1], page.Runs[2]
	if ran.Kind != "tool" || ran.InProgress || run.Kind != "tool" || !run.InProgress || run.Tool == nil || run.Tool.Decision != "" {
		t.Errorf("runs %+v and %+v; want the decided call done, the other in progress, undecided", ran, run)
	}
	body := s.page(t, "/agents/a1")
	row := ""
	if i := strings.Index(body, `id="run-toolu_run"`); i >= 0 {
		row, _, _ = strings.Cut(body[i:], "</li>")
	}
	contains(t, "the running call's row", row, `<span class="badge warn">in progress</span>`, "none: not decided",
		`<span class="hook running">running</span> guard.sh`)
	contains(t, "the page", body, "none recorded: the tool may be running, or may have run")
}

func TestAgentPagesWithToolCallsAreBoundedByBytes(t *testing.T) {
	input := func(size int) []byte {
		b, err := json.Marshal(map[string]string{"content": longText(size)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	large := input(300 << 10)
	runs := []agentRun{startup("r1", "s1", "", ""), toolCall("toolu_large", "s1", "Write", large)}
	for i := range 40 {
		runs = append(runs, toolCall(fmt.Sprintf("toolu_%d", i), "s1", "Write", input(50<<10)))
	}
	s := serveAgent(t, web.Options{}, nil, runs...)

	var first struct {
		Runs []toolRun `json:"runs"`
		Cut  []struct {
			Seq          uint64 `json:"seq"`
			Position     uint64 `json:"position"`
			Bytes, Shown int
		} `json:"cut"`
	}
	s.api(t, "/agents/a1?cursor=0&limit=2", &first)
	if len(first.Runs) != 2 || first.Runs[1].Tool == nil || len(first.Cut) != 1 || first.Cut[0].Seq != 7 ||
		first.Cut[0].Bytes < len(large) || first.Cut[0].Shown > 65<<10 {
		t.Fatalf("the first page: %d runs, cut %+v; want the large call's ToolDecided (seq 7) cut to 64 KiB", len(first.Runs), first.Cut)
	}
	var shown string
	if json.Unmarshal(first.Runs[1].Tool.Input, &shown) != nil || len(shown) > 64<<10 || !strings.HasPrefix(string(large), shown) {
		t.Errorf("the large call's input is %d bytes, %.40q; want its start, at most 64 KiB", len(first.Runs[1].Tool.Input), first.Runs[1].Tool.Input)
	}
	body := s.page(t, "/agents/a1?cursor=0&limit=2")
	contains(t, "the first page", body, fmt.Sprintf(`<a href="/events/%d">`, first.Cut[0].Position))

	seen, cursor, pages := 0, "0", 0
	for ; pages < 10; pages++ {
		path := "/agents/a1?cursor=" + cursor
		body := s.page(t, path)
		if len(body) > 1<<20+128<<10 {
			t.Errorf("page %s is %d bytes; want about 1 MiB at most", path, len(body))
		}
		var page struct {
			Runs []toolRun `json:"runs"`
			Next string    `json:"next_cursor"`
		}
		s.api(t, path, &page)
		for _, r := range page.Runs {
			if r.Tool != nil && len(r.Tool.Input) < 50<<10 {
				t.Errorf("run %s shows %d bytes of its input, want all of it", r.ID, len(r.Tool.Input))
			}
		}
		seen += len(page.Runs)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if pages < 2 || seen != len(runs) {
		t.Fatalf("%d pages list %d runs; want the %d runs on several pages", pages+1, seen, len(runs))
	}
}

// Each hook's details are its own record: its command, where it came
// from, status, exit code, duration, stderr and its own part of the run's
// context, never the run's list of hooks or the context of the others.
func TestHookDetailsAreEachHooksOwnRecord(t *testing.T) {
	const first, second = "branch main <ok>", "CI green & fast"
	run := agentRun{id: "r1", steps: []schema.Payload{
		&schema.SessionLoaded{Session: "s1", Source: schema.SourceStartup},
		&schema.SessionStartHookStarted{Session: "s1", Source: schema.SourceStartup, Hooks: []string{"./branch.sh", "./fail.sh >&2", "./ci.sh"}},
		&schema.SessionStartHookRan{Session: "s1", Source: schema.SourceStartup, Context: first + "\n" + second,
			Outcomes: []schema.HookOutcome{
				{Name: "./branch.sh", Source: "/home/me/.claude/settings.json", Status: schema.HookOK, Duration: 12e6, ContextLen: len(first)},
				{Name: "./fail.sh >&2", Source: "plugin:/opt/p", Status: schema.HookFailed, ExitCode: 3, Duration: 5e6, Error: "exit status 3", Stderr: "no token"},
				{Name: "./ci.sh", Source: "/src/.claude/settings.json", Status: schema.HookOK, Duration: 30e6, ContextLen: len(second)},
			}},
		&schema.ContextInjected{Session: "s1", MessageUUID: "ctx"},
	}}
	s := serveAgent(t, web.Options{}, nil, run)
	body := s.page(t, "/agents/a1")
	details := strings.Split(body, `<details class="bar `)[1:]
	if len(details) != 3 {
		t.Fatalf("the page has %d hook details, want 3:\n%s", len(details), body)
	}
	for i, want := range [][]string{
		{`<dt>command</dt><dd><pre>./branch.sh</pre>`, `<dt>configured in</dt><dd>/home/me/.claude/settings.json</dd>`,
			`<dt>status</dt><dd>ok</dd>`, `<dt>exit code</dt><dd>0</dd>`, `<dt>duration</dt><dd>12ms</dd>`,
			`<dt>stderr</dt><dd>none</dd>`, `<dt>its context</dt><dd><pre>branch main &lt;ok&gt;</pre>`},
		{`<dt>command</dt><dd><pre>./fail.sh &gt;&amp;2</pre>`, `<dt>configured in</dt><dd>plugin:/opt/p</dd>`,
			`<dt>status</dt><dd>failed</dd>`, `<dt>exit code</dt><dd>3</dd>`, `<pre>exit status 3</pre>`,
			`<dt>stderr</dt><dd><pre>no token</pre>`, `<dt>its context</dt><dd>none</dd>`},
		{`<dt>command</dt><dd><pre>./ci.sh</pre>`, `<dt>duration</dt><dd>30ms</dd>`, `<dt>its context</dt><dd><pre>CI green &amp; fast</pre>`},
	} {
		end := strings.Index(details[i], "</details>")
		d := details[i][:end]
		for _, w := range want {
			if !strings.Contains(d, w) {
				t.Errorf("hook %d's details lack %s:\n%s", i+1, w, d)
			}
		}
		for _, never := range []string{`\u003e`, `\u0026`, "./fail.sh &gt;&amp;2, ./ci.sh", "input"} {
			if strings.Contains(d, never) {
				t.Errorf("hook %d's details hold %q:\n%s", i+1, never, d)
			}
		}
	}
	contains(t, "agent page", body, `<p class="given">given session s1, source startup</p>`)
	if strings.Count(body, "CI green &amp; fast") != 1 {
		t.Errorf("the second hook's context is shown %d times, want once", strings.Count(body, "CI green &amp; fast"))
	}
}

// TestBlockedHookIsShownBlocked: a Stop hook that ran and said no is shown
// as block, with its reason, as the command line shows it, not as ok.
func TestBlockedHookIsShownBlocked(t *testing.T) {
	stop := agentRun{id: "st1", steps: []schema.Payload{
		&schema.StopHookStarted{Session: "s1", Hooks: []string{"check.sh"}},
		&schema.StopHookRan{Session: "s1", Blocked: true, Reason: "say which tests ran",
			Outcomes: []schema.HookOutcome{{Name: "check.sh", Status: schema.HookOK, Decision: "block", Reason: "say which tests ran"}}},
	}}
	s := serveAgent(t, web.Options{}, nil, startup("r1", "s1", "", ""), stop)
	body := s.page(t, "/agents/a1")
	for _, want := range []string{`<span class="hook block">block</span> check.sh`, `<dt>status</dt><dd>block</dd>`,
		`<dd>block: say which tests ran</dd>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the agent page lacks %s", want)
		}
	}
	if strings.Contains(body, `<span class="hook ok">ok</span> check.sh`) {
		t.Error("the blocked hook is shown as ok")
	}
}

// TestAgentsAnswerAsTheCommandLine: /api/agents lists each agent as
// `reprise agents --json` prints it, and the page shows what it is doing.
func TestAgentsAnswerAsTheCommandLine(t *testing.T) {
	s := serveAgent(t, web.Options{}, nil, startup("r1", "s1", "", ""))
	var got struct {
		Agents []jsonview.Agent `json:"agents"`
	}
	s.api(t, "/agents", &got)
	if len(got.Agents) != 1 {
		t.Fatalf("agents: %+v", got)
	}
	a := got.Agents[0]
	if a.ID != "a1" || a.State != "active" || a.Session != "s1" || a.Now != "nothing in progress" || a.Restores != 1 ||
		a.InProgress || a.LastActive == "-" {
		t.Errorf("agent %+v", a)
	}
	if body := s.page(t, "/agents"); !strings.Contains(body, "<dt>now</dt><dd>nothing in progress</dd>") {
		t.Errorf("the agents page does not say what a1 is doing:\n%s", body)
	}
}

// TestInjectedContextNamesTheKindOfRun: context a prompt's hooks added
// links to the prompt's run as a prompt, a restore's as a restore.
func TestInjectedContextNamesTheKindOfRun(t *testing.T) {
	asked := prompt("p1", "s1", "Deploy it.", "m-prompt")
	ran := asked.steps[1].(*schema.PromptHookRan)
	ran.Context, ran.ContextUUID = "the deploy checklist", "m-ctx"
	ran.Outcomes[0].ContextLen = len(ran.Context)
	msgs := []schema.Message{{UUID: "m-start", Role: "user", IsMeta: true, Content: []schema.Block{{Type: "text", Text: "the branch is main"}}},
		textMessage("m-prompt", "user", "Deploy it."),
		{UUID: "m-ctx", Role: "user", IsMeta: true, Content: []schema.Block{{Type: "text", Text: "the deploy checklist"}}}}
	s := serveAgent(t, web.Options{}, msgs, startup("r1", "s1", "the branch is main", "m-start"), asked)
	body := s.page(t, "/sessions/s1")
	contains(t, "session page", body,
		`Injected by SessionStart hooks of <a href="/agents/a1#run-r1">restore r1</a> of agent a1`,
		`Injected by UserPromptSubmit hooks of <a href="/agents/a1#run-p1">prompt p1</a> of agent a1`)
	if strings.Contains(body, "restore p1") {
		t.Error("the prompt's run is named a restore")
	}
}

func TestToolInputIsShownAsItIs(t *testing.T) {
	s := serveAgent(t, web.Options{}, nil, startup("r1", "s1", "", ""),
		toolCall("toolu_b", "s1", "Bash", []byte(`{"command":"echo done >> log.txt && cat < in.txt"}`)))
	body := s.page(t, "/agents/a1")
	contains(t, "agent page", body, `&#34;command&#34;: &#34;echo done &gt;&gt; log.txt &amp;&amp; cat &lt; in.txt&#34;`)
	if strings.Contains(body, `\u003e`) || strings.Contains(body, `\u0026`) || strings.Contains(body, `\u003c`) {
		t.Error("the agent page shows the input's > < & as JSON's HTML escapes")
	}
}

// TestHooksOfARestoreInProgressAreRunning: while a restore's SessionStart
// hooks run, its row lists them as running, not "no hook ran".
func TestHooksOfARestoreInProgressAreRunning(t *testing.T) {
	running := agentRun{id: "r2", steps: []schema.Payload{
		&schema.SessionLoaded{Session: "s1", Source: schema.SourceResume},
		&schema.SessionStartHookStarted{Session: "s1", Source: schema.SourceResume, Hooks: []string{"context.sh", "sleep 5"}},
	}}
	s := serveAgent(t, web.Options{}, nil, startup("r1", "s1", "", ""), running)
	body := s.page(t, "/agents/a1")
	row := ""
	if i := strings.Index(body, `id="run-r2"`); i >= 0 {
		row, _, _ = strings.Cut(body[i:], "</li>")
	}
	contains(t, "the running restore's row", row, `<span class="badge warn">in progress</span>`,
		`<span class="hook running">running</span> context.sh`, `<span class="hook running">running</span> sleep 5`)
	if strings.Contains(row, "no hook ran") {
		t.Error("the running restore's row says no hook ran")
	}
	var page struct {
		Runs []struct {
			ID    string `json:"id"`
			Hooks []struct {
				Event   string   `json:"event"`
				Running []string `json:"running"`
			} `json:"hooks"`
		} `json:"runs"`
	}
	s.api(t, "/agents/a1", &page)
	if n := len(page.Runs); n != 2 || len(page.Runs[1].Hooks) != 1 || !slices.Equal(page.Runs[1].Hooks[0].Running, []string{"context.sh", "sleep 5"}) {
		t.Errorf("runs %+v; want the second one's SessionStart hooks running", page.Runs)
	}
}

// A running hook's statusMessage, recorded with its intent, is shown
// beside it while it runs, escaped, and given in the page's API.
func TestRunningHooksShowTheirStatusMessage(t *testing.T) {
	running := agentRun{id: "r2", steps: []schema.Payload{
		&schema.SessionLoaded{Session: "s1", Source: schema.SourceResume},
		&schema.SessionStartHookStarted{Session: "s1", Source: schema.SourceResume, Hooks: []string{"context.sh", "sleep 5"},
			Status: []string{"Loading <the> branch", ""}},
	}}
	s := serveAgent(t, web.Options{}, nil, startup("r1", "s1", "", ""), running)
	body := s.page(t, "/agents/a1")
	contains(t, "the running restore's row", body,
		`<span class="hook running">running</span> context.sh <span class="status">Loading &lt;the&gt; branch</span>`,
		`<span class="hook running">running</span> sleep 5 `)
	var page struct {
		Runs []struct {
			Hooks []struct {
				Status []string `json:"status"`
			} `json:"hooks"`
		} `json:"runs"`
	}
	s.api(t, "/agents/a1", &page)
	if len(page.Runs) != 2 || len(page.Runs[1].Hooks) != 1 || !slices.Equal(page.Runs[1].Hooks[0].Status, []string{"Loading <the> branch", ""}) {
		t.Errorf("runs %+v; want the running hooks' status messages", page.Runs)
	}
}

// A call a crash cut off before its result, rolled forward with an
// interrupted error result, is marked so on its row and in the API, not
// as a plain failure.
func TestToolCallCutByACrashIsShownInterrupted(t *testing.T) {
	cut := toolCall("toolu_cut", "s1", "Bash", []byte(`{"command":"make"}`))
	cut.steps = append(cut.steps, &schema.ToolResultRecorded{Session: "s1", ToolUseID: "toolu_cut", Tool: "Bash",
		MessageUUID: "m-cut", Failed: true, Interrupted: true})
	failed := toolCall("toolu_failed", "s1", "Bash", []byte(`{"command":"false"}`))
	failed.steps = append(failed.steps, &schema.ToolResultRecorded{Session: "s1", ToolUseID: "toolu_failed", Tool: "Bash",
		MessageUUID: "m-failed", Failed: true})
	s := serveAgent(t, web.Options{}, nil, startup("r1", "s1", "", ""), cut, failed)
	var page struct {
		Runs []struct {
			ID   string `json:"id"`
			Tool *struct {
				Result *struct {
					Failed      bool `json:"failed"`
					Interrupted bool `json:"interrupted"`
				} `json:"result"`
			} `json:"tool"`
		} `json:"runs"`
	}
	s.api(t, "/agents/a1", &page)
	if len(page.Runs) != 3 || page.Runs[1].Tool == nil || page.Runs[1].Tool.Result == nil || !page.Runs[1].Tool.Result.Interrupted ||
		page.Runs[2].Tool == nil || page.Runs[2].Tool.Result == nil || page.Runs[2].Tool.Result.Interrupted || !page.Runs[2].Tool.Result.Failed {
		t.Fatalf("runs %+v", page.Runs)
	}
	body := s.page(t, "/agents/a1")
	row := func(id string) string {
		i := strings.Index(body, `id="run-`+id+`"`)
		if i < 0 {
			t.Fatalf("no row for %s", id)
		}
		r, _, _ := strings.Cut(body[i:], "</li>")
		return r
	}
	contains(t, "the cut call's row", row("toolu_cut"), "interrupted: cut off before its result, rolled forward")
	if r := row("toolu_failed"); strings.Contains(r, "interrupted") || !strings.Contains(r, `<span class="badge warn">failed</span>`) {
		t.Errorf("the failed call's row: %s", r)
	}
}

// TestOtherHookTypesShowWhatTheyAskedAndAnswered: an http and a prompt
// hook's details name their type and show what each asked and answered.
func TestOtherHookTypesShowWhatTheyAskedAndAnswered(t *testing.T) {
	stop := agentRun{id: "st1", steps: []schema.Payload{
		&schema.StopHookStarted{Session: "s1", Hooks: []string{"http: http://127.0.0.1:9/gate", "prompt: the tests pass"}},
		&schema.StopHookRan{Session: "s1", Blocked: true, Reason: "[the tests pass]: none ran",
			Outcomes: []schema.HookOutcome{
				{Name: "http: http://127.0.0.1:9/gate", Status: schema.HookOK, Type: "http", Answer: `{"gate":"open"}`},
				{Name: "prompt: the tests pass", Status: schema.HookOK, Type: "prompt", ExitCode: 2, Decision: "block",
					Reason: "[the tests pass]: none ran", Request: "Condition: the tests pass", Answer: `{"ok": false, "reason": "none ran"}`},
			}},
	}}
	s := serveAgent(t, web.Options{}, nil, startup("r1", "s1", "", ""), stop)
	body := s.page(t, "/agents/a1")
	for _, want := range []string{`<dt>http hook</dt><dd><pre>http: http://127.0.0.1:9/gate</pre>`,
		`<dt>answered</dt><dd><pre>{&#34;gate&#34;:&#34;open&#34;}</pre>`, `<dt>prompt hook</dt>`,
		`<dt>asked</dt><dd><pre>Condition: the tests pass</pre>`, `<dt>answered</dt><dd><pre>{&#34;ok&#34;: false, &#34;reason&#34;: &#34;none ran&#34;}</pre>`} {
		contains(t, "agent page", body, want)
	}
}
