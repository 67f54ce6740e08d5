package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// settingsFile writes a settings file under the cli's directory in which
// each event runs the given commands, and returns its path.
func settingsFile(c *cli, name string, events map[string][]string) string {
	c.t.Helper()
	hooks := map[string]any{}
	for ev, commands := range events {
		var list []any
		for _, cmd := range commands {
			list = append(list, map[string]any{"type": "command", "command": cmd})
		}
		hooks[ev] = []any{map[string]any{"hooks": list}}
	}
	b, _ := json.Marshal(map[string]any{"hooks": hooks})
	return c.writeFile(name, string(b))
}

// withFunctionHooks makes every store the commands open for writing, until
// the test ends, register hooks through add.
func withFunctionHooks(t *testing.T, add func(*reprise.Engine) error) {
	t.Helper()
	addFunctionHooks = add
	t.Cleanup(func() { addFunctionHooks = nil })
}

// logInputs reads the hook inputs record.sh appended to log, one object a
// line.
func logInputs(t *testing.T, log string) []map[string]any {
	t.Helper()
	data, _ := os.ReadFile(log)
	var out []map[string]any
	for line := range strings.Lines(string(data)) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var in map[string]any
		if err := json.Unmarshal([]byte(line), &in); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out = append(out, in)
	}
	return out
}

// agentEvents returns the payloads of the agent's events of type typ.
func agentEvents(c *cli, agent, typ string) []map[string]any {
	c.t.Helper()
	var out []map[string]any
	for line := range strings.Lines(c.ok("--json", "log", "--agent", agent)) {
		var ev eventJSON
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			c.t.Fatal(err)
		}
		if string(ev.Type) == typ {
			out = append(out, ev.Payload)
		}
	}
	return out
}

// The initial prompt given to start and new --agent is recorded, reported
// and reaches Go function hooks; without --agent, new refuses it.
func TestInitialPrompt(t *testing.T) {
	c := newCLI(t)
	var mu sync.Mutex
	var seen []string
	withFunctionHooks(t, func(e *reprise.Engine) error {
		return e.Hooks().OnSessionStart("initial", "", func(_ context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, string(in.Source)+":"+in.InitialPrompt)
			return hookexec.SessionStartOutput{}, nil
		})
	})
	c.fails(exitUsage, "new", "--prompt", "hello")
	c.session("s")
	var rep restoreJSON
	c.okJSON(&rep, "start", "--agent", "ide", "--no-default-settings", "--prompt", "Fix the flaky test", "s")
	if rep.InitialPrompt != "Fix the flaky test" {
		t.Fatalf("start --json = %+v", rep)
	}
	out := c.ok("new", "--agent", "ide", "--no-default-settings", "--id", "n", "--prompt", "Add retries")
	if !strings.Contains(out, "initial prompt: Add retries") {
		t.Fatalf("new --agent --prompt printed:\n%s", out)
	}
	if want := []string{"startup:Fix the flaky test", "new:Add retries"}; strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("function hooks saw %q, want %q", seen, want)
	}
	var prompts []any
	for _, p := range agentEvents(c, "ide", "SessionLoaded") {
		prompts = append(prompts, p["prompt"])
	}
	if len(prompts) != 2 || prompts[0] != "Fix the flaky test" || prompts[1] != "Add retries" {
		t.Fatalf("SessionLoaded prompts = %v", prompts)
	}
	// The initial prompt is not a message of the session.
	if out := c.ok("replay", "n"); strings.Contains(out, "Add retries") {
		t.Fatalf("the initial prompt was appended:\n%s", out)
	}
}

