package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
)

// copyJSON is what backup and copy print with --json.
type copyJSON struct {
	To     string `json:"to"`
	Events int    `json:"events"`
}

// backupOptions are the options of backup.
type backupOptions struct {
	cmdIO
	file  string // FILE
	force bool   // --force
}

// newBackupCmd returns the backup command: a consistent copy of the store
// as a new bbolt file.
func newBackupCmd(a *app, runF func(context.Context, *backupOptions) error) *cobra.Command {
	var o backupOptions
	cmd := &cobra.Command{
		Use:   "backup FILE [--force]",
		Short: "Write a consistent copy of the store to a new bbolt file",
		Long: `backup copies every event of the store, as one snapshot, into FILE, a new
bbolt store that reprise opens like any other (--store FILE). The store may
be a file or a database; a file that another process holds is read through
that process's socket, so a backup needs no pause of the host.

FILE is written as a temporary file next to it, synced, then renamed into
place, readable by its owner only: it is never left half written. An
existing FILE is refused unless --force replaces it.`,
		Example: `  reprise backup ~/backups/reprise-$(date +%F).db
  reprise --store ~/backups/reprise-2026-11-30.db audit`,
		Args: positional("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file = args[0]
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runBackup(cmd.Context(), &o)
		},
	}
	cmd.Flags().BoolVar(&o.force, "force", false, "replace FILE if it exists")
	return cmd
}

// copyOptions are the options of copy.
type copyOptions struct {
	cmdIO
	to string // --to
}

// newCopyCmd returns the copy command: the store's events into another,
// empty store, of any backend.
func newCopyCmd(a *app, runF func(context.Context, *copyOptions) error) *cobra.Command {
	var o copyOptions
	cmd := &cobra.Command{
		Use:   "copy --to (FILE | URL)",
		Short: "Copy the store into another, empty store, such as a database",
		Long: `copy writes every event of the store, as one snapshot, into the store at
--to: a bbolt file, created if needed, or a PostgreSQL database given as a
postgres:// URL. Each event keeps its stream, sequence, position, type,
version, time, restore id and payload, so the copy reads, replays and
audits exactly like the original. The target must hold no events.

To move a store to PostgreSQL, stop its hosts (or let the copy read
through the host's socket), copy, and point --store or REPRISE_STORE at
the database. A copy that fails part way leaves what it loaded in the
target; empty it before trying again.`,
		Example: `  reprise copy --to 'postgres://reprise@db.internal/reprise'
  reprise --store 'postgres://reprise@db.internal/reprise' copy --to ./reprise.db`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.to == "" {
				return usagef("--to is required")
			}
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runCopy(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.to, "to", "", "the target store: a bbolt `FILE` or a postgres:// URL (required)")
	return cmd
}

// runBackup copies the store into a new bbolt file at file.
func runBackup(ctx context.Context, o *backupOptions) (err error) {
	if err := refuseSource(o.app, o.file); err != nil {
		return err
	}
	if _, err := os.Lstat(o.file); err == nil && !o.force {
		return fmt.Errorf("%s exists; give --force to replace it", o.file)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot write the backup: %w", err)
	}
	e, err := o.openReadOnly(ctx, o.stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	removeKilledBackups(o.file)
	tmp, err := os.CreateTemp(filepath.Dir(o.file), "."+filepath.Base(o.file)+".*")
	if err != nil {
		return fmt.Errorf("cannot write the backup: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cannot write the backup: %w", err)
	}
	n, err := copyTo(ctx, e.Store(), tmp.Name(), false)
	if err != nil {
		return err
	}
	if err := syncFile(tmp.Name()); err != nil {
		return fmt.Errorf("cannot write the backup: %w", err)
	}
	if err := os.Rename(tmp.Name(), o.file); err != nil {
		return fmt.Errorf("cannot write the backup: %w", err)
	}
	if err := syncFile(filepath.Dir(o.file)); err != nil {
		return fmt.Errorf("cannot write the backup: %w", err)
	}
	return printCopied(o.app, o.stdout, o.file, n)
}

// runCopy copies the store into the empty store at to.
func runCopy(ctx context.Context, o *copyOptions) (err error) {
	if err := refuseSource(o.app, o.to); err != nil {
		return err
	}
	e, err := o.openReadOnly(ctx, o.stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	n, err := copyTo(ctx, e.Store(), o.to, true)
	if err != nil {
		return err
	}
	return printCopied(o.app, o.stdout, redact(o.to), n)
}

// refuseSource fails when to names the store the command reads.
func refuseSource(a *app, to string) error {
	from, err := a.storePath()
	if err != nil {
		return err
	}
	if from == to {
		return usagef("the target is the store itself")
	}
	if pgstore.IsURL(to) || pgstore.IsURL(from) {
		return nil
	}
	fi, ferr := os.Stat(from)
	ti, terr := os.Stat(to)
	if ferr == nil && terr == nil && os.SameFile(fi, ti) {
		return usagef("the target is the store itself")
	}
	return nil
}

// copyTo opens the store at to, a postgres:// URL or a bbolt file, created
// if needed, checks that it holds no events, and loads src's into it.
func copyTo(ctx context.Context, src eventlog.Store, to string, mkdir bool) (n int, err error) {
	var dst interface {
		eventlog.Store
		eventlog.Loader
	}
	if pgstore.IsURL(to) {
		dst, err = pgstore.Open(ctx, to, pgstore.Options{})
	} else {
		if mkdir {
			if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
				return 0, fmt.Errorf("cannot create the target's directory: %w", err)
			}
		}
		dst, err = boltstore.Open(to, boltstore.Options{})
	}
	if err != nil {
		return 0, targetError(to, err)
	}
	defer func() {
		if cerr := dst.Close(); cerr != nil && err == nil {
			err = targetError(to, cerr)
		}
	}()
	empty := true
	if err := dst.Streams(ctx, "", func(eventlog.StreamInfo) error {
		empty = false
		return errFound
	}); err != nil && !errors.Is(err, errFound) {
		return 0, targetError(to, err)
	}
	if !empty {
		return 0, fmt.Errorf("the target %s holds events already; copy only into an empty store", redact(to))
	}
	n, err = eventlog.Copy(ctx, dst, src)
	if err != nil {
		return n, fmt.Errorf("copy stopped after %d events: %s", n, err.Error())
	}
	return n, nil
}

// targetError says why the target store at to failed, in the user's terms.
func targetError(to string, err error) error {
	return userError{fmt.Sprintf("cannot write the target %s: %s", redact(to), err.Error()), err}
}

// syncFile flushes the file or directory at path to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// printCopied reports a finished copy.
func printCopied(a *app, stdout io.Writer, to string, n int) error {
	if a.json {
		return printJSON(stdout, copyJSON{To: to, Events: n})
	}
	_, err := fmt.Fprintf(stdout, "copied %d events to %s\n", n, to)
	return err
}
