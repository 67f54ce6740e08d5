package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// cliSecret is what a transcript must be rid of for good.
const cliSecret = "ghp_CLISECRET0123456789"

// secretSettings writes settings whose SessionStart command hook prints
// the token.txt of the session's directory as context, which the restore
// injects into the session.
func secretSettings(t *testing.T, c *cli) string {
	t.Helper()
	return c.writeFile("secret.json", testkit.Settings(t, []string{"cat token.txt 2>/dev/null || true"}, nil))
}

// TestRmThenVacuum deletes a session that holds a secret in its messages
// and in a hook's injected context, and follows what each command says of
// it before and after the vacuum; then the secret is in no byte of the
// store and no file beside it, and the audit is clean.
func TestRmThenVacuum(t *testing.T) {
	c := newCLI(t)
	dirA := c.mkdir("a")
	c.writeFile("a/token.txt", "token "+cliSecret)
	c.ok("new", "--id", "a", "--cwd", dirA)
	c.ok("append", "a", "--role", "user", "my token is "+cliSecret)
	c.ok("append", "a", "--role", "assistant", "noted")
	c.session("b", "nothing here")
	flags := []string{"--agent", "ide", "--settings", secretSettings(t, c), "--no-default-settings"}
	c.ok(append(append([]string{"start"}, flags...), "a")...)
	c.ok(append(append([]string{"resume"}, flags...), "b")...)
	transcripts := reprise.DefaultTranscriptDir(c.store)
	if !bytes.Contains(readFile(t, c.store), []byte(cliSecret)) || !bytes.Contains(readFile(t, filepath.Join(transcripts, "a.jsonl")), []byte(cliSecret)) {
		t.Fatal("the secret is not in the store and the transcript; the test proves nothing")
	}

	if out := c.ok("rm", "a"); out != "deleted a (3 message(s))\n" {
		t.Errorf("rm a printed %q", out)
	}
	var sessions []sessionJSON
	c.okJSON(&sessions, "sessions")
	if len(sessions) != 1 || sessions[0].ID != "b" {
		t.Errorf("sessions after rm: %+v; want b alone", sessions)
	}
	if out := c.ok("log", "a"); !strings.Contains(out, "SessionDeleted") {
		t.Errorf("log a after rm does not show the tombstone:\n%s", out)
	}
	for _, args := range [][]string{
		{"replay", "a"}, {"export", "a"}, {"append", "a", "--role", "user", "x"}, {"new", "--id", "a"},
		{"start", "--agent", "other", "--no-default-settings", "a"}, {"rm", "a"}, {"hooks", "--session", "a"},
	} {
		if r := c.fails(exitFailure, args...); !strings.Contains(r.stderr, "session was deleted: a") {
			t.Errorf("reprise %s after rm: %s", strings.Join(args, " "), r.stderr)
		}
	}
	if out := c.ok("audit"); !strings.HasPrefix(out, "ok:") {
		t.Errorf("audit after rm: %s", out)
	}

	var rep struct {
		Sessions          []string
		Events, Rewritten int
		Files             int
	}
	c.okJSON(&rep, "vacuum")
	if len(rep.Sessions) != 1 || rep.Events != 4 || rep.Rewritten == 0 || rep.Files < 1 {
		t.Errorf("vacuum reported %+v; want session a's 4 events (created, 2 messages, reminder), rewritten agent events and its files", rep)
	}
	if bytes.Contains(readFile(t, c.store), []byte(cliSecret)) {
		t.Error("the secret is still in the store's file after the vacuum")
	}
	if matches, _ := filepath.Glob(filepath.Join(transcripts, "a*")); len(matches) != 0 {
		t.Errorf("files of a are left after the vacuum: %v", matches)
	}
	if out := c.ok("audit"); !strings.HasPrefix(out, "ok:") {
		t.Errorf("audit after the vacuum: %s", out)
	}
	if out := c.ok("log", "--agent", "ide"); strings.Contains(out, cliSecret) || !strings.Contains(out, "ContextInjected") {
		t.Errorf("log --agent ide after the vacuum:\n%s", out)
	}
	if out := c.ok("log", "a"); strings.Count(out, "\n") != 1 || !strings.Contains(out, "SessionDeleted") {
		t.Errorf("log a after the vacuum shows more than the tombstone:\n%s", out)
	}
	if out := c.ok("replay", "b"); !strings.Contains(out, "nothing here") {
		t.Errorf("replay b after the vacuum:\n%s", out)
	}
	c.fails(exitFailure, "new", "--id", "a")
	if out := c.ok("vacuum"); out != "removed 0 event(s) of 0 deleted session(s), blanked 0 agent event(s), removed 0 file(s)\n" {
		t.Errorf("a second vacuum printed %q", out)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRmOlderThan deletes by last activity: a session created long ago
// goes unless an agent loaded it since; --dry-run deletes nothing.
func TestRmOlderThan(t *testing.T) {
	c := newCLI(t)
	now := time.Now()
	clock := func() time.Time { return now }
	if err := os.MkdirAll(filepath.Dir(c.store), 0o700); err != nil {
		t.Fatal(err)
	}
	e, err := reprise.Open(c.store, reprise.Options{Now: clock, AllowMissingCwd: true})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(-40 * 24 * time.Hour)
	for _, id := range []string{"old", "reloaded"} {
		if _, err := e.CreateSession(context.Background(), id, c.dir); err != nil {
			t.Fatal(err)
		}
	}
	now = time.Now().Add(-2 * time.Hour)
	if _, err := e.Agent(context.Background(), "ide"); err != nil {
		t.Fatal(err)
	}
	a, _ := e.Agent(context.Background(), "ide")
	if _, err := a.Start(context.Background(), "reloaded"); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	c.session("fresh")

	if out := c.ok("rm", "--older-than", "30d", "--dry-run"); out != "would delete old (0 message(s))\n" {
		t.Errorf("rm --older-than 30d --dry-run printed %q", out)
	}
	if out := c.ok("rm", "--older-than", "1h", "--dry-run"); out != "would delete old (0 message(s))\nwould delete reloaded (0 message(s))\n" {
		t.Errorf("rm --older-than 1h --dry-run printed %q", out)
	}
	var sessions []sessionJSON
	c.okJSON(&sessions, "sessions")
	if len(sessions) != 3 {
		t.Fatalf("a dry run deleted sessions: %+v", sessions)
	}
	var out struct {
		DryRun  bool          `json:"dry_run"`
		Deleted []deletedJSON `json:"deleted"`
	}
	c.okJSON(&out, "rm", "--older-than", "720h")
	if out.DryRun || len(out.Deleted) != 1 || out.Deleted[0].ID != "old" || out.Deleted[0].LastActivity == "" {
		t.Errorf("rm --older-than 720h --json = %+v; want old deleted", out)
	}
	c.okJSON(&sessions, "sessions")
	if len(sessions) != 2 {
		t.Errorf("after rm --older-than, sessions = %+v; want reloaded and fresh", sessions)
	}
	for _, args := range [][]string{
		{"rm"}, {"rm", "fresh", "--older-than", "1d"}, {"rm", "--older-than", "30x"},
		{"rm", "--older-than", "0d"}, {"rm", "--older-than", "-5h"}, {"rm", "--older-than", "d"},
	} {
		c.fails(exitUsage, args...)
	}
	// An age is in days, hours and minutes, as the help says.
	for _, age := range []string{"1s", "90s", "1h30s", "500ms", "1µs"} {
		if r := c.fails(exitUsage, "rm", "--older-than", age, "--dry-run"); !strings.Contains(r.stderr, "is not an age in days, hours or minutes") {
			t.Errorf("rm --older-than %s: %s", age, r.stderr)
		}
	}
	c.ok("rm", "--older-than", "1h30m", "--dry-run")

	// An age too long for a duration is a usage error, deleting nothing,
	// instead of wrapping around to a short one (135586085299701d was
	// about a second, 7900000d about 352 days).
	for _, age := range []string{"135586085299701d", "7900000d", "106752d", "2562048h", "9223372036854775807d"} {
		for _, dry := range [][]string{nil, {"--dry-run"}} {
			if r := c.fails(exitUsage, append([]string{"rm", "--older-than", age}, dry...)...); !strings.Contains(r.stderr, "too long") {
				t.Errorf("rm --older-than %s %v: %s", age, dry, r.stderr)
			}
		}
	}
	c.okJSON(&sessions, "sessions")
	if len(sessions) != 2 {
		t.Errorf("after ages too long, sessions = %+v; want reloaded and fresh", sessions)
	}
	if out := c.ok("rm", "--older-than", "106751d", "--dry-run"); out != "nothing to delete\n" {
		t.Errorf("rm --older-than 106751d --dry-run, the longest age, printed %q", out)
	}
}

// TestRmAndVacuumOnPostgres runs rm and vacuum on a PostgreSQL store.
func TestRmAndVacuumOnPostgres(t *testing.T) {
	c := newCLI(t)
	store := postgresStore(t)
	c.ok("--store", store, "new", "--id", "a", "--cwd", c.dir)
	c.ok("--store", store, "append", "a", "--role", "user", cliSecret)
	c.ok("--store", store, "rm", "a")
	if out := c.ok("--store", store, "vacuum"); !strings.HasPrefix(out, "removed 2 event(s) of 1 deleted session(s)") {
		t.Errorf("vacuum on postgres: %s", out)
	}
	if out := c.ok("--store", store, "audit"); !strings.HasPrefix(out, "ok:") {
		t.Errorf("audit: %s", out)
	}
	c.fails(exitFailure, "--store", store, "new", "--id", "a", "--cwd", c.dir)
}

// bigDeletedStore writes a store with session a of n messages that hold
// the secret, session b, and a's tombstone, in a few large appends.
func bigDeletedStore(t *testing.T, path string, n int) {
	t.Helper()
	ctx := context.Background()
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	add := func(stream string, head uint64, ps ...schema.Payload) {
		recs := make([]eventlog.Record, len(ps))
		for i, p := range ps {
			if recs[i], err = schema.NewRecord(stream, p, time.Now().UnixNano(), ""); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Append(ctx, []eventlog.Expect{{Stream: stream, Seq: head}}, recs); err != nil {
			t.Fatal(err)
		}
	}
	msgs := []schema.Payload{&schema.SessionCreated{ID: "a", Cwd: "/"}}
	for i := range n {
		msgs = append(msgs, &schema.MessageAppended{Message: reprise.Text("user", strings.Repeat(cliSecret, 8)+string(rune('a'+i%26)))})
		msgs[len(msgs)-1].(*schema.MessageAppended).Message.UUID = "m" + time.Now().String()
	}
	add(projection.SessionStream("a"), 0, msgs...)
	add(projection.SessionStream("b"), 0, &schema.SessionCreated{ID: "b", Cwd: "/"},
		&schema.MessageAppended{Message: reprise.Text("user", "keep me")})
	add(projection.SessionStream("a"), uint64(n+1), &schema.SessionDeleted{ID: "a", Messages: n})
}

// compactionFiles returns the files a compaction of the store at path
// makes beside it: .STORE.vacuum-NNN, and STORE.vacuum in older builds.
func compactionFiles(t *testing.T, path string) []string {
	t.Helper()
	dir, base := filepath.Dir(path), filepath.Base(path)
	hidden, err := filepath.Glob(filepath.Join(dir, "."+base+".vacuum-*"))
	if err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(path + ".vacuum")
	return append(hidden, old...)
}

// TestBinaryVacuumKilled kills reprise vacuum with SIGKILL at different
// moments of its work. Whatever the moment, the store opens, audits clean
// and keeps session b whole; the next vacuum finishes the work.
func TestBinaryVacuumKilled(t *testing.T) {
	c := newBinaryCLI(t)
	if err := os.MkdirAll(filepath.Dir(c.store), 0o700); err != nil {
		t.Fatal(err)
	}
	killed, midCompaction := 0, 0
	for delay := time.Duration(0); delay <= 150*time.Millisecond; delay += 15 * time.Millisecond {
		bigDeletedStore(t, c.store, 20000)
		cmd := c.command("vacuum")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		_ = cmd.Process.Kill()
		var exit *exec.ExitError
		if err := cmd.Wait(); err != nil {
			if !errorsAs(err, &exit) {
				t.Fatal(err)
			}
			killed++
		}
		if out := c.ok("audit"); !strings.HasPrefix(out, "ok:") {
			t.Fatalf("audit after vacuum was killed %v in: %s", delay, out)
		}
		if out := c.ok("replay", "b"); !strings.Contains(out, "keep me") {
			t.Fatalf("replay b after vacuum was killed %v in:\n%s", delay, out)
		}
		if len(compactionFiles(t, c.store)) > 0 {
			midCompaction++
		}
		c.ok("vacuum")
		if bytes.Contains(readFile(t, c.store), []byte(cliSecret)) {
			t.Fatalf("the secret is in the store after a vacuum that followed one killed %v in", delay)
		}
		if left := compactionFiles(t, c.store); len(left) > 0 {
			t.Errorf("the compaction's files are left beside the store: %v", left)
		}
		if err := os.Remove(c.store); err != nil {
			t.Fatal(err)
		}
	}
	if killed == 0 {
		t.Error("no vacuum was killed before it finished: the test proved nothing")
	}
	t.Logf("%d vacuums killed, %d of them while compacting", killed, midCompaction)
}

// errorsAs is errors.As for an *exec.ExitError.
func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*target = e
	return ok
}

// TestAgentCommandsOnADeletedSession runs every agent command whose
// session cannot be read: the agent's current session deleted, a fork of a
// deleted session, and an agent with no session while the current
// directory is gone. Each fails with exit 1 and says why, and the store is
// closed behind it (no socket left beside it).
func TestAgentCommandsOnADeletedSession(t *testing.T) {
	c := newCLI(t)
	c.session("keep", "hello")
	c.session("sec", "hello")
	c.ok("start", "--agent", "ag", "--no-default-settings", "keep")
	r := c.run("rm", "keep", "sec")
	if r.code != exitOK || !strings.Contains(r.stderr, "session keep was the current session of agent ag: give it another with reprise start --agent ag SESSION") ||
		strings.Contains(r.stderr, "session sec was") {
		t.Fatalf("rm of an agent's current session: exit %d, stderr %q", r.code, r.stderr)
	}
	const current = "session was deleted: keep, the current session of agent ag; start another session"
	for _, args := range [][]string{
		{"clear", "--agent", "ag"}, {"compact", "--agent", "ag", "summary"},
		{"end", "--agent", "ag", "--reason", "complete"}, {"stop", "--agent", "ag"},
		{"prompt", "--agent", "ag", "hi"}, {"finish", "--agent", "ag"},
		{"fork", "--agent", "z", "sec"},
	} {
		want := current
		if args[0] == "fork" {
			want = "session was deleted: sec"
		}
		if r := c.fails(exitFailure, append(args, "--no-default-settings")...); !strings.Contains(r.stderr, want) {
			t.Errorf("reprise %s: %s; want %q", strings.Join(args, " "), r.stderr, want)
		}
	}
	if _, err := os.Stat(c.store + ".sock"); !os.IsNotExist(err) {
		t.Errorf("a socket is left beside the store: %v", err)
	}

	// An agent with no session takes its hooks from the current
	// directory, which is gone.
	gone := c.mkdir("gone")
	t.Chdir(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if r := c.fails(exitFailure, "stop", "--agent", "g", "--no-default-settings"); !strings.Contains(r.stderr, "cannot read the current directory") {
		t.Errorf("stop in a removed directory: %s", r.stderr)
	}
}

// A dry run of rm applies the checks of rm: it lists as refused, with the
// reason, a session while a running restore holds the store, and one an
// agent step in flight uses; it says when nothing matches.
func TestRmDryRunSaysWhatRmWouldRefuse(t *testing.T) {
	c := newBinaryCLI(t)
	c.session("a", "hello")
	c.session("b", "hello")
	if out := c.ok("rm", "--older-than", "1000d", "--dry-run"); out != "nothing to delete\n" {
		t.Errorf("rm --dry-run with nothing old: %q", out)
	}

	pid, kill := c.hungStart("a")
	r := c.fails(exitFailure, "rm", "--dry-run", "b")
	want := fmt.Sprintf("would refuse b: the store is in use by process %d", pid)
	if !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stderr, "rm would refuse 1 session(s)") {
		t.Errorf("rm --dry-run b while a restore holds the store:\n%s%s\nwant %q", r.stdout, r.stderr, want)
	}
	kill()

	r = c.fails(exitFailure, "rm", "--dry-run", "a", "b")
	if !strings.Contains(r.stdout, "would delete b (1 message(s))\n") ||
		!strings.Contains(r.stdout, "would refuse a: session is in use by an agent step in flight: a: agent ide is in state starting") {
		t.Errorf("rm --dry-run a b with a restore onto a in flight:\n%s", r.stdout)
	}
	var out struct {
		Deleted []deletedJSON `json:"deleted"`
		Refused []refusedJSON `json:"refused"`
	}
	if res := c.run("--json", "rm", "--dry-run", "a", "b"); res.code != exitFailure || json.Unmarshal([]byte(res.stdout), &out) != nil ||
		len(out.Deleted) != 1 || len(out.Refused) != 1 || out.Refused[0].ID != "a" || !strings.Contains(out.Refused[0].Reason, "in use") {
		t.Errorf("rm --json --dry-run a b: %+v", res)
	}
	if res := c.fails(exitFailure, "rm", "a"); !strings.Contains(res.stderr, "session is in use") {
		t.Errorf("rm a: %s", res.stderr)
	}
}

// TestRmRacingAppendersOnPostgres deletes sessions while another process
// appends to each of them, a message every few milliseconds, until the
// tombstone stops it:
// what rm prints, and its --json, is the message count its tombstone
// records, however many messages landed between rm's first look and the
// tombstone.
func TestRmRacingAppendersOnPostgres(t *testing.T) {
	c := newCLI(t)
	url := postgresStore(t)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := reprise.New(s, reprise.Options{Logger: testkit.Discard})
	defer e.Close()
	for trial := range 20 {
		id := fmt.Sprintf("race%d", trial)
		testkit.Session(t, e, id, c.dir, "first")
		started, stopped := make(chan struct{}), make(chan error, 1)
		go func() {
			for n := 0; ; n++ {
				_, err := e.Append(ctx, id, reprise.Text("user", "more"))
				if n == 3 {
					close(started)
				}
				if err != nil {
					if n < 3 {
						close(started)
					}
					stopped <- err
					return
				}
				time.Sleep(5 * time.Millisecond) // about as fast as processes running reprise append go
			}
		}()
		<-started
		args := []string{"--store", url, "rm", id}
		if trial%2 == 1 {
			args = append([]string{"--json"}, args...)
		}
		out := c.ok(args...)
		if err := <-stopped; !errors.Is(err, reprise.ErrSessionDeleted) {
			t.Fatalf("the appender stopped with %v, want ErrSessionDeleted", err)
		}
		var tomb *schema.SessionDeleted
		if err := s.ReadStream(ctx, projection.SessionStream(id), 1, func(ev eventlog.Event) error {
			p, err := schema.Decode(ev)
			if d, ok := p.(*schema.SessionDeleted); ok {
				tomb = d
			}
			return err
		}); err != nil || tomb == nil {
			t.Fatalf("the tombstone of %s: %v", id, err)
		}
		want := fmt.Sprintf("deleted %s (%d message(s))\n", id, tomb.Messages)
		if trial%2 == 1 {
			want = fmt.Sprintf(`"messages":%d}`, tomb.Messages)
		}
		if !strings.Contains(out, want) {
			t.Errorf("trial %d: rm printed %q; its tombstone records %d message(s)", trial, out, tomb.Messages)
		}
	}
}
