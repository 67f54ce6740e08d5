package search

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reprise-dev/reprise/eventlog"
)

// OpenPostgres opens the index of store, a PostgreSQL store (pgstore) at
// url, kept in tables beside the store's, in the first schema of url's
// search_path that exists, creating them when there are none:
//
//	reprise_search_state    one row: the layout, and the last event folded in
//	reprise_search_docs     position, part, session, sid (a session document's
//	                        id), words (a tsvector, under a GIN index)
//	reprise_search_deleted  the deleted sessions, whose documents are gone
//
// The words are the server's own: to_tsvector('simple', text), lower-cased
// and unstemmed, and a search is plainto_tsquery('simple', q). Any number
// of processes may update the index at once: one change commits, and the
// others read the log again from where it left the index.
func OpenPostgres(ctx context.Context, url string, store eventlog.Store) (*Index, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("search: connect to %s: %w", redactURL(url), err)
	}
	b := &pgBackend{pool: pool}
	if err := b.init(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	x, err := open(ctx, store, b)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return x, nil
}

// PostgresIndexed reports whether the PostgreSQL store at url has an
// index (OpenPostgres made its tables), without making one: a command
// that deleted text updates the index only when there is one.
func PostgresIndexed(ctx context.Context, url string) (bool, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return false, fmt.Errorf("search: connect to %s: %w", redactURL(url), err)
	}
	defer pool.Close()
	var found *string
	err = pool.QueryRow(ctx, "SELECT to_regclass(quote_ident(current_schema()) || '.reprise_search_state')::text").Scan(&found)
	if err != nil {
		return false, fmt.Errorf("search: look for the index's tables: %w", err)
	}
	return found != nil, nil
}

// redactURL drops what a URL says after its host: a password may be in
// its user part, which pgx's errors leave out too.
func redactURL(url string) string {
	if at := strings.LastIndex(url, "@"); at >= 0 {
		return url[at+1:]
	}
	return "the server"
}

// pgTextBytes bounds the text of a document that PostgreSQL analyses: a
// tsvector holds at most 1 MB, and a stripped one never more than the
// text it came from.
const pgTextBytes = 512 << 10

// pgBackend keeps documents in PostgreSQL tables.
type pgBackend struct {
	pool   *pgxpool.Pool
	schema string
	// The tables' names, quoted and qualified by the schema.
	state, docs, deleted string
}

// init finds the schema and creates the tables there when they are
// missing.
func (b *pgBackend) init(ctx context.Context) error {
	var schema *string
	if err := b.pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return fmt.Errorf("search: find the store's schema: %w", err)
	}
	if schema == nil {
		return errors.New("search: no schema of the search_path exists; create one or set search_path in the URL")
	}
	b.schema = *schema
	name := func(table string) string { return pgx.Identifier{b.schema, table}.Sanitize() }
	b.state, b.docs, b.deleted = name("reprise_search_state"), name("reprise_search_docs"), name("reprise_search_deleted")
	return b.create(ctx)
}

// create creates the tables that are missing, under a lock that makes
// processes opening the index at once do it one at a time.
func (b *pgBackend) create(ctx context.Context) error {
	return pgx.BeginTxFunc(ctx, b.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", b.lockKey()); err != nil {
			return fmt.Errorf("search: lock the index's tables: %w", err)
		}
		_, err := tx.Exec(ctx, fmt.Sprintf(`
CREATE TABLE IF NOT EXISTS %[1]s (
	only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
	layout   text   NOT NULL,
	position bigint NOT NULL,
	stream   text   COLLATE "C" NOT NULL,
	seq      bigint NOT NULL,
	time_ns  bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS %[2]s (
	position bigint   NOT NULL,
	part     integer  NOT NULL,
	session  text     COLLATE "C" NOT NULL,
	sid      text     COLLATE "C",
	words    tsvector NOT NULL,
	PRIMARY KEY (position, part)
);
CREATE INDEX IF NOT EXISTS reprise_search_docs_words ON %[2]s USING GIN (words);
CREATE INDEX IF NOT EXISTS reprise_search_docs_session ON %[2]s (session);
CREATE INDEX IF NOT EXISTS reprise_search_docs_sid ON %[2]s (sid) WHERE sid IS NOT NULL;
CREATE TABLE IF NOT EXISTS %[3]s (
	session text COLLATE "C" PRIMARY KEY
)`, b.state, b.docs, b.deleted))
		if err != nil {
			return fmt.Errorf("search: create the index's tables in schema %s: %w", b.schema, err)
		}
		return nil
	})
}

