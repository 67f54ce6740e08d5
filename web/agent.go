package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// run is one row of an agent's timeline: the events of one restore, or
// of one prompt, stop, compaction, tool call or fire, which share an id.
type run struct {
	ID, Agent     string
	Kind          string // restore, end, prompt, stop, compact, tool or fire
	Source        string // a restore's SessionStart source
	From, To      string
	Began, Ended  int64
	Steps         []step
	Hooks         []hookRun
	RolledForward bool   // cut off by a process that died or by a cancelled call; a later call finished it
	Injected      string // the uuid of the message whose context it injected, if any
	InProgress    bool   // the log ends inside it
	Position      uint64
	Cuts          []*cutItem // its events the page shows cut
	cuts          []cutJSON  // the same, for the API's answer
	Tool          *toolCall  // a tool call's row: its id is the tool_use id; nil for the others
	Fire          *fireRun   // a fire's row: its id is the fire id; nil for the others
	// Depth is 0 for a run of the page's agent, and for a run of one of
	// its subagents (Agent is then the subagent's), how deep that is.
	Depth int
	// Subagent, on an Agent call's row, is the subagent it started.
	Subagent *subagentNode
	// Axis is the run's own time axis, from its first step or hook to its
	// last, which its steps and hooks are drawn on; Bar is the run on the
	// page's axis.
	Axis axis
	Bar  timeBar
}

// Anchor is the id of r's row on its page: what links to it and what
// zooms the page's axis to it. A fire's row, whose id may be a tool
// call's too, and a subagent's run have their own.
func (r run) Anchor() string {
	kind := "run-"
	if r.Fire != nil {
		kind = "fire-"
	}
	if r.Depth > 0 {
		return r.Agent + "-" + kind + r.ID
	}
	return kind + r.ID
}

// Caption names r in a few words: its kind, or its tool or fire event.
func (r run) Caption() string {
	switch {
	case r.Tool != nil:
		return "tool " + r.Tool.Name
	case r.Fire != nil:
		return "fire " + r.Fire.Event
	case r.Source != "":
		return r.Kind + " (" + r.Source + ")"
	}
	return r.Kind
}

// Dur is how long r took, from its axis's start to its end.
func (r run) Dur() string { return duration(r.Axis.End - r.Axis.Start) }

// subagentNode is a subagent on its parent's page: the agent that drives
// it and the call that started it.
type subagentNode struct {
	Agent       string `json:"agent"`
	Session     string `json:"session"` // the session of the call
	Call        string `json:"call"`    // the Agent call's tool_use id
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	Depth       int    `json:"depth"`
	State       string `json:"state"`
	InProgress  bool   `json:"in_progress"`
}

// step is one event of a run, a segment of the row from its time until
// the next step's.
type step struct {
	Type     eventlog.Type
	Label    string // what the segment shows: the type, or a tool call's step in its words
	Seq      uint64
	Position uint64
	Time     int64
	Bar      timeBar // on the run's axis
	Dur      string
}

// hookRun is one hook event of a run: what it was given and what each of
// its hooks did.
type hookRun struct {
	Event       string
	Given       string        // what the recorded intent says the hooks ran for, in words
	Running     []runningHook // the hooks the intent names, while they may be running: its run is in progress and none ended
	named       []runningHook // the hooks the intent names
	Context     string        // the context the hooks returned, joined
	Interrupted bool
	Outcomes    []jsonview.Outcome
	Bars        []hookBar
	// Whole says that Context cannot be told apart hook by hook (it was
	// spilled to a file, or its parts do not add up), so the page shows
	// it once for the run; Spilled is that file's.
	Whole   bool
	Spilled *spilled
	// Began is the time of the intent recorded before the hooks started,
	// all at once; Ran the time their outcome was recorded, once all had
	// ended. Either is 0 when the log holds no such step.
	Began, Ran int64
}

// hookBar is one hook of a run, from its start to its end on the run's
// axis.
type hookBar struct {
	Anchor  string
	Outcome jsonview.Outcome
	Status  string // ok, failed, timeout, cancelled, interrupted, deny or block
	Bar     timeBar
	Dur     string
	Context string // this hook's own part of the run's context
}

