package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/audit"
	"github.com/reprise-dev/reprise/jsonview"
)

// auditJSON is the output of audit --json.
type auditJSON = jsonview.Audit

// auditOptions are the options of audit.
type auditOptions struct {
	cmdIO
	strict bool // --strict: a step in progress fails the audit too
}

// newAuditCmd returns the audit command: check the whole log.
func newAuditCmd(a *app, runF func(context.Context, *auditOptions) error) *cobra.Command {
	var o auditOptions
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check that the log is consistent and every restore followed the rules",
		Long: `audit reads the whole log, read-only, and checks it: every event decodes
and its checksum holds, every stream runs 1, 2, 3... without gaps, every
agent's steps follow the lifecycle table, no hook step is recorded twice for
one restore, no restore stopped half way, every injected message is in its
session, and the store's stream heads agree with where its store-wide
order ends each stream. It reads one consistent snapshot of the log, so an
audit while others write reports only what is in the log.

It prints each violation as STREAM#SEQ: KIND: DETAIL, then a summary of the
events, sessions, agents, restores and hooks (run, failed, cancelled or
timed out, interrupted), and of the fired events by name (how many ran,
were blocked, were interrupted). It exits with 1 when it finds any
violation.

A log that ends inside a restore (a restore stopped between two steps, or
hooks started with no outcome yet) is not damaged: the process running it
is still at work, or it died and the next command on that agent rolls the
restore forward. audit lists such a restore as "in progress", with the
command that finishes it (reprise finish --agent NAME), and exits with 0
unless --strict is given. So does it list a tool call or a fire whose hooks
started with no outcome: the next command on the agent closes them as
interrupted, once the process that ran them is gone.`,
		Example: `  reprise audit
  reprise audit --strict
  reprise audit --json | jq '.violations[] | .kind'`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runAudit(cmd.Context(), &o)
		},
	}
	cmd.Flags().BoolVar(&o.strict, "strict", false, "also fail (exit 1) when a restore is in progress")
	return cmd
}

// runAudit checks the whole log and prints what it found; it fails when it
// finds a violation.
func runAudit(ctx context.Context, o *auditOptions) (err error) {
	e, err := o.openReadOnly(ctx, o.stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	rep, err := reprise.Audit(ctx, e.Store())
	if err != nil {
		return fmt.Errorf("cannot audit the store: %w", err)
	}
	failed := len(rep.Violations) > 0 || len(rep.Unsendable) > 0 || o.strict && len(rep.InProgress) > 0
	if o.json {
		err = printJSON(o.stdout, o.newAuditJSON(rep, !failed))
	} else {
		o.printAudit(o.stdout, rep, failed)
	}
	switch {
	case err != nil:
		return err
	case len(rep.Violations) > 0:
		return fmt.Errorf("audit found %d violation(s)", len(rep.Violations))
	case len(rep.Unsendable) > 0:
		return fmt.Errorf("audit found %d message(s) the Messages API would refuse where they are", len(rep.Unsendable))
	case failed:
		return fmt.Errorf("audit found %d restore(s) in progress (--strict)", len(rep.InProgress))
	}
	return nil
}

// finishCommand returns the command that rolls forward what agent has in
// progress, naming the store when --store named it.
func (a *app) finishCommand(agent string) string {
	cmd := "reprise finish --agent " + agent
	if a.store != "" {
		cmd = "reprise --store " + shellQuote(a.store) + " finish --agent " + agent
	}
	return cmd
}

// newAuditJSON describes rep for JSON output; ok is the verdict.
func (a *app) newAuditJSON(rep *reprise.AuditReport, ok bool) auditJSON {
	return jsonview.NewAudit(rep, ok, a.finishCommand, a.heldBy)
}

// printAudit writes each violation and each restore in progress, then a
// summary, for people; failed is the verdict.
func (a *app) printAudit(w io.Writer, rep *reprise.AuditReport, failed bool) {
	for _, v := range rep.Violations {
		if v.Kind == reprise.ViolationUnfinishedImport {
			id := strings.TrimPrefix(v.Stream, "session/")
			fmt.Fprintf(w, "%s; run: reprise import --resume --id %s FILE, or reprise rm %s\n", v, id, id)
			continue
		}
		fmt.Fprintln(w, v)
	}
	for _, v := range rep.Unsendable {
		fmt.Fprintf(w, "%s; the Messages API would refuse the session as it is\n", v)
	}
	for _, p := range rep.InProgress {
		if a.heldBy != "" {
			fmt.Fprintf(w, "%s; it may be running in %s, which holds the store; if it does not end there, run after that process ends: %s\n",
				p, a.heldBy, a.finishCommand(p.Agent))
			continue
		}
		fmt.Fprintf(w, "%s; the next command on agent %s rolls it forward: %s\n", p, p.Agent, a.finishCommand(p.Agent))
	}
	verdict := "ok"
	switch n := len(rep.Violations); {
	case n > 0:
		verdict = fmt.Sprintf("%d violation(s)", n)
	case len(rep.Unsendable) > 0:
		verdict = fmt.Sprintf("%d unsendable message(s)", len(rep.Unsendable))
	case failed:
		verdict = "not ok (--strict)"
	}
	inProgress := ""
	if n := len(rep.InProgress); n > 0 {
		inProgress = fmt.Sprintf("; %d in progress", n)
	}
	fmt.Fprintf(w, "%s: %d events, %d sessions, %d agents, %d restores%s; hooks: %d run, %d failed, %d cancelled, %d interrupted%s\n",
		verdict, rep.Events, rep.Sessions, rep.Agents, rep.Restores, inProgress,
		rep.HooksRun, rep.HooksFailed, rep.HooksCancelled, rep.HooksInterrupted, firesSummary(rep.Fires))
}

// firesSummary counts the fires of each event for the audit's summary, as
// "; fires: Notification 2 (1 blocked, 1 interrupted), Setup 1"; "" when
// the log holds none.
func firesSummary(fires []audit.FireCount) string {
	if len(fires) == 0 {
		return ""
	}
	parts := make([]string, len(fires))
	for i, f := range fires {
		parts[i] = fmt.Sprintf("%s %d", f.Event, f.Fired)
		var how []string
		if f.Blocked > 0 {
			how = append(how, fmt.Sprintf("%d blocked", f.Blocked))
		}
		if f.Interrupted > 0 {
			how = append(how, fmt.Sprintf("%d interrupted", f.Interrupted))
		}
		if len(how) > 0 {
			parts[i] += " (" + strings.Join(how, ", ") + ")"
		}
	}
	return "; fires: " + strings.Join(parts, ", ")
}
