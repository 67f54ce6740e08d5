package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
)

// maxSkippedListed is how many skipped lines Import reports.
const maxSkippedListed = 1000

// importJSON is the output of import --json.
type importJSON struct {
	Session  string        `json:"session"`
	Messages int           `json:"messages"`
	Records  int           `json:"records"`
	Skipped  []skippedJSON `json:"skipped"`
	Bytes    int64         `json:"bytes"`
}

type skippedJSON struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// importOptions are the options of import.
type importOptions struct {
	cmdIO
	file   string // FILE, "-" for standard input
	id     string // --id, "" for a new UUID
	idSet  bool   // --id was given, even empty
	cwd    string // --cwd, "" for the transcript's
	strict bool   // --strict
	resume bool   // --resume
	tree   bool   // --subagents
}

// newImportCmd returns the import command: a Claude Code transcript into a new session.
func newImportCmd(a *app, runF func(context.Context, *importOptions) error) *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "import FILE.jsonl [--id ID] [--cwd DIR] [--strict] [--resume]",
		Short: "Import a Claude Code transcript into a new session",
		Long: `import reads a Claude Code transcript (JSONL, one record a line) into a new
session. User and assistant records become messages; every other record
(summary, system, progress, attachment, ...) is kept verbatim at its place,
so that reprise export writes the same bytes back. FILE "-" reads standard
input; input that is not a regular file is read to its end before the
store is taken, so that waiting for it keeps no other writer out.

The file is read as a stream and written in batches, so transcripts of any
size import in bounded memory; on a terminal a progress bar shows how far it
got. Lines that are not JSON objects, and lines longer than 64 MiB, are
skipped and listed on standard error with their line numbers (the first
1000 of them); --strict fails at the first one instead, leaving the session
with the batches written before it, which --resume without --strict, or
rm, then finishes.
A file without a single transcript record, a JSON object with a "type"
(an empty file, a README, a binary, a JSON document such as {}), is not a
transcript: import fails and records nothing.

The session records when its import started and when it finished, so an
import that was killed or failed part way never looks whole: sessions marks
the session "(import unfinished)", audit reports it, and importing into the
same --id again fails. --resume --id ID finishes it from the same file:
the records the session holds are read past (the last one must match the
file's), and the rest is appended. To start over instead, delete the
partial session (reprise rm ID) and import under another id: a deleted id is
never used again.

--id names the session (default a new UUID); --cwd sets its working
directory, where its project hooks will run (default the current directory).
The cwd the transcript names is never taken, since whoever wrote the file
would then choose which hooks run; it is kept for the record and shown by
sessions.`,
		Example: `  reprise import ~/.claude/projects/-src-app/0b6f….jsonl
  reprise import --id refund-bug --cwd ~/src/payments transcript.jsonl
  gunzip -c old.jsonl.gz | reprise import --json - | jq -r .session`,
		Args: positional("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file, o.idSet = args[0], cmd.Flags().Changed("id")
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runImport(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.id, "id", "", "the new session's `ID` (default a new UUID)")
	cmd.Flags().StringVar(&o.cwd, "cwd", "", "the session's working `DIR`, where its hooks run (default the current directory, never the transcript's)")
	cmd.Flags().BoolVar(&o.strict, "strict", false, "fail on a line that is not a JSON object instead of skipping it")
	cmd.Flags().BoolVar(&o.resume, "resume", false, "finish the unfinished import into session --id from the same FILE")
	cmd.Flags().BoolVar(&o.tree, "subagents", false, "import the session's subagents too, from FILE's directory FILE/subagents, as Claude Code lays them out")
	return cmd
}

