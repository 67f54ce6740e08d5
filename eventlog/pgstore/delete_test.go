package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/schema"
)

// TestDeleteAndVacuumOnPostgres deletes a session that holds a secret,
// in its messages and in the context a hook gave, vacuums, and checks the
// tables: no row holds the secret, the gaps are recorded, the audit is
// clean, and a second host sees the session deleted and its id taken.
func TestDeleteAndVacuumOnPostgres(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	dir := t.TempDir()
	const secret = "pg-SECRET-0042"
	e := newEngine(t, db.open(t, pgstore.Options{}), dir)
	err := e.Hooks().OnSessionStart("ctx", "", func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		return hookexec.SessionStartOutput{AdditionalContext: "ctx " + secret}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "a", dir, "key "+secret)
	testkit.Session(t, e, "b", dir, "fine")
	if _, err := testkit.Agent(t, e, "ide").Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	rows := func() int {
		var n int
		if err := db.admin.QueryRow(ctx, "SELECT count(*) FROM "+db.schema+".reprise_events WHERE position($1::bytea IN payload) > 0",
			[]byte(secret)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if rows() == 0 {
		t.Fatal("no row holds the secret before the deletion; the test proves nothing")
	}
	if err := e.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	rep, err := e.Vacuum(ctx)
	if err != nil {
		t.Fatalf("Vacuum: %v", err)
	}
	if len(rep.Sessions) != 1 || rep.Events != 3 {
		t.Errorf("Vacuum = %+v; want session a's 3 events (created, message, reminder)", rep)
	}
	if n := rows(); n != 0 {
		t.Errorf("%d rows hold the secret after the vacuum; want none", n)
	}
	var gaps int
	if err := db.admin.QueryRow(ctx, "SELECT count(*) FROM "+db.schema+".reprise_gaps").Scan(&gaps); err != nil || gaps == 0 {
		t.Errorf("reprise_gaps holds %d rows (%v); want the gaps the vacuum left", gaps, err)
	}
	var version int
	if err := db.admin.QueryRow(ctx, "SELECT version FROM "+db.schema+".reprise_schema_version").Scan(&version); err != nil || version != pgstore.GapsSchemaVersion {
		t.Errorf("schema version after the vacuum = %d (%v); want %d, which builds that know only gapless stores refuse", version, err, pgstore.GapsSchemaVersion)
	}

	other := newEngine(t, db.open(t, pgstore.Options{}), t.TempDir())
	audit, err := reprise.Audit(ctx, other.Store())
	if err != nil || len(audit.Violations) != 0 {
		t.Errorf("Audit after the vacuum: %v, %v; want no violation", err, audit.Violations)
	}
	if _, err := other.Conversation(ctx, "a"); !errors.Is(err, reprise.ErrSessionDeleted) {
		t.Errorf("another host reads a: %v; want ErrSessionDeleted", err)
	}
	if _, err := other.CreateSession(ctx, "a", dir); !errors.Is(err, reprise.ErrSessionDeleted) {
		t.Errorf("another host creates a: %v; want ErrSessionDeleted", err)
	}
	if msgs, err := other.Conversation(ctx, "b"); err != nil || len(msgs) != 1 {
		t.Errorf("session b: %d messages, %v; want its 1", len(msgs), err)
	}
}

// TestDeletedByAnotherHostBeforeTheIntent: host A's agent checks its
// session, then host B deletes it, then A records the intent of a Prompt,
// a Stop or a Compact (conditional on A's agent stream only, so it lands
// after the tombstone). A's step must end on its agent stream without
// writing to the session, the action and the next one must fail with
// ErrSessionDeleted, a Start of another session must move the agent on,
// and the audit must be clean. The hooks are function hooks that say
// something, so that each step would write to the session if it could.
func TestDeletedByAnotherHostBeforeTheIntent(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	dir := t.TempDir()
	hostB := newEngine(t, db.open(t, pgstore.Options{}), dir)
	race := &raceStore{Store: db.open(t, pgstore.Options{})}
	hostA := newEngine(t, race, dir)
	r := hostA.Hooks()
	for _, err := range []error{
		r.OnUserPromptSubmit("branch", func(context.Context, hookexec.PromptInput) (hookexec.PromptOutput, error) {
			return hookexec.PromptOutput{AdditionalContext: "on branch main"}, nil
		}),
		r.OnStop("keep-going", func(context.Context, hookexec.StopInput) (hookexec.StopOutput, error) {
			return hookexec.StopOutput{Decision: "block", Reason: "not done"}, nil
		}),
		r.OnPreCompact("snapshot", "", func(context.Context, hookexec.PreCompactInput) (hookexec.PreCompactOutput, error) {
			return hookexec.PreCompactOutput{}, nil
		}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		session string
		intent  eventlog.Type
		act     func(*reprise.Agent) error
	}{
		{"p", schema.TypePromptHookStarted, func(a *reprise.Agent) error { _, err := a.Prompt(ctx, "hello"); return err }},
		{"s", schema.TypeStopHookStarted, func(a *reprise.Agent) error { _, err := a.Stop(ctx); return err }},
		{"c", schema.TypePreCompactHookStarted, func(a *reprise.Agent) error { _, err := a.Compact(ctx, "summary"); return err }},
	}
	for _, st := range steps {
		testkit.Session(t, hostA, st.session, dir, "hello from "+st.session)
	}
	testkit.Session(t, hostA, "next", dir, "the way on")
	a := testkit.Agent(t, hostA, "ide")
	for _, st := range steps {
		if _, err := a.Start(ctx, st.session); err != nil {
			t.Fatal(err)
		}
		head, err := hostA.Store().Head(ctx, "session/"+st.session)
		if err != nil {
			t.Fatal(err)
		}
		race.arm(st.intent, func() error { return hostB.DeleteSession(ctx, st.session) })
		if err := st.act(a); !errors.Is(err, reprise.ErrSessionDeleted) {
			t.Fatalf("%s on %s, deleted by host B before its intent: %v; want ErrSessionDeleted", st.intent, st.session, err)
		}
		if race.err != nil {
			t.Fatalf("host B deletes %s: %v", st.session, race.err)
		}
		if ended := lastStep(t, hostB.Store(), "agent/ide"); !ended.deleted || ended.interrupted {
			t.Errorf("the step on %s ended with %+v; want it marked deleted, with the outcomes of the hooks that ran", st.session, ended)
		}
		if after, err := hostA.Store().Head(ctx, "session/"+st.session); err != nil || after != head+1 {
			t.Errorf("session %s head %d (%v) after the step; want %d: the tombstone, and nothing after it", st.session, after, err, head+1)
		}
		if err := st.act(a); !errors.Is(err, reprise.ErrSessionDeleted) {
			t.Errorf("the next action on %s: %v; want ErrSessionDeleted", st.session, err)
		}
		// A third host opens the agent with nothing to roll forward, on
		// the deleted session.
		c, err := newEngine(t, db.open(t, pgstore.Options{}), dir).Agent(ctx, "ide")
		if err != nil {
			t.Fatalf("another host opens agent ide: %v", err)
		}
		if c.Current() != st.session {
			t.Errorf("another host sees agent ide on %q; want %s", c.Current(), st.session)
		}
	}
	if _, err := a.Start(ctx, "next"); err != nil {
		t.Fatalf("Start of another session: %v", err)
	}
	rep, err := reprise.Audit(ctx, hostB.Store())
	if err != nil || len(rep.Violations) != 0 {
		t.Errorf("Audit: %v, %v; want no violation", err, rep.Violations)
	}
}

// stepEnd is what the last step of an agent says of how it ended.
type stepEnd struct {
	typ                  eventlog.Type
	deleted, interrupted bool
}

// lastStep reads the last event of stream.
func lastStep(t *testing.T, store eventlog.Store, stream string) stepEnd {
	t.Helper()
	ctx := context.Background()
	head, err := store.Head(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	var end stepEnd
	err = store.ReadStream(ctx, stream, head, func(ev eventlog.Event) error {
		p, err := schema.Decode(ev)
		end.typ = ev.Type
		switch p := p.(type) {
		case *schema.PromptHookRan:
			end.deleted, end.interrupted = p.Deleted, p.Interrupted
		case *schema.StopHookRan:
			end.deleted, end.interrupted = p.Deleted, p.Interrupted
		case *schema.PreCompactHookRan:
			end.deleted, end.interrupted = p.Deleted, p.Interrupted
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return end
}

// raceStore is host A's store: just before the next append that holds an
// event of type before, it runs race (another host's deletion), as if that
// deletion had landed between A's check of the session and that append.
type raceStore struct {
	eventlog.Store
	before eventlog.Type
	race   func() error
	err    error // of the last race
}

func (r *raceStore) arm(before eventlog.Type, race func() error) {
	r.before, r.race, r.err = before, race, nil
}

func (r *raceStore) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	if r.race != nil && slices.ContainsFunc(recs, func(rec eventlog.Record) bool { return rec.Type == r.before }) {
		race := r.race
		r.race = nil
		r.err = race()
	}
	return r.Store.Append(ctx, expect, recs)
}

// TryLock keeps the agent locks of the store underneath.
func (r *raceStore) TryLock(ctx context.Context, stream string) (func(), error) {
	return r.Store.(eventlog.StreamLocker).TryLock(ctx, stream)
}
