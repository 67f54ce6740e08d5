package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// exportOptions are the options of export.
type exportOptions struct {
	cmdIO
	session string // SESSION
	output  string // -o, "" for standard output
	tree    string // --tree, "" for none
}

// newExportCmd returns the export command: a session as a Claude Code transcript.
func newExportCmd(a *app, runF func(context.Context, *exportOptions) error) *cobra.Command {
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
its permissions, a new one is readable by its owner only. A FILE that names
a descriptor reprise has open (/dev/stdout, /dev/stderr, /dev/stdin,
/dev/fd/N, /proc/self/fd/N) is written at the descriptor's position, as a
shell redirection would, whatever it leads to. Any other FILE that is not a
regular file (a device such as /dev/null, a FIFO) is written in place once
the transcript is complete and the store closed: it is made first in a
temporary file in $TMPDIR (else /tmp) that only its owner can read and that
no directory lists, and a FIFO is then waited for until a reader opens it.
A FILE that is a symbolic link to a regular file or to nothing, or that
belongs to another user, is refused: renaming over it would replace the
link, or make the file yours. With -o and --json, export prints
{"session", "file", "bytes"}.`,
		Example: `  reprise export "$id" > transcript.jsonl
  reprise export "$id" -o ~/.claude/projects/-src-app/"$id".jsonl`,
		Args: positional("SESSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.session = args[0]
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runExport(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "write to `FILE`, atomically, instead of standard output")
	cmd.Flags().StringVar(&o.tree, "tree", "", "write the session and its subagents into `DIR` as Claude Code lays them out: DIR/SESSION.jsonl, DIR/SESSION/subagents/agent-ID.jsonl and .meta.json")
	return cmd
}

// runExport writes o.session as a Claude Code transcript to stdout, or to
// the file o.output.
func runExport(ctx context.Context, o *exportOptions) error {
	id := o.session
	if err := validID("session", id); err != nil {
		return err
	}
	export := func(w io.Writer) (err error) {
		e, err := o.openReadOnly(ctx, o.stderr)
		if err != nil {
			return err
		}
		defer closeEngine(e, &err)
		if id, err = resolveID(ctx, e.Store(), "session", id); err != nil {
			return err
		}
		return e.Export(ctx, id, w)
	}
	if o.tree != "" {
		if o.output != "" {
			return usagef("--tree and -o are two places to write: give one")
		}
		return exportTree(ctx, o, id)
	}
	if o.output == "" {
		return export(o.stdout)
	}
	n, err := exportFile(ctx, export, o.output)
	if err != nil || !o.json {
		return err
	}
	return printJSON(o.stdout, struct {
		Session string `json:"session"`
		File    string `json:"file"`
		Bytes   int64  `json:"bytes"`
	}{id, o.output, n})
}

// exportFunc writes the transcript to w, holding the store only while it
// does.
type exportFunc func(w io.Writer) error

// exportFile writes the transcript export makes to path and returns the
// bytes written: to the descriptor path names, if it names one; in place
// when path is not a regular file (a device, a FIFO); else through a
// temporary file renamed over it. A symbolic link is followed only to a
// file that is written in place.
func exportFile(ctx context.Context, export exportFunc, path string) (int64, error) {
	if fd, ok := descriptorNamed(path); ok {
		return exportToDescriptor(export, path, fd)
	}
	info, err := os.Lstat(path)
	if err == nil && info.Mode()&fs.ModeSymlink != 0 {
		info, err = os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return 0, fmt.Errorf("export: %s is a symbolic link to nothing; give -o the path it should lead to, or remove the link", path)
		case err == nil && info.Mode().IsRegular():
			return 0, fmt.Errorf("export: %s is a symbolic link; give -o the file it leads to, if that is what you mean to replace", path)
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return exportRenamed(export, path)
	case err != nil:
		return 0, err
	case !info.Mode().IsRegular():
		return exportInPlace(ctx, export, path, info.Mode().Type())
	case !ownedByUser(info):
		return 0, fmt.Errorf("export: %s belongs to another user; export to a new file instead", path)
	}
	return exportRenamed(export, path)
}

// stdDescriptors are the paths that name the standard descriptors.
var stdDescriptors = map[string]int{"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}

// descriptorDirs are the directories whose entries name the descriptors
// the process has open, by number.
var descriptorDirs = []string{"/dev/fd/", "/proc/self/fd/"}

// descriptorNamed returns the descriptor that path names, when it is one
// of the names of the descriptors a process has open: /dev/stdout,
// /dev/stderr, /dev/stdin, /dev/fd/N or /proc/self/fd/N. Whether that
// descriptor is open is not looked at.
func descriptorNamed(path string) (int, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, false
	}
	if fd, ok := stdDescriptors[abs]; ok {
		return fd, true
	}
	for _, dir := range descriptorDirs {
		if n, ok := strings.CutPrefix(abs, dir); ok {
			fd, err := strconv.ParseUint(n, 10, 31)
			return int(fd), err == nil
		}
	}
	return 0, false
}

// fifoRetry is how often export tries again to open a FIFO that has no
// reader yet.
const fifoRetry = 50 * time.Millisecond

// exportInPlace writes the transcript export makes into path, a device or
// a FIFO (typ says which), as a shell redirection would. The transcript
// is made first, into a file of its own, so that the store is closed by
// the time path is opened: a FIFO waits for its reader, until ctx ends.
func exportInPlace(ctx context.Context, export exportFunc, path string, typ fs.FileMode) (int64, error) {
	spool, err := spoolExport(export)
	if err != nil {
		return 0, err
	}
	defer spool.Close()
	f, err := openInPlace(ctx, path, typ == fs.ModeNamedPipe)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || info.Mode().Type() != typ {
		return 0, fmt.Errorf("export: %s changed while it was opened; try again", path)
	}
	n, err := copyUntil(ctx, f, spool)
	if err != nil {
		return n, err
	}
	return n, f.Close()
}

// spoolExport writes the transcript export makes to a temporary file that
// only the user can read and that no directory lists, and returns it,
// positioned at its start.
func spoolExport(export exportFunc) (*os.File, error) {
	spool, err := os.CreateTemp("", "reprise-export-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	err = os.Remove(spool.Name())
	if err == nil {
		err = export(spool)
	}
	if err == nil {
		_, err = spool.Seek(0, io.SeekStart)
	}
	if err != nil {
		spool.Close()
		return nil, err
	}
	return spool, nil
}

// openInPlace opens path for writing without waiting on the open itself.
// A FIFO that has no reader yet is tried again every fifoRetry until one
// comes or ctx ends. Writes to the file wait in the runtime's poller
// where the system can poll it, else in the write itself.
func openInPlace(ctx context.Context, path string, fifo bool) (*os.File, error) {
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			return f, blockingUnlessPolled(f)
		}
		if !fifo || !errors.Is(err, syscall.ENXIO) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, userError{fmt.Sprintf("interrupted while waiting for a reader of the FIFO %s; nothing was written", path), ctx.Err()}
		case <-time.After(fifoRetry):
		}
	}
}

// copyUntil copies src to dst until src ends or ctx does, and returns the
// bytes written. Only a write the runtime polls stops when ctx ends.
func copyUntil(ctx context.Context, dst *os.File, src io.Reader) (int64, error) {
	stop := context.AfterFunc(ctx, func() { _ = dst.SetWriteDeadline(time.Now()) })
	defer stop()
	n, err := io.Copy(dst, src)
	if err != nil && ctx.Err() != nil {
		return n, userError{fmt.Sprintf("interrupted while writing to %s, after %d bytes", dst.Name(), n), ctx.Err()}
	}
	return n, err
}

// exportRenamed writes the transcript export makes to a temporary file
// next to path, then renames it to path, keeping the mode of a file it
// replaces.
func exportRenamed(export exportFunc, path string) (n int64, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, writeError(path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := &countingWriter{w: tmp, path: path}
	if err := export(w); err != nil {
		return 0, err // the store's or the transcript's, or a write's, worded by w
	}
	if st, err := os.Stat(path); err == nil {
		if err := tmp.Chmod(st.Mode().Perm()); err != nil {
			return 0, writeError(path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, writeError(path, err)
	}
	if err := tmp.Sync(); err != nil {
		return 0, writeError(path, err)
	}
	if err := tmp.Close(); err != nil {
		return 0, writeError(path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, writeError(path, err)
	}
	return w.n, nil
}

// writeError says why the transcript could not be written to path, err
// being the error of a file operation, in terms of path: the temporary
// file beside it is export's own business.
func writeError(path string, err error) error {
	var pathErr *fs.PathError
	var linkErr *os.LinkError
	switch {
	case errors.As(err, &pathErr):
		err = pathErr.Err
	case errors.As(err, &linkErr):
		err = linkErr.Err
	default:
		return err
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot write %s: the directory %s does not exist", path, filepath.Dir(path))
	}
	return fmt.Errorf("cannot write %s: %w", path, err)
}

// countingWriter counts the bytes written through it. With a path, its
// errors are worded by writeError for that path.
type countingWriter struct {
	w    io.Writer
	n    int64
	path string
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil && c.path != "" {
		err = writeError(c.path, err)
	}
	return n, err
}

// exportTree writes session id and its subagents into o.tree and prints
// the files written.
func exportTree(ctx context.Context, o *exportOptions, id string) (err error) {
	e, err := o.openReadOnly(ctx, o.stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	if id, err = resolveID(ctx, e.Store(), "session", id); err != nil {
		return err
	}
	paths, err := e.ExportTree(ctx, id, o.tree)
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(o.stdout, struct {
			Session string   `json:"session"`
			Files   []string `json:"files"`
		}{id, paths})
	}
	for _, p := range paths {
		fmt.Fprintln(o.stdout, p)
	}
	return nil
}
