package transfer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/reprise-dev/reprise/deletion"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// MaxTranscriptLine bounds one line of an imported transcript: a longer
// line is read past without being held, and skipped like a line that is
// not a JSON object (in strict mode, refused).
const MaxTranscriptLine = 64 << 20

// importBatch bounds how much of a transcript one append writes.
const (
	importBatchRecords = 1000
	importBatchBytes   = 4 << 20
)

// ImportOptions configure Import.
type ImportOptions struct {
	ID string // the new session's id; Engine.Import makes a new UUID for an empty one
	// Cwd is the session's working directory, where its project hooks will
	// run; empty means the importing process's own. The transcript's cwd
	// is never taken: whoever wrote the file would choose which hooks run.
	// It is kept as SessionInfo.ImportedCwd.
	Cwd      string
	Strict   bool             // fail on a line that is not a JSON object instead of skipping it
	Progress func(read int64) // called after each batch with the bytes read so far
	// Size is the transcript's size in bytes, when known, recorded when
	// the import starts.
	Size int64
	// Resume finishes an unfinished import into session ID from the same
	// transcript: the records the session holds are read past, checked
	// against the transcript's first records, and the rest is appended.
	Resume bool
	// Subagent makes the session a subagent's, linked to its parent's
	// call (ImportTree sets it from the subagent's meta.json).
	Subagent *schema.Subagent
}

// SkippedLine is a transcript line Import could not use.
type SkippedLine struct {
	Line int
	Err  string
}

// ImportReport says what Import did.
type ImportReport struct {
	Session  string
	Messages int           // user and assistant records, now messages
	Records  int           // other records, kept verbatim
	Skipped  []SkippedLine // lines that are not JSON objects, or too long (the first 1000)
	// SkippedTotal counts every skipped line, beyond those listed.
	SkippedTotal int
	Bytes        int64
}

const maxSkippedReported = 1000

// Import reads a Claude Code transcript (JSONL) from r into a new session.
// User and assistant records become messages; every other record is kept
// verbatim at its place, and each message keeps its original line, so that
// Export writes the same lines back. Memory stays bounded whatever the
// size of r: records are appended in batches and the conversation is not
// cached. Input without a single transcript record (a JSON object with a
// non-empty string "type") in its lines, or in its first batch, returns
// ErrNotTranscript and records nothing.
//
// The session records the import's start (ImportStarted, with the first
// batch) and its end (ImportFinished, with the last), so that an import
// that failed or whose process died part way never looks whole: the
// session holds the batches written so far, the session index marks it,
// an audit reports it, and importing into its id again fails with
// lifecycle.ErrImportUnfinished unless opts.Resume is set.
//
// The records go to store, stamped with now (UTC unix nanoseconds), into
// session opts.ID, which must be a valid id, with opts.Cwd, which should
// be absolute, as its directory. An id that is taken is
// lifecycle.ErrSessionExists, or lifecycle.ErrSessionDeleted for a
// deleted one.
func Import(ctx context.Context, store eventlog.Store, now func() int64, r io.Reader, opts ImportOptions) (ImportReport, error) {
	rep := ImportReport{Session: opts.ID}
	imp := &importer{store: store, now: now, rep: &rep, stream: projection.SessionStream(rep.Session), opts: opts}
	if err := imp.resumePoint(ctx); err != nil {
		return rep, err
	}
	counter := &countingReader{r: r}
	lines := &lineReader{r: bufio.NewReaderSize(counter, 64<<10), max: MaxTranscriptLine}
	line := 0
	for {
		raw, tooLong, err := lines.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rep, imp.partial(err)
		}
		line++
		if tooLong {
			err = imp.skipLine(line, fmt.Sprintf("longer than %d bytes", MaxTranscriptLine))
		} else {
			err = imp.add(ctx, line, raw)
		}
		if err != nil {
			return rep, err
		}
		if imp.full() {
			if imp.head == 0 && imp.typed == 0 {
				return rep, fmt.Errorf("%w: none of its first %d line(s) is a transcript record (a JSON object with a \"type\")", ErrNotTranscript, line)
			}
			if err := imp.flush(ctx); err != nil {
				return rep, err
			}
			rep.Bytes = counter.n
			if opts.Progress != nil {
				opts.Progress(counter.n)
			}
		}
	}
	if imp.head == 0 && imp.typed == 0 {
		if line == 0 {
			return rep, fmt.Errorf("%w: the input is empty", ErrNotTranscript)
		}
		return rep, fmt.Errorf("%w: none of its %d line(s) is a transcript record (a JSON object with a \"type\")", ErrNotTranscript, line)
	}
	if imp.skip > 0 {
		return rep, fmt.Errorf("%w: %s holds %d more records than this transcript; is it the one that was imported?", ErrBadTranscript, rep.Session, imp.skip)
	}
	imp.batch = append(imp.batch, &schema.ImportFinished{Messages: rep.Messages, Records: rep.Records,
		Skipped: rep.SkippedTotal, Bytes: counter.n})
	if err := imp.flush(ctx); err != nil {
		return rep, err
	}
	rep.Bytes = counter.n
	if opts.Progress != nil {
		opts.Progress(counter.n)
	}
	return rep, nil
}

// importer accumulates records of one import and appends them in batches.
// The session is created with the first batch, once a cwd may be known.
type importer struct {
	store  eventlog.Store
	now    func() int64
	rep    *ImportReport
	opts   ImportOptions
	stream string
	head   uint64
	batch  []schema.Payload
	size   int
	cwd    string
	// skip is how many records a resumed import reads past, the session
	// holding them already; held is the digest of those records, and read
	// the digest of the transcript's records read past so far.
	skip       int
	held, read hash.Hash
	typed      int // records with a "type", which make the input a transcript
}

