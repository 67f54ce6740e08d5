package transfer

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"

	"github.com/reprise-dev/reprise/deletion"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// Export writes session id of store as a Claude Code transcript (JSONL)
// to w: the same lines an Engine keeps at its TranscriptPath. It streams
// from the log, so memory stays bounded. id should be a valid id
// (Engine.Export checks it). A deleted session is
// lifecycle.ErrSessionDeleted, one with no events
// lifecycle.ErrSessionNotFound.
func Export(ctx context.Context, store eventlog.Store, id string, w io.Writer) error {
	if gone, err := deletion.Tombstoned(ctx, store, id); err != nil || gone {
		return cmp.Or(err, deletion.Deleted(id))
	}
	bw := bufio.NewWriter(w)
	created := &schema.SessionCreated{ID: id}
	var seen bool
	err := store.ReadStream(ctx, projection.SessionStream(id), 1, func(ev eventlog.Event) error {
		seen = true
		p, err := schema.Decode(ev)
		if err != nil {
			return err
		}
		if c, ok := p.(*schema.SessionCreated); ok {
			created = c
		}
		line, err := projection.SessionLine(created, ev.Time, p)
		if err == nil && line != nil {
			_, err = bw.Write(line)
		}
		return err
	})
	if err != nil {
		return err
	}
	if !seen {
		return fmt.Errorf("%w: %s", lifecycle.ErrSessionNotFound, id)
	}
	return bw.Flush()
}
