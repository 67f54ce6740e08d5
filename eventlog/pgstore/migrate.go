package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SchemaVersion is the version of the schema this build creates and reads.
const SchemaVersion = 1

// GapsSchemaVersion is the version a store takes at its first purge:
// SchemaVersion's tables and reprise_gaps, the gaps that purges left,
// which reads pass over. This build reads it too; builds that know only
// gapless stores refuse it rather than report the gaps as damage.
const GapsSchemaVersion = 2

// gapsTable is created by the first purge. The empty stream holds the gaps
// in the positions.
const gapsTable = `
CREATE TABLE IF NOT EXISTS reprise_gaps (
	stream text   COLLATE "C" NOT NULL,
	first  bigint NOT NULL CHECK (first > 0),
	last   bigint NOT NULL CHECK (last >= first),
	PRIMARY KEY (stream, first)
)`

// versionTable records the schema version in its one row.
const versionTable = `
CREATE TABLE IF NOT EXISTS reprise_schema_version (
	only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
	version  integer NOT NULL
);
INSERT INTO reprise_schema_version (version) VALUES (0) ON CONFLICT DO NOTHING`

// migrations[i] upgrades the schema from version i to version i+1. A
// released migration is never changed; a new one comes with a higher
// SchemaVersion.
var migrations = [SchemaVersion]string{
	// 1: events, stream heads and the position counter.
	`
CREATE TABLE reprise_events (
	position   bigint  PRIMARY KEY CHECK (position > 0),
	stream     text    COLLATE "C" NOT NULL,
	seq        bigint  NOT NULL CHECK (seq > 0),
	type       text    NOT NULL,
	version    integer NOT NULL CHECK (version BETWEEN 0 AND 65535),
	time_ns    bigint  NOT NULL,
	restore_id text    NOT NULL,
	payload    bytea   NOT NULL,
	UNIQUE (stream, seq)
);
CREATE TABLE reprise_streams (
	stream text   COLLATE "C" PRIMARY KEY,
	head   bigint NOT NULL CHECK (head > 0)
);
CREATE TABLE reprise_position (
	only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
	last     bigint  NOT NULL CHECK (last >= 0)
);
INSERT INTO reprise_position (last) VALUES (0)`,
}

// migrate creates the schema in a new store or upgrades an older one to
// SchemaVersion, in one transaction under an advisory lock, so that hosts
// opening the store at once run each migration exactly once between them.
func migrate(ctx context.Context, pool *pgxpool.Pool, key int64) error {
	return pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		// Held until the transaction ends; a second host waits here and then
		// finds the schema up to date.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", key); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, versionTable); err != nil {
			return err
		}
		var version int
		if err := tx.QueryRow(ctx, "SELECT version FROM reprise_schema_version").Scan(&version); err != nil {
			return err
		}
		if version > GapsSchemaVersion {
			return fmt.Errorf("%w: the schema is at version %d; this build reads up to %d", ErrFormat, version, GapsSchemaVersion)
		}
		if version >= SchemaVersion {
			return nil
		}
		for v := version; v < SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate to schema version %d: %w", v+1, err)
			}
		}
		_, err := tx.Exec(ctx, "UPDATE reprise_schema_version SET version = $1", SchemaVersion)
		return err
	})
}

// checkVersion fails unless the schema is at SchemaVersion or
// GapsSchemaVersion; read-only opens
// use it instead of migrate.
func checkVersion(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	var version int
	err := pool.QueryRow(ctx, "SELECT version FROM reprise_schema_version").Scan(&version)
	switch {
	case sqlState(err) == codeUndefinedTable || errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: schema %s holds no reprise store; open it for writing once to create it", ErrFormat, schema)
	case err != nil:
		return err
	case version < SchemaVersion:
		return fmt.Errorf("%w: schema %s is at version %d; open it for writing once to upgrade it to %d", ErrFormat, schema, version, SchemaVersion)
	case version > GapsSchemaVersion:
		return fmt.Errorf("%w: schema %s is at version %d; this build reads up to %d", ErrFormat, schema, version, GapsSchemaVersion)
	}
	return nil
}
