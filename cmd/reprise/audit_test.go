package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
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
	if !strings.HasPrefix(line, v.Stream+"#"+strconv.FormatUint(v.Seq, 10)+": "+kind+": ") ||
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
