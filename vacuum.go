package reprise

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/reprise-dev/reprise/files"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/vacuum"
)

// VacuumReport says what a Vacuum removed for good.
type VacuumReport = vacuum.Report

// Vacuum removes deleted sessions for good: every event of their streams
// but the tombstone (which keeps the id from being used again), the
// copies of their text in agent events (hook output and context,
// prompts, summaries, reasons; schema.Redact says which), whose events
// stay so that the agents' lifecycles still audit, and their transcript,
// env and spilled-output files. It also blanks the text of prompts the
// hooks blocked from their intents, which stores of older builds kept,
// leaving the prompts' SHA-256 and length; their sessions stay. A Vacuumed event in schema.VacuumStream,
// written in the same transaction, says what went, so that Audit accepts
// the gaps. A bbolt file is then compacted, so the bytes are gone from it.
// A store that does not implement eventlog.Purger is ErrNoVacuum. It is a
// write: on a file another process holds it waits like any write.
//
// A vacuum with nothing to remove writes nothing, but still compacts a
// bbolt file, which finishes a vacuum that a crash cut short. See
// vacuum.Run.
func (e *Engine) Vacuum(ctx context.Context) (VacuumReport, error) {
	return vacuum.Run(ctx, e.store, vacuum.Env{Now: e.stamp, RemoveFiles: e.removeFiles, Forget: e.forget})
}

// removeFiles removes deleted session id's files from the Engine's
// directory and from the one stores shared before, if any.
func (e *Engine) removeFiles(id string) (int, error) {
	n, err := files.RemoveSession(e.files, id)
	if err != nil || e.legacyFiles == nil {
		return n, err
	}
	legacy, err := files.RemoveSession(e.legacyFiles, id)
	n += legacy
	if errors.Is(err, ErrNotPrivate) {
		e.log.Warn("the files of a deleted session stay in the directory stores shared before: it is not the user's own", "session", id, "error", err)
		return n, nil
	}
	if err != nil {
		return n, fmt.Errorf("remove the files of session %s from the directory stores shared before: %w", id, err)
	}
	return n, nil
}

// forget drops what this Engine holds in memory of the vacuumed text: the
// deleted sessions' conversations, and its agents' views, which are read
// again from the rewritten log. It waits for each agent's action in
// progress.
func (e *Engine) forget(ctx context.Context, gone map[string]bool) {
	e.mu.Lock()
	for id := range gone {
		delete(e.sessions, id)
	}
	agents := slices.Collect(maps.Values(e.agents))
	e.mu.Unlock()
	for _, a := range agents {
		a.mu.Lock()
		view := projection.NewAgent(a.id)
		if err := e.store.ReadStream(ctx, a.stream, 1, view.Apply); err != nil {
			e.log.Warn("agent view kept as it was after a vacuum", "agent", a.id, "error", err)
		} else {
			a.view = view
		}
		a.mu.Unlock()
	}
}
