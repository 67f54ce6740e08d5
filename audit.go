package reprise

import (
	"context"

	"github.com/reprise-dev/reprise/audit"
	"github.com/reprise-dev/reprise/eventlog"
)

// The audit's report, as package audit defines it.
type (
	AuditReport = audit.Report
	Violation   = audit.Violation
	InProgress  = audit.InProgress
)

// Kinds of audit violation.
const (
	ViolationUndecodable      = audit.Undecodable
	ViolationNewerVersion     = audit.NewerVersion
	ViolationSequenceGap      = audit.SequenceGap
	ViolationOutOfOrder       = audit.OutOfOrder
	ViolationDoubleHookRun    = audit.DoubleHookRun
	ViolationUnresolved       = audit.Unresolved
	ViolationUnfinished       = audit.Unfinished
	ViolationProjection       = audit.Projection
	ViolationMissingInjected  = audit.MissingInjected
	ViolationDamagedMeta      = audit.DamagedMeta
	ViolationUnfinishedImport = audit.UnfinishedImport
	// The kinds of AuditReport.Unsendable.
	UnsendableAnswerBeforeResults = audit.AnswerBeforeResults
	UnsendableDuplicateToolUse    = audit.DuplicateToolUse
	UnsendableToolUseWithoutID    = audit.ToolUseWithoutID
)

// Audit checks the log of store: see audit.Check.
func Audit(ctx context.Context, store eventlog.Store) (*AuditReport, error) {
	return audit.Check(ctx, store)
}