// runImport reads the transcript o.file into a new session and prints
// what it imported; skipped lines are warned about on stderr.
func runImport(ctx context.Context, o *importOptions) (err error) {
	if o.idSet {
		if err := validID("--id", o.id); err != nil {
			return err
		}
	}
	if o.resume && !o.idSet {
		return usagef("--resume needs --id: the session whose import to finish")
	}
	cwd := o.cwd
	if cwd != "" {
		if cwd, err = filepath.Abs(cwd); err != nil {
			return fmt.Errorf("--cwd: %w", err)
		}
	}
	if o.tree {
		return runImportTree(ctx, o, cwd)
	}
	name := o.file
	in, size, closeIn, err := openInput(ctx, o.stdin, name)
	if err != nil {
		return err
	}
	defer closeIn()
	fresh, made, err := o.missingStoreFile()
	if err != nil {
		return err
	}
	e, err := o.openWritable(ctx, o.stderr)
	if err != nil {
		return err
	}
	err = importInto(ctx, o, e, in, size, cwd)
	// An import that failed into a store it created leaves no empty store
	// behind: the next command would find one it never asked for.
	remove := err != nil && fresh != "" && storeEmpty(ctx, e)
	closeEngine(e, &err)
	if remove {
		if rerr := os.Remove(fresh); rerr != nil {
			warn(o.stderr, "the empty store %s stays: %v", fresh, rerr)
		}
		// And the directories opening it made, while they are empty.
		for _, dir := range append([]string{reprise.DefaultTranscriptDir(fresh)}, made...) {
			_ = os.Remove(dir) // fails, as it should, on one that holds anything
		}
	}
	return err
}

// missingStoreFile returns the path of the store when it is a bbolt file
// that does not exist yet, "" otherwise, and the directories above it that
// do not exist either, deepest first.
func (a *app) missingStoreFile() (string, []string, error) {
	path, err := a.storePath()
	if err != nil || pgstore.IsURL(path) {
		return "", nil, err
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	var missing []string
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) || dir == filepath.Dir(dir) {
			break
		}
		missing = append(missing, dir)
	}
	return path, missing, nil
}

// storeEmpty reports whether the store of e holds no stream at all.
func storeEmpty(ctx context.Context, e *reprise.Engine) bool {
	err := e.Store().Streams(context.WithoutCancel(ctx), "", func(eventlog.StreamInfo) error { return errFound })
	return err == nil
}

// importInto imports the transcript in, of size bytes (0 if unknown), into
// e, as runImport describes.
func importInto(ctx context.Context, o *importOptions, e *reprise.Engine, in io.Reader, size int64, cwd string) error {
	name := o.file
	opts := reprise.ImportOptions{ID: o.id, Cwd: cwd, Strict: o.strict, Size: size, Resume: o.resume}
	bar := newProgress(o.stderr, "importing "+name, size)
	if bar != nil {
		opts.Progress = bar.update
	}
	rep, err := e.Import(ctx, in, opts)
	if bar != nil {
		bar.finish()
	}
	if errors.Is(err, reprise.ErrNotTranscript) {
		// Every line was skipped: listing them all says nothing more.
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, s := range rep.Skipped {
		warn(o.stderr, "%s: line %d skipped: %s", name, s.Line, s.Err)
	}
	if len(rep.Skipped) >= maxSkippedListed {
		warn(o.stderr, "%s: only the first %d skipped lines are listed", name, maxSkippedListed)
	}
	if err != nil && ctx.Err() != nil && rep.Session != "" {
		return importInterrupted(ctx, e, rep.Session, name, err)
	}
	if errors.Is(err, reprise.ErrBadTranscript) && rep.Session != "" {
		return importStopped(ctx, e, rep.Session, name, err)
	}
	if errors.Is(err, reprise.ErrImportUnfinished) && !o.resume {
		return userError{fmt.Sprintf("session %s holds an import that did not finish; finish it with reprise import --resume --id %s %s, "+
			"or delete it with reprise rm %s", o.id, o.id, shellQuote(name), o.id), err}
	}
	if err != nil {
		return err
	}
	if o.json {
		out := importJSON{Session: rep.Session, Messages: rep.Messages, Records: rep.Records,
			Skipped: make([]skippedJSON, len(rep.Skipped)), Bytes: rep.Bytes}
		for i, s := range rep.Skipped {
			out.Skipped[i] = skippedJSON{Line: s.Line, Error: s.Err}
		}
		return printJSON(o.stdout, out)
	}
	_, err = fmt.Fprintf(o.stdout, "%s: %d message(s), %d other record(s), %d skipped line(s), %d bytes\n",
		rep.Session, rep.Messages, rep.Records, len(rep.Skipped), rep.Bytes)
	return err
}

// importStopped explains err, a bad line that stopped a strict import of
// file into session id: which line, and, when earlier batches were
// written, what stays of the session and what to do with it.
func importStopped(ctx context.Context, e *reprise.Engine, id, file string, err error) error {
	info, serr := e.Session(context.WithoutCancel(ctx), id)
	if serr != nil {
		return fmt.Errorf("%s: %w; nothing was imported", file, err)
	}
	return userError{fmt.Sprintf("%s: %v; session %s holds its first %d message(s); "+
		"finish it with reprise import --resume --id %s %s (without --strict the line is skipped), or delete it with reprise rm %s",
		file, badLine(err), id, info.Messages, id, shellQuote(file), id), err}
}

// badLine is the part of an import's error that names the bad line.
func badLine(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "bad transcript line"); i >= 0 {
		return msg[i:]
	}
	return msg
}

