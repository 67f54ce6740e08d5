package boltstore

import (
	"errors"
	"fmt"
)

// ErrFormat is returned by Open for a file that is not a reprise store: a
// bbolt database holding other data, a store written in a layout version
// this build does not read, or (read-only) a file never initialised.
var ErrFormat = errors.New("boltstore: not a reprise store in a supported layout")

// ErrNotPrivate is returned by Open when the store's file could be another
// user's to change: the path is a symbolic link (which is not followed) or
// a file that belongs to another user, or a directory above it belongs to
// another user than the running one or root, or may be written by others
// without being sticky (as /tmp is), so that they could rename the store
// away and put a file of theirs in its place. Nothing is read or written
// then: a store another user planted could name hooks that run as the
// user.
var ErrNotPrivate = errors.New("boltstore: not a private file")

// ErrDamagedMeta is matched by the *DamagedMetaError that Open returns
// when it is asked to open for writing a file whose newest commit may
// have been lost to a damaged meta page.
var ErrDamagedMeta = errors.New("boltstore: a meta page is damaged; the last commit may be lost")

// DamagedMetaError says that one of the meta pages of the file at Path is
// damaged while the other is valid: bbolt opens the file at Used, and the
// damaged page may have held the transaction after it, the last commit,
// which the next commit would overwrite for good. Open refuses to open
// such a file for writing, and writes nothing, unless the loss is
// accepted (Options.AcceptDamagedMeta). It matches ErrDamagedMeta.
type DamagedMetaError struct {
	Path    string
	Damaged MetaPage // the damaged page
	Used    MetaPage // the valid page bbolt opens the file at
}

func (e *DamagedMetaError) Error() string {
	return fmt.Sprintf("boltstore: %s: meta page %d is damaged (%s), so the store opens at transaction %d, from meta page %d; "+
		"the damaged page may have held transaction %d, the last commit, which the next commit would overwrite: nothing was written. "+
		"Open the store read-only to audit it or copy what it holds, or set Options.AcceptDamagedMeta or %s=1 to accept the loss",
		e.Path, e.Damaged.Page, e.Damaged.Damage, e.Used.Txid, e.Used.Page, e.Used.Txid+1, AcceptDamagedMetaEnv)
}

// Unwrap returns ErrDamagedMeta.
func (e *DamagedMetaError) Unwrap() error { return ErrDamagedMeta }

// ErrLogFailed is returned by every call on a store, reads included, after
// writing or syncing its write-ahead log failed, or applying it to the
// file did: the appends acknowledged before are safe in the log, the one
// that failed may or may not be, and the store must be closed and opened
// again, which replays the log. A failed sync is never retried.
var ErrLogFailed = errors.New("boltstore: the write-ahead log failed; reopen the store")

// ErrUnapplied is returned by Open for a store opened read-only whose
// write-ahead log holds acknowledged appends its file does not, as the
// log of a process killed while holding the store does: a read would miss
// them. Opening the store for writing once applies them.
var ErrUnapplied = errors.New("boltstore: the write-ahead log holds appends not yet applied")
