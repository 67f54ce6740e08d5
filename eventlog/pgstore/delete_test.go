package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
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
