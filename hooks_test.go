package reprise_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/schema"
)

// scripts is the absolute path of testdata/hooks.
func scripts(t *testing.T) string {
	t.Helper()
	return testkit.Abs(t, filepath.Join("testdata", "hooks"))
}

// writeSettings writes a Claude Code settings file whose text has HOOKS
// replaced by the scripts directory, and returns its path.
func writeSettings(t *testing.T, name, text string) string {
	t.Helper()
	return testkit.WriteFile(t, filepath.Join(t.TempDir(), name), strings.ReplaceAll(text, "HOOKS", scripts(t)))
}

// hookEngine opens an Engine whose registry holds the hooks of the given
// settings files and plugin directories.
func hookEngine(t *testing.T, settings, plugins []string) *reprise.Engine {
	t.Helper()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	hooks, errs := hookexec.LoadAll(settings, plugins)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := e.Hooks().AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	return e
}

// restoreAB starts session a, then restores b, and returns b's restore. The
// sessions' working directories are a/ and b/ under root.
func restoreAB(t *testing.T, e *reprise.Engine, root string) *reprise.Transition {
	t.Helper()
	ctx := context.Background()
	for id, texts := range map[string][]string{"a": {"hello"}, "b": {"question", "answer", "the last thing said"}} {
		dir := filepath.Join(root, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := e.CreateSession(ctx, id, dir); err != nil {
			t.Fatal(err)
		}
		for _, text := range texts {
			if _, err := e.Append(ctx, id, reprise.Text("user", text)); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	r, err := a.Restore(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func lastText(t *testing.T, e *reprise.Engine, id string) string {
	t.Helper()
	msgs, err := e.Conversation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return msgs[len(msgs)-1].Content[0].Text
}

const sessionStartOnly = `{"hooks": {"SessionStart": [{"matcher": "resume", "hooks": [{"type": "command", "command": "COMMAND"}]}]}}`

// Each script's output, through a real restore, becomes the recorded
// outcome and the injected context that Claude Code would make of it.
func TestCommandHookOutputs(t *testing.T) {
	cases := []struct {
		name    string
		command string
		status  string
		exit    int
		context string // "" means nothing is injected
		stderr  string
	}{
		{"plain stdout", "HOOKS/plain.sh", schema.HookOK, 0, "plain context", ""},
		{"json", "HOOKS/json.sh", schema.HookOK, 0, "json context", ""},
		{"exit 1", "HOOKS/fail.sh 1", schema.HookFailed, 1, "", "failing on purpose with 1"},
		{"exit 2", "HOOKS/fail.sh 2", schema.HookFailed, 2, "", "failing on purpose with 2"},
		{"missing interpreter", "HOOKS/missing-interpreter.sh", schema.HookFailed, 127, "", "not found"},
		{"brace garbage", "HOOKS/garbage.sh", schema.HookOK, 0, "{not json, just braces", ""},
		{"invalid utf-8", "HOOKS/bad-utf8.sh", schema.HookOK, 0, "\ufffd latin1 caf\ufffd", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			settings := writeSettings(t, "settings.json", strings.Replace(sessionStartOnly, "COMMAND", c.command, 1))
			e := hookEngine(t, []string{settings}, nil)
			r := restoreAB(t, e, t.TempDir())
			if len(r.StartOutcomes) != 1 {
				t.Fatalf("outcomes = %+v", r.StartOutcomes)
			}
			o := r.StartOutcomes[0]
			if o.Status != c.status || o.ExitCode != c.exit || !strings.Contains(o.Stderr, c.stderr) || o.Source != settings {
				t.Fatalf("outcome = %+v", o)
			}
			if r.Context != c.context {
				t.Fatalf("context = %q, want %q", r.Context, c.context)
			}
			if c.context == "" {
				if r.InjectedUUID != "" || lastText(t, e, "b") != "the last thing said" {
					t.Fatal("a failed hook injected something")
				}
				return
			}
			if want := "<system-reminder>\nSessionStart hook additional context: " + c.context + "\n</system-reminder>"; lastText(t, e, "b") != want {
				t.Fatalf("injected %q", lastText(t, e, "b"))
			}
		})
	}
}

// A hook that sleeps past its timeout while its own child sleeps too is
// killed with its whole process group; the restore completes without it.
func TestHungHookIsKilledWithItsChildren(t *testing.T) {
	pgidFile := filepath.Join(t.TempDir(), "pgid")
	settings := writeSettings(t, "settings.json", `{"hooks": {"SessionStart": [{"hooks": [
		{"type": "command", "command": "HOOKS/hang.sh `+pgidFile+`", "timeout": 0.3},
		{"type": "command", "command": "HOOKS/plain.sh"}]}]}}`)
	e := hookEngine(t, []string{settings}, nil)
	began := time.Now()
	r := restoreAB(t, e, t.TempDir())
	if took := time.Since(began); took > 20*time.Second {
		t.Fatalf("restore took %s", took)
	}
	if o := r.StartOutcomes[0]; o.Status != schema.HookTimedOut {
		t.Fatalf("hung hook outcome = %+v", o)
	}
	if r.Context != "plain context" {
		t.Fatalf("context = %q, want the other hook's", r.Context)
	}
	data, err := os.ReadFile(pgidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pgid int
	for _, c := range strings.TrimSpace(string(data)) {
		pgid = pgid*10 + int(c-'0')
	}
	if !groupGone(pgid) {
		t.Fatalf("process group %d still has live processes", pgid)
	}
}

// groupGone reports whether no live (non-zombie) process is in group pgid.
// Killed processes may linger as zombies until their parent reaps them.
func groupGone(pgid int) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if liveInGroup(pgid) == 0 {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func liveInGroup(pgid int) int {
	entries, _ := os.ReadDir("/proc")
	live := 0
	for _, ent := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 2 && fields[2] == itoa(pgid) && fields[0] != "Z" {
			live++
		}
	}
	return live
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// 5 MB of output: the context is saved to a file next to the transcript and
// a preview with its path is injected instead.
func TestHugeOutputIsSpilledToAFile(t *testing.T) {
	settings := writeSettings(t, "settings.json", strings.Replace(sessionStartOnly, "COMMAND", "HOOKS/big.sh", 1))
	e := hookEngine(t, []string{settings}, nil)
	r := restoreAB(t, e, t.TempDir())
	o := r.StartOutcomes[0]
	if o.Status != schema.HookOK || o.Dropped != 5000000-hookexec.MaxCapture {
		t.Fatalf("outcome = %+v", o)
	}
	if len(r.Context) > 3000 {
		t.Fatalf("context of %d bytes was injected whole", len(r.Context))
	}
	dir := filepath.Dir(e.TranscriptPath("b"))
	i := strings.Index(r.Context, dir)
	if i < 0 {
		t.Fatalf("context %q does not name a file in %s", r.Context[len(r.Context)-200:], dir)
	}
	path := strings.TrimRight(strings.Fields(r.Context[i:])[0], "].")
	saved, err := os.ReadFile(path)
	if err != nil || len(saved) != hookexec.MaxCapture {
		t.Fatalf("spilled file %s: %d bytes, %v", path, len(saved), err)
	}
}

// The same command in two settings files runs once; stdin carries Claude
// Code's fields; the matchers select by source and reason.
func TestSettingsMergeMatchersAndStdin(t *testing.T) {
	side := filepath.Join(t.TempDir(), "runs")
	user := writeSettings(t, "user.json", `{"hooks": {
		"SessionStart": [{"matcher": "startup|resume", "hooks": [{"type": "command", "command": "HOOKS/record.sh both `+side+`"}]}],
		"SessionEnd": [{"matcher": "resume", "hooks": [{"type": "command", "command": "HOOKS/record.sh end `+side+`"}]}]}}`)
	project := writeSettings(t, "project.json", `{"hooks": {
		"SessionStart": [
			{"matcher": "resume", "hooks": [{"type": "command", "command": "HOOKS/record.sh both `+side+`"}]},
			{"matcher": "^st.*p$", "hooks": [{"type": "command", "command": "HOOKS/record.sh regex `+side+`"}]},
			{"matcher": "clear", "hooks": [{"type": "command", "command": "HOOKS/record.sh never `+side+`"}]}]},
		"permissions": {"allow": []}, "statusLine": {"type": "command"}}`)
	e := hookEngine(t, []string{user, project}, nil)
	root := t.TempDir()
	restoreAB(t, e, root)
	data, err := os.ReadFile(side)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	count := map[string]int{}
	for _, l := range lines {
		count[strings.Fields(l)[0]]++
	}
	// both: once at startup and once at resume despite two files; regex:
	// startup only; end: once; never: never.
	if count["both"] != 2 || count["regex"] != 1 || count["end"] != 1 || count["never"] != 0 {
		t.Fatalf("runs = %v\n%s", count, data)
	}
	transcript := e.TranscriptPath("b")
	wantStart := `both {"session_id":"b","transcript_path":"` + transcript + `","cwd":"` + root + `/b","hook_event_name":"SessionStart","source":"resume"}`
	wantEnd := `end {"session_id":"a","transcript_path":"` + e.TranscriptPath("a") + `","cwd":"` + root + `/a","hook_event_name":"SessionEnd","reason":"resume","end_source":"resume"}`
	if !strings.Contains(string(data), wantStart) || !strings.Contains(string(data), wantEnd) {
		t.Fatalf("stdin not as Claude Code sends it:\n%s\nwant lines\n%s\n%s", data, wantStart, wantEnd)
	}
}

// An invalid matcher matches nothing and is reported; its file's other
// hooks, and the other files, still load.
func TestInvalidMatcherMatchesNothingAndIsReported(t *testing.T) {
	bad := writeSettings(t, "bad.json", `{"hooks": {"SessionStart": [{"matcher": "(resume", "hooks": [{"type": "command", "command": "true"}]}]}}`)
	good := writeSettings(t, "good.json", strings.Replace(sessionStartOnly, "COMMAND", "HOOKS/plain.sh", 1))
	hooks, errs := hookexec.LoadAll([]string{bad, good}, nil)
	if len(errs) != 1 || !errors.Is(errs[0], hookexec.ErrBadMatcher) || !strings.Contains(errs[0].Error(), bad) {
		t.Fatalf("errors = %v", errs)
	}
	if len(hooks) != 2 || hooks[0].Matcher.Match("resume") || !hooks[1].Matcher.Match("resume") {
		t.Fatalf("want the bad matcher's hook matching nothing and the good file's hook: %v", hooks)
	}
}

func TestPluginHookGetsItsRoot(t *testing.T) {
	plugin := t.TempDir()
	if err := os.MkdirAll(filepath.Join(plugin, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"root=$CLAUDE_PLUGIN_ROOT project=$CLAUDE_PROJECT_DIR\"\n"
	if err := os.WriteFile(filepath.Join(plugin, "hooks", "context.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := `{"description": "test plugin", "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/context.sh", "timeout": 10}]}]}}`
	if err := os.WriteFile(filepath.Join(plugin, "hooks", "hooks.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	e := hookEngine(t, nil, []string{plugin})
	ctx := context.Background()
	if _, err := e.CreateSession(ctx, "p", project); err != nil {
		t.Fatal(err)
	}
	a := testkit.Agent(t, e, "ide")
	r, err := a.Start(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if want := "root=" + plugin + " project=" + project; r.Context != want {
		t.Fatalf("context = %q, want %q", r.Context, want)
	}
	if src := r.StartOutcomes[0].Source; src != "plugin:"+plugin {
		t.Fatalf("source = %q", src)
	}
}

// transcript_path names a real Claude Code transcript that holds the
// session's messages before the hook starts.
func TestHookReadsTheTranscript(t *testing.T) {
	settings := writeSettings(t, "settings.json", strings.Replace(sessionStartOnly, "COMMAND", "HOOKS/transcript.sh", 1))
	e := hookEngine(t, []string{settings}, nil)
	r := restoreAB(t, e, t.TempDir())
	if r.Context != "transcript has 3 lines, last: the last thing said" {
		t.Fatalf("context = %q", r.Context)
	}
	// The transcript grows by appending: the injected message is added on
	// the next sync without rewriting the lines already there.
	before, _ := os.ReadFile(e.TranscriptPath("b"))
	a := testkit.Agent(t, e, "ide")
	ctx := context.Background()
	a.Restore(ctx, "a")
	r, err := a.Restore(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Context, "transcript has 4 lines, last: <system-reminder>") {
		t.Fatalf("second context = %q", r.Context)
	}
	after, _ := os.ReadFile(e.TranscriptPath("b"))
	if !strings.HasPrefix(string(after), string(before)) {
		t.Fatal("transcript was rewritten instead of appended to")
	}
	// A transcript removed behind the Engine's back is written whole again.
	if err := os.Remove(e.TranscriptPath("b")); err != nil {
		t.Fatal(err)
	}
	a.Restore(ctx, "a")
	if r, err = a.Restore(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Context, "transcript has 5 lines, last: <system-reminder>") {
		t.Fatalf("context after removal = %q", r.Context)
	}
}

func TestHookWritesEnvFile(t *testing.T) {
	settings := writeSettings(t, "settings.json", strings.Replace(sessionStartOnly, "COMMAND", "HOOKS/envfile.sh", 1))
	e := hookEngine(t, []string{settings}, nil)
	r := restoreAB(t, e, t.TempDir())
	if r.Env != "export REPRISE_TEST_VAR=from-hook\n" {
		t.Fatalf("env = %q", r.Env)
	}
}

// Session-scoped hooks: added at run time, deduplicated, removable by id,
// and dropped when their session ends.
func TestSessionScopedHooks(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	for _, id := range []string{"a", "b"} {
		if _, err := e.CreateSession(ctx, id, t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := hookexec.ParseMatcher("")
	var c calls
	endHook := hookexec.Hook{Event: hookexec.SessionEnd, Name: "scoped-end", Matcher: m,
		Body: hookexec.SessionEndFunc(func(_ context.Context, in hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
			c.add("scoped end " + in.SessionID)
			return hookexec.SessionEndOutput{}, nil
		})}
	id1, err := e.AddSessionHook("a", endHook)
	if err != nil {
		t.Fatal(err)
	}
	// Function hooks are never merged, even with one name: each is its own.
	id2, _ := e.AddSessionHook("a", endHook)
	if id1 == id2 || len(e.SessionHooks("a", hookexec.SessionEnd)) != 2 || !e.RemoveSessionHook("a", id2) {
		t.Fatalf("a function hook added twice got ids %s and %s", id1, id2)
	}
	cmd := hookexec.Hook{Event: hookexec.SessionStart, Matcher: m, Body: hookexec.Command{Line: scripts(t) + "/plain.sh"}}
	cmdID, _ := e.AddSessionHook("b", cmd)
	removed, _ := e.AddSessionHook("b", hookexec.Hook{Event: hookexec.SessionStart, Matcher: m, Body: hookexec.Command{Line: scripts(t) + "/json.sh"}})
	if !e.RemoveSessionHook("b", removed) || e.RemoveSessionHook("b", removed) {
		t.Fatal("remove by id did not work exactly once")
	}
	hooks := e.HooksFor(ctx, hookexec.SessionStart, "resume", "b")
	if len(hooks) != 1 || hooks[0].Source != "session" || hooks[0].CommandLine() != cmd.CommandLine() {
		t.Fatalf("HooksFor = %+v", hooks)
	}
	a := testkit.Agent(t, e, "ide")
	a.Start(ctx, "a")
	r, err := a.Restore(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.get(); len(got) != 1 || got[0] != "scoped end a" || r.Context != "plain context" {
		t.Fatalf("scoped runs %q, context %q", got, r.Context)
	}
	if len(e.HooksFor(ctx, hookexec.SessionEnd, "resume", "a")) != 0 {
		t.Fatal("a's hooks survived its SessionEnd")
	}
	if e.RemoveSessionHook("a", id1) {
		t.Fatal("a dropped hook could still be removed")
	}
	_ = cmdID
}

// With ClaudeSettings, each hook run reads the user's and the session's
// project's settings, so hooks follow the project a session lives in.
func TestClaudeSettingsFollowTheSessionsProject(t *testing.T) {
	ctx := context.Background()
	home, project, other := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	write := func(dir, name, text string) string {
		t.Helper()
		path := filepath.Join(dir, ".claude", name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(text, "HOOKS", scripts(t))), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	user := write(home, "settings.json", strings.Replace(sessionStartOnly, "COMMAND", "HOOKS/plain.sh", 1))
	shared := write(project, "settings.json", strings.Replace(sessionStartOnly, "COMMAND", "HOOKS/json.sh", 1))
	write(project, "settings.local.json", strings.Replace(sessionStartOnly, "COMMAND", "HOOKS/plain.sh", 1)) // the user's again
	e := testkit.OpenEngine(t, filepath.Join(t.TempDir(), "r.db"), reprise.Options{ClaudeSettings: true})
	e.Hooks().OnSessionStart("func", "", func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		return hookexec.SessionStartOutput{AdditionalContext: "from Go"}, nil
	})
	for id, dir := range map[string]string{"in-project": project, "elsewhere": other} {
		if _, err := e.CreateSession(ctx, id, dir); err != nil {
			t.Fatal(err)
		}
	}
	var sources []string
	for _, h := range e.HooksFor(ctx, hookexec.SessionStart, "resume", "in-project") {
		sources = append(sources, h.Source)
	}
	if want := []string{user, shared, "function"}; !reflect.DeepEqual(sources, want) {
		t.Fatalf("sources = %q, want %q", sources, want)
	}
	a := testkit.Agent(t, e, "ide")
	a.Start(ctx, "elsewhere")
	r, err := a.Restore(ctx, "in-project")
	if err != nil {
		t.Fatal(err)
	}
	if r.Context != "plain context\njson context\nfrom Go" {
		t.Fatalf("context = %q", r.Context)
	}
	r, _ = a.Restore(ctx, "elsewhere")
	if r.Context != "plain context\nfrom Go" {
		t.Fatalf("context outside the project = %q", r.Context)
	}
}
