package hookexec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/reprise-dev/reprise/schema"
)

// hookCommand returns a shell command that runs the test script name with
// args.
func hookCommand(t *testing.T, name string, args ...string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", "hooks", name))
	if err != nil {
		t.Fatal(err)
	}
	parts := []string{shellQuote(path)}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// testEnv is the environment of the command tests: a project and spill
// directory of their own, and NoSupervisor when the tests run bare (see
// TestUnsupervisedCommandsBehaveTheSame).
func testEnv(t *testing.T) CommandEnv {
	return CommandEnv{
		ProjectDir: t.TempDir(),
		SpillDir:   filepath.Join(t.TempDir(), "spill"),
		SpillName:  "sess-1",
		supervisor: testSupervisor,
	}
}

// runTestHook runs command with a generous timeout and no stdin.
func runTestHook(t *testing.T, command string, env CommandEnv) (schema.HookOutcome, string) {
	t.Helper()
	h := Hook{Event: SessionStart, Name: "test-hook", Source: "settings", Body: Command{Line: command}}
	return runText(context.Background(), h, nil, env, 10*time.Second)
}

func TestCommandContextFromStdout(t *testing.T) {
	t.Parallel()
	cases := []struct {
		script string
		want   string
	}{
		{"plain.sh", "plain context\nsecond line"},
		{"json_specific.sh", "specific context"},
		{"json_top.sh", "camel context"},
		{"json_snake.sh", "snake context"},
		{"json_garbage.sh", "{not json, just braces}"},
		{"json_none.sh", ""},
	}
	for _, c := range cases {
		t.Run(c.script, func(t *testing.T) {
			t.Parallel()
			o, text := runTestHook(t, hookCommand(t, c.script), testEnv(t))
			if o.Status != schema.HookOK || o.Error != "" {
				t.Fatalf("outcome %+v, want ok", o)
			}
			if text != c.want {
				t.Fatalf("context %q, want %q", text, c.want)
			}
			if o.Name != "test-hook" || o.Source != "settings" || o.ContextLen != len(c.want) || o.Duration <= 0 {
				t.Fatalf("outcome %+v", o)
			}
		})
	}
}

func TestCommandNonZeroExitFails(t *testing.T) {
	t.Parallel()
	for _, code := range []int{1, 2, 3} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			o, text := runTestHook(t, hookCommand(t, "fail.sh", strconv.Itoa(code)), testEnv(t))
			if o.Status != schema.HookFailed || o.ExitCode != code || text != "" || o.ContextLen != 0 {
				t.Fatalf("outcome %+v, context %q", o, text)
			}
			if want := "exit status " + strconv.Itoa(code); o.Error != want {
				t.Fatalf("error %q, want %q", o.Error, want)
			}
			if o.Stderr != "something went wrong" {
				t.Fatalf("stderr %q", o.Stderr)
			}
		})
	}
}

func TestCommandNotFoundExits127(t *testing.T) {
	t.Parallel()
	o, text := runTestHook(t, "reprise-no-such-command-here --flag", testEnv(t))
	if o.Status != schema.HookFailed || o.ExitCode != 127 || text != "" {
		t.Fatalf("outcome %+v, context %q", o, text)
	}
	if !strings.Contains(o.Stderr, "not found") {
		t.Fatalf("stderr %q", o.Stderr)
	}
}

func TestCommandSignalDeathFails(t *testing.T) {
	t.Parallel()
	o, _ := runTestHook(t, "kill -TERM $$", testEnv(t))
	if o.Status != schema.HookFailed || o.ExitCode != 128+int(syscall.SIGTERM) || o.Error != "signal: terminated" {
		t.Fatalf("outcome %+v", o)
	}
}

func TestCommandThatCannotStartFails(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env.ProjectDir = filepath.Join(env.ProjectDir, "missing")
	o, _ := runTestHook(t, "echo hi", env)
	if o.Status != schema.HookFailed || !strings.Contains(o.Error, "no such file or directory") {
		t.Fatalf("missing working dir: outcome %+v", o)
	}

	h := Hook{Name: "fish", Body: Command{Line: "echo hi", Shell: "fish"}}
	o, _ = runText(context.Background(), h, nil, testEnv(t), time.Second)
	if o.Status != schema.HookFailed || !strings.Contains(o.Error, "unsupported shell") {
		t.Fatalf("unknown shell: outcome %+v", o)
	}
}