// resumePoint finds where the import starts: in a new session, or, with
// opts.Resume, after the records an unfinished import left in it.
func (imp *importer) resumePoint(ctx context.Context) error {
	id := imp.rep.Session
	head, err := imp.store.Head(ctx, imp.stream)
	if err != nil || head == 0 {
		return err
	}
	var importing, deleted, added bool
	var kept int
	held := sha256.New()
	err = imp.store.ReadStream(ctx, imp.stream, 1, func(ev eventlog.Event) error {
		switch ev.Type {
		case schema.TypeImportStarted, schema.TypeImportFinished:
			importing = ev.Type == schema.TypeImportStarted
			return nil
		case schema.TypeSessionDeleted:
			deleted = true
			return nil
		case schema.TypeMessageAppended, schema.TypeTranscriptRecord:
		default:
			return nil
		}
		p, err := schema.Decode(ev)
		if err != nil {
			return err
		}
		var record []byte
		switch p := p.(type) {
		case *schema.MessageAppended:
			record = p.Message.Record
		case *schema.TranscriptRecord:
			record = p.Record
		}
		added = added || record == nil // not a line of the transcript
		kept++
		held.Write(append(record, '\n'))
		return nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("read session %s: %w", id, err)
	case !importing || deleted:
		return deletion.Taken(ctx, imp.store, id)
	case !imp.opts.Resume:
		return fmt.Errorf("%w: session %s holds the first %d records of an import that did not finish; import the same transcript again with --resume (ImportOptions.Resume) to append the rest",
			lifecycle.ErrImportUnfinished, id, kept)
	case added:
		return fmt.Errorf("%w: session %s has had other messages added since its import stopped: it cannot be resumed", lifecycle.ErrImportUnfinished, id)
	}
	imp.head, imp.skip, imp.held, imp.read = head, kept, held, sha256.New()
	return nil
}

func (imp *importer) add(ctx context.Context, n int, raw []byte) error {
	line := projection.ParseTranscriptLine(raw)
	if line.Blank {
		return nil
	}
	if line.Invalid != "" {
		return imp.skipLine(n, line.Invalid)
	}
	if line.Typed {
		imp.typed++
	}
	if imp.cwd == "" {
		imp.cwd = line.Cwd
	}
	m, ok := line.Message, line.IsMessage
	if ok {
		imp.rep.Messages++
	} else {
		imp.rep.Records++
	}
	if imp.skip > 0 { // a resumed import: the session holds this record
		imp.read.Write(raw)
		imp.read.Write([]byte{'\n'})
		if imp.skip--; imp.skip == 0 && !bytes.Equal(imp.read.Sum(nil), imp.held.Sum(nil)) {
			return fmt.Errorf("%w: the first %d records of this transcript are not those %s holds; is this the transcript that was imported?",
				ErrBadTranscript, imp.rep.Records+imp.rep.Messages, imp.rep.Session)
		}
		return nil
	}
	record := append([]byte(nil), raw...) // the scanner reuses its buffer
	var p schema.Payload = &schema.TranscriptRecord{Record: record}
	if ok {
		m.Record = record
		p = &schema.MessageAppended{Message: m}
	}
	imp.batch = append(imp.batch, p)
	imp.size += len(record)
	return nil
}

// skipLine skips line n, which cannot be used for why, or in strict mode
// refuses it.
func (imp *importer) skipLine(n int, why string) error {
	if imp.opts.Strict {
		return imp.partial(fmt.Errorf("%w %d: %s", ErrBadTranscript, n, why))
	}
	imp.rep.SkippedTotal++
	if len(imp.rep.Skipped) < maxSkippedReported {
		imp.rep.Skipped = append(imp.rep.Skipped, SkippedLine{Line: n, Err: why})
	}
	return nil
}

func (imp *importer) full() bool {
	return len(imp.batch) >= importBatchRecords || imp.size >= importBatchBytes
}

// flush appends the batch, creating the session first if it is the first.
func (imp *importer) flush(ctx context.Context) error {
	var recs []eventlog.Record
	now := imp.now()
	if imp.head == 0 {
		created := &schema.SessionCreated{ID: imp.rep.Session, Cwd: imp.opts.Cwd, ImportedCwd: imp.cwd, Subagent: imp.opts.Subagent}
		imp.batch = append([]schema.Payload{created, &schema.ImportStarted{Bytes: imp.opts.Size}}, imp.batch...)
	}
	if len(imp.batch) == 0 {
		return nil
	}
	for _, p := range imp.batch {
		rec, err := schema.NewRecord(imp.stream, p, now, "")
		if err != nil {
			return imp.partial(err)
		}
		recs = append(recs, rec)
	}
	evs, err := imp.store.Append(ctx, []eventlog.Expect{{Stream: imp.stream, Seq: imp.head}}, recs)
	if imp.head == 0 && errors.Is(err, eventlog.ErrConflict) {
		return deletion.Taken(ctx, imp.store, imp.rep.Session)
	}
	if err != nil {
		return imp.partial(err)
	}
	imp.head = evs[len(evs)-1].Seq
	imp.batch, imp.size = imp.batch[:0], 0
	return nil
}

// partial explains err, saying how much of the import was written.
func (imp *importer) partial(err error) error {
	if imp.head == 0 {
		return err
	}
	return fmt.Errorf("import into %s stopped after %d events: %w", imp.rep.Session, imp.head, err)
}