// importInterrupted explains err, the end of ctx during an import of file
// into session id: what stays of the session, and what to do with it.
func importInterrupted(ctx context.Context, e *reprise.Engine, id, file string, err error) error {
	info, serr := e.Session(context.WithoutCancel(ctx), id)
	if serr != nil {
		return err // nothing of the session was written
	}
	return userError{fmt.Sprintf("interrupted: the import stopped part way, and session %s holds its first %d message(s); "+
		"finish it with reprise import --resume --id %s %s, or delete it with reprise rm %s",
		id, info.Messages, id, shellQuote(file), id), err}
}

// openInput opens the file an import reads, "-" for stdin, and returns its
// size and a function closing it. A file that is not a regular file (a
// pipe, a terminal, a FIFO) is read to its end first, into a temporary
// file that only the user can read and that no directory lists, so that
// the import does not hold the store, keeping every other writer out,
// while it waits for its input.
func openInput(ctx context.Context, stdin io.Reader, name string) (io.Reader, int64, func() error, error) {
	r, closeFn := stdin, func() error { return nil }
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, 0, nil, err
		}
		r, closeFn = f, f.Close
	}
	f, ok := r.(*os.File)
	if !ok {
		// A reader given to run in process, not the process's input.
		return r, 0, closeFn, nil
	}
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		return r, st.Size(), closeFn, nil
	}
	spool, size, err := spoolInput(ctx, r, name)
	if cerr := closeFn(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, 0, nil, err
	}
	return spool, size, spool.Close, nil
}

// spoolInput copies r to an unlinked temporary file, until r ends or ctx
// does, and returns the file positioned at its start, with its size.
func spoolInput(ctx context.Context, r io.Reader, name string) (*os.File, int64, error) {
	spool, err := os.CreateTemp("", "reprise-import-*.jsonl")
	if err != nil {
		return nil, 0, fmt.Errorf("cannot read %s: %w", name, err)
	}
	if err := os.Remove(spool.Name()); err != nil {
		spool.Close()
		return nil, 0, fmt.Errorf("cannot read %s: %w", name, err)
	}
	type copied struct {
		n   int64
		err error
	}
	done := make(chan copied, 1)
	go func() {
		n, err := io.Copy(spool, r)
		done <- copied{n, err}
	}()
	var c copied
	select {
	case c = <-done:
	case <-ctx.Done():
		// The copy may be blocked in a read of r: its next write fails.
		spool.Close()
		return nil, 0, userError{fmt.Sprintf("interrupted while reading %s; nothing was imported", name), ctx.Err()}
	}
	if c.err == nil {
		_, c.err = spool.Seek(0, io.SeekStart)
	}
	if c.err != nil {
		spool.Close()
		return nil, 0, fmt.Errorf("cannot read %s: %w", name, c.err)
	}
	return spool, c.n, nil
}

// runImportTree imports o.file and its subagents' transcripts
// (--subagents) and prints a line for each session made.
func runImportTree(ctx context.Context, o *importOptions, cwd string) (err error) {
	switch {
	case o.file == "-":
		return usagef("--subagents needs a FILE: its subagents are in the directory named after it")
	case o.resume:
		return usagef("--subagents does not go with --resume: finish the unfinished import alone")
	}
	e, err := o.openWritable(ctx, o.stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	reports, err := e.ImportTree(ctx, o.file, reprise.ImportOptions{ID: o.id, Cwd: cwd, Strict: o.strict})
	for _, rep := range reports {
		if rep.Session == "" || rep.Messages+rep.Records == 0 {
			continue
		}
		if o.json {
			if perr := printJSON(o.stdout, importJSON{Session: rep.Session, Messages: rep.Messages, Records: rep.Records, Bytes: rep.Bytes,
				Skipped: []skippedJSON{}}); perr != nil {
				return perr
			}
			continue
		}
		fmt.Fprintf(o.stdout, "imported %s: %d messages, %d other records\n", rep.Session, rep.Messages, rep.Records)
	}
	return err
}