func TestCommandReceivesExactStdin(t *testing.T) {
	t.Parallel()
	saved := filepath.Join(t.TempDir(), "stdin.json")
	stdin := []byte(`{"session_id":"abc-123","hook_event_name":"SessionStart","source":"resume"}` + "\n")
	h := Hook{Name: "stdin", Body: Command{Line: hookCommand(t, "stdin_echo.sh", saved)}}
	o, text := runText(context.Background(), h, stdin, testEnv(t), 10*time.Second)
	if o.Status != schema.HookOK || text != "session is abc-123" {
		t.Fatalf("outcome %+v, context %q", o, text)
	}
	got, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, stdin) {
		t.Fatalf("hook read %q, want %q", got, stdin)
	}
}

func TestCommandIgnoringLargeStdinSucceeds(t *testing.T) {
	t.Parallel()
	stdin := bytes.Repeat([]byte("y"), 1<<20)
	h := Hook{Name: "ignore", Body: Command{Line: hookCommand(t, "ignore_stdin.sh")}}
	o, text := runText(context.Background(), h, stdin, testEnv(t), 10*time.Second)
	if o.Status != schema.HookOK || o.Error != "" || text != "did not read stdin" {
		t.Fatalf("outcome %+v, context %q", o, text)
	}
	if d := time.Duration(o.Duration); d >= outputWaitDelay {
		t.Fatalf("took %s", d)
	}
}

// readPids reads the "pgid pid childpid" line that sleeper.sh writes.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("sleeper did not report its pids: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %q: %v", data, err)
		}
		pids = append(pids, n)
	}
	if len(pids) != 3 {
		t.Fatalf("pid file %q", data)
	}
	return pids
}

// liveInGroup reports whether a process other than a zombie is in process
// group pgid. Zombies are dead processes not yet reaped by their new parent.
func liveInGroup(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return false
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command name: state, ppid, pgrp.
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			return true
		}
	}
	return false
}

func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); liveInGroup(pgid); {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d is still alive", pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCommandTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	h := Hook{Name: "sleeper", Body: Command{Line: hookCommand(t, "sleeper.sh", pidFile)}}
	began := time.Now()
	o, text := runText(context.Background(), h, nil, testEnv(t), 300*time.Millisecond)
	if elapsed := time.Since(began); elapsed > 2*time.Second {
		t.Fatalf("returned after %s", elapsed)
	}
	if o.Status != schema.HookTimedOut || text != "" || !strings.Contains(o.Error, "300ms") {
		t.Fatalf("outcome %+v, context %q", o, text)
	}
	pids := readPids(t, pidFile)
	assertGroupGone(t, pids[0])
}

func TestCommandCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	h := Hook{Name: "sleeper", Body: Command{Line: hookCommand(t, "sleeper.sh", pidFile)}}
	o, text := runText(ctx, h, nil, testEnv(t), time.Minute)
	if o.Status != schema.HookCancelled || text != "" || o.Error != context.Canceled.Error() {
		t.Fatalf("outcome %+v, context %q", o, text)
	}
	if d := time.Duration(o.Duration); d > 2*time.Second {
		t.Fatalf("returned after %s", d)
	}
	assertGroupGone(t, readPids(t, pidFile)[0])
}

func TestCommandNotStartedWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	marker := filepath.Join(t.TempDir(), "ran")
	o, _ := runText(ctx, Hook{Name: "late", Body: Command{Line: "touch " + shellQuote(marker)}}, nil, testEnv(t), time.Minute)
	if o.Status != schema.HookCancelled {
		t.Fatalf("outcome %+v", o)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("hook ran: %v", err)
	}
}

