package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
)

// exportOptions are the options of export.
type exportOptions struct {
	session string // SESSION
	output  string // -o, "" for standard output
}

// newExportCmd returns the export command: a session as a Claude Code transcript.
func newExportCmd(a *app) *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export SESSION [-o FILE]",
		Short: "Write a session as a Claude Code transcript",
		Long: `export writes a session as a Claude Code transcript (JSONL) to standard
output, or to FILE with -o. Imported records come back byte for byte;
messages added through reprise are written the way Claude Code writes them.
It reads the store read-only and streams, so memory stays bounded.

With -o the transcript is written to a temporary file next to FILE, then
renamed over it, so FILE is never left half written; an existing FILE keeps
its permissions, a new one is readable by its owner only. A FILE that is not
a regular file (a device such as /dev/stdout, a FIFO) is written in place.
A FILE that is a symbolic link to a regular file, or that belongs to another
user, is refused: renaming over it would replace the link, or make the file
yours. With -o and --json, export prints {"session", "file", "bytes"}.`,
		Example: `  reprise export "$id" > transcript.jsonl
  reprise export "$id" -o ~/.claude/projects/-src-app/"$id".jsonl`,
		Args: positional("SESSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.session = args[0]
			return runExport(cmd.Context(), a, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "write to `FILE`, atomically, instead of standard output")
	return cmd
}

// runExport writes o.session as a Claude Code transcript to stdout, or to
// the file o.output.
func runExport(ctx context.Context, a *app, o exportOptions, stdout, stderr io.Writer) (err error) {
	id := o.session
	if err := validID("session", id); err != nil {
		return err
	}
	e, err := a.openReadOnly(ctx, stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	if o.output == "" {
		return e.Export(ctx, id, stdout)
	}
	n, err := exportFile(ctx, e, id, o.output)
	if err != nil || !a.json {
		return err
	}
	return printJSON(stdout, struct {
		Session string `json:"session"`
		File    string `json:"file"`
		Bytes   int64  `json:"bytes"`
	}{id, o.output, n})
}

// exportFile writes session id's transcript to path and returns the bytes
// written: in place when path is not a regular file (a device, a FIFO),
// else through a temporary file renamed over it.
func exportFile(ctx context.Context, e *reprise.Engine, id, path string) (int64, error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return exportRenamed(ctx, e, id, path)
	case err != nil:
		return 0, err
	case !info.Mode().IsRegular():
		return exportInPlace(ctx, e, id, path)
	}
	link, err := os.Lstat(path)
	switch {
	case err != nil:
		return 0, err
	case link.Mode()&fs.ModeSymlink != 0:
		return 0, fmt.Errorf("export: %s is a symbolic link; give -o the file it leads to, if that is what you mean to replace", path)
	case !ownedByUser(link):
		return 0, fmt.Errorf("export: %s belongs to another user; export to a new file instead", path)
	}
	return exportRenamed(ctx, e, id, path)
}

// ownedByUser reports whether info is of a file the running user owns.
func ownedByUser(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// exportInPlace writes session id's transcript into path, a device or a
// FIFO, as a shell redirection would. Opening a FIFO waits for a reader.
func exportInPlace(ctx context.Context, e *reprise.Engine, id, path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || info.Mode().IsRegular() {
		return 0, fmt.Errorf("export: %s became a regular file while it was opened; try again", path)
	}
	w := &countingWriter{w: f}
	if err := e.Export(ctx, id, w); err != nil {
		return w.n, err
	}
	return w.n, f.Close()
}

// exportRenamed writes session id's transcript to a temporary file next to
// path, then renames it to path, keeping the mode of a file it replaces.
func exportRenamed(ctx context.Context, e *reprise.Engine, id, path string) (n int64, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := &countingWriter{w: tmp}
	if err := e.Export(ctx, id, w); err != nil {
		return 0, err
	}
	if st, err := os.Stat(path); err == nil {
		if err := tmp.Chmod(st.Mode().Perm()); err != nil {
			return 0, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	if err := tmp.Sync(); err != nil {
		return 0, err
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, fmt.Errorf("export: %w", err)
	}
	return w.n, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
