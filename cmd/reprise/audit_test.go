package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/schema"
)

// fullRun runs a startup restore of session a and a runtime restore to b,
// with one SessionStart and one SessionEnd function hook, and returns the
// events of the log.
func fullRun(t *testing.T) []eventlog.Event {
	t.Helper()
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	err := e.Hooks().OnSessionStart("ctx", "", func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		return hookexec.SessionStartOutput{AdditionalContext: "ctx"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = e.Hooks().OnSessionEnd("bye", "", func(context.Context, hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
		return hookexec.SessionEndOutput{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		testkit.Session(t, e, id, "", "hello "+id) // in a directory of its own
	}
	agent := testkit.Agent(t, e, "ide")
	if _, err := agent.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Restore(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	return testkit.Events(t, e.Store())
}

// indexOf returns the index of the n-th (from 1) event of type typ in evs.
func indexOf(t *testing.T, evs []eventlog.Event, typ eventlog.Type, n int) int {
	t.Helper()
	for i, ev := range evs {
		if ev.Type == typ {
			if n--; n == 0 {
				return i
			}
		}
	}
	t.Fatalf("no %s number %d", typ, n)
	return 0
}

// auditStore runs audit on the store at path, as text and as JSON, checks
// that both exit with 1 (or 0 when kind is ""), and that the first
// violation is of kind at stream#seq.
func auditStore(t *testing.T, c *cli, path, kind, stream string, seq uint64) auditJSON {
	t.Helper()
	want := exitOK
	if kind != "" {
		want = exitFailure
	}
	text := c.run("--store", path, "audit")
	js := c.run("--store", path, "audit", "--json")
	if text.code != want || js.code != want {
		t.Fatalf("audit exit %d, --json exit %d, want %d\n%s%s", text.code, js.code, want, text.stdout, text.stderr)
	}
	var rep auditJSON
	if err := json.Unmarshal([]byte(js.stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, js.stdout)
	}
	if kind == "" {
		if !rep.OK || len(rep.Violations) != 0 || !strings.HasPrefix(text.stdout, "ok: ") {
			t.Fatalf("clean store: %+v\n%s", rep, text.stdout)
		}
		return rep
	}
	v := rep.Violations[0]
	if rep.OK || v.Kind != kind || v.Stream != stream || v.Seq != seq {
		t.Fatalf("violations = %+v, want %s at %s#%d", rep.Violations, kind, stream, seq)
	}
	line := strings.SplitN(text.stdout, "\n", 2)[0]
	prefix := kind + ": " // a violation in the file, not in a stream
	if v.Stream != "" {
		prefix = v.Stream + "#" + strconv.FormatUint(v.Seq, 10) + ": " + prefix
	}
	if !strings.HasPrefix(line, prefix) ||
		!strings.Contains(text.stdout, "violation(s): ") || !strings.Contains(text.stderr, "reprise: audit found") {
		t.Fatalf("audit text:\n%s\nstderr: %s", text.stdout, text.stderr)
	}
	return rep
}

func TestAuditPassesACleanStore(t *testing.T) {
	c := newCLI(t)
	evs := fullRun(t)
	rep := auditStore(t, c, testkit.WriteStore(t, evs), "", "", 0)
	if rep.Events != len(evs) || rep.Sessions != 2 || rep.Agents != 1 || rep.Restores != 2 || rep.HooksRun != 3 || rep.HooksFailed != 0 {
		t.Fatalf("report = %+v", rep)
	}
	// And one written through the CLI, with a failing command hook.
	c.session("a", "hello")
	c.session("b")
	settings := c.writeFile("hooks.json", testkit.Settings(t, []string{"echo hi", testkit.Script(t, "fail.sh")}, nil))
	c.ok("start", "--agent", "ide", "--settings", settings, "a")
	c.ok("resume", "--agent", "ide", "--settings", settings, "b")
	rep = auditStore(t, c, c.store, "", "", 0)
	if rep.Restores != 2 || rep.HooksRun != 4 || rep.HooksFailed != 2 {
		t.Fatalf("report = %+v", rep)
	}
}

func TestAuditFindsAnOutOfOrderStep(t *testing.T) {
	c := newCLI(t)
	evs := fullRun(t)
	// Without the resume's SessionEndHookStarted, SessionEndHookRan follows
	// SaveAttempted.
	i := indexOf(t, evs, schema.TypeSessionEndHookStarted, 1)
	broken := append(slices.Clone(evs[:i]), evs[i+1:]...)
	auditStore(t, c, testkit.WriteStore(t, broken), reprise.ViolationOutOfOrder, "agent/ide", evs[i].Seq)
}

func TestAuditFindsADuplicatedSessionStartHookRan(t *testing.T) {
	c := newCLI(t)
	evs := fullRun(t)
	i := indexOf(t, evs, schema.TypeSessionStartHookRan, 2)
	broken := slices.Insert(slices.Clone(evs), i+1, evs[i])
	auditStore(t, c, testkit.WriteStore(t, broken), reprise.ViolationDoubleHookRun, "agent/ide", evs[i].Seq+1)
}

func TestAuditFindsAFlippedByte(t *testing.T) {
	c := newCLI(t)
	c.session("a", "hello", "FLIP-ME-PLEASE")
	data, err := os.ReadFile(c.store)
	if err != nil {
		t.Fatal(err)
	}
	// Pages bbolt freed may hold older copies of the event: flip them all.
	marker := []byte("FLIP-ME-PLEASE")
	if !bytes.Contains(data, marker) {
		t.Fatal("marker not in the file")
	}
	data = bytes.ReplaceAll(data, marker, []byte("FLIp-ME-PLEASE"))
	if err := os.WriteFile(c.store, data, 0o600); err != nil {
		t.Fatal(err)
	}
	auditStore(t, c, c.store, reprise.ViolationUndecodable, "session/a", 3)
	r := c.fails(exitFailure, "log", "a")
	if !strings.Contains(r.stderr, "corrupt") {
		t.Fatalf("log of a corrupt stream: %s", r.stderr)
	}
}

// An event written by a newer reprise, with a payload version this build
// does not read, is reported as such by audit, and commands that need it
// say so plainly instead of calling the store corrupt.
func TestAuditReportsANewerEventVersion(t *testing.T) {
	c := newCLI(t)
	evs := fullRun(t)
	i := indexOf(t, evs, schema.TypeSessionLoaded, 2)
	evs[i].Version = schema.Version(schema.TypeSessionLoaded) + 1
	path := testkit.WriteStore(t, evs)
	auditStore(t, c, path, reprise.ViolationNewerVersion, "agent/ide", evs[i].Seq)
	r := c.fails(exitFailure, "--store", path, "log", "--agent", "ide")
	want := fmt.Sprintf("SessionLoaded version %d was written by a newer reprise: this build reads SessionLoaded up to version %d; upgrade reprise to read it",
		evs[i].Version, evs[i].Version-1)
	if !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "corrupt") {
		t.Errorf("log --agent ide: %s\nwant %s", r.stderr, want)
	}
}

// A message written by a newer reprise does not stop the session list:
// every session is listed and the one holding it is marked, and a command
// that must read that session names the version instead of saying the
// session is not found.
func TestSessionsGoOnPastANewerEventVersion(t *testing.T) {
	c := newCLI(t)
	evs := fullRun(t)
	i := indexOf(t, evs, schema.TypeMessageAppended, 1)
	evs[i].Version = schema.Version(schema.TypeMessageAppended) + 1
	path := testkit.WriteStore(t, evs)
	var rows []sessionJSON
	c.okJSON(&rows, "--store", path, "sessions")
	if len(rows) != 2 || rows[0].ID != evs[i].Stream[len("session/"):] || !rows[0].NewerEvents || rows[1].NewerEvents || rows[0].Messages != 2 {
		t.Fatalf("sessions --json: %+v", rows)
	}
	if out := c.ok("--store", path, "sessions"); !strings.Contains(out, rows[0].ID+" (newer events)") {
		t.Errorf("sessions:\n%s", out)
	}
	r := c.fails(exitFailure, "--store", path, "log", rows[0].ID)
	if !strings.Contains(r.stderr, "was written by a newer reprise") || strings.Contains(r.stderr, "not found") {
		t.Errorf("log %s: %s", rows[0].ID, r.stderr)
	}
	r = c.fails(exitFailure, "--store", path, "start", "--agent", "other", "--no-default-settings", rows[0].ID)
	if !strings.Contains(r.stderr, "was written by a newer reprise") {
		t.Errorf("start %s: %s", rows[0].ID, r.stderr)
	}
}

// A zeroed newest meta page makes bbolt open the file at the transaction
// before, the last append lost; audit reads both meta pages and says so.
func TestAuditFindsADamagedMetaPage(t *testing.T) {
	c := newCLI(t)
	c.session("a", "hello", "lost")
	fallback := testkit.ZeroNewestMeta(t, c.store)
	rep := auditStore(t, c, c.store, reprise.ViolationDamagedMeta, "", 0)
	if d := rep.Violations[0].Detail; !strings.Contains(d, fmt.Sprintf("opens at transaction %d,", fallback)) {
		t.Errorf("detail %q does not name transaction %d", d, fallback)
	}
}

// A command that writes refuses a store whose newest meta page is
// damaged, since its write would overwrite the page and with it the only
// trace of the append it may have held: it exits 1 saying what to do and
// leaves the file as it was, so the audit still finds the damage and a
// backup copies what is readable. REPRISE_ACCEPT_DAMAGED_META=1 writes on,
// with a warning; the damage is gone from the file then.
func TestWriteToADamagedMetaPageIsRefused(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("a", "hello", "lost")
	fallback := testkit.ZeroNewestMeta(t, c.store)
	before, err := os.ReadFile(c.store)
	if err != nil {
		t.Fatal(err)
	}
	r := c.fails(exitFailure, "append", "a", "--role", "user", "more")
	want := fmt.Sprintf("reprise: the store %s has a damaged meta page (page %d, zeroed): it opens at transaction %d, "+
		"and the next write would overwrite the page that may hold transaction %d, the last append, so nothing was written. "+
		"Run reprise audit to see the damage, reprise backup FILE to copy what is readable into a new store, "+
		"or set REPRISE_ACCEPT_DAMAGED_META=1 to accept the loss and write on\n", c.store, (fallback+1)%2, fallback, fallback+1)
	if r.stderr != want || r.stdout != "" {
		t.Fatalf("append: stdout %q, stderr\n%q\nwant\n%q", r.stdout, r.stderr, want)
	}
	if js := c.fails(exitFailure, "--json", "new", "--id", "b"); !strings.Contains(js.stderr, "has a damaged meta page") {
		t.Fatalf("new --json: %s", js.stderr)
	}
	if after, err := os.ReadFile(c.store); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("the refused commands changed the store (%v)", err)
	}
	auditStore(t, c, c.store, reprise.ViolationDamagedMeta, "", 0)
	// A reader is told that what it reads may lack the last append.
	if r := c.run("sessions"); r.code != exitOK || !strings.Contains(r.stderr, "reprise: warning: the store's newest meta page may be damaged") {
		t.Fatalf("sessions on the damaged store: exit %d, stderr %q", r.code, r.stderr)
	}
	rescued := filepath.Join(c.dir, "rescued.db")
	c.ok("backup", rescued)
	if out := c.ok("--store", rescued, "log", "a"); !strings.Contains(out, "hello") || strings.Contains(out, "lost") {
		t.Fatalf("log of the backup, which holds the store up to the transaction it opens at:\n%s", out)
	}

	t.Setenv(boltstore.AcceptDamagedMetaEnv, "1")
	r = c.run("append", "a", "--role", "assistant", "again")
	warning := fmt.Sprintf("reprise: warning: opening a store whose newest meta page may be damaged, as asked: "+
		"its next commit overwrites the page, and the commit it may have held is lost (path %s, page %d, damage zeroed, txid %d, lost_txid %d)\n",
		c.store, (fallback+1)%2, fallback, fallback+1)
	if r.code != exitOK || r.stderr != warning {
		t.Fatalf("append accepting the loss: exit %d, stderr\n%q\nwant\n%q", r.code, r.stderr, warning)
	}
	t.Setenv(boltstore.AcceptDamagedMetaEnv, "")
	auditStore(t, c, c.store, "", "", 0)
	if out := c.ok("log", "a"); !strings.Contains(out, "again") || strings.Contains(out, "lost") {
		t.Fatalf("log after accepting the loss:\n%s", out)
	}
}

// A reprise killed while its hooks run leaves the agent mid-restore: audit
// says so, with the command that finishes it, and exits 0 unless --strict;
// that command closes the hooks as interrupted without running them again.
func TestAuditReportsAKilledRestoreAsInProgressAndFinishRollsItForward(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("a")
	_, kill := c.hungStart("a")
	kill()
	runs, settings := filepath.Join(c.dir, "runs"), filepath.Join(c.dir, "hooks.json")

	var agents []agentJSON
	c.okJSON(&agents, "agents")
	if len(agents) != 1 || !agents[0].InProgress || agents[0].State != "starting" || agents[0].Now != "startup restore - -> a in progress (starting)" {
		t.Fatalf("agents --json after the kill: %+v", agents)
	}

	out := c.ok("audit")
	m := regexp.MustCompile(`^agent/ide#2: in progress: restore (\S+): hooks started in state starting with no outcome recorded yet; ` +
		`the next command on agent ide rolls it forward: reprise finish --agent ide\nok: .* 1 restores; 1 in progress; hooks: 0 run`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("audit:\n%s", out)
	}
	r := c.fails(exitFailure, "audit", "--strict")
	if !strings.Contains(r.stdout, "\nnot ok (--strict): ") || !strings.Contains(r.stderr, "1 restore(s) in progress (--strict)") {
		t.Fatalf("audit --strict: %s%s", r.stdout, r.stderr)
	}
	var rep auditJSON
	c.okJSON(&rep, "--store", c.store, "audit")
	if !rep.OK || len(rep.Violations) != 0 || len(rep.InProgress) != 1 {
		t.Fatalf("audit --json: %+v", rep)
	}
	if ip := rep.InProgress[0]; ip.Agent != "ide" || ip.Stream != "agent/ide" || ip.Seq != 2 || ip.State != "starting" ||
		ip.ID != m[1] || ip.Command != "reprise --store "+c.store+" finish --agent ide" {
		t.Fatalf("in progress: %+v", ip)
	}
	js := c.run("--json", "audit", "--strict")
	if js.code != exitFailure || !strings.Contains(js.stdout, `"ok":false`) {
		t.Fatalf("audit --json --strict: %d %s", js.code, js.stdout)
	}

	// The command audit printed, with the hook flags of the killed one.
	var fin jsonview.Finish
	c.okJSON(&fin, append(strings.Fields(rep.InProgress[0].Command)[1:], "--settings", settings, "--no-default-settings")...)
	if !fin.Finished || fin.State != "starting" || fin.ID != m[1] || fin.Restore == nil ||
		fin.Restore.SessionStart == nil || len(fin.Restore.SessionStart.Hooks) != 1 || fin.Restore.SessionStart.Hooks[0].Status != "interrupted" {
		t.Fatalf("finish --json: %+v", fin)
	}
	if data, _ := os.ReadFile(runs); strings.Count(string(data), "\n") != 1 {
		t.Fatalf("the interrupted hook ran again: %q", data)
	}
	if out := c.ok("audit"); !strings.HasPrefix(out, "ok: ") || strings.Contains(out, "in progress") {
		t.Fatalf("audit after finish:\n%s", out)
	}
	c.ok("audit", "--strict")
	if out := c.ok("finish", "--agent", "ide"); out != "agent ide has nothing in progress; nothing to do\n" {
		t.Fatalf("finish again: %q", out)
	}
}

// A restore left unfinished and followed by another one is damage, not
// progress: only an agent's last restore can be in progress.
func TestAuditFindsAnUnfinishedRestoreFollowedByAnother(t *testing.T) {
	c := newCLI(t)
	evs := fullRun(t)
	// The startup restore stops after SessionLoaded; the resume follows.
	from := indexOf(t, evs, schema.TypeSessionStartHookStarted, 1)
	to := indexOf(t, evs, schema.TypeSaveAttempted, 1)
	var broken []eventlog.Event
	for i, ev := range evs {
		if i < from || i >= to || ev.Stream != "agent/ide" {
			broken = append(broken, ev)
		}
	}
	rep := auditStore(t, c, testkit.WriteStore(t, broken), reprise.ViolationUnfinished, "agent/ide", 2)
	if len(rep.InProgress) != 0 {
		t.Fatalf("in progress: %+v", rep.InProgress)
	}
}

// An audit read through the socket of a running restore says the step in
// progress may be running in that process, and to finish it after.
func TestAuditThroughTheHolderSaysTheRestoreMayBeRunningThere(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("a")
	pid, _ := c.hungStart("a")
	out := c.ok("audit")
	want := fmt.Sprintf("; it may be running in process %d (", pid)
	if !strings.Contains(out, want) || !strings.Contains(out, "which holds the store; if it does not end there, run after that process ends: reprise finish --agent ide\n") ||
		strings.Contains(out, "rolls it forward") {
		t.Fatalf("audit while the restore runs:\n%s", out)
	}
	var rep auditJSON
	c.okJSON(&rep, "audit")
	if len(rep.InProgress) != 1 || !strings.HasPrefix(rep.InProgress[0].RunningIn, fmt.Sprintf("process %d (", pid)) {
		t.Fatalf("audit --json while the restore runs: %+v", rep.InProgress)
	}
}

// firedRun fires, on agent ide with session a current, Notification n1,
// whose command hook answers with context, TaskCreated task-1, whose hook
// blocks it with exit 2, and Notification n2, and returns the events of
// the log.
func firedRun(t *testing.T) []eventlog.Event {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	e := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	hooks, err := hookexec.LoadSettings(testkit.WriteFile(t, filepath.Join(dir, "settings.json"), `{"hooks": {
		"Notification": [{"hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"Notification\", \"additionalContext\": \"told\"}}'"}]}],
		"TaskCreated": [{"hooks": [{"type": "command", "command": "echo 'no tasks today' >&2; exit 2"}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Hooks().AddAll(hooks); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "a", dir, "hello")
	agent := testkit.Agent(t, e, "ide")
	if _, err := agent.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		event      schema.HookEvent
		id, fields string
	}{
		{schema.HookNotification, "n1", `{"message": "waiting"}`},
		{schema.HookTaskCreated, "task-1", `{"task_id": "1", "task_subject": "ship"}`},
		{schema.HookNotification, "n2", `{"message": "still waiting"}`},
	} {
		if _, err := agent.Fire(ctx, f.event, f.id, json.RawMessage(f.fields)); err != nil {
			t.Fatal(err)
		}
	}
	return testkit.Events(t, e.Store())
}

// A log cut while a fire's hooks ran has the fire in progress: audit names
// it with the command that closes it, counts the fires of each event in
// its summary and JSON, and reprise log shows each fire's steps. The next
// command on the agent closes the fire as interrupted.
func TestAuditCountsFiresAndReportsOneCutShortAsInProgress(t *testing.T) {
	c := newCLI(t)
	evs := firedRun(t)
	path := testkit.WriteStore(t, evs[:len(evs)-1]) // without n2's outcome
	out := c.ok("--store", path, "audit")
	want := "agent/ide#9: in progress: fire n2 (Notification): hooks started with no outcome recorded yet; " +
		"the next command on agent ide rolls it forward: reprise --store " + path + " finish --agent ide\n" +
		"ok: 11 events, 1 sessions, 1 agents, 1 restores; 1 in progress; hooks: 2 run, 0 failed, 0 cancelled, 0 interrupted; " +
		"fires: Notification 1, TaskCreated 1 (1 blocked)\n"
	if out != want {
		t.Fatalf("audit:\n%s\nwant:\n%s", out, want)
	}
	var rep auditJSON
	c.okJSON(&rep, "--store", path, "audit")
	if len(rep.InProgress) != 1 || rep.InProgress[0].Lane != "fire" || rep.InProgress[0].ID != "n2" || rep.InProgress[0].State != "fire-hooks" {
		t.Fatalf("audit --json in progress: %+v", rep.InProgress)
	}
	if len(rep.Fires) != 2 || !reflect.DeepEqual(rep.Fires[1], jsonview.Fires{Event: "TaskCreated", Fired: 1, Blocked: 1, Hooks: map[string]int{"ok": 1}}) {
		t.Fatalf("audit --json fires: %+v", rep.Fires)
	}

	log := c.ok("--store", path, "log", "--agent", "ide")
	for _, line := range []string{
		"HookEventStarted         session=a Notification id=n1 hooks=",
		`HookEventRan             session=a Notification id=n1 [`,
		`:ok] context="told"`,
		`HookEventRan             session=a TaskCreated id=task-1 [`,
		`:block reason="no tasks today"] blocked reason="no tasks today"`,
	} {
		if !strings.Contains(log, line) {
			t.Fatalf("log --agent ide has no %q:\n%s", line, log)
		}
	}

	c.ok("--store", path, "finish", "--agent", "ide", "--no-default-settings")
	out = c.ok("--store", path, "audit")
	if !strings.HasPrefix(out, "ok: 12 events, ") || !strings.HasSuffix(out, "hooks: 3 run, 0 failed, 0 cancelled, 1 interrupted; fires: Notification 2 (1 interrupted), TaskCreated 1 (1 blocked)\n") {
		t.Fatalf("audit after the next command:\n%s", out)
	}
}
