package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/reprise-dev/reprise/eventlog"
)

var _ eventlog.Indexed = (*Store)(nil)

// indexTables hold the rows of the index the store keeps, created by the
// first Index. reprise_index has one row per index whose rows are held:
// last, the position of the last event they hold. Keys are bytea, so that
// any key an Indexer chooses is stored, and sorted byte by byte.
const indexTables = `
CREATE TABLE IF NOT EXISTS reprise_index (
	name text   PRIMARY KEY,
	last bigint NOT NULL CHECK (last >= 0)
);
CREATE TABLE IF NOT EXISTS reprise_index_rows (
	name  text  NOT NULL,
	key   bytea NOT NULL,
	value bytea NOT NULL,
	PRIMARY KEY (name, key)
)`

// catchUpLimit is how many positions the rows may lag behind the log for
// a write to fold the events they miss before its own; rows further behind
// are left to the next Index.
const catchUpLimit = 1024

// foldChunk is how many events a fold of the log reads at a time.
const foldChunk = 1000

// keptIndex is the index the store keeps.
type keptIndex struct{ ix eventlog.Indexer }

// indexing is what one write does for the kept index: the index, and the
// failure of its fold, if the fold failed.
type indexing struct {
	kept   *keptIndex
	failed error
}

// indexing returns a fresh indexing for a write, nil when the store keeps
// no index.
func (s *Store) indexing() *indexing {
	if k := s.kept.Load(); k != nil {
		return &indexing{kept: k}
	}
	return nil
}

// indexed ends a committed write: a failed fold makes the store keep the
// index no longer.
func (s *Store) indexed(x *indexing) {
	if x == nil || x.failed == nil {
		return
	}
	if s.kept.CompareAndSwap(x.kept, nil) {
		slog.Warn("pgstore: the index is kept no longer: an event could not be folded; readers fold the events after its rows",
			"index", x.kept.ix.Name(), "error", x.failed)
	}
}

// name returns the name of the index, "" for none.
func (x *indexing) name() string {
	if x == nil {
		return ""
	}
	return x.kept.ix.Name()
}

// foldFailure is a fold's own failure, as opposed to the database's.
type foldFailure struct{ err error }

func (f *foldFailure) Error() string { return f.err.Error() }
func (f *foldFailure) Unwrap() error { return f.err }

// Index implements eventlog.Indexed in one transaction that holds the
// position counter's lock, as appends do: it creates the index tables
// when there are none, drops the rows of any other index, and folds the
// events the rows miss (the whole log for rows it builds). Appends wait
// for it meanwhile.
func (s *Store) Index(ctx context.Context, ix eventlog.Indexer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	end, err := s.begin()
	if err != nil {
		return err
	}
	defer end()
	if s.readOnly {
		return eventlog.ErrReadOnly
	}
	s.kept.Store(nil)
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		return indexTx(ctx, tx, ix)
	})
	var failed *foldFailure
	switch {
	case errors.As(err, &failed):
		return fmt.Errorf("pgstore: index %s: %w", ix.Name(), failed.err)
	case errors.Is(err, eventlog.ErrCorrupt):
		return err
	case err != nil:
		return s.fail(ctx, "index "+ix.Name(), err)
	}
	s.kept.Store(&keptIndex{ix: ix})
	return nil
}

// indexTx brings ix's rows up to the log's last position in tx.
func indexTx(ctx context.Context, tx pgx.Tx, ix eventlog.Indexer) error {
	var last int64
	err := tx.QueryRow(ctx, "SELECT last FROM reprise_position FOR UPDATE").Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: the position counter's row is missing", eventlog.ErrCorrupt)
	} else if err != nil {
		return err
	}
	// The counter's lock makes creators of the tables take turns.
	if _, err := tx.Exec(ctx, indexTables); err != nil {
		return err
	}
	name := ix.Name()
	var b pgx.Batch
	b.Queue("DELETE FROM reprise_index_rows WHERE name <> $1", name)
	b.Queue("DELETE FROM reprise_index WHERE name <> $1", name)
	b.Queue("SELECT last FROM reprise_index WHERE name = $1", name)
	held, err := readHeld(tx.SendBatch(ctx, &b), 2)
	if err != nil {
		return err
	}
	r := &rowReader{ctx: ctx, q: tx, name: name}
	get := r.get
	var w pgx.Batch
	if held < 0 || held > last { // none, or rows of a log that is gone: build them
		get = func(string) ([]byte, error) { return nil, nil }
		held = 0
		w.Queue("DELETE FROM reprise_index_rows WHERE name = $1", name)
		w.Queue("INSERT INTO reprise_index (name, last) VALUES ($1, 0) ON CONFLICT (name) DO NOTHING", name)
	}
	fold := eventlog.NewFold(get)
	if err := r.foldLog(fold, ix, held, last); err != nil {
		return err
	}
	queueRows(&w, name, fold, last)
	return tx.SendBatch(ctx, &w).Close()
}

