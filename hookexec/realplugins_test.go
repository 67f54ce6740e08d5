package hookexec

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/schema"
)

// The tests of this file load three real plugins' hooks, as
// testdata/plugins/{sdd-quality-loop,security-guidance,ecc} reproduce
// them (each README names the files they are shaped after), the way a
// host does, and run them through the public runners: which hooks run for
// which call, and with what arguments, stdin and environment, as Claude
// Code 2.1.328 runs them. The plugins' scripts are stand-ins that record
// each run (testdata/plugins/record.sh).

// hookRun is one run of a stand-in, as it recorded it.
type hookRun struct {
	Argv  []string // the script, then its arguments
	Cwd   string   // with symbolic links resolved
	Env   map[string]string
	Stdin map[string]any
}

// realPlugin is a fixture plugin copied where a host would find it, and
// what its hooks need to run.
type realPlugin struct {
	root    string // the copy: a path with a space in it
	home    string // HOME
	cache   string // CLAUDE_CODE_PLUGIN_CACHE_DIR, which holds the data directories
	records string // where the stand-ins record their runs
	env     CommandEnv
	exec    Exec
}

// The session the plugins' hooks run for.
const (
	realSession = "sess-real-1"
	realPrompt  = "prompt-7"
)

// newRealPlugin copies testdata/plugins/name under a directory whose name
// has a space, with HOME and the plugin data directories in the test's
// temporary directory.
func newRealPlugin(t *testing.T, name string) *realPlugin {
	t.Helper()
	base := t.TempDir()
	p := &realPlugin{
		root:    filepath.Join(base, "plugins dir", name),
		home:    filepath.Join(base, "home"),
		cache:   filepath.Join(base, "plugin cache"),
		records: filepath.Join(base, "records"),
		exec:    Exec{Supervisor: testSupervisor},
	}
	project := filepath.Join(base, "project")
	for _, dir := range []string{p.home, p.records, project} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", p.home)
	t.Setenv("CLAUDE_CODE_PLUGIN_CACHE_DIR", p.cache)
	if err := os.CopyFS(p.root, os.DirFS(filepath.Join("testdata", "plugins", name))); err != nil {
		t.Fatal(err)
	}
	recorder, err := filepath.Abs(filepath.Join("testdata", "plugins", "record"))
	if err != nil {
		t.Fatal(err)
	}
	p.env = CommandEnv{ProjectDir: project, Extra: []string{"REPRISE_TEST_RECORDS=" + p.records, "REPRISE_TEST_RECORDER=" + recorder}}
	return p
}

// needNode skips the test where node, which the plugin's commands run, is
// not installed.
func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
}

// selectHooks returns the hooks a host runs on event for value (a tool name, a
// source, a trigger): those whose matcher selects it, without duplicates.
func selectHooks(t *testing.T, hooks []Hook, event Event, value string) []Hook {
	t.Helper()
	r := NewRegistry()
	if err := r.AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	return Dedupe(r.Match(event, value))
}

// recorded returns the runs recorded so far, by the names of their
// directories.
func (p *realPlugin) recorded(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(p.records)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "run-") {
			names = append(names, e.Name())
		}
	}
	return names
}