func TestCommandDoesNotWaitForBackgroundChild(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Cleanup(func() {
		if data, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	h := Hook{Name: "daemon", Body: Command{Line: hookCommand(t, "daemon.sh", pidFile)}}
	began := time.Now()
	o, text := runText(context.Background(), h, nil, testEnv(t), time.Minute)
	elapsed := time.Since(began)
	if o.Status != schema.HookOK || text != "daemon started" {
		t.Fatalf("outcome %+v, context %q", o, text)
	}
	if elapsed > outputWaitDelay+1500*time.Millisecond {
		t.Fatalf("waited %s for a background child", elapsed)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("background child %d was killed: %v", pid, err)
	}
}

// Not parallel: it measures allocations.
func TestCommandBoundsCapturedOutput(t *testing.T) {
	env := testEnv(t)
	h := Hook{Name: "big", Body: Command{Line: hookCommand(t, "big_output.sh")}}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	o, text := runText(context.Background(), h, nil, env, time.Minute)
	runtime.ReadMemStats(&after)
	if o.Status != schema.HookOK {
		t.Fatalf("outcome %+v", o)
	}
	if want := int64(5<<20-MaxCapture) + int64(2<<20-MaxCapture); o.Dropped != want {
		t.Fatalf("dropped %d, want %d", o.Dropped, want)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d bytes", alloc)
	// Capturing everything would allocate at least the 7 MiB written, and
	// with its growth and copies far more.
	if alloc > 8<<20 {
		t.Fatalf("allocated %d bytes for 7 MiB of output", alloc)
	}
	path := spilledPath(t, text)
	if fi, err := os.Stat(path); err != nil || fi.Size() != MaxCapture {
		t.Fatalf("spilled file: %v, %v", fi, err)
	}
	if utf8.RuneCountInString(text) > previewChars+200 || o.ContextLen != len(text) {
		t.Fatalf("context of %d bytes, outcome %+v", len(text), o)
	}
}

var savedTo = regexp.MustCompile(`\n\.\.\. \[full output: (\d+) characters, saved to (.+)\]$`)

// spilledPath returns the file a preview names.
func spilledPath(t *testing.T, preview string) string {
	t.Helper()
	m := savedTo.FindStringSubmatch(preview)
	if m == nil {
		t.Fatalf("context is not a preview: %.100q...", preview)
	}
	return m[2]
}

func TestCommandInvalidUTF8BecomesValid(t *testing.T) {
	t.Parallel()
	o, text := runTestHook(t, hookCommand(t, "invalid_utf8.sh"), testEnv(t))
	if o.Status != schema.HookOK || !utf8.ValidString(text) {
		t.Fatalf("outcome %+v, context %q", o, text)
	}
	if want := "bad \uFFFD bytes \uFFFD end"; text != want {
		t.Fatalf("context %q, want %q", text, want)
	}
}

func TestCommandLongContextIsSpilled(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	o, text := runTestHook(t, hookCommand(t, "long_context.sh"), env)
	full := strings.Repeat("é", 12000)
	if o.Status != schema.HookOK || o.Error != "" || o.ContextLen != len(text) {
		t.Fatalf("outcome %+v", o)
	}
	if !strings.HasPrefix(text, strings.Repeat("é", previewChars)+"\n... [full output: 12000 characters, saved to ") {
		t.Fatalf("context %.100q...", text)
	}
	path := spilledPath(t, text)
	if filepath.Dir(path) != env.SpillDir || !strings.HasPrefix(filepath.Base(path), "sess-1-hook-") {
		t.Fatalf("spilled to %s", path)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != full {
		t.Fatalf("spilled file holds %d bytes, err %v", len(got), err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, env.SpillDir: 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: mode %v, err %v, want %v", p, fi.Mode().Perm(), err, want)
		}
	}
}

func TestLimitContextReportsSpillFailure(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := CommandEnv{SpillDir: filepath.Join(file, "spill"), SpillName: "s"}
	text, err := limitContext(strings.Repeat("x", MaxContextChars+1), env)
	if err == nil {
		t.Fatal("no error from a spill under a regular file")
	}
	if !strings.HasPrefix(text, strings.Repeat("x", previewChars)+"\n... [") || strings.Contains(text, "saved to") {
		t.Fatalf("context %q", text)
	}
	exact := strings.Repeat("y", MaxContextChars)
	if text, err := limitContext(exact, env); err != nil || text != exact {
		t.Fatalf("context at the limit changed: err %v", err)
	}
}

func TestCommandEnvironment(t *testing.T) {
	t.Setenv("CLAUDE_ENV_FILE", "/inherited/env")
	t.Setenv("CLAUDE_PLUGIN_ROOT", "/inherited/plugin")
	env := testEnv(t)
	env.EnvFile = filepath.Join(t.TempDir(), "session.env")
	h := Hook{Name: "env", Body: Command{Line: hookCommand(t, "env.sh"), PluginRoot: "/plugins/demo"}}
	o, text := runText(context.Background(), h, nil, env, 10*time.Second)
	wd, err := filepath.EvalSymlinks(env.ProjectDir)
	if err != nil {
		t.Fatal(err)
	}
	want := "project=" + env.ProjectDir + "\nplugin=/plugins/demo\nenvfile=" + env.EnvFile + "\nenvfile_set=yes\npwd=" + wd
	if o.Status != schema.HookOK || text != want {
		t.Fatalf("outcome %+v\ncontext %q\nwant    %q", o, text, want)
	}
	if data, err := os.ReadFile(env.EnvFile); err != nil || string(data) != "export FROM_HOOK=1\n" {
		t.Fatalf("env file %q, %v", data, err)
	}

	// Without an env file or a plugin root, inherited values do not leak.
	env.EnvFile = ""
	h.Body = Command{Line: hookCommand(t, "env.sh")}
	_, text = runText(context.Background(), h, nil, env, 10*time.Second)
	if !strings.Contains(text, "\nplugin=\nenvfile=\nenvfile_set=\n") {
		t.Fatalf("context %q", text)
	}
}

// TestExecInheritEnv runs a real hook that prints its environment: by
// default it inherits all of reprise's, secrets included; with
// Exec.InheritEnv it gets only the names listed, and always the variables
// of the hook protocol and CommandEnv.Extra.
func TestExecInheritEnv(t *testing.T) {
	t.Setenv("REPRISE_TEST_SECRET", "hunter2")
	t.Setenv("REPRISE_TEST_KEPT", "kept")
	env := testEnv(t)
	env.EnvFile = filepath.Join(t.TempDir(), "s.env")
	env.Extra = []string{"TRACEPARENT=00-trace"}
	hooks := []Hook{{Event: SessionStart, Name: "env", Body: Command{Line: "env", PluginRoot: "/plugins/demo"}}}
	printed := func(x Exec) map[string]string {
		t.Helper()
		outcomes, text := x.SessionStart(context.Background(), hooks, SessionStartInput{SessionID: "s", Source: "startup"}, env)
		if len(outcomes) != 1 || outcomes[0].Status != schema.HookOK {
			t.Fatalf("outcomes %+v", outcomes)
		}
		vars := map[string]string{}
		for _, line := range strings.Split(text, "\n") {
			name, value, _ := strings.Cut(line, "=")
			vars[name] = value
		}
		return vars
	}
	protocol := map[string]string{"CLAUDE_PROJECT_DIR": env.ProjectDir, "CLAUDE_ENV_FILE": env.EnvFile,
		"CLAUDE_PLUGIN_ROOT": "/plugins/demo", "TRACEPARENT": "00-trace"}

	all := printed(Exec{Supervisor: testSupervisor})
	if all["REPRISE_TEST_SECRET"] != "hunter2" || all["PATH"] != os.Getenv("PATH") {
		t.Errorf("by default the hook did not inherit the environment: %v", all)
	}
	only := printed(Exec{Supervisor: testSupervisor, InheritEnv: []string{"PATH", "REPRISE_TEST_KEPT", "NOT_SET_ANYWHERE"}})
	for name, want := range protocol {
		if all[name] != want || only[name] != want {
			t.Errorf("%s = %q by default and %q with an allow-list, want %q", name, all[name], only[name], want)
		}
	}
	if only["REPRISE_TEST_KEPT"] != "kept" || only["PATH"] != os.Getenv("PATH") {
		t.Errorf("listed variables missing: %v", only)
	}
	if _, ok := only["NOT_SET_ANYWHERE"]; ok {
		t.Errorf("a listed variable that is not set was set: %v", only)
	}
	if _, ok := only["REPRISE_TEST_SECRET"]; ok {
		t.Errorf("an unlisted variable was inherited: %v", only)
	}
}

func TestCommandBashShell(t *testing.T) {
	t.Parallel()
	h := Hook{Name: "bash", Body: Command{Shell: "bash", Line: `[[ -n $BASH_VERSION ]] && echo "bash $BASH_VERSION"`}}
	o, text := runText(context.Background(), h, nil, testEnv(t), 10*time.Second)
	if o.Status != schema.HookOK || !strings.HasPrefix(text, "bash ") {
		t.Fatalf("outcome %+v, context %q", o, text)
	}
}

func TestExcerptBoundsStderr(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 3000) + "\xff\xfe" + " last error\n"
	got := excerpt([]byte(long))
	if len(got) > maxStderr || !utf8.ValidString(got) || !strings.HasSuffix(got, "\uFFFD last error") || !strings.HasPrefix(got, "…é") {
		t.Fatalf("excerpt of %d bytes: %.40q...%q", len(got), got, got[max(len(got)-20, 0):])
	}
	if got := excerpt([]byte("  short \xff  ")); got != "short \uFFFD" {
		t.Fatalf("excerpt %q", got)
	}
	// Many invalid bytes grow when replaced; the excerpt still fits.
	if got := excerpt(bytes.Repeat([]byte("\xffa"), 1500)); len(got) > maxStderr || !utf8.ValidString(got) {
		t.Fatalf("excerpt of %d bytes", len(got))
	}
}

func TestParseOutput(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"", ""},
		{"  \n\t ", ""},
		{"  hello \n", "hello"},
		{`{"hookSpecificOutput":{"additionalContext":"a"},"additionalContext":"b","additional_context":"c"}`, "a"},
		{`{"hookSpecificOutput":{"additionalContext":""},"additionalContext":"b"}`, "b"},
		{`{"hookSpecificOutput":"text","additionalContext":"b"}`, "b"},
		{`{"hookSpecificOutput":{"additionalContext":7},"additional_context":"c"}`, "c"},
		{`{"additionalContext":["list"]}`, ""},
		{`{"decision":"block"}`, ""},
		{`{}`, ""},
		{`{"additionalContext":"x"} trailing`, `{"additionalContext":"x"} trailing`},
		{`{broken`, `{broken`},
		{`["additionalContext"]`, `["additionalContext"]`},
		{`{"additionalContext":"bad \ud800 surrogate"}`, "bad \uFFFD surrogate"},
		{"{\"additionalContext\":\"raw \xff byte\"}", "raw \uFFFD byte"},
		{"plain \xc3", "plain \uFFFD"},
	}
	for _, c := range cases {
		if got := ParseOutput([]byte(c.in)); got != c.want {
			t.Errorf("ParseOutput(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzParseOutput(f *testing.F) {
	for _, seed := range []string{
		"",
		"plain text\n",
		`{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"ctx"}}`,
		`{"additionalContext":"a","additional_context":"b"}`,
		`{"additionalContext":null}`,
		`{"hookSpecificOutput":[1,2,3]}`,
		`{not json`,
		"{\"additionalContext\":\"\xff\xfe\"}",
		"\xff\xfe\xfd",
		strings.Repeat("{", 20000),
		`{"a":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		got := ParseOutput(stdout)
		if !utf8.ValidString(got) {
			t.Fatalf("ParseOutput(%q) = %q, not valid UTF-8", stdout, got)
		}
		if len(got) > len(stdout)*3 {
			t.Fatalf("ParseOutput(%q) grew to %d bytes", stdout, len(got))
		}
	})
}

// runText runs command hook h as runCommand does and returns its outcome
// and the text it contributes.
func runText(ctx context.Context, h Hook, stdin []byte, env CommandEnv, timeout time.Duration) (schema.HookOutcome, string) {
	o, a := runCommand(ctx, h, stdin, env, timeout)
	return o, a.text
}

// A command hook without a timeout of its own gets its event's default
// from the table of events: 30 seconds on UserPromptSubmit, as in Claude
// Code, where it used to get ten minutes.
func TestCommandHooksDefaultToTheirEventsTimeout(t *testing.T) {
	for _, tc := range []struct {
		event Event
		want  time.Duration
	}{
		{UserPromptSubmit, 30 * time.Second},
		{PreToolUse, DefaultCommandTimeout},
		{SessionEnd, DefaultSessionEndCommandTimeout},
		{Event("MessageDisplay"), 10 * time.Second},
	} {
		h := Hook{Event: tc.event, Body: Command{Line: "true"}}
		if got := commandTimeout(h); got != tc.want {
			t.Errorf("%s: default timeout %v, want %v", tc.event, got, tc.want)
		}
		h.Timeout = 3 * time.Second
		if got := commandTimeout(h); got != h.Timeout {
			t.Errorf("%s: a hook's own timeout %v became %v", tc.event, h.Timeout, got)
		}
	}
}

// SessionEnd's command hooks share one budget, as in Claude Code: 1.5
// seconds, raised to the longest timeout a hook that is not a plugin's
// asks for (at most a minute), and to CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS.
func TestSessionEndHooksShareOneBudget(t *testing.T) {
	cmd := func(timeout time.Duration, source string) Hook {
		return Hook{Event: SessionEnd, Source: source, Timeout: timeout, Body: Command{Line: "true"}}
	}
	for _, tc := range []struct {
		hooks []Hook
		env   string
		want  time.Duration
	}{
		{nil, "", 1500 * time.Millisecond},
		{[]Hook{cmd(0, "settings.json")}, "", 1500 * time.Millisecond},
		{[]Hook{cmd(time.Second, "a.json"), cmd(5*time.Second, "b.json")}, "", 5 * time.Second},
		{[]Hook{cmd(10*time.Minute, "a.json")}, "", time.Minute},
		{[]Hook{cmd(30*time.Second, "plugin:/p")}, "", 1500 * time.Millisecond},
		{[]Hook{cmd(5*time.Second, "a.json")}, "20000", 20 * time.Second},
		{[]Hook{cmd(5*time.Second, "a.json")}, "100", 5 * time.Second},
	} {
		t.Setenv("CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS", tc.env)
		if got := SessionEndBudget(tc.hooks); got != tc.want {
			t.Errorf("hooks %v, env %q: budget %v, want %v", tc.hooks, tc.env, got, tc.want)
		}
	}
	// A hook with no timeout of its own runs as long as the longest asks:
	// both of these finish, where the first used to be cut at 1.5 s.
	t.Setenv("CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS", "")
	env := testEnv(t)
	hooks := []Hook{
		{Event: SessionEnd, Name: "slow", Source: "a.json", Body: Command{Line: "sleep 2"}},
		{Event: SessionEnd, Name: "asks", Source: "b.json", Timeout: 4 * time.Second, Body: Command{Line: "true"}},
	}
	outcomes := RunSessionEnd(context.Background(), hooks, SessionEndInput{SessionID: "s", Cwd: env.ProjectDir, Reason: schema.ReasonOther}, env)
	for _, o := range outcomes {
		if o.Status != schema.HookOK {
			t.Errorf("%s: %+v", o.Name, o)
		}
	}
}

// "onFailure": "block" makes a hook's failure count as exit 2 where exit 2
// blocks: a gate that crashes or cannot start denies rather than allows.
// On Stop it is ignored, as in Claude Code, and without it a failure
// blocks nothing.
func TestOnFailureBlockTurnsAFailureIntoExitTwo(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	gate := func(line, onFailure string) Hook {
		return Hook{Event: PreToolUse, Name: line, OnFailure: onFailure, Body: Command{Line: line}}
	}
	call := ToolInput{SessionID: "s", Cwd: env.ProjectDir, ToolName: "Bash", ToolUseID: "t", ToolInput: json.RawMessage(`{"command":"ls"}`)}
	for _, tc := range []struct {
		hook Hook
		want string
	}{
		{gate("echo broken >&2; exit 1", OnFailureBlock), Deny},
		{gate("no-such-gate-here", OnFailureBlock), Deny},
		{gate("echo broken >&2; exit 1", ""), ""},
		{gate("echo broken >&2; exit 1", "continue"), ""},
		{gate("exit 0", OnFailureBlock), ""},
	} {
		outcomes, d := RunPreToolUse(context.Background(), []Hook{tc.hook}, call, env)
		if d.Decision != tc.want {
			t.Errorf("%q onFailure %q: decision %q (%+v), want %q", tc.hook.Name, tc.hook.OnFailure, d.Decision, outcomes, tc.want)
		}
		if tc.want == Deny && (outcomes[0].Status != schema.HookFailed || d.Reason == "") {
			t.Errorf("%q: the outcome %+v should stay failed, with the reason %q", tc.hook.Name, outcomes[0], d.Reason)
		}
	}
	slow := Hook{Event: PreCompact, Name: "slow", OnFailure: OnFailureBlock, Timeout: 100 * time.Millisecond, Body: Command{Line: "sleep 5"}}
	if _, blocked, _, _ := RunPreCompact(context.Background(), []Hook{slow}, PreCompactInput{SessionID: "s", Cwd: env.ProjectDir, Trigger: "manual"}, env); !blocked {
		t.Error("a PreCompact hook that timed out with onFailure block did not block the compaction")
	}
	stop := Hook{Event: Stop, Name: "stop", OnFailure: OnFailureBlock, Body: Command{Line: "exit 1"}}
	if _, blocked, _, _ := RunStop(context.Background(), []Hook{stop}, StopInput{SessionID: "s", Cwd: env.ProjectDir}, env); blocked {
		t.Error("onFailure block kept the agent going on Stop, where Claude Code ignores it")
	}
}

// An answer whose hookSpecificOutput names another event is an error, as
// in Claude Code, and nothing of it is used: not its context, not its
// decision.
func TestAnAnswerForAnotherEventIsAnError(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	o, text := runTestHook(t, `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "misplaced"}}'`, env)
	if o.Status != schema.HookFailed || !strings.Contains(o.Error, `expected "SessionStart" but got "PreToolUse"`) || text != "" {
		t.Fatalf("outcome %+v, context %q", o, text)
	}
	o, text = runTestHook(t, `echo '{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "right"}}'`, env)
	if o.Status != schema.HookOK || text != "right" {
		t.Fatalf("the right event: outcome %+v, context %q", o, text)
	}
	call := ToolInput{SessionID: "s", Cwd: env.ProjectDir, ToolName: "Bash", ToolUseID: "t", ToolInput: json.RawMessage(`{}`)}
	deny := Hook{Event: PreToolUse, Name: "deny", Body: Command{Line: `echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "deny"}}'`}}
	if outcomes, d := RunPreToolUse(context.Background(), []Hook{deny}, call, env); d.Decision != "" || outcomes[0].Status != schema.HookFailed {
		t.Fatalf("a deny named for another event: decision %q, %+v", d.Decision, outcomes)
	}
}

// A JSON answer is honoured whatever the exit code, as in Claude Code: a
// guard that prints its deny and exits 1 still denies, a prompt hook's
// block still blocks; plain text on such an exit is not context.
func TestJSONIsHonouredOnAnyExitCode(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	call := ToolInput{SessionID: "s", Cwd: env.ProjectDir, ToolName: "Bash", ToolUseID: "t", ToolInput: json.RawMessage(`{}`)}
	guard := Hook{Event: PreToolUse, Name: "guard", Body: Command{Line: `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}}'; exit 1`}}
	outcomes, d := RunPreToolUse(context.Background(), []Hook{guard}, call, env)
	if d.Decision != Deny || d.Reason != "no" || outcomes[0].Status != schema.HookFailed || outcomes[0].ExitCode != 1 {
		t.Fatalf("deny on exit 1: decision %+v, outcome %+v", d, outcomes[0])
	}
	block := Hook{Event: UserPromptSubmit, Name: "block", Body: Command{Line: `echo '{"decision": "block", "reason": "not that"}'; exit 3`}}
	_, blocked, reason, _ := RunPrompt(context.Background(), []Hook{block}, PromptInput{SessionID: "s", Cwd: env.ProjectDir, Prompt: "p"}, env)
	if !blocked || reason != "not that" {
		t.Fatalf("block on exit 3: blocked %v, reason %q", blocked, reason)
	}
	plain := Hook{Event: SessionStart, Name: "plain", Body: Command{Line: `echo context; exit 1`}}
	if o, text := runText(context.Background(), plain, nil, env, 10*time.Second); text != "" || o.Status != schema.HookFailed {
		t.Fatalf("plain text on exit 1: outcome %+v, context %q", o, text)
	}
	withJSON := Hook{Event: SessionStart, Name: "json", Body: Command{Line: `echo '{"additionalContext": "kept"}'; exit 1`}}
	if _, text := runText(context.Background(), withJSON, nil, env, 10*time.Second); text != "kept" {
		t.Fatalf("JSON context on exit 1: %q", text)
	}
}

// The hookSpecificOutput fields an event honours that no other field
// records are kept with the outcome, for the host: a SessionStart's
// sessionTitle, watchPaths, initialUserMessage and reloadSkills; fields
// the event does not honour, and the context, are not.
func TestSpecificOutputIsRecorded(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	answer := `{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "ctx",
		"sessionTitle": "Fix the build", "watchPaths": ["go.mod"], "initialUserMessage": "go on",
		"reloadSkills": true, "permissionDecision": "deny", "bogus": 1}}`
	o, text := runTestHook(t, "cat <<'EOF'\n"+answer+"\nEOF", env)
	want := `{"initialUserMessage":"go on","reloadSkills":true,"sessionTitle":"Fix the build","watchPaths":["go.mod"]}`
	if o.Status != schema.HookOK || text != "ctx" || string(o.Specific) != want {
		t.Fatalf("outcome %+v (specific %s), context %q; want specific %s", o, o.Specific, text, want)
	}
	if o, _ := runTestHook(t, `echo '{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "only"}}'`, env); o.Specific != nil {
		t.Fatalf("a context alone recorded specific %s", o.Specific)
	}
}

// What PreCompact command hooks that exit 0 print is the compaction's
// extra instructions, as Claude Code takes it: each trimmed, joined by
// blank lines, a long one cut with a line that says so; a block's text and
// a failed hook's are not instructions.
func TestPreCompactStdoutIsInstructions(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	hook := func(name, line string) Hook { return Hook{Event: PreCompact, Name: name, Body: Command{Line: line}} }
	long := strings.Repeat("x", MaxContextChars+5)
	hooks := []Hook{
		hook("one", "printf '\\n  keep the stack traces  \\n'"),
		hook("quiet", "true"),
		hook("fails", "echo 'not this'; exit 1"),
		hook("two", "echo 'and the file names'"),
	}
	_, blocked, _, got := RunPreCompact(context.Background(), hooks, PreCompactInput{SessionID: "s", Cwd: env.ProjectDir, Trigger: "manual"}, env)
	if blocked || got != "keep the stack traces\n\nand the file names" {
		t.Fatalf("blocked %v, instructions %q", blocked, got)
	}
	_, _, _, got = RunPreCompact(context.Background(), []Hook{hook("long", "printf '"+long+"'")}, PreCompactInput{SessionID: "s", Cwd: env.ProjectDir}, env)
	if !strings.HasPrefix(got, strings.Repeat("x", MaxContextChars)+"\n[PreCompact hook [long] output cut: 10005 characters") {
		t.Fatalf("a long one: %q", firstChars(got[MaxContextChars-5:], 200))
	}
	if got := AppendInstructions("focus on the parser", "keep the traces"); got != "focus on the parser\n\nkeep the traces" {
		t.Fatalf("AppendInstructions: %q", got)
	}
}

// A Stop hook's additionalContext is feedback for the model when no hook
// blocked; plain stdout is not, and a block's reason is a reason.
func TestStopHookFeedback(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	hook := func(name, line string) Hook { return Hook{Event: Stop, Name: name, Body: Command{Line: line}} }
	feedbackJSON := `echo '{"hookSpecificOutput":{"hookEventName":"Stop","additionalContext":"the tests still fail"}}'`
	_, blocked, _, got := RunStop(context.Background(), []Hook{hook("json", feedbackJSON), hook("plain", "echo not feedback")},
		StopInput{SessionID: "s", Cwd: env.ProjectDir}, env)
	if blocked || got != "the tests still fail" {
		t.Fatalf("blocked %v, feedback %q", blocked, got)
	}
	_, blocked, reason, got := RunStop(context.Background(), []Hook{hook("json", feedbackJSON), hook("block", "echo 'not done' >&2; exit 2")},
		StopInput{SessionID: "s", Cwd: env.ProjectDir}, env)
	if !blocked || reason != "not done" || got != "the tests still fail" {
		t.Fatalf("with a block: blocked %v, reason %q, feedback %q", blocked, reason, got)
	}
}

// A UserPromptSubmit hook's suppressOriginalPrompt is recorded in its
// outcome's Specific, which the host gets, with its sessionTitle.
func TestPromptHooksSuppressOriginalPromptIsRecorded(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	h := Hook{Event: UserPromptSubmit, Name: "suppress", Body: Command{Line: `echo '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "suppressOriginalPrompt": true, "sessionTitle": "Deploy"}}'`}}
	outcomes, blocked, _, _ := RunPrompt(context.Background(), []Hook{h}, PromptInput{SessionID: "s", Cwd: env.ProjectDir, Prompt: "ship it"}, env)
	if len(outcomes) != 1 || blocked || string(outcomes[0].Specific) != `{"sessionTitle":"Deploy","suppressOriginalPrompt":true}` {
		t.Fatalf("outcomes %+v, blocked %v", outcomes, blocked)
	}
}

// "once": true in a settings file is ignored, as Claude Code ignores it
// there: the hook runs on every match (frontmatter and session hooks
// honour it; TestFrontmatterHooksHonourOnce).
func TestOnceInASettingsFileIsIgnored(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	runs := filepath.Join(t.TempDir(), "runs")
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(path, []byte(`{"hooks": {"Notification": [{"hooks": [
		{"type": "command", "command": "echo ran >> '`+runs+`'", "once": true}]}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks, err := LoadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry()
	if err := r.AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	in := EventInput{SessionID: "s", Cwd: env.ProjectDir, Fields: json.RawMessage(`{"message": "hi"}`)}
	for range 2 {
		if _, _, err := RunEvent(context.Background(), r.Match("Notification", ""), "Notification", in, env); err != nil {
			t.Fatal(err)
		}
	}
	if data, _ := os.ReadFile(runs); string(data) != "ran\nran\n" {
		t.Fatalf("the hook ran %q; want twice", data)
	}
}