// escapedLen is the length of s once HTML escapes it: each of < > & " '
// takes an entity of four or five bytes.
func escapedLen(s string) int {
	return len(s) + 3*strings.Count(s, "<") + 3*strings.Count(s, ">") + 4*strings.Count(s, "&") + 4*strings.Count(s, `"`) + 4*strings.Count(s, "'")
}

// givenLength is the most of each field of an intent a hook run shows.
const givenLength = 200

// splitContext gives each bar of g its own part of g.Context: the hooks'
// contexts are joined with newlines in their order, those without any
// left out, and each outcome records the length of its own. When the
// lengths do not add up to the whole, g.Whole is set instead.
func splitContext(g *hookRun) {
	rest, n := g.Context, 0
	for i := range g.Bars {
		size := g.Bars[i].Outcome.ContextLen
		if size == 0 {
			continue
		}
		if n > 0 {
			if !strings.HasPrefix(rest, "\n") {
				g.Whole = true
				break
			}
			rest = rest[1:]
		}
		if size > len(rest) {
			g.Whole = true
			break
		}
		g.Bars[i].Context, rest = rest[:size], rest[size:]
		n++
	}
	if rest != "" {
		g.Whole = true
	}
	if g.Whole {
		for i := range g.Bars {
			g.Bars[i].Context = ""
		}
	}
}

// givenText says in words what an intent's payload, as JSON keys and
// values, gave its hooks: every field but the list of hooks, which the
// bars show, each cut to givenLength characters (the event's page shows
// it whole).
func givenText(payload map[string]any) string {
	keys := slices.Sorted(maps.Keys(payload))
	var parts []string
	for _, k := range keys {
		v := payload[k]
		if k == "hooks" || v == nil || v == "" || v == false {
			continue
		}
		parts = append(parts, strings.ReplaceAll(k, "_", " ")+" "+projection.Clip(fmt.Sprint(v), givenLength))
	}
	return strings.Join(parts, ", ")
}

// spilled is output too long to inject, saved to a file.
type spilled struct {
	Path string
	Text string // "" when it is not there to read
}

// agentData is what an agent page shows.
type agentData struct {
	ID, State, Current string
	Runs               []run
	Prev, Next         string // the cursors of the earlier and the later runs, "" when there are none
	// From and To count the page's runs from 1, of Total; First is the
	// cursor of the earliest page, "" on it.
	From, To, Total int
	First           string
	Subagents       []subagentNode
	Axis            axis   // the page's: from the first of its runs to the end of the last, or the zoomed run's
	Zoom            string // the anchor of the run the axis is zoomed to, "" for none
}

// agentJSON is the API's answer for one agent: the page's runs, and
// those of them that are restores as reprise restore --json reports each.
type agentJSON struct {
	Agent    string             `json:"agent"`
	State    string             `json:"state"`
	Current  string             `json:"current,omitempty"`
	Restores []jsonview.Restore `json:"restores"`
	Runs     []runJSON          `json:"runs"`
	// Subagents is the tree of the agent's subagents, each after its
	// parent; the runs hold their runs too, on the same time line.
	Subagents []subagentNode `json:"subagents"`
	Prev      string         `json:"prev_cursor,omitempty"`
	Next      string         `json:"next_cursor,omitempty"`
	// Total is the agent's runs (the zoomed one's, when zoomed), and From
	// the position of the page's first, counted from 1; 0 for none.
	Total int       `json:"total"`
	From  int       `json:"from"`
	Cut   []cutJSON `json:"cut"`
	// Axis is the page's time axis, which each run's start_ms and end_ms
	// are on; Zoom the anchor of the run it is zoomed to.
	Axis axisJSON `json:"axis"`
	Zoom string   `json:"run,omitempty"`
}

// axisJSON is a time axis: when it starts, the time its width stands for
// and its ticks.
type axisJSON struct {
	Start  string     `json:"start"`
	SpanMS float64    `json:"span_ms"`
	Ticks  []tickJSON `json:"ticks"`
}

