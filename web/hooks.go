package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// Hooks keeps the health page's count of a store's hook runs
// (projection.HookHealth), brought up to date with the events appended
// since the last request that read it, so that no request reads the
// whole log but the first. Handlers made afresh for each request share
// one to keep it.
type Hooks struct {
	mu sync.Mutex
	h  *projection.HookHealth
}

// NewHooks returns an empty Hooks, which its first request fills.
func NewHooks() *Hooks { return &Hooks{h: projection.NewHookHealth()} }

// report folds what store gained since the last call, then reports the
// window from, to grouped by group.
func (k *Hooks) report(ctx context.Context, store eventlog.Store, from, to int64, group projection.HookGroup) ([]projection.HookStats, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.catchUp(ctx, store); err != nil {
		return nil, err
	}
	return k.h.Report(from, to, group, sparkSlots), nil
}

// failedOn folds what store gained since the last call, then returns
// those of ids that a hook run failed on.
func (k *Hooks) failedOn(ctx context.Context, store eventlog.Store, ids []string) (map[string]bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.catchUp(ctx, store); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, id := range ids {
		if k.h.FailedOn(id) {
			out[id] = true
		}
	}
	return out, nil
}

// catchUp folds the events store gained since the last call; k.mu is
// held.
func (k *Hooks) catchUp(ctx context.Context, store eventlog.Store) error {
	last, err := eventlog.LastPosition(ctx, store)
	if err != nil {
		return err
	}
	if last < k.h.Last { // another, shorter log: an older copy put in its place
		k.h = projection.NewHookHealth()
	}
	return store.ReadAll(ctx, k.h.Last+1, func(ev eventlog.Event) error {
		if !projection.HookHealthFolds(ev.Type) {
			k.h.Apply(ev, nil)
			return nil
		}
		p, err := schema.Decode(ev)
		if err != nil {
			return fmt.Errorf("read the hook runs of event %d: %w", ev.Position, err)
		}
		k.h.Apply(ev, p)
		return nil
	})
}

// sparkSlots is how many bars a sparkline has.
const sparkSlots = 24

// hookWindows are the windows the health page offers, by name.
var hookWindows = []struct {
	Name string
	Span time.Duration // 0 for all time
}{{"1h", time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}, {"all", 0}}

// hooksData is what the health page shows.
type hooksData struct {
	Window, By string
	Windows    []string
	Groups     []string
	From, To   string
	Rows       []hookRow
}

// hookRow is one hook, or group, on the page.
type hookRow struct {
	healthJSON
	FailedShare, TimedOutShare, BlockedShare, CancelledShare string
	P50, P95, Max                                            string
	Bars                                                     []sparkBar
}

// sparkBar is one slot of a sparkline: its runs' bar and its failures'.
type sparkBar struct {
	X, Y, H, FY, FH int
}

// hooksJSON is the API's answer.
type hooksJSON struct {
	Window string       `json:"window"`
	By     string       `json:"by"`
	From   string       `json:"from"`
	To     string       `json:"to"`
	Hooks  []healthJSON `json:"hooks"`
}

// healthJSON is one hook's runs in the window, or one group's.
type healthJSON struct {
	Name        string          `json:"name,omitempty"`
	Source      string          `json:"source,omitempty"`
	Event       string          `json:"event,omitempty"`
	Type        string          `json:"type,omitempty"`
	Runs        int             `json:"runs"`
	OK          int             `json:"ok"`
	Failed      int             `json:"failed"`
	TimedOut    int             `json:"timed_out"`
	Cancelled   int             `json:"cancelled"`
	Interrupted int             `json:"interrupted"`
	Blocked     int             `json:"blocked"`
	P50MS       float64         `json:"p50_ms"`
	P95MS       float64         `json:"p95_ms"`
	MaxMS       float64         `json:"max_ms"`
	Spark       []int           `json:"spark"`
	SparkFailed []int           `json:"spark_failed"`
	FailedRuns  []failedRunJSON `json:"failed_runs"`
}

// failedRunJSON is a run that failed, and the event that recorded it.
type failedRunJSON struct {
	Stream   string `json:"stream"`
	Seq      uint64 `json:"seq"`
	Position uint64 `json:"position"`
	Time     string `json:"time"`
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code,omitempty"`
	Link     string `json:"link"`
}