// readHeld reads the results of a batch whose last statement selects an
// index's last position, after skip others: that position, or -1 when
// the store holds none of the index's rows.
func readHeld(br pgx.BatchResults, skip int) (held int64, err error) {
	defer func() {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}()
	for range skip {
		if _, err := br.Exec(); err != nil {
			return 0, err
		}
	}
	if err := br.QueryRow().Scan(&held); errors.Is(err, pgx.ErrNoRows) {
		return -1, nil
	} else if err != nil {
		return 0, err
	}
	return held, nil
}

// foldIn folds evs, the events a write puts after position prev, into x's
// rows as q's transaction reads them, and queues in b the writes of the rows that
// changed and of their new last position. held is the last position the
// rows hold, read under the counter's lock; -1 when the store holds none
// of the index's rows. fetched holds the rows read ahead (see scanRows);
// with fetched nil, foldIn reads ahead itself, in one query, those the
// events of many streams need (see readAhead). It folds only when the
// rows hold every event up to prev: when they lag by at most
// catchUpLimit positions it folds the events they miss first; further
// behind, it leaves them to the next Index. A failure of the fold itself
// is kept in x and queues nothing.
func foldIn(ctx context.Context, q conn, b *pgx.Batch, x *indexing, held int64, prev uint64, evs []eventlog.Event, fetched map[string][]byte) error {
	if x == nil || len(evs) == 0 || held < 0 || uint64(held) > prev || prev-uint64(held) > catchUpLimit {
		return nil
	}
	ix := x.kept.ix
	r := &rowReader{ctx: ctx, q: q, name: ix.Name(), fetched: fetched}
	fold := eventlog.NewFold(r.get)
	err := r.foldLog(fold, ix, held, int64(prev))
	if err == nil && fetched == nil {
		err = r.readAhead(ix, evs)
	}
	for i := 0; err == nil && i < len(evs); i++ {
		err = r.apply(fold, ix, evs[i])
	}
	var failed *foldFailure
	if errors.As(err, &failed) {
		x.failed = failed.err
		return nil
	}
	if err != nil {
		return err
	}
	queueRows(b, ix.Name(), fold, int64(evs[len(evs)-1].Position))
	return nil
}

// queueRows queues in b the writes of the rows fold changed, one statement
// for the rows put and one for those removed, and of last, the position
// of the last event they hold.
func queueRows(b *pgx.Batch, name string, fold *eventlog.Fold, last int64) {
	var keys, values, removed [][]byte
	_ = fold.Changed(func(key string, value []byte) error {
		if value == nil {
			removed = append(removed, []byte(key))
		} else {
			keys, values = append(keys, []byte(key)), append(values, value)
		}
		return nil
	})
	if len(keys) > 0 {
		b.Queue(`INSERT INTO reprise_index_rows (name, key, value) SELECT $1, * FROM unnest($2::bytea[], $3::bytea[])
			ON CONFLICT (name, key) DO UPDATE SET value = EXCLUDED.value`, name, keys, values)
	}
	if len(removed) > 0 {
		b.Queue("DELETE FROM reprise_index_rows WHERE name = $1 AND key = ANY($2)", name, removed)
	}
	b.Queue("UPDATE reprise_index SET last = $2 WHERE name = $1", name, last)
}

// rowReader reads an index's rows in a transaction, for a Fold.
type rowReader struct {
	ctx     context.Context
	q       conn // in the write's transaction
	name    string
	fetched map[string][]byte // rows read ahead, nil for a key without one
	err     error             // the database's first error; the transaction is then aborted
}

// readAhead reads in one query the rows that folding evs with ix would
// otherwise read one query at a time, as a load of many sessions does.
// Events of one stream, such as a long transcript's, are left to the
// fold, as they seldom need more than a row or two.
func (r *rowReader) readAhead(ix eventlog.Indexer, evs []eventlog.Event) error {
	if !slices.ContainsFunc(evs, func(ev eventlog.Event) bool { return ev.Stream != evs[0].Stream }) {
		return nil
	}
	keys := rowKeys(ix, evs)
	if len(keys) < 2 { // one query either way
		return nil
	}
	rows, err := r.q.Query(r.ctx, selectRows, r.name, keys)
	if err != nil {
		return err
	}
	r.fetched, err = scanRows(rows, keys)
	return err
}

// selectRows reads the rows of index $1 whose keys are in $2.
const selectRows = "SELECT key, value FROM reprise_index_rows WHERE name = $1 AND key = ANY($2)"