// stop --reason is recorded, reported and reaches Stop function hooks.
func TestStopReason(t *testing.T) {
	c := newCLI(t)
	var reason string
	withFunctionHooks(t, func(e *reprise.Engine) error {
		return e.Hooks().OnStop("why", func(_ context.Context, in hookexec.StopInput) (hookexec.StopOutput, error) {
			reason = in.StopReason
			return hookexec.StopOutput{}, nil
		})
	})
	c.session("s", "hello")
	c.ok("start", "--agent", "ide", "--no-default-settings", "s")
	var res struct {
		Blocked    bool          `json:"blocked"`
		StopReason string        `json:"stop_reason"`
		Hooks      []outcomeJSON `json:"hooks"`
	}
	c.okJSON(&res, "stop", "--agent", "ide", "--no-default-settings", "--reason", "end_turn")
	if res.Blocked || res.StopReason != "end_turn" || len(res.Hooks) != 1 || reason != "end_turn" {
		t.Fatalf("stop --json = %+v; hook saw %q", res, reason)
	}
	if p := agentEvents(c, "ide", "StopHookStarted"); len(p) != 1 || p[0]["stopreason"] != "end_turn" {
		t.Fatalf("StopHookStarted = %v", p)
	}
}

// compact passes --trigger and --instructions to PreCompact command hooks,
// and a PreCompact hook that blocks fails the command with its reason,
// compacting nothing.
func TestCompactTriggerAndBlock(t *testing.T) {
	c := newCLI(t)
	log := filepath.Join(c.dir, "precompact.log")
	settings := settingsFile(c, "precompact.json", map[string][]string{
		"PreCompact": {testkit.Script(t, "record.sh") + " " + log, testkit.Script(t, "guard.sh")},
	})
	flags := []string{"--agent", "ide", "--no-default-settings", "--settings", settings}
	with := func(args ...string) []string { return append(args, flags...) }
	c.session("s", "question", "answer")
	c.ok(with("start", "s")...)

	c.fails(exitUsage, with("compact", "--trigger", "sometimes", "summary")...)
	var rep restoreJSON
	c.okJSON(&rep, with("compact", "--trigger", "auto", "--instructions", "keep the decisions", "we talked")...)
	if rep.PreCompact == nil || rep.PreCompact.Trigger != "auto" || rep.PreCompact.Instructions != "keep the decisions" ||
		rep.PreCompact.Blocked || len(rep.PreCompact.Hooks) != 2 || rep.SessionStart == nil || rep.Source != "compact" {
		t.Fatalf("compact --json = %+v", rep)
	}
	in := logInputs(t, log)
	if len(in) != 1 || in[0]["hook_event_name"] != "PreCompact" || in[0]["trigger"] != "auto" || in[0]["custom_instructions"] != "keep the decisions" {
		t.Fatalf("PreCompact hook read %v", in)
	}

	// Blocked: exit 1 naming the reason; the JSON report records the block.
	before := c.ok("replay", "--format", "claude", "s")
	r := c.fails(exitFailure, with("--json", "compact", "--instructions", "then deploy", "not now")...)
	if !strings.Contains(r.stderr, "compaction blocked by a PreCompact hook: no deploys on Friday") {
		t.Fatalf("stderr = %s", r.stderr)
	}
	var blocked restoreJSON
	if err := json.Unmarshal([]byte(r.stdout), &blocked); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if blocked.PreCompact == nil || !blocked.PreCompact.Blocked || blocked.PreCompact.Reason != "no deploys on Friday" ||
		blocked.PreCompact.Trigger != "manual" || blocked.SessionStart != nil || blocked.PreCompact.Hooks[1].ExitCode != 2 {
		t.Fatalf("blocked compact --json = %+v", blocked)
	}
	if after := c.ok("replay", "--format", "claude", "s"); after != before {
		t.Fatalf("a blocked compaction changed the conversation")
	}
	// Text: the PreCompact hooks and the block on stdout, the error on stderr.
	r = c.fails(exitFailure, with("compact", "--instructions", "deploy", "not now")...)
	if !strings.Contains(r.stdout, "PreCompact hooks on s (trigger manual):") || !strings.Contains(r.stdout, "compaction blocked: no deploys on Friday") {
		t.Fatalf("blocked compact printed:\n%s", r.stdout)
	}
	// The hook that blocked is listed as block, with its reason, not as ok.
	if !regexp.MustCompile(`\n  block +\d+ms  \S*guard\.sh: exit 2.*\n      reason: no deploys on Friday\n`).MatchString(r.stdout) {
		t.Fatalf("the blocking hook is not listed as block:\n%s", r.stdout)
	}
	if out := c.ok("audit"); !strings.HasPrefix(out, "ok:") {
		t.Fatalf("audit: %s", out)
	}
}