// hooks answers /hooks?window=7d&by=hook: every hook's runs in the window,
// how they ended and how long they took, those that failed most first.
func (h *handler) hooks(r *http.Request) (*view, error) {
	q := r.URL.Query()
	d := hooksData{Window: q.Get("window"), By: q.Get("by")}
	if d.Window == "" {
		d.Window = "7d"
	}
	if d.By == "" {
		d.By = string(projection.ByHook)
	}
	span, ok := time.Duration(-1), false
	for _, w := range hookWindows {
		d.Windows = append(d.Windows, w.Name)
		if w.Name == d.Window {
			span, ok = w.Span, true
		}
	}
	if !ok {
		return nil, badRequest("bad window %s: want one of %v", clip(d.Window), d.Windows)
	}
	d.Groups = []string{string(projection.ByHook), string(projection.BySource), string(projection.ByEvent), string(projection.ByType)}
	switch projection.HookGroup(d.By) {
	case projection.ByHook, projection.BySource, projection.ByEvent, projection.ByType:
	default:
		return nil, badRequest("bad by %s: want one of %v", clip(d.By), d.Groups)
	}
	now := time.Now()
	to := now.Truncate(time.Hour).Add(time.Hour) // the current hour whole
	from := to.Add(-span)
	if span == 0 {
		from = time.Unix(0, 0)
	}
	stats, err := h.hookStats.report(r.Context(), h.e.Store(), from.UnixNano(), to.UnixNano(), projection.HookGroup(d.By))
	if err != nil {
		return nil, err
	}
	d.From, d.To = jsonview.FormatTime(from.UnixNano()), jsonview.FormatTime(to.UnixNano())
	out := hooksJSON{Window: d.Window, By: d.By, From: d.From, To: d.To, Hooks: []healthJSON{}}
	for _, s := range stats {
		js := healthJSON{Name: s.Key.Name, Source: s.Key.Source, Event: string(s.Key.Event), Type: s.Key.Type,
			Runs: s.Runs, OK: s.OK, Failed: s.Failed, TimedOut: s.TimedOut, Cancelled: s.Cancelled, Interrupted: s.Interrupted,
			Blocked: s.Blocked, P50MS: ms(s.P50), P95MS: ms(s.P95), MaxMS: ms(s.Max), Spark: s.Spark, SparkFailed: s.SparkFailed,
			FailedRuns: []failedRunJSON{}}
		for _, f := range s.FailedRuns {
			p := strconv.FormatUint(f.Position, 10)
			js.FailedRuns = append(js.FailedRuns, failedRunJSON{Stream: f.Stream, Seq: f.Seq, Position: f.Position,
				Time: jsonview.FormatTime(f.Time), Status: f.Status, ExitCode: f.ExitCode,
				Link: h.opts.Prefix + "/events?" + url.Values{"stream": {f.Stream}, "cursor": {p}}.Encode() + "#p-" + p})
		}
		out.Hooks = append(out.Hooks, js)
		d.Rows = append(d.Rows, hookRow{healthJSON: js, FailedShare: share(s.Failed+s.Interrupted, s.Runs),
			TimedOutShare: share(s.TimedOut, s.Runs), BlockedShare: share(s.Blocked, s.Runs), CancelledShare: share(s.Cancelled, s.Runs),
			P50: duration(int64(s.P50)), P95: duration(int64(s.P95)), Max: duration(int64(s.Max)), Bars: sparkBars(s.Spark, s.SparkFailed)})
	}
	return &view{Template: "hooks", Title: "Hooks", Data: d, API: out}, nil
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// share is n of total as a percentage for people: "-" for none.
func share(n, total int) string {
	if n == 0 || total == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(n)/float64(total), 'f', 1, 64) + "%"
}

// sparkHeight is the height of a sparkline, in its SVG's units; each bar
// is 4 wide.
const sparkHeight = 20

// sparkBars draws runs and failed per slot as bars scaled to the tallest.
func sparkBars(runs, failed []int) []sparkBar {
	most := 0
	for _, n := range runs {
		most = max(most, n)
	}
	bars := make([]sparkBar, len(runs))
	for i, n := range runs {
		b := sparkBar{X: i * 4}
		if most > 0 && n > 0 {
			b.H = max(n*sparkHeight/most, 1)
		}
		if most > 0 && failed[i] > 0 {
			b.FH = max(failed[i]*sparkHeight/most, 1)
		}
		b.Y, b.FY = sparkHeight-b.H, sparkHeight-b.FH
		bars[i] = b
	}
	return bars
}
