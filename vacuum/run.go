package vacuum

import (
	"context"
	"errors"
	"fmt"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/schema"
)

// maxTries bounds how often a vacuum starts again because another writer
// moved a stream it had read.
const maxTries = 8

// Env is what Run needs of its caller besides the store.
type Env struct {
	// Now stamps the Vacuumed record, in UTC unix nanoseconds.
	Now func() int64
	// RemoveFiles removes deleted session id's files (transcript, env
	// files, spilled output) and returns how many it removed. Nil means
	// there are none.
	RemoveFiles func(id string) (int, error)
	// Forget is told, after a purge, the sessions it removed, so that the
	// caller drops what it holds of their text. Nil means nothing is held.
	Forget func(ctx context.Context, gone map[string]bool)
}

// Run removes the deleted sessions of store for good: it reads the plan,
// removes the sessions' files, which need no transaction, and has the
// store purge the log and append the Vacuumed record in one transaction,
// reading again when another writer moved a stream meanwhile (up to eight
// tries in all). A store that does not implement eventlog.Purger is
// ErrNoVacuum. A vacuum with nothing to remove writes nothing, but still
// compacts a store kept in a file (one with a Compact method), which
// finishes a vacuum that a crash cut short.
func Run(ctx context.Context, store eventlog.Store, env Env) (Report, error) {
	purger, ok := store.(eventlog.Purger)
	if !ok {
		return Report{}, fmt.Errorf("%w: %T", ErrNoVacuum, store)
	}
	files := 0 // removed by earlier tries
	for tries := 1; ; tries++ {
		plan, err := Read(ctx, store)
		if err != nil {
			return Report{}, err
		}
		for id := range plan.Gone {
			if env.RemoveFiles == nil {
				break
			}
			n, err := env.RemoveFiles(id)
			plan.Report.Files += n
			if err != nil {
				return Report{}, err
			}
		}
		files += plan.Report.Files
		plan.Report.Files, plan.Record.Files = files, files
		if len(plan.Purge.Remove) == 0 && len(plan.Purge.Rewrite) == 0 && plan.Report.Files == 0 {
			return plan.Report, compact(ctx, store)
		}
		rec, err := schema.NewRecord(schema.VacuumStream, plan.Record, env.Now(), "")
		if err != nil {
			return Report{}, err
		}
		plan.Purge.Records = []eventlog.Record{rec}
		_, err = purger.Purge(ctx, plan.Purge)
		if errors.Is(err, eventlog.ErrConflict) && tries < maxTries {
			continue
		}
		if err != nil {
			return Report{}, fmt.Errorf("vacuum: %w", err)
		}
		if env.Forget != nil {
			env.Forget(ctx, plan.Gone)
		}
		return plan.Report, nil
	}
}

// compact rewrites a store kept in a file, when it can be.
func compact(ctx context.Context, store eventlog.Store) error {
	if c, ok := store.(interface{ Compact(context.Context) error }); ok {
		return c.Compact(ctx)
	}
	return nil
}
