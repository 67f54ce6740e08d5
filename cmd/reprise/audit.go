package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
)

// auditJSON is the output of audit --json.
type auditJSON struct {
	OK               bool             `json:"ok"`
	Events           int              `json:"events"`
	Sessions         int              `json:"sessions"`
	Agents           int              `json:"agents"`
	Restores         int              `json:"restores"`
	HooksRun         int              `json:"hooks_run"`
	HooksFailed      int              `json:"hooks_failed"`
	HooksCancelled   int              `json:"hooks_cancelled"`
	HooksInterrupted int              `json:"hooks_interrupted"`
	Violations       []violationJSON  `json:"violations"`
	InProgress       []inProgressJSON `json:"in_progress"`
}

// inProgressJSON is a step an agent's log ends inside, with the command
// that rolls it forward.
type inProgressJSON struct {
	Agent   string `json:"agent"`
	Stream  string `json:"stream"`
	Seq     uint64 `json:"seq"`
	ID      string `json:"id"`
	State   string `json:"state"`
	Detail  string `json:"detail"`
	Command string `json:"command"`
	// RunningIn names the process that holds the store, when the audit
	// read through it: the step may be running there, and Command is for
	// after it ends.
	RunningIn string `json:"running_in,omitempty"`
}

type violationJSON struct {
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// auditOptions are the options of audit.
type auditOptions struct {
	strict bool // --strict: a step in progress fails the audit too
}

// newAuditCmd returns the audit command: check the whole log.
func newAuditCmd(a *app) *cobra.Command {
	var o auditOptions
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check that the log is consistent and every restore followed the rules",
		Long: `audit reads the whole log, read-only, and checks it: every event decodes
and its checksum holds, every stream runs 1, 2, 3... without gaps, every
agent's steps follow the lifecycle table, no hook step is recorded twice for
one restore, no restore stopped half way, every injected message is in its
session, and reading the log stream by stream agrees with reading it in
store order.

It prints each violation as STREAM#SEQ: KIND: DETAIL, then a summary of the
events, sessions, agents, restores and hooks (run, failed, cancelled or
timed out, interrupted). It exits with 1 when it finds any violation.

A log that ends inside a restore (a restore stopped between two steps, or
hooks started with no outcome yet) is not damaged: the process running it
is still at work, or it died and the next command on that agent rolls the
restore forward. audit lists such a restore as "in progress", with the
command that finishes it (reprise finish --agent NAME), and exits with 0
unless --strict is given.`,
		Example: `  reprise audit
  reprise audit --strict
  reprise audit --json | jq '.violations[] | .kind'`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAudit(cmd.Context(), a, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&o.strict, "strict", false, "also fail (exit 1) when a restore is in progress")
	return cmd
}

// runAudit checks the whole log and prints what it found; it fails when it
// finds a violation.
func runAudit(ctx context.Context, a *app, o auditOptions, stdout, stderr io.Writer) (err error) {
	e, err := a.openReadOnly(ctx, stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	rep, err := reprise.Audit(ctx, e.Store())
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	failed := len(rep.Violations) > 0 || o.strict && len(rep.InProgress) > 0
	if a.json {
		err = printJSON(stdout, a.newAuditJSON(rep, !failed))
	} else {
		a.printAudit(stdout, rep, failed)
	}
	switch {
	case err != nil:
		return err
	case len(rep.Violations) > 0:
		return fmt.Errorf("audit found %d violation(s)", len(rep.Violations))
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
	out := auditJSON{
		OK: ok, Events: rep.Events, Sessions: rep.Sessions, Agents: rep.Agents,
		Restores: rep.Restores, HooksRun: rep.HooksRun, HooksFailed: rep.HooksFailed,
		HooksCancelled: rep.HooksCancelled, HooksInterrupted: rep.HooksInterrupted,
		Violations: make([]violationJSON, len(rep.Violations)),
		InProgress: make([]inProgressJSON, len(rep.InProgress)),
	}
	for i, p := range rep.InProgress {
		out.InProgress[i] = inProgressJSON{Agent: p.Agent, Stream: p.Stream, Seq: p.Seq, ID: p.ID,
			State: p.State, Detail: p.Detail, Command: a.finishCommand(p.Agent), RunningIn: a.heldBy}
	}
	for i, v := range rep.Violations {
		out.Violations[i] = violationJSON{Stream: v.Stream, Seq: v.Seq, Kind: v.Kind, Detail: v.Detail}
	}
	return out
}

// printAudit writes each violation and each restore in progress, then a
// summary, for people; failed is the verdict.
func (a *app) printAudit(w io.Writer, rep *reprise.AuditReport, failed bool) {
	for _, v := range rep.Violations {
		fmt.Fprintln(w, v)
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
	case failed:
		verdict = "not ok (--strict)"
	}
	inProgress := ""
	if n := len(rep.InProgress); n > 0 {
		inProgress = fmt.Sprintf("; %d in progress", n)
	}
	fmt.Fprintf(w, "%s: %d events, %d sessions, %d agents, %d restores%s; hooks: %d run, %d failed, %d cancelled, %d interrupted\n",
		verdict, rep.Events, rep.Sessions, rep.Agents, rep.Restores, inProgress,
		rep.HooksRun, rep.HooksFailed, rep.HooksCancelled, rep.HooksInterrupted)
}
