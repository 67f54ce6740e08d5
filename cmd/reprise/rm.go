package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// rmOptions are the options of rm.
type rmOptions struct {
	cmdIO
	sessions  []string // SESSION...
	olderThan string   // --older-than
	dryRun    bool     // --dry-run
}

// deletedJSON is one session in the JSON output of rm.
type deletedJSON struct {
	ID           string `json:"id"`
	Messages     int    `json:"messages"`
	LastActivity string `json:"last_activity,omitempty"`
}

// refusedJSON is a session a dry run of rm would not delete, in its JSON
// output.
type refusedJSON struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// newRmCmd returns the rm command: delete sessions.
func newRmCmd(a *app, runF func(context.Context, *rmOptions) error) *cobra.Command {
	var o rmOptions
	cmd := &cobra.Command{
		Use:   "rm (SESSION... | --older-than AGE) [--dry-run]",
		Short: "Delete sessions",
		Long: `rm deletes sessions: it records a tombstone at the end of each one's
stream, and from then on the session is in no listing and cannot be
restored, started, forked or appended to. An agent whose current session
it was gets an error on its next command, except start of another
session. A deleted id is never used again.

--older-than AGE deletes every session whose last activity is older than
AGE: a number and a unit, d (days), h or m, such as 30d, 12h or 1h30m. A
session's last activity is its newest event (its creation, a message, an
injected reminder) or the last time an agent loaded it, whichever is later.
--dry-run deletes nothing: it lists what would be deleted, and what
would be refused and why, and exits 1 when rm would refuse some session.

rm keeps the events in the log: reprise vacuum removes them, and the
session's transcript and other files, for good. A session that an agent is
in the middle of restoring is not deleted; the next command on that agent
finishes the restore.`,
		Example: `  reprise rm 3f6c1a52-8e0b-4d7e-9a51-0c2f4b6d7e81
  reprise rm --older-than 30d --dry-run
  reprise rm --older-than 30d && reprise vacuum`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 && o.olderThan != "" {
				return usagef("give sessions or --older-than, not both")
			}
			if len(args) == 0 && o.olderThan == "" {
				return usagef("missing SESSION or --older-than")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.sessions = args
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runRm(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.olderThan, "older-than", "", "delete the sessions with no activity for `AGE`, such as 30d, 12h or 90m")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "list what would be deleted, delete nothing")
	return cmd
}

// runRm deletes o.sessions, or those inactive for o.olderThan, and lists
// them.
func runRm(ctx context.Context, o *rmOptions) (err error) {
	var age time.Duration
	if o.olderThan != "" {
		if age, err = parseAge(o.olderThan); err != nil {
			return usageError{fmt.Errorf("--older-than: %w", err)}
		}
	}
	for _, id := range o.sessions {
		if err := validID("session", id); err != nil {
			return err
		}
	}
	open := o.openWritable
	if o.dryRun {
		open = o.openReadOnly
	}
	e, err := open(ctx, o.stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	if o.dryRun {
		return o.dryRunRm(ctx, e, *o, age, o.stdout)
	}
	var gone []reprise.InactiveSession
	if o.olderThan != "" {
		gone, err = e.DeleteInactive(ctx, time.Now().Add(-age))
	} else {
		gone, err = deleteSessions(ctx, e, o.sessions)
	}
	if err != nil && len(gone) == 0 && !o.json {
		return err // not "nothing to delete": the error says why
	}
	if cerr := countTombstoned(ctx, e.Store(), gone); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if perr := printDeleted(o.stdout, o.json, false, gone, nil); perr != nil {
		return errors.Join(err, perr)
	}
	warnCurrent(ctx, e, gone, o.stderr)
	if len(gone) > 0 {
		if path, perr := o.storePath(); perr == nil {
			if uerr := o.updateIndex(ctx, path, e.Store()); uerr != nil {
				warn(o.stderr, "%v", uerr)
			}
		}
	}
	return err
}

// warnCurrent says, for each deleted session that an agent has as its
// current one, that the agent needs another before its next action.
func warnCurrent(ctx context.Context, e *reprise.Engine, gone []reprise.InactiveSession, w io.Writer) {
	if len(gone) == 0 {
		return
	}
	agents, err := jsonview.ListAgents(ctx, e.Store())
	if err != nil {
		return // the deletion is done; this is only advice
	}
	for _, s := range gone {
		for _, a := range agents {
			if a.Session == s.ID {
				fmt.Fprintf(w, "session %s was the current session of agent %s: give it another with reprise start --agent %s SESSION\n",
					s.ID, a.ID, a.ID)
			}
		}
	}
}

// deleteSessions deletes ids and returns those it deleted; the errors of
// the others are joined.
func deleteSessions(ctx context.Context, e *reprise.Engine, ids []string) ([]reprise.InactiveSession, error) {
	var (
		gone []reprise.InactiveSession
		errs []error
	)
	for _, id := range ids {
		info, err := e.Session(ctx, id)
		if err == nil {
			err = e.DeleteSession(ctx, id)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		gone = append(gone, reprise.InactiveSession{SessionInfo: info})
	}
	return gone, errors.Join(errs...)
}

// countTombstoned sets the message count of each session rm deleted to
// the one its tombstone records: messages other writers appended after
// rm first read the session, and before the tombstone, count too.
func countTombstoned(ctx context.Context, store eventlog.Store, gone []reprise.InactiveSession) error {
	for i := range gone {
		stream := projection.SessionStream(gone[i].ID)
		head, err := store.Head(ctx, stream)
		if err != nil {
			return err
		}
		err = store.ReadStream(ctx, stream, head, func(ev eventlog.Event) error {
			p, err := schema.Decode(ev)
			if tomb, ok := p.(*schema.SessionDeleted); ok {
				gone[i].Messages = tomb.Messages
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("read the tombstone of %s: %w", gone[i].ID, err)
		}
	}
	return nil
}

// refusal is a session rm would not delete, and why.
type refusal struct {
	id  string
	err error
}

// dryRunRm lists what rm would delete and what it would refuse, and why,
// as the checks of the real rm find them now. It fails, as rm would, when
// some session would be refused.
func (a *app) dryRunRm(ctx context.Context, e *reprise.Engine, o rmOptions, age time.Duration, stdout io.Writer) error {
	var (
		would   []reprise.InactiveSession
		refused []refusal
	)
	if o.olderThan != "" {
		inactive, err := e.InactiveSessions(ctx, time.Now().Add(-age))
		if err != nil {
			return err
		}
		for _, s := range inactive {
			if err := e.CheckDelete(ctx, s.ID); err != nil {
				refused = append(refused, refusal{s.ID, err})
				continue
			}
			would = append(would, s)
		}
	} else {
		for _, id := range o.sessions {
			info, err := e.Session(ctx, id)
			if err == nil {
				err = e.CheckDelete(ctx, id)
			}
			if err != nil {
				refused = append(refused, refusal{id, err})
				continue
			}
			would = append(would, reprise.InactiveSession{SessionInfo: info})
		}
	}
	if a.heldBy != "" {
		// rm needs the store to itself; the holder has it.
		held := fmt.Errorf("the store is in use by %s; rm waits for it up to the lock timeout, so run it after that process ends", a.heldBy)
		for _, s := range would {
			refused = append(refused, refusal{s.ID, held})
		}
		would = nil
	}
	if err := printDeleted(stdout, a.json, true, would, refused); err != nil {
		return err
	}
	if len(refused) > 0 {
		return fmt.Errorf("rm would refuse %d session(s)", len(refused))
	}
	return nil
}

// printDeleted lists the sessions rm deleted, or with dryRun would delete
// and would refuse; "nothing to delete" when there are none.
func printDeleted(stdout io.Writer, asJSON, dryRun bool, gone []reprise.InactiveSession, refused []refusal) error {
	if asJSON {
		out := struct {
			DryRun  bool          `json:"dry_run"`
			Deleted []deletedJSON `json:"deleted"`
			Refused []refusedJSON `json:"refused,omitempty"`
		}{DryRun: dryRun, Deleted: make([]deletedJSON, len(gone))}
		for i, s := range gone {
			out.Deleted[i] = deletedJSON{ID: s.ID, Messages: s.Messages, LastActivity: jsonview.FormatTime(s.LastActivity)}
		}
		for _, r := range refused {
			out.Refused = append(out.Refused, refusedJSON{ID: r.id, Reason: userMessage(r.err)})
		}
		return printJSON(stdout, out)
	}
	if len(gone) == 0 && len(refused) == 0 {
		_, err := fmt.Fprintln(stdout, "nothing to delete")
		return err
	}
	verb := "deleted"
	if dryRun {
		verb = "would delete"
	}
	for _, s := range gone {
		if _, err := fmt.Fprintf(stdout, "%s %s (%d message(s))\n", verb, s.ID, s.Messages); err != nil {
			return err
		}
	}
	for _, r := range refused {
		if _, err := fmt.Fprintf(stdout, "would refuse %s: %s\n", r.id, userMessage(r.err)); err != nil {
			return err
		}
	}
	return nil
}

// maxAgeDays is the most days an age may be: a longer one overflows a
// time.Duration, which would wrap around to a short age.
const maxAgeDays = int64(math.MaxInt64 / (24 * time.Hour))

// hoursAndMinutes matches the shape of an age in hours and minutes, so
// that one time.ParseDuration refuses only for its size is called too
// long.
var hoursAndMinutes = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?h)?([0-9]+(\.[0-9]+)?m)?$`)

// parseAge reads an age such as 30d, 12h, 90m or 1h30m: a whole number of
// days, or a duration of hours and minutes. It must be positive, and no
// longer than a duration holds (106751d, about 292 years).
func parseAge(s string) (time.Duration, error) {
	var age time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange), err == nil && n > maxAgeDays:
			return 0, fmt.Errorf("%q is too long an age; the longest is %dd", s, maxAgeDays)
		case err != nil:
			return 0, fmt.Errorf("%q is not a number of days, such as 30d", s)
		}
		age = time.Duration(n) * 24 * time.Hour
	} else {
		d, err := time.ParseDuration(s)
		if err != nil && s != "" && hoursAndMinutes.MatchString(s) {
			return 0, fmt.Errorf("%q is too long an age; the longest is %dd", s, maxAgeDays)
		}
		if err != nil || strings.Trim(s, "0123456789.hm+-") != "" {
			return 0, fmt.Errorf("%q is not an age in days, hours or minutes, such as 30d, 12h, 90m or 1h30m", s)
		}
		age = d
	}
	if age <= 0 {
		return 0, fmt.Errorf("%q is not a positive age", s)
	}
	return age, nil
}
