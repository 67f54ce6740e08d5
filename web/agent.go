package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/fsm"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// run is one row of an agent's timeline: the events of one restore, or
// of one prompt, stop, compaction or tool call, which share an id.
type run struct {
	ID, Agent     string
	Kind          string // restore, end, prompt, stop, compact or tool
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
}

// step is one event of a run, a segment of the row as long as the time
// until the next step.
type step struct {
	Type     eventlog.Type
	Label    string // what the segment shows: the type, or a tool call's step in its words
	Seq      uint64
	Position uint64
	Time     int64
	Pct      float64 // share of the run's time
	Dur      string
}

// hookRun is one hook event of a run: what it was given and what each of
// its hooks did.
type hookRun struct {
	Event       string
	Input       string // the recorded intent, as JSON
	Context     string // the context the hooks returned, joined
	Interrupted bool
	Outcomes    []jsonview.Outcome
	Bars        []hookBar
}

// hookBar is one hook of a run, as wide as its duration.
type hookBar struct {
	Anchor  string
	Outcome jsonview.Outcome
	Status  string // ok, failed, timeout, cancelled or interrupted
	Pct     float64
	Dur     string
	Spilled *spilled
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
}

// agentJSON is the API's answer for one agent: the page's runs, and
// those of them that are restores as reprise restore --json reports each.
type agentJSON struct {
	Agent    string             `json:"agent"`
	State    string             `json:"state"`
	Current  string             `json:"current,omitempty"`
	Restores []jsonview.Restore `json:"restores"`
	Runs     []runJSON          `json:"runs"`
	Prev     string             `json:"prev_cursor,omitempty"`
	Next     string             `json:"next_cursor,omitempty"`
	Cut      []cutJSON          `json:"cut"`
}

// runJSON is one row of the timeline.
type runJSON struct {
	ID            string     `json:"id"`
	Kind          string     `json:"kind"`
	Began         string     `json:"began"`
	Ended         string     `json:"ended,omitempty"`
	Steps         []string   `json:"steps"`
	Hooks         []hookJSON `json:"hooks"`
	RolledForward bool       `json:"rolled_forward,omitempty"`
	InProgress    bool       `json:"in_progress,omitempty"`
	Tool          *toolJSON  `json:"tool,omitempty"`
}

// hookJSON is one hook event of a run.
type hookJSON struct {
	Event       string             `json:"event"`
	Hooks       []jsonview.Outcome `json:"hooks"`
	Interrupted bool               `json:"interrupted"`
}

// runsPerPage is how many runs an agent page shows unless limit says.
const runsPerPage = 50

// agentsData lists the agents.
type agentsData struct {
	Agents []agentRow
}

// agentRow is one agent of the list.
type agentRow struct {
	ID       string `json:"agent"`
	State    string `json:"state"`
	Current  string `json:"current,omitempty"`
	Restores int    `json:"restores"`
}

// agents lists the agents of the store.
func (h *handler) agents(r *http.Request) (*view, error) {
	all, err := h.readAgents(r.Context())
	if err != nil {
		return nil, err
	}
	d := agentsData{Agents: []agentRow{}}
	for _, a := range all {
		d.Agents = append(d.Agents, agentRow{ID: a.ID, State: string(a.State), Current: a.Current, Restores: len(a.History)})
	}
	return &view{Template: "agents", Title: "Agents", Data: d, API: struct {
		Agents []agentRow `json:"agents"`
	}{d.Agents}}, nil
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
	d := agentData{ID: id, State: string(a.State), Current: a.Current, Runs: runs}
	if start > 0 {
		d.Prev = strconv.Itoa(max(start-limit, 0))
	}
	if end < total {
		d.Next = strconv.Itoa(end)
	}
	out := agentJSON{Agent: id, State: string(a.State), Current: a.Current, Restores: []jsonview.Restore{}, Runs: []runJSON{},
		Prev: d.Prev, Next: d.Next, Cut: []cutJSON{}}
	onPage := map[string]bool{}
	for _, rn := range runs {
		onPage[rn.ID] = true
		out.Cut = append(out.Cut, rn.cuts...)
	}
	for i := range a.History {
		if onPage[a.History[i].ID] {
			out.Restores = append(out.Restores, jsonview.NewRestore(id, a.History[i].To, &a.History[i]))
		}
	}
	if a.Restore != nil && onPage[a.Restore.ID] {
		out.Restores = append(out.Restores, jsonview.NewRestore(id, a.Restore.To, a.Restore))
	}
	for _, rn := range runs {
		rj := runJSON{ID: rn.ID, Kind: rn.Kind, Began: jsonview.FormatTime(rn.Began), Ended: jsonview.FormatTime(rn.Ended),
			Steps: []string{}, Hooks: []hookJSON{}, RolledForward: rn.RolledForward, InProgress: rn.InProgress}
		for _, s := range rn.Steps {
			rj.Steps = append(rj.Steps, string(s.Type))
		}
		for _, g := range rn.Hooks {
			rj.Hooks = append(rj.Hooks, hookJSON{Event: g.Event, Hooks: g.Outcomes, Interrupted: g.Interrupted})
		}
		if rn.Tool != nil {
			rj.Tool = h.newToolJSON(rn.ID, rn.Tool)
		}
		out.Runs = append(out.Runs, rj)
	}
	return &view{Template: "agent", Title: "Agent " + id, Data: d, API: out}, nil
}

