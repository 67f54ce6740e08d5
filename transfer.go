package reprise

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/transfer"
)

// MaxTranscriptLine bounds one line of an imported transcript: see
// transfer.MaxTranscriptLine.
const MaxTranscriptLine = transfer.MaxTranscriptLine

// The import's options and report, as package transfer defines them.
type (
	ImportOptions = transfer.ImportOptions
	ImportReport  = transfer.ImportReport
	SkippedLine   = transfer.SkippedLine
)

// The import's errors, as package transfer defines them.
var (
	ErrBadTranscript = transfer.ErrBadTranscript
	ErrNotTranscript = transfer.ErrNotTranscript
)

// ErrImportUnfinished is returned for a session whose import started and
// did not finish (its process was killed, say): by Import for its id,
// unless ImportOptions.Resume is set, and by every action that would add
// to it (Append, Buffer, an agent's Start or Restore of it), since what
// they added would keep the import from being resumed.
var ErrImportUnfinished = lifecycle.ErrImportUnfinished

// Import reads a Claude Code transcript (JSONL) from r into a new session
// of the Engine's store: see transfer.Import. An empty opts.ID is a new
// UUID, and an invalid one ErrInvalidID; opts.Cwd is made absolute ("" is
// the process's working directory). Memory stays bounded whatever the
// size of r, and an import cut short is ErrImportUnfinished for its id
// until it is resumed (opts.Resume) or deleted.
func (e *Engine) Import(ctx context.Context, r io.Reader, opts ImportOptions) (ImportReport, error) {
	if opts.ID == "" {
		opts.ID = e.newID()
	}
	if err := ValidateID(opts.ID); err != nil {
		return ImportReport{Session: opts.ID}, err
	}
	var err error
	if opts.Cwd, err = filepath.Abs(opts.Cwd); err != nil {
		return ImportReport{Session: opts.ID}, fmt.Errorf("%w: %q: %w", ErrNoDirectory, opts.Cwd, err)
	}
	return transfer.Import(ctx, e.writer(), e.stamp, r, opts)
}

// Export writes session id as a Claude Code transcript (JSONL) to w: the
// same lines the Engine keeps at TranscriptPath. It streams from the log,
// so memory stays bounded. A deleted session is ErrSessionDeleted. See
// transfer.Export.
func (e *Engine) Export(ctx context.Context, id string, w io.Writer) error {
	if err := ValidateID(id); err != nil {
		return fmt.Errorf("%w: %w", ErrSessionNotFound, err)
	}
	return transfer.Export(ctx, e.store, id, w)
}
