package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
)

// urlEnv names the variable holding the URL of the PostgreSQL server the
// tests use.
const urlEnv = "REPRISE_TEST_POSTGRES"

// skipLine is why the tests skip without a server.
const skipLine = urlEnv + " is not set: set it to a PostgreSQL URL, such as postgres://postgres@127.0.0.1:5432/test?sslmode=disable, to run the PostgreSQL tests"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(m.Run())
}

// serverURL returns the URL of the test server, or skips tb when none is
// configured.
func serverURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(urlEnv)
	if u == "" {
		tb.Skip(skipLine)
	}
	return u
}

// testDB is one test's own schema on the test server.
type testDB struct {
	schema string
	// url connects to the server with the schema as search_path and as
	// application_name, which tells the test's store connections apart.
	url   string
	admin *pgxpool.Pool // the test's own connections, outside the schema
}

// newDB creates a schema for tb, dropped when tb ends. It fails tb when the
// server is configured but cannot be reached.
func newDB(tb testing.TB) *testDB {
	tb.Helper()
	base := serverURL(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgxpool.New(ctx, base)
	if err != nil {
		tb.Fatalf("%s: %v", urlEnv, err)
	}
	if err := admin.Ping(ctx); err != nil {
		admin.Close()
		tb.Fatalf("%s is set, but the server cannot be reached: %v", urlEnv, err)
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	db := &testDB{schema: "pgstore_test_" + hex.EncodeToString(suffix), admin: admin}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+db.schema); err != nil {
		admin.Close()
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP SCHEMA "+db.schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", db.schema, err)
		}
		admin.Close()
	})
	db.url = withParams(tb, base, map[string]string{"search_path": db.schema, "application_name": db.schema})
	return db
}

// withParams adds connection parameters to a URL or a key=value string.
func withParams(tb testing.TB, base string, params map[string]string) string {
	tb.Helper()
	if !pgstore.IsURL(base) {
		for k, v := range params {
			base += fmt.Sprintf(" %s=%s", k, v)
		}
		return base
	}
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("%s: %v", urlEnv, err)
	}
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// open opens the store in db's schema, closed when tb ends.
func (db *testDB) open(tb testing.TB, opts pgstore.Options) *pgstore.Store {
	tb.Helper()
	s, err := pgstore.Open(context.Background(), db.url, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, eventlog.ErrClosed) {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// exec runs sql on the admin pool, with {schema} replaced by the schema.
func (db *testDB) exec(tb testing.TB, sql string, args ...any) {
	tb.Helper()
	sql = strings.ReplaceAll(sql, "{schema}", db.schema)
	if _, err := db.admin.Exec(context.Background(), sql, args...); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}

// terminate ends every server session of the test's stores, as a lost
// connection or a server shutdown does, and waits until they are gone.
func (db *testDB) terminate(tb testing.TB) int {
	tb.Helper()
	ctx := context.Background()
	var n int
	err := db.admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND pid <> pg_backend_pid()`, db.schema).Scan(&n)
	if err != nil {
		tb.Fatalf("terminate: %v", err)
	}
	waitFor(tb, "the terminated sessions to end", func() bool {
		var left int
		err := db.admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", db.schema).Scan(&left)
		return err == nil && left == 0
	})
	return n
}

// waitFor polls cond until it holds, failing tb after 20 seconds.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func rec(stream, payload string) eventlog.Record {
	return eventlog.Record{Stream: stream, Type: "pgstore.Test", Version: 1, Time: 1, Payload: []byte(payload)}
}

func readAll(tb testing.TB, s eventlog.Store, from uint64) []eventlog.Event {
	tb.Helper()
	var evs []eventlog.Event
	if err := s.ReadAll(context.Background(), from, func(ev eventlog.Event) error {
		ev.Payload = append([]byte(nil), ev.Payload...)
		evs = append(evs, ev)
		return nil
	}); err != nil {
		tb.Fatalf("ReadAll(%d): %v", from, err)
	}
	return evs
}

func head(tb testing.TB, s eventlog.Store, stream string) uint64 {
	tb.Helper()
	h, err := s.Head(context.Background(), stream)
	if err != nil {
		tb.Fatalf("Head(%s): %v", stream, err)
	}
	return h
}

// holdCounter begins a transaction on the admin pool that holds the row lock of
// the schema's position counter, which makes every append wait, until the
// returned function rolls it back.
func (db *testDB) holdCounter(tb testing.TB) (rollback func()) {
	tb.Helper()
	ctx := context.Background()
	tx, err := db.admin.Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT last FROM "+db.schema+".reprise_position FOR UPDATE"); err != nil {
		_ = tx.Rollback(ctx)
		tb.Fatal(err)
	}
	done := false
	rollback = func() {
		if !done {
			done = true
			_ = tx.Rollback(ctx)
		}
	}
	tb.Cleanup(rollback)
	return rollback
}

// waitForLockWait waits until one of the test's store sessions waits for a
// lock, as an append does while holdCounter holds the counter.
func (db *testDB) waitForLockWait(tb testing.TB) {
	tb.Helper()
	waitFor(tb, "an append to wait for the counter", func() bool {
		var n int
		err := db.admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock'`, db.schema).Scan(&n)
		return err == nil && n > 0
	})
}
