// Package pgstore is the PostgreSQL backend of eventlog.Store: the event log
// in a schema of a PostgreSQL database, shared by any number of processes on
// any number of hosts, through github.com/jackc/pgx/v5.
//
// # Usage
//
//	s, err := pgstore.Open(ctx, "postgres://reprise@db.internal/reprise?search_path=reprise", pgstore.Options{})
//	if err != nil {
//		return err // errors.Is(err, pgstore.ErrConnection): the server cannot be reached
//	}
//	e := reprise.New(s, reprise.Options{}) // the Engine owns s and closes it
//	defer e.Close()
//
// Open takes a postgres:// URL or a key=value connection string; pgx's
// parameters apply, such as sslmode, connect_timeout, application_name and
// pool_max_conns. The store lives in the first schema of the search_path
// that exists (set search_path in the URL to choose one). Open creates its
// tables there, or upgrades them to SchemaVersion, in one transaction under
// a transaction-scoped advisory lock, so hosts that open a new store at once
// run each migration exactly once between them. Options.ReadOnly opens an
// existing store at SchemaVersion (or GapsSchemaVersion) without changing
// it.
//
// # Layout
//
//	reprise_schema_version  one row: the schema version
//	reprise_position        one row: last, the last position given out
//	reprise_streams         stream text COLLATE "C" primary key, head bigint
//	reprise_events          position bigint primary key, stream, seq, type, version,
//	                        time_ns, restore_id, payload bytea; unique (stream, seq)
//	reprise_gaps            stream, first, last: the gaps purges left (stream '' for
//	                        positions); created by the first Purge, which marks
//	                        the schema GapsSchemaVersion
//	reprise_index           name text primary key, last bigint: the index whose
//	                        rows are held and the position of the last event
//	                        they hold; created by the first Index
//	reprise_index_rows      name, key bytea, value bytea; primary key (name, key):
//	                        the index's rows; created by the first Index
//
// Stream names use the "C" collation, so they sort byte by byte, as Go
// strings do. Each event's fields are columns of their own; reads check
// that sequences and positions follow each other without gaps and report
// any that do not, and that no purge recorded, as eventlog.ErrCorrupt.
//
// # Appends
//
// An append is one transaction at READ COMMITTED. Its first statement,
// UPDATE reprise_position SET last = last + n RETURNING last, takes the row
// lock of the position counter, which every append takes, and holds it
// until the transaction commits or rolls back. Positions are therefore
// gapless, since a rolled-back append rolls back its counter update, and
// they follow commit order: a transaction can only take its positions
// after the previous holder's commit is visible, so a reader that has seen
// position N never later finds a new event below N. Identity columns and
// sequences give neither guarantee: their values are taken before commit
// and are lost on rollback.
//
// Under the counter lock the transaction reads the heads of the expected
// streams, with a snapshot taken after the lock was granted, and locks
// their rows (SELECT ... FOR UPDATE) until it ends; an append whose
// expectations do not hold gets an *eventlog.ConflictError. It then writes
// the events and the new heads, an insert for a new stream failing if
// another transaction created it meanwhile, so of two hosts appending at
// the same expected sequence, one commits and the other gets the conflict.
// A serialization failure or a deadlock, which databases running every
// transaction SERIALIZABLE report, is retried a few times; one that
// persists, or a unique violation, is reported as the conflict on the
// stream whose head moved. The transaction takes two round trips: the
// BEGIN, the counter's update and the reads of the heads in one, the
// writes and the COMMIT in the other (with one more query for appends
// joining a group, below).
//
// # Group commit
//
// Appends that arrive while a process's append transaction is in flight
// wait for it, then the oldest of them commits all that waited, up to
// 65,536 records, in one transaction: under concurrency, appends share the
// counter's lock, the round trips and the commit's flush, without any
// delay being added when there is none. Within a group each append stays
// atomic and conditional: its expectations are checked against the heads
// as the appends before it in the group left them, and one that does not
// hold, or whose context ended before the group's transaction got the
// counter, fails alone, writes nothing and gives its positions back. The
// group's transaction ends early only when the contexts of all its
// appends have ended. If the transaction itself fails, each append of the
// group is tried again in a transaction of its own, so that no append
// fails for another's sake; except when the connection failed, which
// fails them all. The index's rows are folded append by append, each after
// the ones before it in the group, and only for appends that succeed.
//
// Groups form in each process; the processes sharing a store still take
// the counter's lock one transaction at a time. So that a group waiting for
// another process's commit does not leave the appends that queue up
// meanwhile to the next group, those join it once it has the counter, up
// to the same bound, the heads of their streams read in one more query;
// the counter is then set to the last position written.
//
// # Indexes
//
// Store implements eventlog.Indexed. Index creates the two index tables
// when there are none, in a transaction that holds the position counter's
// lock, as appends do; it drops the rows of any other index and folds the
// events its rows miss, the whole log for rows it builds, while appends
// wait. The tables are additive, so the schema keeps its version: builds
// that know nothing of them open the store and append, leaving the rows
// behind the log.
//
// An append (and a Load, and a Purge's records) of a store that keeps an
// index reads the rows' last position in its first round trip, under the
// counter's lock, then folds its events into the rows, read in the
// transaction (for events of several streams, those a trial fold of the
// events over no rows names in one query; any other as the fold needs it),
// and writes the rows it changed with one
// upsert (unnest of keys and values) and one delete, whatever the number
// of events, along with its events. At READ COMMITTED each statement
// sees what the previous holder of the counter committed, so two
// processes keeping the index never lose a row update. The rows' last
// position is a row of its own, not the counter's, so a process keeping no
// index never touches it. A write folds only when the rows hold every
// event before its own; when they lag by at most 1,024 positions (a writer
// keeping none appended), it folds the missed events first, and further
// behind it leaves them to the next Index, readers (eventlog.ReadRows)
// folding the rest meanwhile. A fold that fails does not fail the write:
// the store keeps the index no longer, logs a warning, and the rows stay
// as they were. ReadIndex reads the rows and their last position in one
// read-only REPEATABLE READ transaction; it works on read-only opens, and
// reports eventlog.ErrNoIndex for a store with no index tables.
//
// # Stream locks
//
// Store implements eventlog.StreamLocker with session-level advisory locks:
// TryLock runs pg_try_advisory_lock on a 64-bit FNV-1a hash of the schema
// and the stream name, on a connection taken from a pool of its own and
// kept until release, which unlocks and returns it. A lock thus lasts as
// long as its holder's database session: when a process dies, the server
// ends its sessions and the next host can take the lock and roll the
// agent's interrupted restore forward.
//
// # Caveats
//
// Append transactions are serialized store-wide, like bbolt's single
// writer: one commit at a time, each holding the counter's lock for its
// second round trip and its flush, so the store's append throughput is
// bounded by the size of the groups that concurrency forms. Reads run in
// parallel with appends and with each other.
//
// A call whose connection fails (the server restarts or is unreachable, the
// network fails, an administrator ends the session) returns an error
// matching ErrConnection and makes the store drop its idle connections, so
// the next call connects afresh; calls are not retried. Such an append was
// rolled back by the server, except when the connection failed (or the
// append's context ended) during its second round trip, which carries the
// COMMIT: then the error says the outcome is unknown, and reading the
// streams tells.
//
// A lock whose connection fails is lost, and another host may then take
// it. A goroutine reads from each held lock's idle connection, so the loss
// is known at once: the context Hold returned ends, with a cause matching
// eventlog.ErrLockLost; TryLock's caller is not told. The conditional
// appends still keep the log consistent and hooks from running twice: the
// first holder's next append conflicts. A host that vanishes without its connections being
// closed (power loss, a network partition) keeps its locks until the
// server's TCP keepalives end its sessions. Each held lock keeps a
// connection; TryLock waits for one while Options.MaxLocks are held.
// Session-level advisory locks do not survive a connection pooler in
// transaction mode, such as PgBouncer's: connect directly or in session
// mode. Advisory lock keys are shared by the whole database; a collision of
// two 64-bit keys can only make TryLock report eventlog.ErrBusy, never grant
// a lock twice.
//
// Durability is the server's: keep fsync and synchronous_commit on. Stored
// events carry no checksum of their own, unlike bbolt's; enable data
// checksums on the cluster for that. Event types and restore ids must be
// valid UTF-8 without NUL, as stream names are, in a UTF8 database.
//
// ReadAll reads one snapshot, in a read-only REPEATABLE READ transaction
// that lasts as long as the read: what it passes is the log as it stood
// when it began, however long its callback takes, which is what lets an
// audit or a copy read a log that others are writing. A long ReadAll holds
// back the server's cleanup of dead rows meanwhile, as any long
// transaction does. ReadStream fetches a stream in chunks, each its own
// query, so a long one may also pass events appended while it runs, always
// after the ones before them; Streams is one query. Payloads passed to
// callbacks are valid only until the callback returns. Close waits for calls in progress and releases the
// locks still held; a second Close returns eventlog.ErrClosed, like every
// other call after Close.
package pgstore