// tickJSON is a tick of an axis, at_ms after its start.
type tickJSON struct {
	AtMS  float64 `json:"at_ms"`
	Label string  `json:"label"`
}

// spanJSON is a bar on an axis: its start and end, in milliseconds after
// the axis's start.
type spanJSON struct {
	StartMS float64 `json:"start_ms"`
	EndMS   float64 `json:"end_ms"`
}

// newAxisJSON describes a for the API.
func newAxisJSON(a axis) axisJSON {
	out := axisJSON{Start: jsonview.FormatTime(a.Start), SpanMS: a.SpanMS(), Ticks: []tickJSON{}}
	for _, t := range a.Ticks {
		out.Ticks = append(out.Ticks, tickJSON{AtMS: float64(t.at) / 1e6, Label: t.Label})
	}
	return out
}

// newSpanJSON describes b for the API.
func newSpanJSON(b timeBar) spanJSON { return spanJSON{StartMS: b.StartMS, EndMS: b.EndMS} }

// runJSON is one row of the timeline.
type runJSON struct {
	ID            string     `json:"id"`
	Agent         string     `json:"agent"`           // the page's agent, or the subagent whose run it is
	Depth         int        `json:"depth,omitempty"` // of that subagent`
	Kind          string     `json:"kind"`
	Began         string     `json:"began"`
	Ended         string     `json:"ended,omitempty"`
	Steps         []string   `json:"steps"`
	Hooks         []hookJSON `json:"hooks"`
	RolledForward bool       `json:"rolled_forward,omitempty"`
	InProgress    bool       `json:"in_progress,omitempty"`
	Tool          *toolJSON  `json:"tool,omitempty"`
	Fire          *fireJSON  `json:"fire,omitempty"`
	// Anchor is the row's id on the page, which ?run= zooms to; StartMS
	// and EndMS the run on the page's axis; Axis its own, which StepSpans
	// (one per step) and its hooks' spans are on.
	Anchor    string     `json:"anchor"`
	StartMS   float64    `json:"start_ms"`
	EndMS     float64    `json:"end_ms"`
	Axis      axisJSON   `json:"axis"`
	StepSpans []spanJSON `json:"step_spans"`
}

// runningHook is a hook its intent names, with the statusMessage it
// recorded for it ("" when none).
type runningHook struct {
	Name, Status string
}

// hookJSON is one hook event of a run. Status holds, beside Running, the
// running hooks' status messages, when any has one.
type hookJSON struct {
	Event       string             `json:"event"`
	Hooks       []jsonview.Outcome `json:"hooks"`
	Interrupted bool               `json:"interrupted"`
	Running     []string           `json:"running,omitempty"`
	Status      []string           `json:"status,omitempty"`
	// Spans holds each hook's start and end on the run's axis, in the
	// order of Hooks.
	Spans []spanJSON `json:"spans"`
}

// runsPerPage is how many runs an agent page shows unless limit says.
const runsPerPage = 50

// agentsData lists the agents, as `reprise agents --json` prints them.
type agentsData struct {
	Agents []jsonview.Agent `json:"agents"`
}

// agents lists the agents of the store.
func (h *handler) agents(r *http.Request) (*view, error) {
	all, err := jsonview.ListAgents(r.Context(), h.e.Store())
	if err != nil {
		return nil, err
	}
	d := agentsData{Agents: append([]jsonview.Agent{}, all...)}
	return &view{Template: "agents", Title: "Agents", Data: d, API: d}, nil
}