// rowKeys returns the keys of the rows that folding evs with ix reads,
// learnt from a trial fold over no rows, whose outcome it drops. A key the
// real fold asks for that the trial did not is still read on its own.
func rowKeys(ix eventlog.Indexer, evs []eventlog.Event) [][]byte {
	var keys [][]byte
	trial := eventlog.NewFold(func(key string) ([]byte, error) {
		keys = append(keys, []byte(key)) // once: the trial remembers it
		return nil, nil
	})
	for _, ev := range evs {
		_ = trial.Apply(ix, ev)
	}
	return keys
}

// scanRows reads rows of keys and values, of a query for keys, into a map
// that holds every key: nil for one without a row.
func scanRows(rows pgx.Rows, keys [][]byte) (map[string][]byte, error) {
	fetched := make(map[string][]byte, len(keys))
	for _, key := range keys {
		fetched[string(key)] = nil
	}
	var key, value []byte
	_, err := pgx.ForEachRow(rows, []any{&key, &value}, func() error {
		if value == nil {
			value = []byte{} // a row, though empty
		}
		fetched[string(key)] = value
		return nil
	})
	return fetched, err
}

// get is the Fold's read of the row of key.
func (r *rowReader) get(key string) ([]byte, error) {
	if value, ok := r.fetched[key]; ok {
		return value, nil
	}
	var value []byte
	err := r.q.QueryRow(r.ctx, "SELECT value FROM reprise_index_rows WHERE name = $1 AND key = $2", r.name, []byte(key)).Scan(&value)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		if r.err == nil {
			r.err = err
		}
		return nil, err
	case value == nil:
		value = []byte{} // a row, though empty
	}
	return value, nil
}

// apply folds ev into fold with ix. It returns the database's error as is
// and the Indexer's as a *foldFailure.
func (r *rowReader) apply(fold *eventlog.Fold, ix eventlog.Indexer, ev eventlog.Event) error {
	if err := fold.Apply(ix, ev); err != nil {
		if r.err != nil {
			return r.err
		}
		return &foldFailure{err: err}
	}
	return nil
}

// foldLog folds the stored events at positions after from, up to to,
// into fold with ix, foldChunk events at a time.
func (r *rowReader) foldLog(fold *eventlog.Fold, ix eventlog.Indexer, from, to int64) error {
	for from < to {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		rows, err := r.q.Query(r.ctx, `SELECT position, stream, seq, type, version, time_ns, restore_id, payload
			FROM reprise_events WHERE position > $1 AND position <= $2 ORDER BY position LIMIT $3`, from, to, foldChunk)
		if err != nil {
			return err
		}
		var row eventRow
		evs, err := pgx.CollectRows(rows, func(rows pgx.CollectableRow) (eventlog.Event, error) {
			if err := rows.Scan(&row.position, &row.stream, &row.seq, &row.typ, &row.version, &row.time, &row.restoreID, &row.payload); err != nil {
				return eventlog.Event{}, err
			}
			ev, err := row.event()
			ev.Payload = append([]byte(nil), ev.Payload...)
			return ev, err
		})
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		for _, ev := range evs {
			if err := r.apply(fold, ix, ev); err != nil {
				return err
			}
		}
		from = int64(evs[len(evs)-1].Position)
	}
	return nil
}

// ReadIndex implements eventlog.Indexed. The rows and their last position
// come from one snapshot (a read-only REPEATABLE READ transaction); the
// bytes passed to fn are valid only until it returns.
func (s *Store) ReadIndex(ctx context.Context, name string, fn func(key string, value []byte) error) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	end, err := s.begin()
	if err != nil {
		return 0, err
	}
	defer end()
	var (
		held  int64
		fnErr error
	)
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, "SELECT last FROM reprise_index WHERE name = $1", name).Scan(&held)
		if errors.Is(err, pgx.ErrNoRows) || sqlState(err) == codeUndefinedTable {
			return fmt.Errorf("%w: %s", eventlog.ErrNoIndex, name)
		} else if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT key, value FROM reprise_index_rows WHERE name = $1 ORDER BY key", name)
		if err != nil {
			return err
		}
		defer rows.Close()
		var (
			key   []byte
			value pgtype.DriverBytes
			n     uint64
		)
		for rows.Next() {
			if err := checkCtx(ctx, n); err != nil {
				return err
			}
			n++
			if err := rows.Scan(&key, &value); err != nil {
				return err
			}
			if value == nil {
				value = []byte{}
			}
			if fnErr = fn(string(key), value); fnErr != nil {
				return fnErr
			}
		}
		return rows.Err()
	})
	switch {
	case fnErr != nil:
		return 0, fnErr
	case errors.Is(err, eventlog.ErrNoIndex):
		return 0, err
	case err != nil:
		return 0, s.fail(ctx, "read index "+name, err)
	}
	return uint64(held), nil
}
