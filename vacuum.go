package reprise

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/vacuum"
)

// VacuumReport says what a Vacuum removed for good.
type VacuumReport = vacuum.Report

// Vacuum removes deleted sessions for good: every event of their streams
// but the tombstone (which keeps the id from being used again), the
// copies of their text in agent events (hook output and context,
// prompts, summaries, reasons; schema.Redact says which), whose events
// stay so that the agents' lifecycles still audit, and their transcript,
// env and spilled-output files. A Vacuumed event in schema.VacuumStream,
// written in the same transaction, says what went, so that Audit accepts
// the gaps. A bbolt file is then compacted, so the bytes are gone from it.
// A store that does not implement eventlog.Purger is ErrNoVacuum. It is a
// write: on a file another process holds it waits like any write.
//
// A vacuum with nothing to remove writes nothing, but still compacts a
// bbolt file, which finishes a vacuum that a crash cut short.
func (e *Engine) Vacuum(ctx context.Context) (VacuumReport, error) {
	purger, ok := e.store.(eventlog.Purger)
	if !ok {
		return VacuumReport{}, fmt.Errorf("%w: %T", ErrNoVacuum, e.store)
	}
	files := 0 // removed by earlier tries
	for tries := 1; ; tries++ {
		plan, err := e.planVacuum(ctx)
		if err != nil {
			return VacuumReport{}, err
		}
		files += plan.Report.Files
		plan.Report.Files, plan.Record.Files = files, files
		if len(plan.Purge.Remove) == 0 && len(plan.Purge.Rewrite) == 0 && plan.Report.Files == 0 {
			return plan.Report, e.compact(ctx)
		}
		rec, err := schema.NewRecord(schema.VacuumStream, plan.Record, e.stamp(), "")
		if err != nil {
			return VacuumReport{}, err
		}
		plan.Purge.Records = []eventlog.Record{rec}
		_, err = purger.Purge(ctx, plan.Purge)
		if errors.Is(err, eventlog.ErrConflict) && tries < maxDeleteTries {
			continue
		}
		if err != nil {
			return VacuumReport{}, fmt.Errorf("vacuum: %w", err)
		}
		e.forget(ctx, plan.Gone)
		return plan.Report, nil
	}
}

// compact rewrites a store kept in a file, when it can be.
func (e *Engine) compact(ctx context.Context) error {
	if c, ok := e.store.(interface{ Compact(context.Context) error }); ok {
		return c.Compact(ctx)
	}
	return nil
}

// planVacuum reads the log for what a vacuum removes and removes the
// deleted sessions' files, which need no transaction.
func (e *Engine) planVacuum(ctx context.Context) (*vacuum.Plan, error) {
	plan, err := vacuum.Read(ctx, e.store)
	if err != nil {
		return nil, err
	}
	for id := range plan.Gone {
		n, err := removeFiles(e.files, id)
		plan.Report.Files += n
		if err != nil {
			return nil, err
		}
		if e.legacyFiles == nil {
			continue
		}
		n, err = removeFiles(e.legacyFiles, id)
		plan.Report.Files += n
		if errors.Is(err, ErrNotPrivate) {
			e.log.Warn("the files of a deleted session stay in the directory stores shared before: it is not the user's own", "session", id, "error", err)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("remove the files of session %s from the directory stores shared before: %w", id, err)
		}
	}
	plan.Record.Files = plan.Report.Files
	return plan, nil
}

// removeFiles removes session id's transcript, env files and spilled hook
// output from files, and returns how many there were. Spilled output is named
// <id>-hook-<uuid>.txt; a name with a second "-hook-" belongs to a session
// whose id starts with id's. Env files are <id>.env-<restore id> (restore
// ids hold no "."), and <id>.env in stores written before each run had its
// own; a name with a "." after ".env-" is another session's (its id
// continues with ".env-").
func removeFiles(files Files, id string) (int, error) {
	names, err := files.List(id)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		rest := strings.TrimPrefix(name, id)
		spilled := strings.HasPrefix(rest, "-hook-") && strings.HasSuffix(rest, ".txt") && !strings.Contains(rest[len("-hook-"):], "-hook-")
		run, isEnv := strings.CutPrefix(rest, ".env-")
		env := rest == ".env" || isEnv && run != "" && !strings.Contains(run, ".")
		if rest != ".jsonl" && !env && !spilled {
			continue
		}
		if err := files.Remove(name); err != nil {
			return n, err
		}
		n++
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
	agents := make([]*Agent, 0, len(e.agents))
	for _, a := range e.agents {
		agents = append(agents, a)
	}
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