// agent shows one agent's runs as a timeline.
func (h *handler) agent(r *http.Request) (*view, error) {
	ctx, id := r.Context(), r.PathValue("id")
	if reprise.ValidateID(id) != nil {
		return nil, notFound("no agent %s", clip(id))
	}
	stream := projection.AgentStream(id)
	head, err := h.e.Store().Head(ctx, stream)
	if err != nil {
		return nil, err
	}
	if head == 0 {
		return nil, notFound("no agent %s", id)
	}
	limit, err := queryLimit(r, runsPerPage)
	if err != nil {
		return nil, err
	}
	a, runs, err := h.agentRuns(ctx, id)
	if err != nil {
		return nil, err
	}
	runs, tree, err := h.withSubagents(ctx, runs, 0)
	if err != nil {
		return nil, err
	}
	zoom := r.URL.Query().Get("run")
	var window axis
	if zoom != "" {
		if runs, window, err = zoomTo(runs, zoom); err != nil {
			return nil, err
		}
	}
	start := max(len(runs)-limit, 0) // the latest runs by default
	if v := r.URL.Query().Get("cursor"); v != "" {
		if start, err = strconv.Atoi(v); err != nil || start < 0 || start >= max(len(runs), 1) {
			return nil, badRequest("bad cursor %q: want the next_cursor or prev_cursor of a page", v)
		}
	}
	total := len(runs)
	end := min(start+limit, total)
	// A page ends at its count of runs, or before the run that would take
	// it over its bytes.
	shown := 0
	for i := start; i < end; i++ {
		h.readSpilled(&runs[i])
		n := runBytes(runs[i])
		if i > start && shown+n > pageBytes {
			end = i
			break
		}
		shown += n
	}
	runs = runs[start:end]
	for i := range runs {
		if runs[i].Tool != nil {
			if err := h.findResult(ctx, runs[i].Tool); err != nil {
				return nil, err
			}
		}
	}
	if zoom == "" && len(runs) > 0 {
		window = runs[0].Axis
		for _, rn := range runs {
			window.Start, window.End = min(window.Start, rn.Axis.Start), max(window.End, rn.Axis.End)
		}
	}
	page := newAxis(window.Start, window.End)
	for i := range runs {
		runs[i].Bar = page.place(runs[i].Axis.Start, runs[i].Axis.End, runs[i].Caption())
	}
	d := agentData{ID: id, State: string(a.State), Current: a.Current, Runs: runs, Subagents: tree, Axis: page, Zoom: zoom}
	if start > 0 {
		d.Prev, d.First = strconv.Itoa(max(start-limit, 0)), "0"
	}
	if len(runs) > 0 {
		d.From, d.To = start+1, start+len(runs)
	}
	d.Total = total
	if end < total {
		d.Next = strconv.Itoa(end)
	}
	out := agentJSON{Agent: id, State: string(a.State), Current: a.Current, Restores: []jsonview.Restore{}, Runs: []runJSON{},
		Prev: d.Prev, Next: d.Next, Total: d.Total, From: d.From, Cut: []cutJSON{}, Subagents: append([]subagentNode{}, tree...), Axis: newAxisJSON(page), Zoom: zoom}
	onPage := map[string]bool{}
	for _, rn := range runs {
		onPage[rn.ID] = true
		out.Cut = append(out.Cut, rn.cuts...)
	}
	for i := range a.History {
		if onPage[a.History[i].ID] { // the subagents' restores are on their own pages
			out.Restores = append(out.Restores, jsonview.NewRestore(id, a.History[i].To, &a.History[i]))
		}
	}
	if a.Restore != nil && onPage[a.Restore.ID] {
		out.Restores = append(out.Restores, jsonview.NewRestore(id, a.Restore.To, a.Restore))
	}
	for _, rn := range runs {
		rj := runJSON{ID: rn.ID, Agent: rn.Agent, Depth: rn.Depth, Kind: rn.Kind, Began: jsonview.FormatTime(rn.Began), Ended: jsonview.FormatTime(rn.Ended),
			Steps: []string{}, Hooks: []hookJSON{}, RolledForward: rn.RolledForward, InProgress: rn.InProgress,
			Anchor: rn.Anchor(), StartMS: rn.Bar.StartMS, EndMS: rn.Bar.EndMS, Axis: newAxisJSON(rn.Axis), StepSpans: []spanJSON{}}
		for _, s := range rn.Steps {
			rj.Steps = append(rj.Steps, string(s.Type))
			rj.StepSpans = append(rj.StepSpans, newSpanJSON(s.Bar))
		}
		for _, g := range rn.Hooks {
			hj := hookJSON{Event: g.Event, Hooks: g.Outcomes, Interrupted: g.Interrupted, Spans: []spanJSON{}}
			for _, b := range g.Bars {
				hj.Spans = append(hj.Spans, newSpanJSON(b.Bar))
			}
			for i, rh := range g.Running {
				hj.Running = append(hj.Running, rh.Name)
				if rh.Status != "" {
					if hj.Status == nil {
						hj.Status = make([]string, len(g.Running))
					}
					hj.Status[i] = rh.Status
				}
			}
			rj.Hooks = append(rj.Hooks, hj)
		}
		if rn.Tool != nil {
			rj.Tool = h.newToolJSON(rn.ID, rn.Tool)
		}
		if rn.Fire != nil {
			rj.Fire = newFireJSON(rn.Fire)
		}
		out.Runs = append(out.Runs, rj)
	}
	return &view{Template: "agent", Title: "Agent " + id, Data: d, API: out}, nil
}

