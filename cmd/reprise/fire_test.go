package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/reprise-dev/reprise/internal/proctest"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/schema"
)

// fireCLI returns a cli whose agent ide is on session s, and the flags
// that load the hooks of settings and no others.
func fireCLI(t *testing.T, settings string) (*cli, []string) {
	t.Helper()
	c := newCLI(t)
	path := c.writeFile("hooks.json", settings)
	c.session("s", "hello")
	c.ok("start", "--agent", "ide", "--no-default-settings", "s")
	return c, []string{"--agent", "ide", "--settings", path, "--no-default-settings"}
}

// fireArgs is the command line of fire event with id, input and flags.
func fireArgs(event, id, input string, flags []string) []string {
	return append([]string{"fire", event, "--id", id, "--input", input}, flags...)
}

// readLines returns the lines of the file at path, none when it does not
// exist.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// A Notification fired through the CLI runs its command hook with Claude
// Code's stdin, and prints the hook's additionalContext; fired again with
// the same id it runs nothing, prints what the log holds after "already
// recorded", and exits 3, as tool-result does for a result recorded before.
func TestFireRunsAnEventsHooksOnce(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	c, flags := fireCLI(t, `{"hooks": {"Notification": [{"matcher": "permission_prompt", "hooks": [{"type": "command",
		"command": "cat >> '`+runs+`'; echo >> '`+runs+`'; echo '{\"systemMessage\": \"look up\", \"hookSpecificOutput\": {\"hookEventName\": \"Notification\", \"additionalContext\": \"told\"}}'"}]}]}}`)
	in := `{"message": "Claude needs your permission to use Bash", "notification_type": "permission_prompt"}`
	out := c.ok(fireArgs("Notification", "n1", in, flags)...)
	if !strings.HasPrefix(out, "Notification hooks of fire n1:\n  ok ") ||
		!strings.HasSuffix(out, "\ncontext:\n  told\nsystem message (for the user):\n  look up\n") || strings.Contains(out, "already recorded") {
		t.Fatalf("fire printed:\n%s", out)
	}
	r := c.fails(exitAlreadyRecorded, fireArgs("Notification", "n1", in, flags)...)
	if !strings.HasPrefix(r.stdout, "already recorded: ") || !strings.HasSuffix(r.stdout, "\n"+out) ||
		!strings.Contains(r.stderr, "fire n1: already recorded") {
		t.Fatalf("fired again: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	lines := readLines(t, runs)
	if len(lines) != 1 {
		t.Fatalf("the hook ran %d times: %q", len(lines), lines)
	}
	var stdin map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &stdin); err != nil {
		t.Fatal(err)
	}
	if stdin["hook_event_name"] != "Notification" || stdin["session_id"] != "s" || stdin["notification_type"] != "permission_prompt" ||
		stdin["message"] != "Claude needs your permission to use Bash" {
		t.Fatalf("the hook read %s", lines[0])
	}
	// Its matcher selects on notification_type: another type runs nothing.
	out = c.ok(fireArgs("Notification", "n2", `{"message": "done", "notification_type": "idle_prompt"}`, flags)...)
	if out != "Notification hooks of fire n2:\n  none\n" || len(readLines(t, runs)) != 1 {
		t.Fatalf("an unmatched fire printed %q", out)
	}
}

// An exit 2 of a TaskCreated hook blocks, with its stderr as the reason;
// fire prints the block and exits 0, as tool-result does.
func TestFireSaysAHookBlocked(t *testing.T) {
	c, flags := fireCLI(t, `{"hooks": {"TaskCreated": [{"hooks": [{"type": "command", "command": "echo 'no tasks today' >&2; exit 2"}]}]}}`)
	out := c.ok(fireArgs("TaskCreated", "task-1", `{"task_id": "1", "task_subject": "ship"}`, flags)...)
	if !strings.HasPrefix(out, "TaskCreated hooks of fire task-1:\n  block ") || !strings.HasSuffix(out, "\nblocked: no tasks today\n") {
		t.Fatalf("fire printed:\n%s", out)
	}
	var f jsonview.Fired
	r := c.fails(exitAlreadyRecorded, append([]string{"--json"}, fireArgs("TaskCreated", "task-1", `{"task_id": "1", "task_subject": "ship"}`, flags)...)...)
	if err := json.Unmarshal([]byte(r.stdout), &f); err != nil || !f.AlreadyRecorded || !f.Blocked || f.Reason != "no tasks today" ||
		len(f.Hooks) != 1 || f.Hooks[0].Decision != "block" || f.Hooks[0].ExitCode != 2 {
		t.Fatalf("fired again with --json: %s, %v", r.stdout, err)
	}
}

// --input - reads the event's fields from standard input; more than
// maxFireInput bytes of it are a usage error, and nothing runs.
func TestFireReadsInputFromStdin(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	c, flags := fireCLI(t, `{"hooks": {"CwdChanged": [{"hooks": [{"type": "command", "command": "cat >> '`+runs+`'; echo >> '`+runs+`'"}]}]}}`)
	// The hook runs in the directory the session moves to: one that is.
	moved := t.TempDir()
	r := c.runIn(strings.NewReader(`{"old_cwd": "/src", "new_cwd": "`+moved+`"}`+"\n"), fireArgs("CwdChanged", "cd-1", "-", flags)...)
	if r.code != exitOK {
		t.Fatalf("fire --input -: exit %d: %s", r.code, r.stderr)
	}
	lines := readLines(t, runs)
	if len(lines) != 1 || !strings.Contains(lines[0], `"new_cwd":"`+moved+`"`) || !strings.Contains(lines[0], `"old_cwd":"/src"`) {
		t.Fatalf("the hook read %q", lines)
	}
	big := `{"old_cwd": "/src", "new_cwd": "` + strings.Repeat("a", maxFireInput) + `"}`
	r = c.runIn(strings.NewReader(big), fireArgs("CwdChanged", "cd-2", "-", flags)...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "more than 16 MiB") {
		t.Fatalf("fire --input - of %d bytes: exit %d: %s", len(big), r.code, r.stderr)
	}
	if r := c.runIn(strings.NewReader("not json"), fireArgs("CwdChanged", "cd-3", "-", flags)...); r.code != exitUsage || !strings.Contains(r.stderr, "not a JSON object") {
		t.Fatalf("fire --input - of no JSON: exit %d: %s", r.code, r.stderr)
	}
	if n := len(readLines(t, runs)); n != 1 {
		t.Fatalf("the hook ran %d times; refused input ran it", n)
	}
}

// A fire the command line gets wrong is a usage error that says what
// would work, and runs nothing: an unknown event, one with steps of its
// own, input that is no JSON object or lacks a field the event's row
// requires (the library's words), a missing or bad id, an id another
// event's fire holds.
func TestFireUsageErrors(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	hook := `[{"hooks": [{"type": "command", "command": "echo ran >> '` + runs + `'"}]}]`
	c, flags := fireCLI(t, `{"hooks": {"Notification": `+hook+`, "Setup": `+hook+`, "PreToolUse": `+hook+`}}`)
	c.ok(fireArgs("Setup", "setup-1", `{"trigger": "init"}`, flags)...)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{fireArgs("Sneeze", "f1", `{}`, flags), `EVENT must be one of Claude Code's hook events without steps of their own (Setup, Notification, TaskCreated, ...: docs/hooks.md lists all 33), not "Sneeze"`},
		{fireArgs("notification", "f1", `{"message": "m"}`, flags), "did you mean Notification?"},
		{fireArgs("PreToolUse", "f1", `{}`, flags), "PreToolUse has steps of its own: reprise tool runs it, not fire"},
		{fireArgs("SessionStart", "f1", `{}`, flags), "reprise start, resume, clear, fork and compact"},
		{fireArgs("Notification", "f1", `{"message": `, flags), "--input is not a JSON object"},
		{fireArgs("Notification", "f1", `["message"]`, flags), "--input is not a JSON object"},
		{fireArgs("Notification", "f1", "{\"message\": \"\xff\"}", flags), "not valid UTF-8"},
		{fireArgs("Notification", "f1", `{"title": "no message"}`, flags), `Notification needs the field "message"`},
		{fireArgs("Notification", "../f1", `{"message": "m"}`, flags), "--id"},
		{append([]string{"fire", "Notification", "--input", `{"message": "m"}`}, flags...), "fire needs --id"},
		{fireArgs("Notification", "setup-1", `{"message": "m"}`, flags), "fire setup-1 is a Setup, not a Notification"},
		{[]string{"fire", "--id", "f1"}, "missing EVENT"},
	} {
		r := c.fails(exitUsage, tc.args...)
		if !strings.Contains(r.stderr, tc.says) || !strings.Contains(r.stderr, "reprise fire --help") {
			t.Errorf("reprise %s: %s; want it to say %q", strings.Join(tc.args, " "), r.stderr, tc.says)
		}
	}
	if n := len(readLines(t, runs)); n != 1 {
		t.Fatalf("hooks ran %d times; only the Setup fire should have run them", n)
	}
}