// take waits until n runs are recorded, for hooks that may still be
// running when their runner returns, and returns them sorted by their
// arguments, removing them; it fails when more than n are.
func (p *realPlugin) take(t *testing.T, n int) []hookRun {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var names []string
	for {
		names = p.recorded(t)
		if len(names) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(names) != n {
		t.Fatalf("%d hooks ran, want %d", len(names), n)
	}
	runs := make([]hookRun, 0, n)
	for _, name := range names {
		dir := filepath.Join(p.records, name)
		read := func(file string) string {
			data, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			return string(data)
		}
		r := hookRun{Argv: strings.Split(strings.TrimSuffix(read("argv"), "\n"), "\n"),
			Cwd: strings.TrimSpace(read("cwd")), Env: map[string]string{}}
		for line := range strings.Lines(read("env")) {
			k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
			r.Env[k] = v
		}
		if err := json.Unmarshal([]byte(read("stdin")), &r.Stdin); err != nil {
			t.Fatalf("stdin of %v: %v", r.Argv, err)
		}
		runs = append(runs, r)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	slices.SortFunc(runs, func(a, b hookRun) int { return slices.Compare(a.Argv, b.Argv) })
	return runs
}

// argvs returns the arguments of each run.
func argvs(runs []hookRun) [][]string {
	out := make([][]string, len(runs))
	for i, r := range runs {
		out[i] = r.Argv
	}
	return out
}

// checkRuns checks that the runs got the arguments want (sorted), stdin
// and the environment of the plugin's hooks with data directory data;
// envFile is the CLAUDE_ENV_FILE they must get, "" for none.
func (p *realPlugin) checkRuns(t *testing.T, runs []hookRun, want [][]string, stdin map[string]any, data, envFile string) {
	t.Helper()
	if got := argvs(runs); !reflect.DeepEqual(got, want) {
		t.Fatalf("arguments:\n got %q\nwant %q", got, want)
	}
	project, err := filepath.EvalSymlinks(p.env.ProjectDir)
	if err != nil {
		t.Fatal(err)
	}
	wantEnv := map[string]string{"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": realSession,
		"CLAUDE_PROJECT_DIR": p.env.ProjectDir, "CLAUDE_PLUGIN_ROOT": p.root, "CLAUDE_PLUGIN_DATA": data}
	if envFile != "" {
		wantEnv["CLAUDE_ENV_FILE"] = envFile
	}
	for _, r := range runs {
		if !reflect.DeepEqual(r.Stdin, stdin) {
			t.Errorf("%v: stdin\n got %v\nwant %v", r.Argv, r.Stdin, stdin)
		}
		if !reflect.DeepEqual(r.Env, wantEnv) {
			t.Errorf("%v: environment\n got %v\nwant %v", r.Argv, r.Env, wantEnv)
		}
		if r.Cwd != project {
			t.Errorf("%v: ran in %s, want the project directory %s", r.Argv, r.Cwd, project)
		}
	}
	if info, err := os.Stat(data); err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Errorf("data directory %s: %v, %v; want a directory private to the user", data, info, err)
	}
}

// toolCall is the input of the hooks of a call of tool with input.
func (p *realPlugin) toolCall(tool, input string) ToolInput {
	return ToolInput{SessionID: realSession, TranscriptPath: filepath.Join(p.home, "t.jsonl"), Cwd: p.env.ProjectDir,
		PromptID: realPrompt, ToolName: tool, ToolInput: json.RawMessage(input), ToolUseID: "toolu_1"}
}

// toolStdinWant is the stdin Claude Code gives a tool event's hooks for in:
// the common fields, permission_mode, and the call's.
func toolStdinWant(event Event, in ToolInput) map[string]any {
	var input any
	_ = json.Unmarshal(in.ToolInput, &input)
	m := map[string]any{"session_id": in.SessionID, "transcript_path": in.TranscriptPath, "cwd": in.Cwd,
		"prompt_id": in.PromptID, "permission_mode": "default", "hook_event_name": string(event),
		"tool_name": in.ToolName, "tool_input": input, "tool_use_id": in.ToolUseID}
	if event == PostToolUse {
		var response any
		_ = json.Unmarshal(in.Response, &response)
		m["tool_response"] = response
		if in.Duration > 0 {
			m["duration_ms"] = float64(in.Duration.Milliseconds())
		}
	}
	return m
}

// checkOK fails unless every outcome is ok.
func checkOK(t *testing.T, outcomes []schema.HookOutcome) {
	t.Helper()
	for _, o := range outcomes {
		if o.Status != schema.HookOK {
			t.Errorf("%s: %s (%s; stderr %q)", o.Name, o.Status, o.Error, o.Stderr)
		}
	}
}

// TestRealPluginSDDQualityLoop: a manifest naming an extra hooks file of
// exec-form node hooks, next to hooks/hooks.json, which loads as well.
func TestRealPluginSDDQualityLoop(t *testing.T) {
	needNode(t)
	p := newRealPlugin(t, "sdd-quality-loop")
	hooks, err := LoadPluginDir(p.root) // as for claude --plugin-dir
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(p.cache, "data", "sdd-quality-loop-inline")
	script := func(name string) string { return filepath.Join(p.root, "scripts", name) }
	var lines []string
	for _, h := range hooks {
		if h.Event != PreToolUse {
			t.Errorf("%s: event %s, want PreToolUse", h.Name, h.Event)
		}
		lines = append(lines, h.CommandLine())
	}
	// hooks/hooks.json first, then the manifest's file; an exec-form hook
	// is named by the shell line that runs the same words.
	wantLines := []string{
		`sh "` + script("kill-switch.sh") + `"`,
		`sh "` + script("sdd-hook-guard.sh") + `" --emit exit`,
		"node '" + script("kill-switch.js") + "'",
		"node '" + script("sdd-hook-guard.js") + "' --emit exit",
	}
	if !reflect.DeepEqual(lines, wantLines) {
		t.Fatalf("hooks:\n got %q\nwant %q", lines, wantLines)
	}
	guard := hooks[3].Body.(Command)
	if guard.Line != "node" || !reflect.DeepEqual(guard.Args, []string{script("sdd-hook-guard.js"), "--emit", "exit"}) {
		t.Errorf("exec form: program %q, arguments %q; want node and each word with the plugin root substituted", guard.Line, guard.Args)
	}

	for _, c := range []struct {
		tool, input string
		want        [][]string
	}{
		{"Edit", `{"file_path":"src/a.go","old_string":"x","new_string":"y"}`, [][]string{
			{script("kill-switch.js")}, {script("kill-switch.sh")},
			{script("sdd-hook-guard.js"), "--emit", "exit"}, {script("sdd-hook-guard.sh"), "--emit", "exit"}}},
		// Only hooks/hooks.json's guard names Bash.
		{"Bash", `{"command":"go test ./..."}`, [][]string{
			{script("kill-switch.js")}, {script("kill-switch.sh")}, {script("sdd-hook-guard.sh"), "--emit", "exit"}}},
		{"Read", `{"file_path":"README.md"}`, [][]string{{script("kill-switch.js")}, {script("kill-switch.sh")}}},
	} {
		t.Run(c.tool, func(t *testing.T) {
			in := p.toolCall(c.tool, c.input)
			selected := selectHooks(t, hooks, PreToolUse, c.tool)
			outcomes, decision := p.exec.PreToolUse(context.Background(), selected, in, p.env)
			checkOK(t, outcomes)
			if decision.Decision != "" {
				t.Errorf("decision %q: the stand-ins decide nothing", decision.Decision)
			}
			p.checkRuns(t, p.take(t, len(c.want)), c.want, toolStdinWant(PreToolUse, in), data, "")
		})
	}
}

// installRealPlugin installs p as Claude Code records a plugin of
// marketplace installed for the user, and returns the settings file that
// enables it.
func installRealPlugin(t *testing.T, p *realPlugin, id string) string {
	t.Helper()
	record, _ := json.Marshal(map[string]any{"version": 2, "plugins": map[string]any{
		id: []map[string]any{{"scope": "user", "installPath": p.root, "version": "1.0.0"}}}})
	path := InstalledPluginsPath(p.home)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, record, 0o644); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(p.home, ".claude", "settings.json")
	if err := os.WriteFile(settings, []byte(`{"enabledPlugins": {"`+id+`": true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return settings
}

// TestRealPluginSecurityGuidance: one command on every event, told apart
// on PostToolUse by "if" rules, installed from a marketplace.
func TestRealPluginSecurityGuidance(t *testing.T) {
	p := newRealPlugin(t, "security-guidance")
	settings := installRealPlugin(t, p, "security-guidance@claude-plugins-official")
	hooks, errs := LoadEnabledPlugins(p.home, p.env.ProjectDir, []string{settings})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	data := filepath.Join(p.cache, "data", "security-guidance-claude-plugins-official")
	wrapper := filepath.Join(p.root, "hooks", "sg-python.sh")
	review := []string{wrapper, filepath.Join(p.root, "hooks", "security_reminder_hook.py")}
	ctx := context.Background()
	transcript := filepath.Join(p.home, "t.jsonl")

	t.Run("SessionStart", func(t *testing.T) {
		selected := selectHooks(t, hooks, SessionStart, string(schema.SourceStartup))
		if len(selected) != 1 || selected[0].Timeout != 180*time.Second {
			t.Fatalf("selected %v, want the one hook, with its 180 s timeout", Names(selected))
		}
		env := p.env
		env.EnvFile = filepath.Join(p.home, "session.env")
		outcomes, _ := p.exec.SessionStart(ctx, selected, SessionStartInput{SessionID: realSession, TranscriptPath: transcript,
			Cwd: p.env.ProjectDir, Source: schema.SourceStartup}, env)
		checkOK(t, outcomes)
		p.checkRuns(t, p.take(t, 1), [][]string{{wrapper, filepath.Join(p.root, "hooks", "ensure_agent_sdk.py")}},
			map[string]any{"session_id": realSession, "transcript_path": transcript, "cwd": p.env.ProjectDir,
				"hook_event_name": "SessionStart", "source": "startup"}, data, env.EnvFile)
	})

	t.Run("UserPromptSubmit", func(t *testing.T) {
		selected := selectHooks(t, hooks, UserPromptSubmit, "")
		outcomes, blocked, _, _ := p.exec.Prompt(ctx, selected, PromptInput{SessionID: realSession, TranscriptPath: transcript,
			Cwd: p.env.ProjectDir, Prompt: "add a login form", PromptID: realPrompt}, p.env)
		checkOK(t, outcomes)
		if blocked {
			t.Error("the prompt was blocked")
		}
		p.checkRuns(t, p.take(t, 1), [][]string{review},
			map[string]any{"session_id": realSession, "transcript_path": transcript, "cwd": p.env.ProjectDir,
				"permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": "add a login form",
				"prompt_id": realPrompt}, data, "")
	})

	t.Run("if", func(t *testing.T) {
		bash := selectHooks(t, hooks, PostToolUse, "Bash")
		if len(bash) != 5 {
			t.Fatalf("PostToolUse on Bash selects %d hooks, want the five, one for each \"if\"", len(bash))
		}
		// The same hook on an event that is not a tool's never runs.
		moved := bash[0]
		moved.Event = Stop
		if got := selectHooks(t, []Hook{moved}, Stop, ""); len(got) != 0 {
			t.Errorf("a hook with \"if\": %q selected on Stop", moved.If)
		}
		for _, c := range []struct {
			tool, input string
			runs        int
		}{
			{"Bash", `{"command":"git commit -m 'fix: escape'"}`, 1},
			{"Bash", `{"command":"git push origin main"}`, 1},
			{"Bash", `{"command":"gt submit --stack"}`, 1},
			{"Bash", `{"command":"git commit -am wip && git push"}`, 2}, // two rules met: two hooks
			{"Bash", `{"command":"git status"}`, 0},
			{"Bash", `{"command":"echo git commit"}`, 0},
			{"Edit", `{"file_path":"src/a.go","old_string":"x","new_string":"y"}`, 1}, // the group without "if"
		} {
			in := p.toolCall(c.tool, c.input)
			in.Response, in.Duration = json.RawMessage(`{"stdout":"","stderr":"","interrupted":false}`), 1500*time.Millisecond
			outcomes, feedback := p.exec.PostToolUse(ctx, selectHooks(t, hooks, PostToolUse, c.tool), in, p.env)
			checkOK(t, outcomes)
			if feedback.Blocked {
				t.Errorf("%s %s: blocked", c.tool, c.input)
			}
			want := make([][]string, c.runs)
			for i := range want {
				want[i] = review
			}
			p.checkRuns(t, p.take(t, c.runs), want, toolStdinWant(PostToolUse, in), data, "")
		}
	})

	t.Run("Stop", func(t *testing.T) {
		selected := selectHooks(t, hooks, Stop, "")
		outcomes, blocked, _, _ := p.exec.Stop(ctx, selected, StopInput{SessionID: realSession, TranscriptPath: transcript,
			Cwd: p.env.ProjectDir, LastAssistantMessage: "Done.", PromptID: realPrompt}, p.env)
		checkOK(t, outcomes)
		if blocked {
			t.Error("the stop was blocked")
		}
		p.checkRuns(t, p.take(t, 1), [][]string{review},
			map[string]any{"session_id": realSession, "transcript_path": transcript, "cwd": p.env.ProjectDir,
				"prompt_id": realPrompt, "permission_mode": "default", "hook_event_name": "Stop",
				"stop_hook_active": false, "last_assistant_message": "Done."}, data, "")
	})

	// asyncRewake hooks run in the background, as in Claude Code: the stop
	// and the call go on, and an exit 2 asks for the model to be woken
	// with the hook's rewakeMessage and its stderr.
	t.Run("async", func(t *testing.T) {
		env := p.env
		env.Extra = append(slices.Clip(env.Extra), "REPRISE_TEST_EXIT=2")
		c := newCollector()
		env.Background = c.background
		outcomes, blocked, _, _ := p.exec.Stop(ctx, selectHooks(t, hooks, Stop, ""), StopInput{SessionID: realSession,
			TranscriptPath: transcript, Cwd: p.env.ProjectDir}, env)
		if blocked || len(outcomes) != 1 || outcomes[0].Status != schema.HookAsync {
			t.Errorf("Stop: blocked %v, outcomes %+v; want one async outcome and no block", blocked, outcomes)
		}
		if e := c.next(t); !e.Rewake || e.Context != "Fixture: background review feedback: stand-in review: finding in the change" {
			t.Errorf("Stop hook's end: %+v", e)
		}
		in := p.toolCall("Bash", `{"command":"git commit -m x"}`)
		outcomes, feedback := p.exec.PostToolUse(ctx, selectHooks(t, hooks, PostToolUse, "Bash"), in, env)
		if feedback.Blocked || len(outcomes) != 1 || outcomes[0].Status != schema.HookAsync {
			t.Errorf("PostToolUse: %+v, outcomes %+v; want one async outcome and no block", feedback, outcomes)
		}
		if e := c.next(t); !e.Rewake || !strings.HasPrefix(e.Context, "Fixture: background review of the commit found something: ") {
			t.Errorf("PostToolUse hook's end: %+v", e)
		}
		p.take(t, 2)
	})
}

// TestRealPluginECC: shell-form node programs that find the plugin through
// CLAUDE_PLUGIN_ROOT, "*" matchers, and async hooks.
func TestRealPluginECC(t *testing.T) {
	needNode(t)
	p := newRealPlugin(t, "ecc")
	hooks, err := LoadPluginDir(p.root)
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 5 {
		t.Fatalf("%d hooks, want 5", len(hooks))
	}
	data := filepath.Join(p.cache, "data", "ecc-inline")
	bootstrap := filepath.Join(p.root, "scripts", "hooks", "plugin-hook-bootstrap.js")
	words := func(rest ...string) []string { return append([]string{bootstrap, "node"}, rest...) }
	observe := words("scripts/hooks/run-with-flags.js", "pre:observe", "scripts/hooks/observe-runner.js", "standard,strict")
	ctx := context.Background()
	transcript := filepath.Join(p.home, "t.jsonl")

	t.Run("SessionStart", func(t *testing.T) {
		for _, source := range []schema.Source{schema.SourceStartup, schema.SourceCompact} {
			selected := selectHooks(t, hooks, SessionStart, string(source))
			outcomes, _ := p.exec.SessionStart(ctx, selected, SessionStartInput{SessionID: realSession, TranscriptPath: transcript,
				Cwd: p.env.ProjectDir, Source: source}, p.env)
			checkOK(t, outcomes)
			p.checkRuns(t, p.take(t, 1), [][]string{words("scripts/hooks/session-start-bootstrap.js")},
				map[string]any{"session_id": realSession, "transcript_path": transcript, "cwd": p.env.ProjectDir,
					"hook_event_name": "SessionStart", "source": string(source)}, data, "")
		}
	})

	for _, c := range []struct {
		event       Event
		tool, input string
		want        [][]string
	}{
		{PreToolUse, "Bash", `{"command":"ls -la"}`, [][]string{words("scripts/hooks/pre-bash-dispatcher.js"), observe}},
		{PreToolUse, "Edit", `{"file_path":"a.go","old_string":"x","new_string":"y"}`, [][]string{observe}},
		{PostToolUse, "Bash", `{"command":"ls -la"}`, [][]string{words("scripts/hooks/post-bash-dispatcher.js")}},
		{PostToolUse, "Edit", `{"file_path":"a.go","old_string":"x","new_string":"y"}`, nil},
	} {
		t.Run(string(c.event)+"/"+c.tool, func(t *testing.T) {
			in := p.toolCall(c.tool, c.input)
			selected := selectHooks(t, hooks, c.event, c.tool)
			var outcomes []schema.HookOutcome
			if c.event == PreToolUse {
				outcomes, _ = p.exec.PreToolUse(ctx, selected, in, p.env)
			} else {
				in.Response = json.RawMessage(`{"stdout":"total 0","stderr":"","interrupted":false}`)
				outcomes, _ = p.exec.PostToolUse(ctx, selected, in, p.env)
			}
			checkOK(t, outcomes)
			runs := p.take(t, len(c.want))
			if len(c.want) > 0 {
				p.checkRuns(t, runs, c.want, toolStdinWant(c.event, in), data, "")
			}
		})
	}

	t.Run("PreCompact", func(t *testing.T) {
		selected := selectHooks(t, hooks, PreCompact, "manual")
		outcomes, blocked, _, _ := p.exec.PreCompact(ctx, selected, PreCompactInput{SessionID: realSession, TranscriptPath: transcript,
			Cwd: p.env.ProjectDir, Trigger: "manual"}, p.env)
		checkOK(t, outcomes)
		if blocked {
			t.Error("the compaction was blocked")
		}
		p.checkRuns(t, p.take(t, 1),
			[][]string{words("scripts/hooks/run-with-flags.js", "pre:compact", "scripts/hooks/pre-compact.js", "standard,strict")},
			map[string]any{"session_id": realSession, "transcript_path": transcript, "cwd": p.env.ProjectDir,
				"hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": ""}, data, "")
	})

	// "async": true hooks run in the background: the call's hooks return
	// with the sync hook's outcome and the async one's "async", and the
	// async one's end comes when it ends.
	t.Run("async", func(t *testing.T) {
		env := p.env
		c := newCollector()
		env.Background = c.background
		in := p.toolCall("Bash", `{"command":"ls"}`)
		outcomes, _ := p.exec.PreToolUse(ctx, selectHooks(t, hooks, PreToolUse, "Bash"), in, env)
		if len(outcomes) != 2 {
			t.Fatalf("%d outcomes, want the sync hook's and the async one's", len(outcomes))
		}
		statuses := []string{outcomes[0].Status, outcomes[1].Status}
		slices.Sort(statuses)
		if !slices.Equal(statuses, []string{schema.HookAsync, schema.HookOK}) {
			t.Fatalf("statuses %v, want one ok and one async", statuses)
		}
		if e := c.next(t); e.Outcome.Status != schema.HookOK || e.Hook.Event != PreToolUse {
			t.Errorf("the async hook's end: %+v", e)
		}
		p.take(t, 2)
	})
}