// zoomTo returns the runs that overlap the run whose anchor is zoom, and
// that run's axis, which the page's is set to.
func zoomTo(runs []run, zoom string) ([]run, axis, error) {
	i := slices.IndexFunc(runs, func(x run) bool { return x.Anchor() == zoom })
	if i < 0 {
		return nil, axis{}, notFound("no run %s on this page's timeline: want the anchor of one of its runs, as its zoom link gives", clip(zoom))
	}
	w := runs[i].Axis
	var out []run
	for _, x := range runs {
		if x.Axis.Start <= w.End && x.Axis.End >= w.Start {
			out = append(out, x)
		}
	}
	return out, w, nil
}

// maxTreeDepth bounds how deep a page follows subagents: past Claude
// Code's own limit, so that a log that nests deeper still shows its tree.
const maxTreeDepth = 8

// withSubagents returns runs, runs of agents depth deep, with the runs of
// the subagents their Agent calls started, all in the order they began,
// and the tree of those subagents, each after its parent.
func (h *handler) withSubagents(ctx context.Context, runs []run, depth int) ([]run, []subagentNode, error) {
	var tree []subagentNode
	all := slices.Clone(runs)
	for i := range runs {
		t := runs[i].Tool
		if t == nil || (t.Name != "Agent" && t.Name != "Task") || depth >= maxTreeDepth {
			continue
		}
		child := reprise.SubagentSession(reprise.SubagentID(t.Session, runs[i].ID))
		head, err := h.e.Store().Head(ctx, projection.AgentStream(child))
		if err != nil {
			return nil, nil, err
		}
		if head == 0 {
			continue // denied, or not started yet
		}
		ca, childRuns, err := h.agentRuns(ctx, child)
		if err != nil {
			return nil, nil, err
		}
		node := subagentNode{Agent: child, Session: t.Session, Call: runs[i].ID, Depth: depth + 1, State: string(ca.State),
			InProgress: ca.InFlight() || ca.HooksInFlight > 0}
		created, _, err := h.sessionCreated(ctx, child)
		var he *httpError
		switch {
		case errors.As(err, &he) && he.status == http.StatusNotFound:
			// Its session was deleted; its agent's stream stays.
		case err != nil:
			return nil, nil, err
		case created.Subagent != nil:
			node.Type, node.Description = created.Subagent.Type, created.Subagent.Description
		}
		for j := range childRuns {
			childRuns[j].Depth = depth + 1
		}
		childRuns, below, err := h.withSubagents(ctx, childRuns, depth+1)
		if err != nil {
			return nil, nil, err
		}
		all[i].Subagent = &node
		tree = append(append(tree, node), below...)
		all = append(all, childRuns...)
	}
	slices.SortStableFunc(all, func(x, y run) int { return cmp.Compare(x.Began, y.Began) })
	return all, tree, nil
}