// Each event with steps of its own names commands that exist, and every
// other event of the table is one fire runs.
func TestStepCommandsNameEveryEventWithSteps(t *testing.T) {
	root := newRootCmd()
	for _, ev := range schema.HookEvents {
		runs, ok := stepCommands[ev]
		if !ok {
			t.Errorf("stepCommands does not say which command runs %s", ev)
			continue
		}
		_, names, _ := strings.Cut(runs, "reprise ")
		for name := range strings.FieldsFuncSeq(names, func(r rune) bool { return r == ',' || r == ' ' }) {
			if name == "and" {
				continue
			}
			if name == "runs" || strings.HasPrefix(name, "-") {
				break
			}
			if cmd, _, err := root.Find([]string{name}); err != nil || cmd.Name() != name {
				t.Errorf("stepCommands[%s] names %q, no command of reprise", ev, name)
			}
		}
	}
	for ev := range stepCommands {
		if !slices.Contains(schema.HookEvents, ev) {
			t.Errorf("stepCommands names %s, which has no steps of its own", ev)
		}
	}
	for _, spec := range schema.Events {
		_, steps := stepCommands[spec.Event]
		if err := checkFireEvent(string(spec.Event)); (err == nil) == steps {
			t.Errorf("checkFireEvent(%s) = %v", spec.Event, err)
		}
	}
}