// lockKey is the advisory lock of the index's tables in b.schema.
func (b *pgBackend) lockKey() int64 {
	h := fnv.New64a()
	h.Write([]byte("reprise search\x00" + b.schema))
	return int64(h.Sum64())
}

func (b *pgBackend) load(ctx context.Context) (state, error) {
	return b.loadFrom(ctx, b.pool)
}

// querier is what load reads through: the pool, or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (b *pgBackend) loadFrom(ctx context.Context, q querier) (state, error) {
	var st state
	err := q.QueryRow(ctx, "SELECT layout, position, stream, seq, time_ns FROM "+b.state).
		Scan(&st.Layout, &st.Last.Position, &st.Last.Stream, &st.Last.Seq, &st.Last.Time)
	if errors.Is(err, pgx.ErrNoRows) {
		return state{}, nil
	}
	if err != nil {
		return state{}, fmt.Errorf("search: read the index's state: %w", err)
	}
	rows, err := q.Query(ctx, "SELECT session FROM "+b.deleted+" ORDER BY session")
	if err != nil {
		return state{}, fmt.Errorf("search: read the deleted sessions: %w", err)
	}
	st.Deleted, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return state{}, fmt.Errorf("search: read the deleted sessions: %w", err)
	}
	return st, nil
}

func (b *pgBackend) reset(ctx context.Context) error {
	_, err := b.pool.Exec(ctx, fmt.Sprintf("DROP TABLE IF EXISTS %s, %s, %s", b.state, b.docs, b.deleted))
	if err != nil {
		return fmt.Errorf("search: drop the index's tables: %w", err)
	}
	return b.create(ctx)
}

// errMoved is returned by apply when another process changed the index
// since the change was read: the change is not applied, and Update reads
// the log again from where the index now is.
var errMoved = errors.New("search: the index moved")

func (b *pgBackend) apply(ctx context.Context, c change) error {
	return pgx.BeginTxFunc(ctx, b.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var at uint64
		err := tx.QueryRow(ctx, "SELECT position FROM "+b.state+" FOR UPDATE").Scan(&at)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			// A new index: the first change inserts the row, and a second
			// process inserting it at once fails on its key.
		case err != nil:
			return fmt.Errorf("search: read the index's state: %w", err)
		}
		if at != c.From {
			return errMoved
		}
		if len(c.Delete) > 0 {
			if _, err := tx.Exec(ctx, "DELETE FROM "+b.docs+" WHERE session = ANY($1)", c.Delete); err != nil {
				return fmt.Errorf("search: remove the deleted sessions' documents: %w", err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO "+b.deleted+" SELECT unnest($1::text[]) ON CONFLICT DO NOTHING", c.Delete); err != nil {
				return fmt.Errorf("search: record the deleted sessions: %w", err)
			}
		}
		if len(c.Docs) > 0 {
			if err := b.insert(ctx, tx, c.Docs); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, "INSERT INTO "+b.state+` (layout, position, stream, seq, time_ns) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (only_row) DO UPDATE SET layout = EXCLUDED.layout, position = EXCLUDED.position,
	stream = EXCLUDED.stream, seq = EXCLUDED.seq, time_ns = EXCLUDED.time_ns`,
			layout, c.Last.Position, c.Last.Stream, c.Last.Seq, c.Last.Time)
		if err != nil {
			return fmt.Errorf("search: record the index's state: %w", err)
		}
		return nil
	})
}

