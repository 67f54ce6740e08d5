package web

import (
	"fmt"
	"net/http"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/jsonview"
)

// auditData is what the audit page shows: the audit's object, and where
// each finding's event sits in the log.
type auditData struct {
	jsonview.Audit
	ViolationAt  []uint64 // position of each violation's event; 0 when it has none
	InProgressAt []uint64
}

// audit checks the whole log, as reprise audit does.
func (h *handler) audit(r *http.Request) (*view, error) {
	ctx := r.Context()
	rep, err := reprise.Audit(ctx, h.e.Store())
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	d := auditData{Audit: jsonview.NewAudit(rep, len(rep.Violations) == 0, h.opts.FinishCommand, h.opts.RunningIn)}
	for _, v := range rep.Violations {
		d.ViolationAt = append(d.ViolationAt, h.positionOf(r, v.Stream, v.Seq))
	}
	for _, p := range rep.InProgress {
		d.InProgressAt = append(d.InProgressAt, h.positionOf(r, p.Stream, p.Seq))
	}
	return &view{Template: "audit", Title: "Audit", Data: d, API: d.Audit}, nil
}

// positionOf returns the position of event seq of stream, or 0 when it
// cannot be read (a violation may name an event that is damaged or gone).
func (h *handler) positionOf(r *http.Request, stream string, seq uint64) uint64 {
	if seq == 0 {
		return 0
	}
	ev, err := eventAt(r.Context(), h.e.Store(), stream, seq)
	if err != nil || ev.Seq != seq {
		return 0
	}
	return ev.Position
}