// fire --json prints one object whose keys mirror reprise.Fired; a text
// fire shows hookSpecificOutput as compact JSON, CLAUDE_ENV_FILE, feedback
// and a halt.
func TestFireJSONAndTheRestOfWhatHooksSay(t *testing.T) {
	c, flags := fireCLI(t, `{"hooks": {
		"WorktreeCreate": [{"hooks": [{"type": "command", "command": "echo /tmp/wt-feature"}]}],
		"Setup": [{"hooks": [{"type": "command", "command": "echo 'export PATH_ADDED=1' >> \"$CLAUDE_ENV_FILE\"; echo '{\"continue\": false, \"stopReason\": \"set up enough\"}'"}]}],
		"TaskCompleted": [{"hooks": [{"type": "command", "command": "echo 'tests fail' >&2; exit 2"}]}]}}`)
	out := c.ok(append([]string{"--json"}, fireArgs("WorktreeCreate", "wt-1", `{"name": "feature"}`, flags)...)...)
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &keys); err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := range keys {
		got = append(got, k)
	}
	slices.Sort(got)
	want := []string{"already_recorded", "blocked", "context", "env", "event", "feedback", "halted", "hooks", "id", "interrupted", "reason", "specific", "system_message"}
	if !slices.Equal(got, want) {
		t.Fatalf("fire --json keys %q, want %q:\n%s", got, want, out)
	}
	var f jsonview.Fired
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatal(err)
	}
	if f.ID != "wt-1" || f.Event != "WorktreeCreate" || f.AlreadyRecorded || f.Interrupted || f.Blocked || f.Halted ||
		string(f.Specific) != `{"worktreePath":"/tmp/wt-feature"}` || len(f.Hooks) != 1 || f.Hooks[0].Status != "ok" {
		t.Fatalf("fire --json = %s", out)
	}
	if out := c.ok(fireArgs("WorktreeCreate", "wt-2", `{"name": "other"}`, flags)...); !strings.HasSuffix(out, "\nhookSpecificOutput: {\"worktreePath\":\"/tmp/wt-feature\"}\n") {
		t.Fatalf("fire printed:\n%s", out)
	}

	c.okJSON(&f, fireArgs("Setup", "setup-1", `{"trigger": "init"}`, flags)...)
	if f.Env != "export PATH_ADDED=1\n" || !f.Halted || f.StopReason != "set up enough" || string(f.Specific) != "null" {
		t.Fatalf("Setup --json = %+v", f)
	}
	if out := c.ok(fireArgs("Setup", "setup-2", `{"trigger": "maintenance"}`, flags)...); !strings.HasSuffix(out,
		"\nCLAUDE_ENV_FILE:\n  export PATH_ADDED=1\nhalted: a hook stops the turn: set up enough\n") {
		t.Fatalf("Setup printed:\n%s", out)
	}
	c.okJSON(&f, fireArgs("TaskCompleted", "task-1", `{"task_id": "1", "task_subject": "ship"}`, flags)...)
	if !f.Blocked || f.Reason != "tests fail" {
		t.Fatalf("TaskCompleted --json = %+v", f)
	}
}