// insert inserts docs in one statement; the server makes their words.
func (b *pgBackend) insert(ctx context.Context, tx pgx.Tx, docs []document) error {
	var (
		positions = make([]int64, len(docs))
		parts     = make([]int32, len(docs))
		sessions  = make([]string, len(docs))
		sids      = make([]*string, len(docs))
		texts     = make([]string, len(docs))
	)
	for i, d := range docs {
		positions[i], parts[i], sessions[i] = int64(d.Position), int32(d.Part), pgText(d.Session)
		if d.Kind == KindSession {
			sids[i] = &sessions[i]
		}
		t := d.Text
		if len(t) > pgTextBytes {
			t = t[:pgTextBytes]
		}
		texts[i] = pgWords.Replace(pgText(t))
	}
	_, err := tx.Exec(ctx, "INSERT INTO "+b.docs+` (position, part, session, sid, words)
SELECT p, n, s, i, strip(to_tsvector('simple', t))
FROM unnest($1::bigint[], $2::integer[], $3::text[], $4::text[], $5::text[]) AS u(p, n, s, i, t)`,
		positions, parts, sessions, sids, texts)
	if err != nil {
		return fmt.Errorf("search: insert %d documents from position %d: %w", len(docs), docs[0].Position, err)
	}
	return nil
}

// pgText is s as a PostgreSQL text holds it: valid UTF-8, without NUL.
func pgText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", " ")
}

// pgWords is text as the server's parser is to cut it: with a space for
// each slash, which would make a path one word ("/home/me/proj"), while a
// working directory is found by its last part ("proj").
var pgWords = strings.NewReplacer("/", " ", "\\", " ")

// compact has the server reclaim the rows of removed documents. Their
// bytes leave the table's files when new rows overwrite them, or at once
// with VACUUM FULL, which locks the table and is the operator's to run.
func (b *pgBackend) compact(ctx context.Context) error {
	if _, err := b.pool.Exec(ctx, "VACUUM "+b.docs); err != nil {
		return fmt.Errorf("search: vacuum %s: %w", b.docs, err)
	}
	return nil
}

func (b *pgBackend) query(ctx context.Context, q string, limit, offset int) ([]ref, int, error) {
	prefix := "" // a LIKE pattern that matches nothing but a session id's prefix
	if !strings.ContainsAny(q, " \t\r\n") {
		prefix = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(pgText(q)) + "%"
	}
	rows, err := b.pool.Query(ctx, "SELECT position, part, count(*) OVER () FROM "+b.docs+`
WHERE words @@ plainto_tsquery('simple', $1) OR (sid IS NOT NULL AND $2 <> '' AND sid LIKE $2)
ORDER BY position DESC, part DESC LIMIT $3 OFFSET $4`, pgWords.Replace(pgText(q)), prefix, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("search: query %s: %w", b.docs, err)
	}
	var (
		refs  []ref
		total int
	)
	for rows.Next() {
		var r ref
		if err := rows.Scan(&r.Position, &r.Part, &total); err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("search: query %s: %w", b.docs, err)
		}
		refs = append(refs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("search: query %s: %w", b.docs, err)
	}
	if len(refs) == 0 && offset > 0 { // past the last page: count alone
		err := b.pool.QueryRow(ctx, "SELECT count(*) FROM "+b.docs+`
WHERE words @@ plainto_tsquery('simple', $1) OR (sid IS NOT NULL AND $2 <> '' AND sid LIKE $2)`, pgWords.Replace(pgText(q)), prefix).Scan(&total)
		if err != nil {
			return nil, 0, fmt.Errorf("search: count in %s: %w", b.docs, err)
		}
	}
	return refs, total, nil
}

func (b *pgBackend) close() error {
	b.pool.Close()
	return nil
}
