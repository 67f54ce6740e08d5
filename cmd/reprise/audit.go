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
	OK               bool            `json:"ok"`
	Events           int             `json:"events"`
	Sessions         int             `json:"sessions"`
	Agents           int             `json:"agents"`
	Restores         int             `json:"restores"`
	HooksRun         int             `json:"hooks_run"`
	HooksFailed      int             `json:"hooks_failed"`
	HooksCancelled   int             `json:"hooks_cancelled"`
	HooksInterrupted int             `json:"hooks_interrupted"`
	Violations       []violationJSON `json:"violations"`
}

type violationJSON struct {
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// auditOptions are the options of audit: none of its own.
type auditOptions struct{}

// newAuditCmd returns the audit command: check the whole log.
func newAuditCmd(a *app) *cobra.Command {
	var o auditOptions
	return &cobra.Command{
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
timed out, interrupted). It exits with 1 when it finds any violation.`,
		Example: `  reprise audit
  reprise audit --json | jq '.violations[] | .kind'`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAudit(cmd.Context(), a, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
}

// runAudit checks the whole log and prints what it found; it fails when it
// finds a violation.
func runAudit(ctx context.Context, a *app, _ auditOptions, stdout, stderr io.Writer) (err error) {
	e, err := a.openReadOnly(ctx, stderr)
	if err != nil {
		return err
	}
	defer closeEngine(e, &err)
	rep, err := reprise.Audit(ctx, e.Store())
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if a.json {
		err = printJSON(stdout, newAuditJSON(rep))
	} else {
		printAudit(stdout, rep)
	}
	if err == nil && len(rep.Violations) > 0 {
		err = fmt.Errorf("audit found %d violation(s)", len(rep.Violations))
	}
	return err
}

// newAuditJSON describes rep for JSON output.
func newAuditJSON(rep *reprise.AuditReport) auditJSON {
	out := auditJSON{
		OK: len(rep.Violations) == 0, Events: rep.Events, Sessions: rep.Sessions, Agents: rep.Agents,
		Restores: rep.Restores, HooksRun: rep.HooksRun, HooksFailed: rep.HooksFailed,
		HooksCancelled: rep.HooksCancelled, HooksInterrupted: rep.HooksInterrupted,
		Violations: make([]violationJSON, len(rep.Violations)),
	}
	for i, v := range rep.Violations {
		out.Violations[i] = violationJSON{Stream: v.Stream, Seq: v.Seq, Kind: v.Kind, Detail: v.Detail}
	}
	return out
}

// printAudit writes each violation, then a summary, for people.
func printAudit(w io.Writer, rep *reprise.AuditReport) {
	for _, v := range rep.Violations {
		fmt.Fprintln(w, v)
	}
	verdict := "ok"
	if n := len(rep.Violations); n > 0 {
		verdict = fmt.Sprintf("%d violation(s)", n)
	}
	fmt.Fprintf(w, "%s: %d events, %d sessions, %d agents, %d restores; hooks: %d run, %d failed, %d cancelled, %d interrupted\n",
		verdict, rep.Events, rep.Sessions, rep.Agents, rep.Restores,
		rep.HooksRun, rep.HooksFailed, rep.HooksCancelled, rep.HooksInterrupted)
}
