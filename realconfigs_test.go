package reprise_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/turn"
)

// The tests of this file run, through an Agent, the hooks of three real
// projects' configurations as testdata/fixtures reproduces them (each
// README names the file and commit it is shaped after): every event they
// configure is driven the way Claude Code drives it, by the lifecycle or
// by Fire with the input Claude Code sends, and each hook's stand-in
// records its run (testdata/fixtures/record.sh), so that a test sees
// which hooks ran, how often, with which arguments and stdin.

// fixtureRun is one run of a stand-in script, as it recorded it.
type fixtureRun struct {
	Script string   // the script's base name
	Path   string   // the script as it was run
	Args   []string // its arguments
	Cwd    string
	Env    map[string]string
	Stdin  map[string]any
}

// fixtureRecords is where the stand-ins of one test record their runs.
type fixtureRecords struct{ dir string }

// copyFixture copies testdata/fixtures/name to dst and returns dst.
func copyFixture(t *testing.T, name, dst string) string {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("testdata", "fixtures", name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// newFixtureRecords makes the records directory under base, with HOME
// there too, and sets what the stand-ins need: the recorder, the records
// directory, and bin, the fixture's stand-ins for uv or node, first on
// PATH ("" for none).
func newFixtureRecords(t *testing.T, base, bin string) *fixtureRecords {
	t.Helper()
	r := &fixtureRecords{dir: filepath.Join(base, "records")}
	home := filepath.Join(base, "home")
	for _, dir := range []string{r.dir, home} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("REPRISE_TEST_RECORDS", r.dir)
	t.Setenv("REPRISE_TEST_RECORDER", testkit.Abs(t, filepath.Join("testdata", "fixtures", "record.sh")))
	if bin != "" {
		t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	return r
}

// take waits until n runs are recorded, for async hooks that may still
// run, and returns them sorted by script and arguments, removing them; it
// fails when another number of them ran.
func (r *fixtureRecords) take(t *testing.T, n int) []fixtureRun {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var names []string
	for {
		entries, err := os.ReadDir(r.dir)
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "run-") {
				names = append(names, e.Name())
			}
		}
		if len(names) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	runs := make([]fixtureRun, 0, len(names))
	for _, name := range names {
		dir := filepath.Join(r.dir, name)
		read := func(file string) string {
			data, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			return string(data)
		}
		argv := strings.Split(strings.TrimSuffix(read("argv"), "\n"), "\n")
		run := fixtureRun{Script: filepath.Base(argv[0]), Path: argv[0], Args: argv[1:],
			Cwd: strings.TrimSpace(read("cwd")), Env: map[string]string{}}
		for line := range strings.Lines(read("env")) {
			k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
			run.Env[k] = v
		}
		if err := json.Unmarshal([]byte(read("stdin")), &run.Stdin); err != nil {
			t.Fatalf("stdin of %s: %v", run.Script, err)
		}
		runs = append(runs, run)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	slices.SortFunc(runs, func(a, b fixtureRun) int {
		if c := slices.Compare(append([]string{a.Script}, a.Args...), append([]string{b.Script}, b.Args...)); c != 0 {
			return c
		}
		// One script run twice: by what it was told, so the order is fixed.
		ai, _ := json.Marshal(a.Stdin)
		bi, _ := json.Marshal(b.Stdin)
		return strings.Compare(string(ai), string(bi))
	})
	if len(runs) != n {
		t.Fatalf("%d hooks ran, want %d: %v", len(runs), n, runNames(runs))
	}
	return runs
}

// runNames returns the script and arguments of each run, for messages.
func runNames(runs []fixtureRun) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = strings.Join(append([]string{r.Script}, r.Args...), " ")
	}
	return out
}

// checkRun fails unless run is of script with args, and its stdin is
// Claude Code's for event on session s in cwd: the common fields and
// every field of want.
func checkRun(t *testing.T, run fixtureRun, script string, args []string, event schema.HookEvent, cwd string, want map[string]any) {
	t.Helper()
	if run.Script != script || !slices.Equal(run.Args, args) {
		t.Errorf("ran %s %q, want %s %q", run.Script, run.Args, script, args)
	}
	in := run.Stdin
	if in["hook_event_name"] != string(event) || in["session_id"] != "s" || in["cwd"] != cwd {
		t.Errorf("%s: hook_event_name %v, session_id %v, cwd %v; want %s, s, %s", script,
			in["hook_event_name"], in["session_id"], in["cwd"], event, cwd)
	}
	if p, _ := in["transcript_path"].(string); p == "" {
		t.Errorf("%s: no transcript_path in %v", script, in)
	}
	for k, v := range want {
		if !reflect.DeepEqual(in[k], v) {
			t.Errorf("%s: %s = %#v, want %#v (stdin %v)", script, k, in[k], v, in)
		}
	}
}

// jsonValue is text decoded, as a stdin field is compared.
func jsonValue(t *testing.T, text string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// checkNothingElse fails unless load, LoadOtherHooks or
// LoadOtherPluginHooks, finds no hook in path that reprise does not load.
func checkNothingElse(t *testing.T, load func(string) ([]hookexec.OtherHook, []error, error), path string) {
	t.Helper()
	others, bad, err := load(path)
	if err != nil || len(bad) > 0 {
		t.Fatalf("other hooks: %v, %v", bad, err)
	}
	for _, o := range others {
		t.Errorf("found, not run: %s %q %s %q", o.Event, o.Matcher, o.Type, o.Text)
	}
}

// fixtureEngine opens an Engine in base with hooks, creates session s
// working in cwd, and returns it and agent ide, not started.
func fixtureEngine(t *testing.T, base, cwd string, hooks []hookexec.Hook) (*reprise.Engine, *reprise.Agent) {
	t.Helper()
	e := testkit.OpenEngine(t, filepath.Join(base, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	if err := e.Hooks().AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "s", cwd, "hello")
	return e, testkit.Agent(t, e, "ide")
}

// fire fires event on a with fields, failing the test on an error or on
// hooks that did not all succeed.
func fire(t *testing.T, a *reprise.Agent, event schema.HookEvent, id, fields string) *reprise.Fired {
	t.Helper()
	f, err := a.Fire(context.Background(), event, id, json.RawMessage(fields))
	if err != nil {
		t.Fatalf("Fire(%s, %s): %v", event, id, err)
	}
	checkOutcomes(t, string(event), f.Outcomes)
	return f
}

// checkOutcomes fails unless every outcome is ok.
func checkOutcomes(t *testing.T, what string, outcomes []schema.HookOutcome) {
	t.Helper()
	for _, o := range outcomes {
		if o.Status != schema.HookOK {
			t.Errorf("%s: %s %s (%s; stderr %q)", what, o.Name, o.Status, o.Error, o.Stderr)
		}
	}
}

// TestRealConfigHooksMastery runs claude-code-hooks-mastery's settings:
// thirteen events, one hook each with an empty matcher, every one a
// `uv run $CLAUDE_PROJECT_DIR/.claude/hooks/<event>.py` with its flags.
// A session is started, set up, prompted, runs a subagent, two tool calls
// (one allowed, one left to ask that then fails), waits for the user,
// stops, compacts and ends: each script runs once per event it serves.
func TestRealConfigHooksMastery(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	project := copyFixture(t, "claude-code-hooks-mastery", filepath.Join(base, "project"))
	rec := newFixtureRecords(t, base, filepath.Join(project, "bin"))
	settings := filepath.Join(project, ".claude", "settings.json")
	hooks, err := hookexec.LoadSettings(settings)
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 13 {
		t.Fatalf("%d hooks loaded, want one for each of the 13 events", len(hooks))
	}
	for _, h := range hooks {
		if line := h.CommandLine(); !strings.HasPrefix(line, "uv run $CLAUDE_PROJECT_DIR/.claude/hooks/") {
			t.Errorf("%s: command %q", h.Event, line)
		}
	}
	checkNothingElse(t, hookexec.LoadOtherHooks, settings)
	e, a := fixtureEngine(t, base, project, hooks)
	script := func(name string) string { return filepath.Join(project, ".claude", "hooks", name) }

	if _, err := a.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	run := rec.take(t, 1)[0]
	checkRun(t, run, "session_start.py", []string{}, schema.HookSessionStart, project, map[string]any{"source": "startup"})
	if run.Path != script("session_start.py") || run.Env["CLAUDE_PROJECT_DIR"] != project || run.Cwd != project {
		t.Errorf("session_start.py ran as %s in %s with CLAUDE_PROJECT_DIR %q; want %s in %s", run.Path, run.Cwd,
			run.Env["CLAUDE_PROJECT_DIR"], script("session_start.py"), project)
	}
	if _, ok := run.Env["CLAUDE_ENV_FILE"]; !ok {
		t.Error("SessionStart's hook got no CLAUDE_ENV_FILE")
	}

	fire(t, a, schema.HookSetup, "setup-1", `{"trigger": "init"}`)
	run = rec.take(t, 1)[0]
	checkRun(t, run, "setup.py", []string{}, schema.HookSetup, project, map[string]any{"trigger": "init"})
	if _, ok := run.Env["CLAUDE_ENV_FILE"]; !ok {
		t.Error("Setup's hook got no CLAUDE_ENV_FILE")
	}

	if _, err := a.Prompt(ctx, "clean the build"); err != nil {
		t.Fatal(err)
	}
	checkRun(t, rec.take(t, 1)[0], "user_prompt_submit.py", []string{"--log-only", "--store-last-prompt", "--name-agent"},
		schema.HookUserPromptSubmit, project, map[string]any{"prompt": "clean the build"})

	fire(t, a, schema.HookSubagentStart, "agent-a1", `{"agent_id": "a1", "agent_type": "Explore"}`)
	checkRun(t, rec.take(t, 1)[0], "subagent_start.py", []string{}, schema.HookSubagentStart, project,
		map[string]any{"agent_id": "a1", "agent_type": "Explore"})
	agentTranscript := filepath.Join(base, "subagents", "agent-a1.jsonl")
	fire(t, a, schema.HookSubagentStop, "agent-a1-stop", `{"stop_hook_active": false, "agent_id": "a1", "agent_type": "Explore",
		"agent_transcript_path": "`+agentTranscript+`", "last_assistant_message": "found build/"}`)
	checkRun(t, rec.take(t, 1)[0], "subagent_stop.py", []string{"--notify"}, schema.HookSubagentStop, project,
		map[string]any{"stop_hook_active": false, "agent_id": "a1", "agent_type": "Explore",
			"agent_transcript_path": agentTranscript, "last_assistant_message": "found build/"})

	ls, rm := `{"command":"ls build"}`, `{"command":"rm -rf build"}`
	answer(t, e, "s", reprise.ToolUseBlock("toolu_1", "Bash", json.RawMessage(ls)),
		reprise.ToolUseBlock("toolu_2", "Bash", json.RawMessage(rm)))
	d, err := a.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_1", Name: "Bash", Input: json.RawMessage(ls), Permission: hookexec.Allow})
	if err != nil || d.Decision != hookexec.Allow {
		t.Fatalf("PreToolUse of ls: %+v, %v", d, err)
	}
	checkRun(t, rec.take(t, 1)[0], "pre_tool_use.py", []string{}, schema.HookPreToolUse, project,
		map[string]any{"tool_name": "Bash", "tool_input": jsonValue(t, ls), "tool_use_id": "toolu_1"})
	d, err = a.PreToolUse(ctx, reprise.ToolCall{ID: "toolu_2", Name: "Bash", Input: json.RawMessage(rm), Permission: hookexec.Ask})
	if err != nil || d.Decision != hookexec.Ask {
		t.Fatalf("PreToolUse of rm: %+v, %v", d, err)
	}
	checkOutcomes(t, "PreToolUse of rm", d.Outcomes)
	runs := rec.take(t, 2) // PreToolUse, then PermissionRequest on the call left to ask
	checkRun(t, runs[0], "permission_request.py", []string{"--log-only"}, schema.HookPermissionRequest, project,
		map[string]any{"tool_name": "Bash", "tool_input": jsonValue(t, rm)})
	checkRun(t, runs[1], "pre_tool_use.py", []string{}, schema.HookPreToolUse, project,
		map[string]any{"tool_name": "Bash", "tool_input": jsonValue(t, rm), "tool_use_id": "toolu_2"})

	// What turn.Runner fires before it asks the user.
	fire(t, a, schema.HookNotification, "toolu_2-ask", `{"message": "Claude needs your permission to use Bash",
		"notification_type": "permission_prompt"}`)
	checkRun(t, rec.take(t, 1)[0], "notification.py", []string{"--notify"}, schema.HookNotification, project,
		map[string]any{"message": "Claude needs your permission to use Bash", "notification_type": "permission_prompt"})

	// The empty matcher selects every notification, one without a type too.
	for _, n := range []struct{ id, fields string }{
		{"idle-1", `{"message": "Claude is waiting for your input", "notification_type": "idle_prompt"}`},
		{"auth-1", `{"message": "Logged in", "title": "Claude Code", "notification_type": "auth_success"}`},
		{"plain-1", `{"message": "Task finished"}`},
	} {
		fire(t, a, schema.HookNotification, n.id, n.fields)
		var want map[string]any
		if err := json.Unmarshal([]byte(n.fields), &want); err != nil {
			t.Fatal(err)
		}
		run := rec.take(t, 1)[0]
		checkRun(t, run, "notification.py", []string{"--notify"}, schema.HookNotification, project, want)
		if _, ok := want["notification_type"]; !ok {
			if _, ok := run.Stdin["notification_type"]; ok {
				t.Errorf("a notification without a type got one: %v", run.Stdin)
			}
		}
	}

	if _, err := a.AnswerAsk(ctx, reprise.ToolAnswer{ID: "toolu_2", Allow: true}); err != nil {
		t.Fatal(err)
	}
	fb, err := a.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_1", Output: json.RawMessage(`"main.o"`)})
	if err != nil {
		t.Fatal(err)
	}
	checkOutcomes(t, "PostToolUse", fb.Outcomes)
	checkRun(t, rec.take(t, 1)[0], "post_tool_use.py", []string{}, schema.HookPostToolUse, project,
		map[string]any{"tool_name": "Bash", "tool_input": jsonValue(t, ls), "tool_use_id": "toolu_1", "tool_response": "main.o"})
	fb, err = a.PostToolUse(ctx, reprise.ToolResult{ID: "toolu_2", Error: "rm: build: Permission denied"})
	if err != nil {
		t.Fatal(err)
	}
	checkOutcomes(t, "PostToolUseFailure", fb.Outcomes)
	checkRun(t, rec.take(t, 1)[0], "post_tool_use_failure.py", []string{}, schema.HookPostToolUseFailure, project,
		map[string]any{"tool_name": "Bash", "tool_input": jsonValue(t, rm), "tool_use_id": "toolu_2",
			"error": "rm: build: Permission denied"})

	if _, err := e.Append(ctx, "s", reprise.Text("assistant", "build/ could not be removed")); err != nil {
		t.Fatal(err)
	}
	st, err := a.Stop(ctx)
	if err != nil || st.Blocked {
		t.Fatalf("Stop: %+v, %v", st, err)
	}
	checkRun(t, rec.take(t, 1)[0], "stop.py", []string{"--chat"}, schema.HookStop, project,
		map[string]any{"stop_hook_active": false})

	if _, err := a.Compact(ctx, "The build could not be removed."); err != nil {
		t.Fatal(err)
	}
	runs = rec.take(t, 2)
	checkRun(t, runs[0], "pre_compact.py", []string{}, schema.HookPreCompact, project,
		map[string]any{"trigger": "manual", "custom_instructions": ""})
	checkRun(t, runs[1], "session_start.py", []string{}, schema.HookSessionStart, project, map[string]any{"source": "compact"})

	if _, err := a.End(ctx, reprise.ReasonPromptInputExit, reprise.EndOptions{}); err != nil {
		t.Fatal(err)
	}
	checkRun(t, rec.take(t, 1)[0], "session_end.py", []string{}, schema.HookSessionEnd, project,
		map[string]any{"reason": "prompt_input_exit"})
}

// TestRealConfigHooksMasteryTurn runs claude-code-hooks-mastery's hooks
// in a turn that turn.Runner drives, as Claude Code's loop does: one
// prompt, one Bash call that the host's rules leave to ask and the user
// allows, one final answer. The Runner fires Notification itself, before
// it asks (permission_prompt) and when the turn ends (idle_prompt), and
// the one Notification hook, whose matcher is empty, runs for both.
func TestRealConfigHooksMasteryTurn(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	project := copyFixture(t, "claude-code-hooks-mastery", filepath.Join(base, "project"))
	rec := newFixtureRecords(t, base, filepath.Join(project, "bin"))
	hooks, err := hookexec.LoadSettings(filepath.Join(project, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	e, a := fixtureEngine(t, base, project, hooks)
	if _, err := a.Start(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	rec.take(t, 1) // SessionStart
	rm := `{"command":"rm -rf build"}`
	requests := 0
	r := &turn.Runner{Engine: e, Agent: a,
		Model: func(context.Context, []reprise.Message) (reprise.Message, error) {
			requests++
			if requests == 1 {
				return reprise.Message{Role: "assistant", Content: []reprise.Block{
					reprise.ToolUseBlock("toolu_1", "Bash", json.RawMessage(rm))}}, nil
			}
			return reprise.Text("assistant", "build/ is gone"), nil
		},
		Tools: map[string]turn.Tool{"Bash": {Run: func(context.Context, turn.Call) (reprise.ToolResult, error) {
			return reprise.ToolResult{Output: json.RawMessage(`""`)}, nil
		}}},
		Permission: func(turn.Call) string { return hookexec.Ask },
		Ask:        func(context.Context, turn.Call, string) string { return "" },
	}
	if _, err := r.Run(ctx, "remove the build"); err != nil {
		t.Fatal(err)
	}
	runs := rec.take(t, 7)
	checkRun(t, runs[0], "notification.py", []string{"--notify"}, schema.HookNotification, project,
		map[string]any{"message": "Claude is waiting for your input", "notification_type": "idle_prompt"})
	checkRun(t, runs[1], "notification.py", []string{"--notify"}, schema.HookNotification, project,
		map[string]any{"message": "Claude needs your permission to use Bash", "notification_type": "permission_prompt"})
	checkRun(t, runs[2], "permission_request.py", []string{"--log-only"}, schema.HookPermissionRequest, project,
		map[string]any{"tool_name": "Bash", "tool_input": jsonValue(t, rm)})
	checkRun(t, runs[3], "post_tool_use.py", []string{}, schema.HookPostToolUse, project,
		map[string]any{"tool_name": "Bash", "tool_use_id": "toolu_1", "tool_response": ""})
	checkRun(t, runs[4], "pre_tool_use.py", []string{}, schema.HookPreToolUse, project,
		map[string]any{"tool_name": "Bash", "tool_input": jsonValue(t, rm), "tool_use_id": "toolu_1"})
	checkRun(t, runs[5], "stop.py", []string{"--chat"}, schema.HookStop, project,
		map[string]any{"stop_hook_active": false, "last_assistant_message": "build/ is gone"})
	checkRun(t, runs[6], "user_prompt_submit.py", []string{"--log-only", "--store-last-prompt", "--name-agent"},
		schema.HookUserPromptSubmit, project, map[string]any{"prompt": "remove the build"})
}

// TestRealConfigClaudeMem runs claude-mem's plugin hooks: bash commands
// ("shell": "bash") that find the plugin from CLAUDE_PLUGIN_ROOT and run
// its scripts with node; Setup on any trigger, SessionStart on startup
// and compact but not resume, and async PreToolUse (Read only),
// PostToolUse and Stop hooks that still run, once each, after the step
// that started them returned.
func TestRealConfigClaudeMem(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root := copyFixture(t, "claude-mem", filepath.Join(base, "plugins dir", "claude-mem"))
	rec := newFixtureRecords(t, base, filepath.Join(root, "bin"))
	plugin := filepath.Join(root, "plugin")
	hooks, err := hookexec.LoadPluginDir(plugin)
	if err != nil {
		t.Fatal(err)
	}
	want := map[schema.HookEvent][]string{ // each event's hooks: async, timeout
		schema.HookSetup:            {"sync 5m0s"},
		schema.HookSessionStart:     {"sync 1m0s", "sync 1m0s"},
		schema.HookUserPromptSubmit: {"sync 1m0s"},
		schema.HookPostToolUse:      {"async 2m0s"},
		schema.HookPreToolUse:       {"async 1m0s"},
		schema.HookStop:             {"async 2m0s"},
	}
	got := map[schema.HookEvent][]string{}
	for _, h := range hooks {
		kind := "sync"
		if h.Async {
			kind = "async"
		}
		got[h.Event] = append(got[h.Event], kind+" "+h.Timeout.String())
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("hooks loaded:\n got %v\nwant %v", got, want)
	}
	checkNothingElse(t, hookexec.LoadOtherPluginHooks, plugin)
	project := filepath.Join(base, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	e, a := fixtureEngine(t, base, project, hooks)
	runner := filepath.Join(plugin, "scripts", "bun-runner.js")
	worker := func(args ...string) []string {
		return append([]string{filepath.Join(plugin, "scripts", "worker-service.cjs")}, args...)
	}
	checkPlugin := func(runs []fixtureRun) {
		t.Helper()
		for _, r := range runs {
			if dir := filepath.Dir(r.Path); dir != filepath.Join(plugin, "scripts") || r.Env["CLAUDE_PLUGIN_ROOT"] != plugin {
				t.Errorf("%s ran from %s with CLAUDE_PLUGIN_ROOT %q; want the plugin's, %s", r.Script, dir,
					r.Env["CLAUDE_PLUGIN_ROOT"], plugin)
			}
		}
	}

	r, err := a.Start(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	checkOutcomes(t, "SessionStart", r.StartOutcomes)
	runs := rec.take(t, 2)
	checkPlugin(runs)
	checkRun(t, runs[0], "bun-runner.js", worker("hook", "claude-code", "context"), schema.HookSessionStart, project,
		map[string]any{"source": "startup"})
	checkRun(t, runs[1], "bun-runner.js", worker("start"), schema.HookSessionStart, project, map[string]any{"source": "startup"})
	if runs[0].Path != runner {
		t.Errorf("ran %s, want %s", runs[0].Path, runner)
	}

	for _, trigger := range []string{"init", "maintenance"} {
		fire(t, a, schema.HookSetup, "setup-"+trigger, `{"trigger": "`+trigger+`"}`)
		runs = rec.take(t, 1)
		checkPlugin(runs)
		checkRun(t, runs[0], "version-check.js", []string{}, schema.HookSetup, project, map[string]any{"trigger": trigger})
	}

	if _, err := a.Prompt(ctx, "what did we do yesterday?"); err != nil {
		t.Fatal(err)
	}
	checkRun(t, rec.take(t, 1)[0], "bun-runner.js", worker("hook", "claude-code", "session-init"),
		schema.HookUserPromptSubmit, project, map[string]any{"prompt": "what did we do yesterday?"})

	read, grep := `{"file_path":"`+project+`/notes.md"}`, `{"pattern":"TODO"}`
	answer(t, e, "s", reprise.ToolUseBlock("toolu_1", "Read", json.RawMessage(read)),
		reprise.ToolUseBlock("toolu_2", "Grep", json.RawMessage(grep)))
	for _, c := range []reprise.ToolCall{{ID: "toolu_1", Name: "Read", Input: json.RawMessage(read), Permission: hookexec.Allow},
		{ID: "toolu_2", Name: "Grep", Input: json.RawMessage(grep), Permission: hookexec.Allow}} {
		if d, err := a.PreToolUse(ctx, c); err != nil || d.Decision != hookexec.Allow {
			t.Fatalf("PreToolUse of %s: %+v, %v", c.Name, d, err)
		}
	}
	// The matcher Read selects the Read call only.
	runs = rec.take(t, 1)
	checkRun(t, runs[0], "bun-runner.js", worker("hook", "claude-code", "file-context"), schema.HookPreToolUse, project,
		map[string]any{"tool_name": "Read", "tool_input": jsonValue(t, read), "tool_use_id": "toolu_1"})
	for _, res := range []reprise.ToolResult{{ID: "toolu_1", Output: json.RawMessage(`"# notes"`)},
		{ID: "toolu_2", Output: json.RawMessage(`"No matches found"`)}} {
		if _, err := a.PostToolUse(ctx, res); err != nil {
			t.Fatal(err)
		}
	}
	runs = rec.take(t, 2)
	slices.SortFunc(runs, func(a, b fixtureRun) int {
		return strings.Compare(a.Stdin["tool_use_id"].(string), b.Stdin["tool_use_id"].(string))
	})
	checkRun(t, runs[0], "bun-runner.js", worker("hook", "claude-code", "observation"), schema.HookPostToolUse, project,
		map[string]any{"tool_name": "Read", "tool_use_id": "toolu_1", "tool_response": "# notes"})
	checkRun(t, runs[1], "bun-runner.js", worker("hook", "claude-code", "observation"), schema.HookPostToolUse, project,
		map[string]any{"tool_name": "Grep", "tool_use_id": "toolu_2", "tool_response": "No matches found"})

	if _, err := e.Append(ctx, "s", reprise.Text("assistant", "Yesterday we wrote notes.")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	checkRun(t, rec.take(t, 1)[0], "bun-runner.js", worker("hook", "claude-code", "summarize"), schema.HookStop, project,
		map[string]any{"stop_hook_active": false, "last_assistant_message": "Yesterday we wrote notes."})

	if _, err := a.Compact(ctx, "We wrote notes."); err != nil {
		t.Fatal(err)
	}
	runs = rec.take(t, 2)
	checkRun(t, runs[0], "bun-runner.js", worker("hook", "claude-code", "context"), schema.HookSessionStart, project,
		map[string]any{"source": "compact"})
	checkRun(t, runs[1], "bun-runner.js", worker("start"), schema.HookSessionStart, project, map[string]any{"source": "compact"})

	// A resume is none of startup, clear and compact; a clear is, in the
	// session it makes.
	if _, err := a.Start(ctx, "s", reprise.WithResume()); err != nil {
		t.Fatal(err)
	}
	rec.take(t, 0)
	if _, err := a.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	runs = rec.take(t, 2)
	if got := runNames(runs); !slices.Equal(got, []string{"bun-runner.js " + strings.Join(worker("hook", "claude-code", "context"), " "),
		"bun-runner.js " + strings.Join(worker("start"), " ")}) {
		t.Errorf("on clear ran %q", got)
	}
	for _, r := range runs {
		if r.Stdin["hook_event_name"] != "SessionStart" || r.Stdin["source"] != "clear" ||
			r.Stdin["session_id"] != a.Current() || a.Current() == "s" {
			t.Errorf("on clear: stdin %v, current session %s", r.Stdin, a.Current())
		}
	}
}

// TestRealConfigClaudeCodeViewer runs claude-code-viewer's settings, whose
// hooks reload direnv: SessionStart on startup, CwdChanged, and
// FileChanged on .envrc, flake.nix and flake.lock, an anchored regular
// expression that Claude Code matches on the changed file's base name.
// Each hook runs as "$CLAUDE_PROJECT_DIR"/.claude/hooks/..., from a
// project whose path has a space, and what it writes to CLAUDE_ENV_FILE
// comes back from Fire.
func TestRealConfigClaudeCodeViewer(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	project := copyFixture(t, "claude-code-viewer", filepath.Join(base, "viewer project"))
	rec := newFixtureRecords(t, base, "")
	settings := filepath.Join(project, ".claude", "settings.json")
	hooks, err := hookexec.LoadSettings(settings)
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 3 {
		t.Fatalf("%d hooks loaded, want 3", len(hooks))
	}
	checkNothingElse(t, hookexec.LoadOtherHooks, settings)
	_, a := fixtureEngine(t, base, project, hooks)
	script := func(name string) string { return filepath.Join(project, ".claude", "hooks", name) }

	r, err := a.Start(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	run := rec.take(t, 1)[0]
	checkRun(t, run, "on-session-start.sh", []string{}, schema.HookSessionStart, project, map[string]any{"source": "startup"})
	if run.Path != script("on-session-start.sh") || run.Env["CLAUDE_PROJECT_DIR"] != project {
		t.Errorf("ran %s with CLAUDE_PROJECT_DIR %q", run.Path, run.Env["CLAUDE_PROJECT_DIR"])
	}
	if r.Env != "export RELOADED_BY='on-session-start.sh'\n" {
		t.Errorf("SessionStart's CLAUDE_ENV_FILE held %q", r.Env)
	}

	app := filepath.Join(project, "packages", "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	f := fire(t, a, schema.HookCwdChanged, "cd-1", `{"old_cwd": "`+project+`", "new_cwd": "`+app+`"}`)
	run = rec.take(t, 1)[0]
	if run.Script != "on-cwd-changed.sh" || run.Stdin["hook_event_name"] != "CwdChanged" ||
		run.Stdin["old_cwd"] != project || run.Stdin["new_cwd"] != app || run.Stdin["session_id"] != "s" {
		t.Errorf("CwdChanged ran %s with %v", run.Script, run.Stdin)
	}
	if f.Env != "export RELOADED_BY='on-cwd-changed.sh'\n" {
		t.Errorf("CwdChanged's CLAUDE_ENV_FILE held %q", f.Env)
	}

	// Later hooks are told, and run in, the new directory; the hook's
	// command still finds its script through CLAUDE_PROJECT_DIR.
	for i, c := range []struct {
		file  string
		event string
		runs  bool
	}{
		{filepath.Join(app, ".envrc"), "change", true},
		{filepath.Join(project, "flake.lock"), "add", true},
		{filepath.Join(app, "flake.nix"), "unlink", true},
		{filepath.Join(app, "package.json"), "change", false},
		{filepath.Join(app, ".envrc.swp"), "add", false},
		{filepath.Join(app, "old.envrc"), "change", false},
		{filepath.Join(app, ".envrc", "x"), "change", false},
	} {
		id := "file-" + string(rune('a'+i))
		f := fire(t, a, schema.HookFileChanged, id, `{"file_path": "`+c.file+`", "event": "`+c.event+`"}`)
		if !c.runs {
			rec.take(t, 0)
			if len(f.Outcomes) != 0 || f.Env != "" {
				t.Errorf("FileChanged of %s: %+v", c.file, f)
			}
			continue
		}
		run := rec.take(t, 1)[0]
		checkRun(t, run, "on-file-changed.sh", []string{}, schema.HookFileChanged, app,
			map[string]any{"file_path": c.file, "event": c.event})
		if run.Cwd != app || run.Env["CLAUDE_PROJECT_DIR"] != project || run.Path != script("on-file-changed.sh") {
			t.Errorf("FileChanged of %s ran %s in %s with CLAUDE_PROJECT_DIR %q", c.file, run.Path, run.Cwd, run.Env["CLAUDE_PROJECT_DIR"])
		}
		if f.Env != "export RELOADED_BY='on-file-changed.sh'\n" {
			t.Errorf("FileChanged of %s: CLAUDE_ENV_FILE held %q", c.file, f.Env)
		}
	}
}