// runsByInjected returns the runs of every agent that injected a
// message, by the message's uuid.
func (h *handler) runsByInjected(ctx context.Context) (map[string]run, error) {
	var names []string
	err := h.e.Store().Streams(ctx, "agent/", func(s eventlog.StreamInfo) error {
		names = append(names, strings.TrimPrefix(s.Name, "agent/"))
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string]run{}
	for _, id := range names {
		_, runs, err := h.agentRuns(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			if r.Injected != "" {
				out[r.Injected] = r
			}
		}
	}
	return out, nil
}

// runBytes is what r's texts take of a page: the hooks' input, context
// and spilled output, and a tool call's input, result and reasons.
func runBytes(r run) int {
	n := toolBytes(r.Tool)
	for _, g := range r.Hooks {
		n += len(g.Input) + len(g.Context)
		if len(g.Bars) > 0 && g.Bars[0].Spilled != nil {
			n += len(g.Bars[0].Spilled.Text)
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
		i, ok := at[ev.RestoreID]
		if !ok || ev.RestoreID == "" {
			i = len(runs)
			at[ev.RestoreID] = i
			runs = append(runs, run{ID: ev.RestoreID, Agent: id, Began: ev.Time, Position: ev.Position})
		}
		r := &runs[i]
		r.Ended = ev.Time
		label := toolStepLabel(p)
		if label == "" {
			label = string(ev.Type)
		}
		r.Steps = append(r.Steps, step{Type: ev.Type, Label: label, Seq: ev.Seq, Position: ev.Position, Time: ev.Time})
		h.foldRun(r, ev, p)
		at := cutJSON{Stream: ev.Stream, Seq: ev.Seq, Position: ev.Position}
		if cut := h.cutOf(&r.cuts, wholeEventPath(ev), at, c); cut != nil {
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
			r.InProgress = fsm.ToolInFlight(c.State) // its hooks may be running
		}
		spread(r)
	}
	return a, runs, nil
}

// foldRun adds what event ev with payload p says to r.
func (h *handler) foldRun(r *run, ev eventlog.Event, p schema.Payload) {
	intent := func(event hookexec.Event) {
		input := "{}"
		if js, err := jsonview.NewEvent(ev); err == nil {
			if b, err := json.MarshalIndent(js.Payload, "", "  "); err == nil {
				input = string(b)
			}
		}
		r.Hooks = append(r.Hooks, hookRun{Event: string(event), Input: input})
	}
	ran := func(event hookexec.Event, outcomes []schema.HookOutcome, interrupted bool, context string) {
		if n := len(r.Hooks); n == 0 || r.Hooks[n-1].Event != string(event) || r.Hooks[n-1].Outcomes != nil {
			r.Hooks = append(r.Hooks, hookRun{Event: string(event)})
		}
		g := &r.Hooks[len(r.Hooks)-1]
		g.Outcomes, g.Interrupted, g.Context = jsonview.NewOutcomes(event, outcomes), interrupted, context
		r.RolledForward = r.RolledForward || interrupted
		for _, o := range outcomes {
			r.RolledForward = r.RolledForward || o.Status == schema.HookCancelled || o.Status == schema.HookInterrupted
		}
	}
	foldTool(r, ev, p, intent, ran)
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
		intent(hookexec.SessionStart)
	case *schema.SessionStartHookRan:
		ran(hookexec.SessionStart, p.Outcomes, p.Interrupted, p.Context)
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
		intent(hookexec.Stop)
	case *schema.StopHookRan:
		ran(hookexec.Stop, p.Outcomes, p.Interrupted, "")
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
			g.Bars[i] = hookBar{Anchor: r.ID + "-" + g.Event + "-" + itoa(i), Outcome: o, Status: status(o.Status),
				Dur: duration(int64(o.DurationMS * 1e6))}
		}
	}
}

// orDefault returns v, or def when v is empty.
func orDefault[T ~string](v, def T) T {
	if v == "" {
		return def
	}
	return v
}

// spread gives each step of r its share of the run's time, and each hook
// bar its width: its duration against the longest hook of the run.
func spread(r *run) {
	total := r.Ended - r.Began
	for i := range r.Steps {
		s := &r.Steps[i]
		var d int64
		if i+1 < len(r.Steps) {
			d = r.Steps[i+1].Time - s.Time
		}
		s.Dur = duration(d)
		if total > 0 {
			s.Pct = float64(d) / float64(total) * 100
		}
	}
	longest := 0.0
	for _, g := range r.Hooks {
		for _, o := range g.Outcomes {
			longest = max(longest, o.DurationMS)
		}
	}
	for gi := range r.Hooks {
		for i := range r.Hooks[gi].Bars {
			b := &r.Hooks[gi].Bars[i]
			b.Pct = 100
			if longest > 0 {
				b.Pct = b.Outcome.DurationMS / longest * 100
			}
		}
	}
}

// status names the colour of a hook's outcome: a panic is a failure.
func status(s string) string {
	if s == schema.HookPanicked {
		return schema.HookFailed
	}
	return s
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
			for i := range g.Bars {
				g.Bars[i].Spilled = sp
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
