package web

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/jsonview"
)

// auditData is what the audit page shows: the audit's object, and where
// each finding's event sits in the log.
type auditData struct {
	jsonview.Audit
	ViolationAt  []uint64 // position of each violation's event; 0 when it has none
	InProgressAt []uint64
	// Deleted is the deleted sessions, which Sessions leaves out as the
	// sessions page does.
	Deleted int
	// Checking is set while an audit of the newest events runs: the
	// report shown, if any (Done), is of the log up to AsOf.
	Checking bool
	Done     bool
	AsOf     uint64
	Head     uint64
}

// DefaultAuditWait is how long the audit page waits for a check of the
// events appended since the last one before it shows that one instead.
const DefaultAuditWait = 150 * time.Millisecond

// audit checks the whole log, as reprise audit does. The check runs in the
// background, one at a time (Audits): a page that the check outlasts
// shows the previous report, says so, and reloads itself; the JSON answer
// waits for the check.
func (h *handler) audit(r *http.Request) (*view, error) {
	ctx := r.Context()
	head, err := eventlog.LastPosition(ctx, h.e.Store())
	if err != nil {
		return nil, err
	}
	wait := cmp.Or(h.opts.AuditWait, DefaultAuditWait)
	if wantsJSON(r, strings.HasPrefix(r.URL.Path, "/api/")) {
		wait = -1
	}
	res, fresh, err := h.audits.get(ctx, head, wait)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	d := auditData{Checking: !fresh, Head: head}
	v := &view{Template: "audit", Title: "Audit", Data: &d}
	if !fresh {
		v.Refresh = 2
	}
	if res == nil {
		return v, nil
	}
	rep := res.report
	d.Done, d.AsOf, d.Deleted = true, res.head, rep.DeletedSessions
	d.Audit = jsonview.NewAudit(rep, len(rep.Violations) == 0, h.opts.FinishCommand, h.opts.RunningIn)
	for _, v := range rep.Violations {
		d.ViolationAt = append(d.ViolationAt, h.positionOf(r, v.Stream, v.Seq))
	}
	for _, p := range rep.InProgress {
		d.InProgressAt = append(d.InProgressAt, h.positionOf(r, p.Stream, p.Seq))
	}
	v.API = d.Audit
	return v, nil
}

// Audits runs the audits behind the audit pages of handlers that share
// it: one at a time, in the background, keeping the newest report and the
// last position it covers. A check of a large log takes seconds; a page
// shows the newest report while the next check runs, and no two checks of
// one store run at once however many pages ask.
type Audits struct {
	run func(context.Context) (*reprise.AuditReport, uint64, error)

	mu      sync.Mutex
	last    *auditResult  // the newest audit that ended without error
	running chan struct{} // closed when the audit under way ends; nil when none
	failed  error         // the error of the audit that ended last, if it failed
}

type auditResult struct {
	report *reprise.AuditReport
	head   uint64 // the last position the log had when the audit began
}

// NewAudits returns Audits that check the log with run, which returns the
// report and the last position of the log when it began.
func NewAudits(run func(ctx context.Context) (*reprise.AuditReport, uint64, error)) *Audits {
	return &Audits{run: run}
}

// engineAudits returns the Audits of e's store.
func engineAudits(e *reprise.Engine) *Audits {
	return NewAudits(func(ctx context.Context) (*reprise.AuditReport, uint64, error) {
		head, err := eventlog.LastPosition(ctx, e.Store())
		if err != nil {
			return nil, 0, err
		}
		rep, err := reprise.Audit(ctx, e.Store())
		return rep, head, err
	})
}

// get returns the newest report and whether it covers the log up to head,
// starting a check when none does and none is under way, and waiting up
// to wait for it (without end when wait is negative, until ctx ends). A
// check that failed is the error of those that waited for it.
func (a *Audits) get(ctx context.Context, head uint64, wait time.Duration) (*auditResult, bool, error) {
	a.mu.Lock()
	if a.last != nil && a.last.head >= head {
		defer a.mu.Unlock()
		return a.last, true, nil
	}
	if a.running == nil {
		a.running = make(chan struct{})
		go a.check(a.running)
	}
	done := a.running
	a.mu.Unlock()

	var timeout <-chan time.Time
	if wait >= 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-done:
	case <-timeout:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-done:
		if a.failed != nil {
			return nil, false, a.failed
		}
	default:
	}
	fresh := a.last != nil && a.last.head >= head
	if wait < 0 && !fresh {
		// Events came while it ran: the last ones are checked next time.
		return a.last, true, nil
	}
	return a.last, fresh, nil
}

// check runs one audit, which no request's end cancels, and keeps its
// report.
func (a *Audits) check(done chan struct{}) {
	rep, head, err := a.run(context.Background())
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failed = err
	if err == nil {
		a.last = &auditResult{report: rep, head: head}
	}
	a.running = nil
	close(done)
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