// An agent whose session ended has none for the hooks to run on: fire
// fails, saying how to give it one.
func TestFireNeedsACurrentSession(t *testing.T) {
	c, flags := fireCLI(t, `{"hooks": {}}`)
	c.ok("end", "--agent", "ide", "--reason", "complete", "--no-default-settings")
	r := c.fails(exitFailure, fireArgs("Notification", "n1", `{"message": "m"}`, flags)...)
	if !strings.Contains(r.stderr, "agent ide has no current session; give it one with reprise start --agent ide SESSION") {
		t.Fatalf("fire on no session: %s", r.stderr)
	}
}

// EVENT completes to the events fire runs, not those with steps of their
// own.
func TestFireCompletesEvents(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct{ prefix, want string }{
		{"Se", "Setup"},
		{"Pre", "PreModelSwitch"},
		{"Task", "TaskCreated\nTaskCompleted"},
	} {
		if got := c.complete("fire", tc.prefix); got != tc.want {
			t.Errorf("completing fire %q = %q, want %q", tc.prefix, got, tc.want)
		}
	}
	if got := c.complete("fire", "Setup", ""); got != "" {
		t.Errorf("completing a second EVENT = %q", got)
	}
}

// A fire whose process is killed while its hook runs is recorded as
// interrupted by the next command on the agent: fired again, the hook
// does not run a second time, and fire says so and exits 3.
func TestBinaryFireKilledWhileItsHookRuns(t *testing.T) {
	c := newBinaryCLI(t)
	runs, pidFile := filepath.Join(c.dir, "runs"), filepath.Join(c.dir, "hook.pid")
	settings := c.writeFile("hooks.json", `{"hooks": {"Notification": [{"hooks": [{"type": "command",
		"command": "echo ran >> '`+runs+`'; echo $$ > '`+pidFile+`'; exec sleep 30"}]}]}}`)
	c.session("s", "hello")
	flags := []string{"--agent", "ide", "--settings", settings, "--no-default-settings"}
	c.ok(append([]string{"start", "s"}, flags...)...)
	args := fireArgs("Notification", "n1", `{"message": "m"}`, flags)
	cmd, stderr, exited := c.startBinary(args...)
	hook := proctest.WaitPid(t, pidFile, stderr.String)
	t.Cleanup(func() { _ = syscall.Kill(hook, syscall.SIGKILL) })
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited

	r := c.fails(exitAlreadyRecorded, args...)
	if !strings.HasPrefix(r.stdout, "already recorded: ") || !strings.Contains(r.stdout, "\n  interrupted: the process died while these ran") {
		t.Fatalf("fired again after the kill: %q, %q", r.stdout, r.stderr)
	}
	r = c.fails(exitAlreadyRecorded, append([]string{"--json"}, args...)...)
	var f jsonview.Fired
	if err := json.Unmarshal([]byte(r.stdout), &f); err != nil || !f.AlreadyRecorded || !f.Interrupted {
		t.Fatalf("fired again with --json: %s, %v", r.stdout, err)
	}
	if n := len(readLines(t, runs)); n != 1 {
		t.Fatalf("the hook ran %d times", n)
	}
}