// What SessionEnd hooks answer (a summary, cleanup actions, suppressOutput)
// and SessionStart hooks' modifiedConfig are in every report of them; a
// SessionEnd outcome always has the keys.
func TestHookAnswersReported(t *testing.T) {
	c := newCLI(t)
	withFunctionHooks(t, func(e *reprise.Engine) error {
		err := e.Hooks().OnSessionStart("config", "", func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			return hookexec.SessionStartOutput{ModifiedConfig: map[string]any{"model": "small", "tools": []any{"bash"}}}, nil
		})
		if err != nil {
			return err
		}
		return e.Hooks().OnSessionEnd("wrap-up", "", func(_ context.Context, in hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
			return hookexec.SessionEndOutput{SessionSummary: "left " + in.SessionID, CleanupActions: []string{"rm -rf /tmp/scratch"}, SuppressOutput: true}, nil
		})
	})
	settings := settingsFile(c, "end.json", map[string][]string{"SessionEnd": {"true"}})
	flags := []string{"--agent", "ide", "--no-default-settings", "--settings", settings}
	with := func(args ...string) []string { return append(args, flags...) }
	c.session("a", "hello")
	c.session("b", "hi")
	c.ok(with("start", "a")...)

	raw := c.ok(with("--json", "resume", "b")...)
	var rep restoreJSON
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		t.Fatal(err)
	}
	end, start := rep.SessionEnd, rep.SessionStart
	if end == nil || len(end.Hooks) != 2 || end.SuppressOutput == nil || !*end.SuppressOutput {
		t.Fatalf("session_end = %+v", end)
	}
	fn, cmd := end.Hooks[0], end.Hooks[1]
	if *fn.SessionSummary != "left a" || strings.Join(*fn.CleanupActions, ",") != "rm -rf /tmp/scratch" || !*fn.SuppressOutput {
		t.Fatalf("function SessionEnd outcome = %+v", fn)
	}
	if cmd.Name != "true" || cmd.SessionSummary == nil || *cmd.SessionSummary != "" || cmd.CleanupActions == nil || len(*cmd.CleanupActions) != 0 {
		t.Fatalf("command SessionEnd outcome = %+v", cmd)
	}
	if !strings.Contains(raw, `"cleanupActions":[]`) || !strings.Contains(raw, `"cleanupActions":["rm -rf /tmp/scratch"]`) {
		t.Fatalf("raw JSON: %s", raw)
	}
	if len(start.Hooks) != 1 || string(*start.Hooks[0].ModifiedConfig) != `{"model":"small","tools":["bash"]}` {
		t.Fatalf("session_start = %+v", start)
	}
	var merged map[string]any
	if err := json.Unmarshal(rep.ModifiedConfig, &merged); err != nil || merged["model"] != "small" {
		t.Fatalf("modifiedConfig = %s (%v)", rep.ModifiedConfig, err)
	}

	// end --json reports the same keys; the text mentions the summary and
	// the cleanup action.
	out := c.ok(with("end", "--reason", "complete")...)
	if !strings.Contains(out, "session summary: left b") || !strings.Contains(out, "cleanup action (for the host): rm -rf /tmp/scratch") ||
		!strings.Contains(out, "a hook asked to suppress the output of the end") {
		t.Fatalf("end printed:\n%s", out)
	}
	out = c.ok(with("start", "a")...)
	_ = out
	out = c.ok(with("resume", "b")...)
	if !strings.Contains(out, `modified config: {"model":"small","tools":["bash"]}`) {
		t.Fatalf("resume printed:\n%s", out)
	}
}