// agentIndex reads every agent's runs and returns those that injected
// context, by the message that holds it, and the tool calls' rows, by
// tool_use id.
func (h *handler) agentIndex(ctx context.Context) (injected, tools map[string]run, err error) {
	var names []string
	err = h.e.Store().Streams(ctx, "agent/", func(s eventlog.StreamInfo) error {
		names = append(names, strings.TrimPrefix(s.Name, "agent/"))
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	injected, tools = map[string]run{}, map[string]run{}
	for _, id := range names {
		_, runs, err := h.agentRuns(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		for _, r := range runs {
			if r.Injected != "" {
				injected[r.Injected] = r
			}
			if r.Tool != nil {
				tools[r.ID] = r
			}
		}
	}
	return injected, tools, nil
}

// runBytes is what r's texts take of a page: what its hooks were given,
// their context and spilled output, as the page escapes them, a tool
// call's input, result and reasons, and a fire's input and answers.
func runBytes(r run) int {
	n := toolBytes(r.Tool) + fireBytes(r.Fire)
	for _, g := range r.Hooks {
		n += escapedLen(g.Given) + escapedLen(g.Context)
		if g.Spilled != nil {
			n += escapedLen(g.Spilled.Text)
		}
	}
	return n
}

// agentRuns folds agent id's stream and cuts it into runs. A large event
// is read within the budget and folded cut, as the events page shows it,
// so that neither the runs nor the agent keep more than messageBytes of
// its texts; the run names it, with the path of the whole.
func (h *handler) agentRuns(ctx context.Context, id string) (*projection.Agent, []run, error) {
	a := projection.NewAgent(id)
	var runs []run
	at := map[string]int{}
	all := func(eventlog.Event) error { return nil }
	err := h.readDecoded(ctx, projection.AgentStream(id), 1, all, func(ev eventlog.Event, p schema.Payload) error {
		ev, p, c, err := cutEvent(ev, p, messageBytes)
		if err != nil {
			return err
		}
		if err := a.ApplyDecoded(ev, p); err != nil {
			return err
		}
		key := fireKey(ev)
		i, ok := at[key]
		if !ok || ev.RestoreID == "" {
			i = len(runs)
			at[key] = i
			runs = append(runs, run{ID: ev.RestoreID, Agent: id, Began: ev.Time, Position: ev.Position})
		}
		r := &runs[i]
		r.Ended = ev.Time
		label := toolStepLabel(p) + fireStepLabel(p)
		if label == "" {
			label = string(ev.Type)
		}
		r.Steps = append(r.Steps, step{Type: ev.Type, Label: label, Seq: ev.Seq, Position: ev.Position, Time: ev.Time})
		h.foldRun(r, ev, p)
		at := cutJSON{Stream: ev.Stream, Seq: ev.Seq, Position: ev.Position}
		if cut := h.cutOf(&r.cuts, wholeEventPath(ev, c), at, c); cut != nil {
			cut.Of = string(ev.Type) + " #" + strconv.FormatUint(ev.Seq, 10)
			r.Cuts = append(r.Cuts, cut)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	inFlight := ""
	switch {
	case a.Restore != nil:
		inFlight = a.Restore.ID
	case a.Stop != nil:
		inFlight = a.Stop.ID
	case a.Prompt != nil:
		inFlight = a.Prompt.ID
	}
	for i := range runs {
		r := &runs[i]
		r.InProgress = a.InFlight() && r.ID == inFlight
		if c := a.Tools[r.ID]; r.Tool != nil && c != nil {
			r.InProgress = c.HooksRunning()
		}
		if r.Fire != nil {
			r.InProgress = fireRunning(a, r.ID)
		}
		for gi := range r.Hooks {
			if g := &r.Hooks[gi]; r.InProgress && g.Outcomes == nil {
				g.Running = g.named
			}
		}
		spread(r)
	}
	return a, runs, nil
}

// foldRun adds what event ev with payload p says to r.
func (h *handler) foldRun(r *run, ev eventlog.Event, p schema.Payload) {
	intent := func(event hookexec.Event) {
		g := hookRun{Event: string(event), Began: ev.Time}
		if js, err := jsonview.NewEvent(ev); err == nil {
			g.Given = givenText(js.Payload)
			names, _ := js.Payload["hooks"].([]any)
			status, _ := js.Payload["status"].([]any)
			for i, n := range names {
				if n, ok := n.(string); ok {
					rh := runningHook{Name: n}
					if i < len(status) {
						rh.Status, _ = status[i].(string)
					}
					g.named = append(g.named, rh)
				}
			}
		}
		r.Hooks = append(r.Hooks, g)
	}
	ran := func(event hookexec.Event, outcomes []schema.HookOutcome, interrupted bool, context string) {
		if n := len(r.Hooks); n == 0 || r.Hooks[n-1].Event != string(event) || r.Hooks[n-1].Outcomes != nil {
			r.Hooks = append(r.Hooks, hookRun{Event: string(event)})
		}
		g := &r.Hooks[len(r.Hooks)-1]
		g.Outcomes, g.Interrupted, g.Context = jsonview.NewOutcomes(event, outcomes), interrupted, context
		g.Ran = ev.Time
		r.RolledForward = r.RolledForward || interrupted
		for _, o := range outcomes {
			r.RolledForward = r.RolledForward || o.Status == schema.HookCancelled || o.Status == schema.HookInterrupted
		}
	}
	foldTool(r, ev, p, intent, ran)
	foldFire(r, p, intent, ran)
	switch p := p.(type) {
	case *schema.SaveAttempted:
		r.Kind, r.From, r.To, r.Source = "restore", p.From, p.To, string(orDefault(p.Source, schema.Source("resume")))
		if p.To == "" {
			r.Kind, r.Source = "end", ""
		}
	case *schema.SessionLoaded:
		if r.Kind == "" {
			r.Kind, r.From = "restore", p.From
		}
		r.To, r.Source = p.Session, string(p.Source)
	case *schema.SessionEndHookStarted:
		intent(hookexec.SessionEnd)
	case *schema.SessionEndHookRan:
		ran(hookexec.SessionEnd, p.Outcomes, p.Interrupted, "")
	case *schema.SessionStartHookStarted:
		intent(cmp.Or(p.Event, hookexec.SessionStart))
	case *schema.SessionStartHookRan:
		ran(pending(r, hookexec.SessionStart, schema.HookSubagentStart), p.Outcomes, p.Interrupted, p.Context)
	case *schema.PreCompactHookStarted:
		r.Kind, r.To = "compact", p.Session
		intent(hookexec.PreCompact)
	case *schema.PreCompactHookRan:
		ran(hookexec.PreCompact, p.Outcomes, p.Interrupted, "")
	case *schema.SessionCompacted:
		r.Kind, r.To = "compact", p.Session
	case *schema.PromptHookStarted:
		r.Kind, r.To = "prompt", p.Session
		intent(hookexec.UserPromptSubmit)
	case *schema.PromptHookRan:
		ran(hookexec.UserPromptSubmit, p.Outcomes, p.Interrupted, p.Context)
		r.Injected = p.ContextUUID
	case *schema.ContextInjected:
		r.Injected = p.MessageUUID
	case *schema.StopHookStarted:
		r.Kind, r.To = "stop", p.Session
		intent(cmp.Or(p.Event, hookexec.Stop))
	case *schema.StopHookRan:
		ran(pending(r, hookexec.Stop, schema.HookSubagentStop), p.Outcomes, p.Interrupted, "")
	}
	if r.Kind == "" {
		r.Kind = "restore"
	}
	for gi := range r.Hooks {
		g := &r.Hooks[gi]
		if g.Bars != nil || g.Outcomes == nil {
			continue
		}
		g.Bars = make([]hookBar, len(g.Outcomes))
		for i, o := range g.Outcomes {
			g.Bars[i] = hookBar{Anchor: r.ID + "-" + g.Event + "-" + itoa(i), Outcome: o, Status: status(o),
				Dur: duration(int64(o.DurationMS * 1e6))}
		}
		splitContext(g)
	}
}

// pending is the event of r's last hook run when that is an intent of
// event or of its subagent's twin, whose outcome has not come yet: the
// event an outcome step of event's type belongs to; event otherwise.
func pending(r *run, event, twin hookexec.Event) hookexec.Event {
	if n := len(r.Hooks); n > 0 && r.Hooks[n-1].Outcomes == nil && r.Hooks[n-1].Event == string(twin) {
		return twin
	}
	return event
}

// orDefault returns v, or def when v is empty.
func orDefault[T ~string](v, def T) T {
	if v == "" {
		return def
	}
	return v
}

// spread places r's steps and hooks on one axis, the run's own, by
// their real start and end: a step lasts until the next; the hooks of
// one event, which run in parallel, all start when their intent was
// recorded and each lasts as long as it ran.
func spread(r *run) {
	start, end := r.Began, r.Ended
	for gi := range r.Hooks {
		g := &r.Hooks[gi]
		for i := range g.Bars {
			b := &g.Bars[i]
			took := int64(b.Outcome.DurationMS * 1e6)
			from := g.Began
			if from == 0 { // no intent: it ended by the time its outcome was recorded
				from = g.Ran - took
			}
			b.Bar = timeBar{From: from, To: from + took}
			start, end = min(start, from), max(end, from+took)
		}
	}
	r.Axis = newAxis(start, end)
	for i := range r.Steps {
		s := &r.Steps[i]
		next := s.Time
		if i+1 < len(r.Steps) {
			next = r.Steps[i+1].Time
		}
		s.Dur = duration(next - s.Time)
		s.Bar = r.Axis.place(s.Time, next, s.Label)
	}
	segs := make([]*timeBar, len(r.Steps))
	for i := range r.Steps {
		segs[i] = &r.Steps[i].Bar
	}
	tile(segs)
	for gi := range r.Hooks {
		for i := range r.Hooks[gi].Bars {
			b := &r.Hooks[gi].Bars[i]
			b.Bar = r.Axis.place(b.Bar.From, b.Bar.To, b.Dur)
		}
	}
}

// status is how a hook's bar shows outcome o: its status, "deny" or
// "block", its decision's word, for a hook that said no (as the command
// line says), and a panic as a failure.
func status(o jsonview.Outcome) string {
	switch {
	case o.Decision == "deny" || o.Decision == "block":
		return o.Decision
	case o.Status == schema.HookPanicked:
		return schema.HookFailed
	}
	return o.Status
}

// readSpilled gives each hook bar of r the output its run spilled to a
// file, if it did.
func (h *handler) readSpilled(r *run) {
	for gi := range r.Hooks {
		g := &r.Hooks[gi]
		if g.Event != string(hookexec.SessionStart) && g.Event != string(hookexec.UserPromptSubmit) {
			continue
		}
		if sp := h.spilledOutput(g.Context); sp != nil {
			g.Spilled, g.Whole = sp, true
			for i := range g.Bars {
				g.Bars[i].Context = ""
			}
		}
	}
}

// spilledRE finds the file a hook's output was spilled to, in the preview
// the context holds instead.
var spilledRE = regexp.MustCompile(`\[full output: \d+ characters, saved to (.+)\]`)

// maxSpilled bounds how much of a spilled output a page shows.
const maxSpilled = 1 << 20

// spilledOutput returns the spilled output context names, read from the
// Engine's files when it is one of them; nil when context names none.
func (h *handler) spilledOutput(context string) *spilled {
	m := spilledRE.FindStringSubmatch(context)
	if m == nil {
		return nil
	}
	sp := &spilled{Path: m[1]}
	dir := filepath.Dir(h.e.TranscriptPath("x"))
	if filepath.Dir(sp.Path) != dir || !strings.Contains(filepath.Base(sp.Path), "-hook-") {
		return sp
	}
	f, err := os.Open(sp.Path)
	if err != nil {
		return sp
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSpilled))
	if err == nil {
		sp.Text = string(b)
	}
	return sp
}
