// Package boltstore is the bbolt backend of eventlog.Store: the whole event
// log in one file, written by one process at a time.
//
// # Usage
//
//	s, err := boltstore.Open(path, boltstore.Options{})
//	if errors.Is(err, eventlog.ErrLocked) {
//		// another process has the store open for writing
//	}
//	defer s.Close()
//	evs, err := s.Append(ctx, []eventlog.Expect{{Stream: "session/s1"}}, recs)
//
// Open creates the file if it does not exist. Options.ReadOnly opens an
// existing store for reading only, which any number of processes may do at
// once, but not while a process has it open for writing.
//
// # Layout
//
// The file holds four buckets:
//
//	events     stream + 0x00 + seq (8 bytes, big-endian) -> marshalEnvelope(event), or a batch
//	                                                        of the envelopes of events seq, seq+1, ...
//	positions  position (8 bytes, big-endian)            -> a run: the key in events of its first event,
//	                                                        then, unless the run is one event, its length
//	                                                        (4 bytes, big-endian)
//	recent     the newest runs, as in positions; its sequence is the last position given
//	meta       "format"                                  -> the layout version (one byte, 3 to 6)
//
// and, once a purge has removed events, a fifth:
//
//	gaps       stream + 0x00 + first seq                 -> last seq (8 bytes, big-endian): a purged run
//	           0x00 + first position                     -> last position: purged positions
//
// and, once Index has been called, the rows of the index the store keeps
// (eventlog.Indexed), with two more keys in meta:
//
//	index      key                                       -> value, as the Indexer put them
//	meta       "index"                                   -> the index's name
//	           "index-last"                              -> the position of the last event folded into
//	                                                        the rows (8 bytes, big-endian)
//
// Stream names hold no NUL byte, so an event key's stream part ends at the
// first 0x00 and a stream's events sit together in sequence order: reading
// a conversation is one sequential cursor scan, and a stream's head is the
// last event of the value under its last key, found with one cursor seek.
//
// A batch holds consecutive events one append writes to one stream,
// stored under the key of the first: an append's first batch and its last
// four hold up to 3,900 bytes of envelopes each, those between up to 256
// KiB. Its value begins with 0xc1, the one msgpack code never
// used, where an envelope begins with an array header (0x99); then come
// the number of events (4 bytes, big-endian, at least 2) and each envelope
// after its length (a uvarint):
//
//	0xc1, count, len(env 1), env 1, ..., len(env count), env count
//
// An event an append writes alone is stored as its envelope, as before
// batches, so a single append costs what it did, and a stream may hold
// both kinds of value. A stream's head is its last key's seq plus its
// value's count, less one: the header is read, not the envelopes. A read
// from a seq seeks the last key at or before it and walks the lengths to
// it. Every envelope keeps its stream, seq and position and its checksum,
// and each is checked as one stored alone is, so damage is reported at the
// event it struck. bbolt rewrites a leaf whole, values and all, when a
// commit adds a key to it, and splits a leaf only when it holds more than
// four keys, cutting pages of at least two keys from its front. Small
// batches at both ends of an append therefore leave its big batches in
// leaves of big batches (the first of them with the small first batch),
// which no later append touches: the last leaf of a stream, which its
// next append rewrites, holds three or four small batches, and the leaf
// before the append's first key, which appends to the stream before it
// rewrite, holds no big batch. Two small batches and their keys fill two
// pages. The big batches spare a large append most of its keys, puts and
// writes: an append of 100,000 envelopes of 315 bytes wrote 8,334 keys of
// small batches in 4,209 writes, and writes 128 keys in 71.
//
// A run is a stretch of
// consecutive positions that one append gave to consecutive events of one
// stream, so saving a thousand messages writes one run, not a thousand.
// Positions are gapless: an append that fails rolls its positions back
// with the rest. Every envelope repeats its stream, seq and position and
// ends in a CRC-32C, and reads check them against the keys, so a damaged
// value or an event under the wrong key is reported, never returned.
//
// A commit that changes a big B+tree rewrites a leaf and every branch above
// it. New runs therefore go to the recent bucket, which stays small enough
// (under 768 bytes of runs) for bbolt to keep inside the root page that
// every commit writes anyway; once it holds more, the commit moves its runs
// to positions. ReadAll reads positions, then recent. The last position is
// recent's sequence for the same reason: setting the sequence of positions
// would rewrite its root page on every append.
//
// Heads need no bucket of their own either: a bucket of heads, one entry
// per stream, is a tree of its own once a store holds more than a few
// dozen streams, and each append would rewrite a leaf and the branches
// above it. A stream whose last events were lost reads as shorter; the
// store-wide order still names them, so ReadAll reports the loss.
//
// Layout 1 had one positions entry per event, which is a run of one;
// layout 2 had runs, but no recent bucket, and kept the last position as
// the positions bucket's sequence; both kept heads in a bucket. This build
// reads both as they are; a write-open adds the recent bucket, drops the
// heads bucket and marks them as layout 3, which builds reading only older
// layouts refuse rather than misread.
//
// Layout 4 is layout 3 with gaps: Purge removes events in one transaction
// (their keys, their positions, split out of their runs), records what it
// removed in the gaps bucket and marks the file with layout 4, so that
// builds that know only gapless stores refuse it. Layout 5 is layout 4
// with batches: this build marks every store it opens for writing with it,
// as batches would be misread by builds that know only single envelopes,
// and reads layouts 1 to 5. A purge of part of a batch rewrites the events
// it keeps as batches under the keys of their first events; rewriting an
// event's payload rewrites the value that holds it. Reads pass over a gap
// that the gaps bucket explains and report any other as corruption. Purge
// then compacts the file (Compact): bbolt keeps freed pages, with their
// old bytes, for reuse, so the live pages are copied into a new file,
// .STORE.vacuum-NNN, made exclusively under a random name and opened (and
// so locked) before the old one is closed, synced, and renamed over the
// store, so the lock is never let go. A process that was waiting for the
// old file's lock notices the rename when it gets the lock and opens the
// new file. A crash before the rename leaves the purged store and a stale
// copy, which the next compaction removes. Load records the gaps in the events it is given the
// same way, so a copy of a vacuumed store reads as it did, and writes each
// run of the events it is given in batches, as an append would.
//
// Streams grow only at their end and positions only at theirs, so the
// pages a split leaves behind take few or no more keys: Append fills the
// events and positions buckets' pages completely instead of halfway, as
// bbolt does by default, which halves the pages a bulk append writes and
// a rebuild reads.
//
// # Indexes
//
// The index's rows are additive: builds that know no indexes open a store
// that has them, as the layout version is unchanged, and copy them along
// when they compact it, but do not update them. Index (which package
// reprise calls on every open) finds them behind the log (index-last short of the last position)
// and folds the events they missed in one write transaction; when they are
// up to date it writes nothing. A different name drops the rows and builds
// them from the whole log. Each append, load and purge then folds its
// events into the rows in its own transaction, when the rows hold every
// event before it; rows behind the log are not caught up by a write but
// left for the next Index, which, as only one process writes the file at a
// time, can only be the next open's. A fold that fails writes no row and
// fails no append: the store keeps the index no longer, for the rest of
// this open, and logs a warning to Options.Logger.
//
// An append writes each row its events change once, and the index's name
// and last position sit in the meta bucket, inside the page every commit
// writes anyway: keeping an index costs an append the pages from the rows'
// root to the leaves of the rows it changes, nothing while the rows are few
// enough (under a quarter of a page) for bbolt to keep them inside the root
// page too, and three pages for an append to one of 2,000 sessions.
//
// # Appends, the write-ahead log and group commit
//
// An append is acknowledged once its events are in the write-ahead log, a
// series of segment files beside the store (STORE.wal.NNNNNNNNNNNNNNNN, the
// segment's number in 16 hexadecimal digits: see wal.go for
// their format), and the log is synced: one fdatasync (F_FULLFSYNC on
// macOS), where a bbolt commit syncs twice, its pages and then its meta
// page. Appends that arrive while a record is being written and synced
// wait for it, then the oldest of them writes all that waited, up to
// 65,536 records, as one record with one sync: under concurrency, appends
// share their syncs without any delay being added when there is none.
// Within a group each append stays atomic and conditional: its
// expectations are checked, before anything is written, against the
// heads the writer holds in memory for the streams with appends not yet
// applied, else against bbolt's (the file lock makes the process the one
// writer), as the appends before it in the group left them; one that does
// not hold, or whose context ended, fails alone and writes nothing.
//
// A write or a sync of the log that fails is never retried: the kernel may
// have dropped the pages it could not write and report the next sync a
// success. Every later call, reads included, fails with ErrLogFailed until
// the store is closed and opened again, which replays the log.
//
// A background applier commits the acknowledged records to bbolt in
// batches, one transaction for many records, through the same writes an
// append made before the log (batches of envelopes, runs, the index's
// rows), and checks that each event lands at the sequence and position the
// log gave it. The last position the file holds, committed in the same
// transaction, is the log's applied position. Segments are preallocated
// to 8 MiB and the log moves to a new one when a record would take it
// past that; a segment whose records are all applied is removed once the
// log has moved on. Close applies everything and removes every segment;
// so do Compact, Purge and Load before they change the file themselves.
//
// Reads see every acknowledged append. Head answers from the heads the
// writer holds for a stream with appends not yet applied; ReadStream
// waits for the apply only when the stream has pending events it would
// return (from the sequence it reads from on), so the read that looks for
// what other writers appended, and finds nothing, does not wait; ReadAll,
// Streams, LastPosition, Index, ReadIndex and CheckMeta wait until the
// file holds every append acknowledged before the call.
//
// Open replays, in order, every complete record after the position the
// file holds into bbolt before it returns, then removes the segments. A
// record that is torn or damaged at the end of the log is an append a
// crash cut short, never acknowledged, and is cut off; one followed by a
// good record, in its segment or a later one, is eventlog.ErrCorrupt
// naming the segment and the offset, and nothing is changed. A read-only
// open of a store whose log holds appends its file does not (the holder
// was killed) fails with ErrUnapplied: a write-open applies them. Stores
// of layout 6 may have such a log, which is why a write-open marks them
// so, and why builds that know layouts up to 5 refuse them with ErrFormat
// rather than read a file that lacks acknowledged appends.
//
// # Caveats
//
// Only one process may have a store open for writing; others wait up to
// Options.Timeout for the file lock, then get an *eventlog.LockedError,
// which matches eventlog.ErrLocked and, on Linux, names the holding process
// and its command line (from /proc/locks). Two Opens of the same file in
// one process also exclude each other. To let other processes read a store
// it holds, a process serves it with package eventlog/remote.
//
// Load (eventlog.Loader) writes events numbered by another store, keeping
// their sequences and positions; the readers here still expect both to be
// gapless, so load gapless logs.
//
// Open takes only a store that is the user's own and that no other user
// can swap: the path is opened without following a link, a new file is
// made exclusively, and a link, another user's file, or a directory above
// the path that belongs to another user (not root) or that others may
// write without its sticky bit is refused with ErrNotPrivate. A store in a
// sticky directory such as /tmp works; one reached through a link does
// not: give the link's target.
//
// A zero-length file is a store that was never initialised: bbolt
// initialises any empty file it opens, so a read-write Open turns it into an
// empty store, while a read-only Open refuses it with ErrFormat.
//
// Damaged files are reported as errors matching eventlog.ErrCorrupt: a file
// that is not a bbolt database, one shorter than its own meta pages say (a
// truncated copy, say), a value whose checksum fails, a gap in a stream or in
// the positions that no purge recorded. Open compares the file's size with its meta pages before it
// opens the file for writing, and reads run with memory faults turned into
// panics that are recovered, so a read past the end of a shrunk mapping
// costs an error naming the stream and sequence, not the process. Only
// memory faults are recovered inside a transaction: any other panic, in
// bbolt, in this package or in a callback, is a bug and is raised again,
// never reported as damage. While opening, bbolt reads only the meta and
// freelist pages, so a panic there is reported as ErrCorrupt. bbolt does not checksum its tree pages, though, so damage inside them is
// caught only when it breaks a read; the event values themselves are always
// verified. One kind of damage cannot be caught: a page header whose
// overflow count is wrong makes bbolt's next write of that page try to free
// billions of pages and run out of memory. When bbolt panics while opening a
// damaged file, its memory mapping of the file stays in place until the
// process exits; the file and its lock are released.
//
// bbolt keeps two meta pages and opens a file at the newer valid one: when
// the newest is damaged it falls back to the transaction before, silently
// dropping the last commit. CheckMeta reads both pages from the file, as
// bbolt's own format describes them, and says which is damaged and why;
// reprise's audit reports such a file. The first commit after such an open
// would overwrite the damaged page, and with it the only trace of the lost
// commit, so Open reads both pages whenever it opens a file for writing
// (holding the lock, before anything is written) and, when one is damaged
// and the other valid, refuses with a *DamagedMetaError, which matches
// ErrDamagedMeta and names the file and the transaction bbolt falls back
// to; the file is left as it was. The file cannot tell whether the damaged
// page held the transaction after that one or the one before, so Open
// refuses either way, except when it falls back to one of the two empty
// transactions bbolt writes when it creates a file: the damaged page then
// held at most the store's first commit, which only creates the buckets,
// as a crash during a store's first Open leaves it, and Open creates them
// again. Read-only opens are not refused, only warned of (to
// Options.Logger: what they read may lack that commit), so the store can still be
// audited, and copied into a new store (eventlog.Copy), which holds what
// the file still reads. Options.AcceptDamagedMeta, or
// REPRISE_ACCEPT_DAMAGED_META=1 in the environment (for programs that open
// their store through package reprise), accepts the loss: Open logs a
// warning with the transaction to Options.Logger and goes on, and the next
// commit overwrites the damaged page.
//
// Events passed to ReadStream and ReadAll callbacks have Payloads that point
// into the memory-mapped file: they are valid only until the callback
// returns. Close waits for reads in progress; a second Close returns
// eventlog.ErrClosed, like every other call after Close.
package boltstore
