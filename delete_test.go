package reprise_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// secret is text a transcript must be rid of for good.
const secret = "AKIA-SECRET-7731-do-not-keep"

// withSecrets starts agent ide on session a, whose messages, SessionStart
// context (injected into a) and SessionEnd summary hold the secret, then
// restores it to session b, which holds none. It returns the agent.
func withSecrets(t *testing.T, e *reprise.Engine) *reprise.Agent {
	t.Helper()
	ctx := context.Background()
	err := e.Hooks().OnSessionStart("ctx", "", func(_ context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		if in.SessionID == "a" {
			return hookexec.SessionStartOutput{AdditionalContext: "context " + secret}, nil
		}
		return hookexec.SessionStartOutput{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = e.Hooks().OnSessionEnd("sum", "", func(_ context.Context, in hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
		return hookexec.SessionEndOutput{SessionSummary: "summary of " + in.FinalMessage}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "a", "", "my key is "+secret, "noted "+secret)
	testkit.Session(t, e, "b", "", "nothing to hide")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Restore(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestDeletedSessionLeavesEveryListingAndRefusesUse deletes the session an
// agent is on and checks every way of using it: each fails with
// ErrSessionDeleted naming it, nothing is recorded, and only a Start of
// another session moves the agent on, also in an Engine opened afterwards.
func TestDeletedSessionLeavesEveryListingAndRefusesUse(t *testing.T) {
	ctx := context.Background()
	e, path := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
	testkit.Session(t, e, "a", "", "hello")
	testkit.Session(t, e, "b", "", "hi")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Buffer(ctx, "a", reprise.Text("user", "pending")); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteSession(ctx, "a"); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	before := lastPosition(t, e.Store())
	isDeleted := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, reprise.ErrSessionDeleted) || !strings.Contains(err.Error(), "deleted: a") {
			t.Errorf("%s: %v; want ErrSessionDeleted naming a", what, err)
		}
	}
	_, err := e.Session(ctx, "a")
	isDeleted("Session", err)
	_, err = e.Conversation(ctx, "a")
	isDeleted("Conversation", err)
	_, err = e.Append(ctx, "a", reprise.Text("user", "more"))
	isDeleted("Append", err)
	_, err = e.Buffer(ctx, "a", reprise.Text("user", "more"))
	isDeleted("Buffer", err)
	_, err = e.Save(ctx, "a")
	isDeleted("Save", err)
	_, err = a.Restore(ctx, "b")
	isDeleted("Restore away from it", err)
	_, err = a.New(ctx, "c", "")
	isDeleted("New", err)
	_, err = a.Stop(ctx)
	isDeleted("Stop", err)
	_, err = a.Prompt(ctx, "hi")
	isDeleted("Prompt", err)
	_, err = a.Fork(ctx, "a", "")
	isDeleted("Fork", err)
	_, err = testkit.Agent(t, e, "other").Start(ctx, "a")
	isDeleted("Start of it on another agent", err)
	_, err = e.CreateSession(ctx, "a", "")
	isDeleted("CreateSession with its id", err)
	_, err = e.Import(ctx, strings.NewReader(`{"type":"user","message":{"role":"user","content":"x"}}`+"\n"), reprise.ImportOptions{ID: "a"})
	isDeleted("Import with its id", err)
	isDeleted("DeleteSession again", e.DeleteSession(ctx, "a"))
	if err := e.DeleteSession(ctx, "nope"); !errors.Is(err, reprise.ErrSessionNotFound) {
		t.Errorf("DeleteSession of a missing session: %v; want ErrSessionNotFound", err)
	}
	if got := lastPosition(t, e.Store()); got != before {
		t.Errorf("the refused calls wrote to the log: last position %d, was %d", got, before)
	}
	if _, err := e.Session(ctx, "c"); !errors.Is(err, reprise.ErrSessionNotFound) {
		t.Errorf("New on the deleted session left session c behind: %v", err)
	}
	sessions, err := e.Sessions(ctx)
	if err != nil || len(sessions) != 1 || sessions[0].ID != "b" {
		t.Errorf("Sessions = %+v, %v; want b alone", sessions, err)
	}
	if _, err := a.Start(ctx, "b"); err != nil {
		t.Fatalf("Start of another session after the deletion: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close saved the deleted session's pending message, or failed: %v", err)
	}

	e = testkit.OpenEngine(t, path, reprise.Options{Logger: testkit.Discard})
	_, err = e.Session(ctx, "a")
	isDeleted("Session, in a new Engine", err)
	if got := testkit.Agent(t, e, "ide").Current(); got != "b" {
		t.Errorf("after reopening, ide is on %q; want b", got)
	}
}

// TestDeleteSessionInUse deletes a session while an agent's SessionStart
// hooks run on it: the deletion is refused, as CheckDelete says it would
// be, and the restore completes.
func TestDeleteSessionInUse(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	var during, checked error
	err := e.Hooks().OnSessionStart("deleter", "", func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		checked = e.CheckDelete(ctx, in.SessionID)
		during = e.DeleteSession(ctx, in.SessionID)
		return hookexec.SessionStartOutput{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "a", "")
	if _, err := testkit.Agent(t, e, "ide").Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(during, reprise.ErrSessionInUse) || !strings.Contains(during.Error(), "agent ide") {
		t.Errorf("DeleteSession during a restore onto it: %v; want ErrSessionInUse naming agent ide", during)
	}
	if checked == nil || checked.Error() != during.Error() {
		t.Errorf("CheckDelete during a restore onto it: %v; want %v", checked, during)
	}
	if err := e.CheckDelete(ctx, "a"); err != nil {
		t.Errorf("CheckDelete once the restore is done: %v", err)
	}
	if err := e.DeleteSession(ctx, "a"); err != nil {
		t.Errorf("DeleteSession once the restore is done: %v", err)
	}
}

// TestVacuumRemovesDeletedSessionsForGood checks the whole promise on a
// bbolt file: after DeleteSession and Vacuum the secret is in no byte of
// the file and no file beside it, the agent's restores still audit, the
// other session is whole, and the id stays taken.
func TestVacuumRemovesDeletedSessionsForGood(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "reprise.db")
	e := testkit.OpenEngine(t, path, reprise.Options{Logger: testkit.Discard})
	withSecrets(t, e)
	transcripts := reprise.DefaultTranscriptDir(path)
	if err := os.WriteFile(filepath.Join(transcripts, "a-hook-1.txt"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(storeBytes(t, path), []byte(secret)) || !bytes.Contains(mustRead(t, filepath.Join(transcripts, "a.jsonl")), []byte(secret)) {
		t.Fatal("the secret is not in the store's files and the transcript before the deletion; the test proves nothing")
	}
	if err := e.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	rep, err := e.Vacuum(ctx)
	if err != nil {
		t.Fatalf("Vacuum: %v", err)
	}
	if len(rep.Sessions) != 1 || rep.Sessions[0] != "a" || rep.Events != 4 || rep.Rewritten < 3 || rep.Files < 2 {
		t.Errorf("Vacuum report = %+v; want session a, 4 events (created, 2 messages, the reminder), 3 or more agent events, 2 or more files", rep)
	}
	if bytes.Contains(storeBytes(t, path), []byte(secret)) {
		t.Error("the secret is still in the store's files after the vacuum")
	}
	entries, _ := os.ReadDir(transcripts)
	for _, ent := range entries {
		if strings.HasPrefix(ent.Name(), "a") {
			t.Errorf("file %s is left after the vacuum", ent.Name())
		}
	}
	checkAfterVacuum(t, e)
	if rep, err := e.Vacuum(ctx); err != nil || rep.Events+rep.Rewritten+rep.Files != 0 {
		t.Errorf("a second Vacuum = %+v, %v; want nothing left to do", rep, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = testkit.OpenEngine(t, path, reprise.Options{Logger: testkit.Discard})
	checkAfterVacuum(t, e)
	if _, err := e.CreateSession(ctx, "a", ""); !errors.Is(err, reprise.ErrSessionDeleted) {
		t.Errorf("CreateSession with a vacuumed id: %v; want ErrSessionDeleted", err)
	}
}

// checkAfterVacuum checks a store where session a was vacuumed from
// withSecrets: the audit is clean, b is whole, a is deleted, and agent
// ide's restores keep their steps and hook statuses without the text.
func checkAfterVacuum(t *testing.T, e *reprise.Engine) {
	t.Helper()
	ctx := context.Background()
	rep, err := reprise.Audit(ctx, e.Store())
	if err != nil || len(rep.Violations) != 0 {
		t.Errorf("Audit after the vacuum: %v, %v; want no violation", err, rep.Violations)
	}
	if msgs, err := e.Conversation(ctx, "b"); err != nil || len(msgs) != 1 {
		t.Errorf("session b after the vacuum: %d messages, %v; want its 1", len(msgs), err)
	}
	if _, err := e.Conversation(ctx, "a"); !errors.Is(err, reprise.ErrSessionDeleted) {
		t.Errorf("session a after the vacuum: %v; want ErrSessionDeleted", err)
	}
	history := testkit.Agent(t, e, "ide").History()
	if len(history) != 2 {
		t.Fatalf("agent ide has %d restores after the vacuum; want 2", len(history))
	}
	start, resume := history[0], history[1]
	if len(start.Steps) != 4 || start.Context != "" || len(start.StartOutcomes) != 1 || start.StartOutcomes[0].Status != schema.HookOK {
		t.Errorf("the startup restore after the vacuum: steps %v, context %q, outcomes %+v; want 4 steps, no context, one ok hook",
			start.Steps, start.Context, start.StartOutcomes)
	}
	if len(resume.EndOutcomes) != 1 || resume.EndOutcomes[0].Summary != "" || resume.EndMessage != "" {
		t.Errorf("the restore away from a after the vacuum: outcomes %+v, final message %q; want the hook without its summary",
			resume.EndOutcomes, resume.EndMessage)
	}
	var found bool
	if err := e.Store().ReadAll(ctx, 1, func(ev eventlog.Event) error {
		found = found || bytes.Contains(ev.Payload, []byte(secret))
		return nil
	}); err != nil || found {
		t.Errorf("reading the log after the vacuum: %v, secret found: %v", err, found)
	}
}

// storeBytes returns the bytes of the bbolt file at path and of the
// write-ahead log segments beside it: an append is in one or the other
// until the log is applied.
func storeBytes(t *testing.T, path string) []byte {
	t.Helper()
	segments, err := filepath.Glob(path + ".wal.*")
	if err != nil {
		t.Fatal(err)
	}
	data := mustRead(t, path)
	for _, seg := range segments {
		data = append(data, mustRead(t, seg)...)
	}
	return data
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestAuditReportsGapsNoVacuumExplains removes events without saying so:
// the audit reports the gaps.
func TestAuditReportsGapsNoVacuumExplains(t *testing.T) {
	ctx := context.Background()
	store := eventlog.NewMemoryStore()
	e := reprise.New(store, reprise.Options{Files: reprise.NewMemoryFiles()})
	testkit.Session(t, e, "a", "", "one", "two")
	if err := e.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	_, err := store.Purge(ctx, eventlog.Purge{
		Expect:  []eventlog.Expect{{Stream: "other"}},
		Remove:  []eventlog.SeqRange{{Stream: projection.SessionStream("a"), First: 1, Last: 3}},
		Records: []eventlog.Record{{Stream: "other", Type: "Other", Version: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	schema.RegisterIgnorable("Other")
	rep, err := reprise.Audit(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	var gaps []string
	for _, v := range rep.Violations {
		if v.Kind == reprise.ViolationSequenceGap {
			gaps = append(gaps, v.String())
		}
	}
	if len(gaps) < 2 {
		t.Errorf("Audit of gaps no vacuum explains found %q; want the session's sequence gap and the position gap", gaps)
	}
}

// TestDeleteInactive keeps sessions with recent activity, be it a message
// or an agent loading them, and deletes the others.
func TestDeleteInactive(t *testing.T) {
	ctx := context.Background()
	day := 24 * time.Hour
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e, _ := testkit.NewEngine(t, reprise.Options{Now: clock})
	testkit.Session(t, e, "old", "", "x")
	testkit.Session(t, e, "loaded", "", "x")
	testkit.Session(t, e, "written", "", "x")
	now = now.Add(40 * day)
	if _, err := testkit.Agent(t, e, "ide").Start(ctx, "loaded"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "written", reprise.Text("assistant", "y")); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "new", "")
	now = now.Add(day)
	cutoff := now.Add(-30 * day)
	inactive, err := e.InactiveSessions(ctx, cutoff)
	if err != nil || len(inactive) != 1 || inactive[0].ID != "old" {
		t.Fatalf("InactiveSessions = %+v, %v; want old alone", inactive, err)
	}
	deleted, err := e.DeleteInactive(ctx, cutoff)
	if err != nil || len(deleted) != 1 || deleted[0].ID != "old" {
		t.Fatalf("DeleteInactive = %+v, %v; want old alone", deleted, err)
	}
	if _, err := e.Session(ctx, "old"); !errors.Is(err, reprise.ErrSessionDeleted) {
		t.Errorf("old after DeleteInactive: %v; want ErrSessionDeleted", err)
	}
	if again, err := e.DeleteInactive(ctx, cutoff); err != nil || len(again) != 0 {
		t.Errorf("DeleteInactive again = %+v, %v; want nothing", again, err)
	}
}

// TestVacuumedStoreCopies copies a vacuumed store to a new bbolt file and
// to memory: the gaps come along, the copy audits clean and holds the same
// events.
func TestVacuumedStoreCopies(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
	withSecrets(t, e)
	if err := e.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	want := testkit.Events(t, e.Store())
	file, err := boltstore.Open(filepath.Join(t.TempDir(), "copy.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for name, dst := range map[string]interface {
		eventlog.Store
		eventlog.Loader
	}{"bbolt": file, "memory": eventlog.NewMemoryStore()} {
		if _, err := eventlog.Copy(ctx, dst, e.Store()); err != nil {
			t.Fatalf("%s: Copy: %v", name, err)
		}
		if got := testkit.Events(t, dst); len(got) != len(want) || got[len(got)-1].Position != want[len(want)-1].Position {
			t.Errorf("%s: the copy holds %d events; want %d, ending at the same position", name, len(got), len(want))
		}
		rep, err := reprise.Audit(ctx, dst)
		if err != nil || len(rep.Violations) != 0 {
			t.Errorf("%s: Audit of the copy: %v, %v; want no violation", name, err, rep.Violations)
		}
	}
}

// TestDeletedByAnotherEngine deletes a session through a second Engine on
// the same store, as another host of a shared database would: the first,
// which has the session cached, refuses to use it from then on.
func TestDeletedByAnotherEngine(t *testing.T) {
	ctx := context.Background()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "r.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	host := reprise.New(store, reprise.Options{Logger: testkit.Discard})
	defer host.Close()
	other := reprise.New(store, reprise.Options{Logger: testkit.Discard, TranscriptDir: t.TempDir()})
	testkit.Session(t, host, "a", "", "hello")
	testkit.Session(t, host, "b", "")
	a := testkit.Agent(t, host, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := other.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Restore(ctx, "b"); !errors.Is(err, reprise.ErrSessionDeleted) {
		t.Errorf("Restore away from a session another Engine deleted: %v; want ErrSessionDeleted", err)
	}
	if _, err := host.Append(ctx, "a", reprise.Text("user", "more")); !errors.Is(err, reprise.ErrSessionDeleted) {
		t.Errorf("Append to a session another Engine deleted: %v; want ErrSessionDeleted", err)
	}
	if rep, err := reprise.Audit(ctx, store); err != nil || len(rep.Violations) != 0 {
		t.Errorf("Audit: %v, %v; want no violation", err, rep.Violations)
	}
}

// A store opened before each store had its own transcript directory kept
// its files in the "transcripts" directory beside it, shared with the
// stores next to it. Vacuum removes a deleted session's files there too,
// and leaves the other sessions' files alone.
func TestVacuumRemovesFilesFromTheSharedDirectoryOfOldStores(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	shared := filepath.Join(dir, "transcripts")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	old := []string{"a.jsonl", "a.env", "a-hook-1.txt"}
	for _, name := range append(old, "b.jsonl") {
		if err := os.WriteFile(filepath.Join(shared, name), []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	for _, id := range []string{"a", "b"} {
		if _, err := e.CreateSession(ctx, id, dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	rep, err := e.Vacuum(ctx)
	if err != nil {
		t.Fatalf("Vacuum: %v", err)
	}
	for _, name := range old {
		if _, err := os.Lstat(filepath.Join(shared, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still in the shared directory after the vacuum (%v)", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(shared, "b.jsonl")); err != nil {
		t.Errorf("session b's transcript went with a's: %v", err)
	}
	if rep.Files < len(old) {
		t.Errorf("Vacuum counted %d files; want at least the %d of the shared directory", rep.Files, len(old))
	}
}
