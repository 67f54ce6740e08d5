package web_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
	"github.com/reprise-dev/reprise/web"
)

// axisPage is what the tests read of an agent page's answer: its axis
// and each run on it.
type axisPage struct {
	Axis testAxis `json:"axis"`
	Zoom string   `json:"run"`
	Runs []struct {
		ID, Anchor, Kind string
		Agent            string
		StartMS          float64    `json:"start_ms"`
		EndMS            float64    `json:"end_ms"`
		Axis             testAxis   `json:"axis"`
		Steps            []string   `json:"steps"`
		StepSpans        []testSpan `json:"step_spans"`
		Hooks            []struct {
			Event string
			Hooks []struct {
				Name       string
				Status     string
				DurationMS float64 `json:"duration_ms"`
			}
			Spans []testSpan
		}
	} `json:"runs"`
}

type testAxis struct {
	Start  string  `json:"start"`
	SpanMS float64 `json:"span_ms"`
	Ticks  []struct {
		AtMS  float64 `json:"at_ms"`
		Label string
	}
}

type testSpan struct {
	StartMS float64 `json:"start_ms"`
	EndMS   float64 `json:"end_ms"`
}

// overlap reports whether two spans share some time.
func overlap(a, b testSpan) bool { return a.StartMS < b.EndMS && b.StartMS < a.EndMS }

// placed is a bar as the page draws it, in percent of its track.
type placed struct{ left, width float64 }

var placeRE = regexp.MustCompile(`style="left: ([0-9.]+)%; width: ([0-9.]+)%"`)

// bars returns the places of the elements of html that open with
// prefix, in order.
func bars(t *testing.T, html, prefix string) []placed {
	t.Helper()
	var out []placed
	for _, part := range strings.Split(html, prefix)[1:] {
		m := placeRE.FindStringSubmatch(part)
		if m == nil || strings.Index(part, m[0]) > strings.Index(part, ">") {
			t.Fatalf("a bar %s... is not placed: %.200s", prefix, part)
		}
		l, _ := strconv.ParseFloat(m[1], 64)
		w, _ := strconv.ParseFloat(m[2], 64)
		if l < 0 || w <= 0 || l+w > 100.01 {
			t.Errorf("bar %s at %v%% wide %v%%: off its track", prefix, l, w)
		}
		out = append(out, placed{l, w})
	}
	return out
}

// rowOf is the HTML of the row of the timeline whose anchor is anchor.
func rowOf(t *testing.T, body, anchor string) string {
	t.Helper()
	i := strings.Index(body, `id="`+anchor+`"`)
	if i < 0 {
		t.Fatalf("no row %s on the page", anchor)
	}
	row, _, _ := strings.Cut(body[i:], "</li>")
	return row
}

// A restore's SessionStart hooks run in parallel, each a real process
// that sleeps: on the run's axis their bars overlap, in the answer and as
// the page draws them, while its steps follow one another. The page's
// axis holds both runs; zoomed to the first, it is as long as that run.
func TestParallelHooksOverlapOnTheRunsAxis(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := testkit.OpenEngine(t, filepath.Join(dir, "reprise.db"), reprise.Options{Logger: testkit.Discard})
	for _, line := range []string{"sleep 0.2", "sleep 0.3"} {
		if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: line}}); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Session(t, e, "s1", dir, "first")
	testkit.Session(t, e, "s2", dir, "second")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Restore(ctx, "s2"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(e, web.Options{Logger: testkit.Discard}))
	t.Cleanup(srv.Close)
	s := &served{srv: srv}

	var page axisPage
	s.api(t, "/agents/ide", &page)
	if len(page.Runs) != 2 {
		t.Fatalf("%d runs, want the start and the restore", len(page.Runs))
	}
	body := s.page(t, "/agents/ide")
	for _, r := range page.Runs {
		if len(r.Hooks) == 0 || r.Hooks[len(r.Hooks)-1].Event != "SessionStart" {
			t.Fatalf("run %s has hooks %+v, want SessionStart's last", r.ID, r.Hooks)
		}
		g := r.Hooks[len(r.Hooks)-1]
		if len(g.Spans) != 2 || len(g.Hooks) != 2 {
			t.Fatalf("run %s: %d hooks, %d spans; want both sleeps", r.ID, len(g.Hooks), len(g.Spans))
		}
		first, second := g.Spans[0], g.Spans[1]
		if !overlap(first, second) {
			t.Errorf("run %s: the parallel hooks do not overlap: %+v %+v", r.ID, first, second)
		}
		for i, sp := range g.Spans {
			if d := sp.EndMS - sp.StartMS; d < 190 || d-g.Hooks[i].DurationMS > 0.001 || g.Hooks[i].DurationMS-d > 0.001 {
				t.Errorf("run %s: hook %s spans %v ms, ran %v ms", r.ID, g.Hooks[i].Name, d, g.Hooks[i].DurationMS)
			}
			if sp.StartMS < 0 || sp.EndMS > r.Axis.SpanMS {
				t.Errorf("run %s: hook %s at %+v, off its axis of %v ms", r.ID, g.Hooks[i].Name, sp, r.Axis.SpanMS)
			}
		}
		// Run one after the other, they would take 500 ms.
		if r.Axis.SpanMS >= g.Hooks[0].DurationMS+g.Hooks[1].DurationMS {
			t.Errorf("run %s takes %v ms, as long as its hooks one after the other", r.ID, r.Axis.SpanMS)
		}
		if len(r.StepSpans) != len(r.Steps) || len(r.Steps) < 3 {
			t.Fatalf("run %s: steps %v, spans %+v", r.ID, r.Steps, r.StepSpans)
		}
		for i := 1; i < len(r.StepSpans); i++ {
			if prev, cur := r.StepSpans[i-1], r.StepSpans[i]; overlap(prev, cur) || prev.EndMS > cur.StartMS {
				t.Errorf("run %s: step %s %+v overlaps the next, %s %+v", r.ID, r.Steps[i-1], prev, r.Steps[i], cur)
			}
		}
		checkTicks(t, "run "+r.ID, r.Axis)

		row := rowOf(t, body, r.Anchor)
		fills := bars(t, row, `<span class="fill ok" `)
		if len(fills) != 2 {
			t.Fatalf("run %s draws %d ok hook bars, want 2", r.ID, len(fills))
		}
		if f, g := fills[0], fills[1]; !(f.left < g.left+g.width && g.left < f.left+f.width) {
			t.Errorf("run %s draws its parallel hooks apart: %+v %+v", r.ID, f, g)
		}
		segs := bars(t, row, `<span role="listitem" tabindex="0" class="seg`)
		if len(segs) != len(r.Steps) {
			t.Fatalf("run %s draws %d steps, has %d", r.ID, len(segs), len(r.Steps))
		}
		for i := 1; i < len(segs); i++ {
			if segs[i-1].left+segs[i-1].width > segs[i].left+0.011 {
				t.Errorf("run %s draws step %d over step %d: %+v %+v", r.ID, i-1, i, segs[i-1], segs[i])
			}
		}
	}

	start, restore := page.Runs[0], page.Runs[1]
	if start.StartMS != 0 || start.EndMS > restore.StartMS || restore.EndMS != page.Axis.SpanMS {
		t.Errorf("on the page's axis of %v ms, the start is at %v..%v and the restore at %v..%v; want them one after the other, filling it",
			page.Axis.SpanMS, start.StartMS, start.EndMS, restore.StartMS, restore.EndMS)
	}
	checkTicks(t, "the page", page.Axis)

	var zoomed axisPage
	s.api(t, "/agents/ide?run="+start.Anchor, &zoomed)
	if zoomed.Zoom != start.Anchor || zoomed.Axis.SpanMS != start.Axis.SpanMS || zoomed.Axis.SpanMS >= page.Axis.SpanMS ||
		len(zoomed.Runs) != 1 || zoomed.Runs[0].ID != start.ID {
		t.Errorf("zoomed to %s: axis of %v ms (the run's is %v, the page's %v), runs %d; want the run's span and the run alone",
			start.Anchor, zoomed.Axis.SpanMS, start.Axis.SpanMS, page.Axis.SpanMS, len(zoomed.Runs))
	}
	contains(t, "zoomed page", s.page(t, "/agents/ide?run="+start.Anchor), `Time axis, zoomed to <a href="#`+start.Anchor+`">`)
	if status, _, _ := s.get(t, "/api/agents/ide?run=run-nothing", ""); status != 404 {
		t.Errorf("zoomed to a run the page lacks: %d, want 404", status)
	}
}

// checkTicks fails unless a's ticks start at 0, stay on it in order and
// are labelled in the unit its span is counted in.
func checkTicks(t *testing.T, what string, a testAxis) {
	t.Helper()
	if len(a.Ticks) < 2 || len(a.Ticks) > 6 || a.Ticks[0].AtMS != 0 || a.Ticks[0].Label != "0" {
		t.Fatalf("%s: ticks %+v on an axis of %v ms", what, a.Ticks, a.SpanMS)
	}
	for i, tk := range a.Ticks[1:] {
		if tk.AtMS <= a.Ticks[i].AtMS || tk.AtMS > a.SpanMS {
			t.Errorf("%s: tick %+v out of order or off the axis of %v ms", what, tk, a.SpanMS)
		}
		want := fmt.Sprintf("%g ms", tk.AtMS)
		if a.SpanMS >= 1000 {
			want = fmt.Sprintf("%g s", tk.AtMS/1000)
		}
		if tk.Label != want {
			t.Errorf("%s: tick at %v ms labelled %q, want %q", what, tk.AtMS, tk.Label, want)
		}
	}
}

// timed is a step of an agent's stream, at a time after the stream's
// first.
type timed struct {
	at  time.Duration
	run string
	p   schema.Payload
}

// writeTimed appends, straight to the bbolt file at path, agent id's
// steps, each at its own time.
func writeTimed(t *testing.T, path, id string, steps ...timed) {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stream := projection.AgentStream(id)
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixNano()
	var recs []eventlog.Record
	for _, st := range steps {
		rec, err := schema.NewRecord(stream, st.p, base+int64(st.at), st.run)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: stream}}, recs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// Two tool calls of one answer, whose times cross, overlap on the page's
// axis, where the restore before them does not; the axes are labelled in
// round steps; a zoom to the first call keeps the calls it overlaps.
func TestParallelToolCallsOverlapOnThePagesAxis(t *testing.T) {
	ms := time.Millisecond
	hook := func(name string, took time.Duration) schema.HookOutcome {
		return schema.HookOutcome{Name: name, Status: schema.HookOK, Duration: int64(took)}
	}
	call := func(id string, at, ran, done time.Duration) []timed {
		return []timed{
			{at, id, &schema.ToolHookStarted{Event: schema.HookPreToolUse, Session: "s1", ToolUseID: id, Tool: "Read", Hooks: []string{"guard.sh"}}},
			{ran, id, &schema.ToolHookRan{Event: schema.HookPreToolUse, Session: "s1", ToolUseID: id, Tool: "Read",
				Outcomes: []schema.HookOutcome{hook("guard.sh", ran-at-ms)}}},
			{ran, id, &schema.ToolDecided{Session: "s1", ToolUseID: id, Tool: "Read", Input: []byte(`{}`), Decision: "allow"}},
			{done, id, &schema.ToolResultRecorded{Session: "s1", ToolUseID: id, Tool: "Read", MessageUUID: "m-" + id}},
		}
	}
	steps := []timed{
		{0, "r1", &schema.SessionLoaded{Session: "s1", Source: schema.SourceStartup}},
		{400 * ms, "r1", &schema.SessionStartHookStarted{Session: "s1", Source: schema.SourceStartup, Hooks: []string{"a.sh", "b.sh"}}},
		{2500 * ms, "r1", &schema.SessionStartHookRan{Session: "s1", Source: schema.SourceStartup,
			Outcomes: []schema.HookOutcome{hook("a.sh", 2000*ms), hook("b.sh", 1500*ms)}}},
		{2500 * ms, "r1", &schema.ContextInjected{Session: "s1"}},
	}
	a, b := call("toolu_a", 3000*ms, 3100*ms, 4000*ms), call("toolu_b", 3200*ms, 3300*ms, 3600*ms)
	// The calls' steps as they were recorded: the second is decided while
	// the first's tool runs, and its result comes first.
	steps = append(steps, a[0], a[1], a[2], b[0], b[1], b[2], b[3], a[3])

	dir := t.TempDir()
	path := writeSession(t, dir, "s1")
	writeTimed(t, path, "a1", steps...)
	e := testkit.OpenEngine(t, path, reprise.Options{AllowMissingCwd: true, TranscriptDir: filepath.Join(dir, "files"), Logger: testkit.Discard})
	srv := httptest.NewServer(web.New(e, web.Options{Logger: testkit.Discard}))
	t.Cleanup(srv.Close)
	s := &served{srv: srv}

	var page axisPage
	s.api(t, "/agents/a1", &page)
	if len(page.Runs) != 3 {
		t.Fatalf("%d runs, want the restore and two calls", len(page.Runs))
	}
	restore, first, second := page.Runs[0], page.Runs[1], page.Runs[2]
	span := func(r int) testSpan { return testSpan{page.Runs[r].StartMS, page.Runs[r].EndMS} }
	if !overlap(span(1), span(2)) || overlap(span(0), span(1)) ||
		restore.StartMS != 0 || restore.EndMS != 2500 || first.StartMS != 3000 || first.EndMS != 4000 || second.StartMS != 3200 || second.EndMS != 3600 {
		t.Errorf("on the page's axis: restore %+v, %s %+v, %s %+v", span(0), first.ID, span(1), second.ID, span(2))
	}
	if hooks := restore.Hooks[0].Spans; len(hooks) != 2 || hooks[0] != (testSpan{400, 2400}) || hooks[1] != (testSpan{400, 1900}) {
		t.Errorf("the restore's hooks: %+v, want both from the intent at 400 ms, for as long as each ran", hooks)
	}
	labels := func(a testAxis) string {
		var out []string
		for _, tk := range a.Ticks {
			out = append(out, tk.Label)
		}
		return strings.Join(out, " | ")
	}
	for what, c := range map[string]struct {
		axis testAxis
		want string
	}{
		"the page":    {page.Axis, "0 | 1 s | 2 s | 3 s | 4 s"},
		"the restore": {restore.Axis, "0 | 0.5 s | 1 s | 1.5 s | 2 s | 2.5 s"},
		"a call":      {second.Axis, "0 | 100 ms | 200 ms | 300 ms | 400 ms"},
	} {
		if got := labels(c.axis); got != c.want {
			t.Errorf("%s's ticks: %s, want %s", what, got, c.want)
		}
	}

	body := s.page(t, "/agents/a1")
	contains(t, "agent page", body, `<span class="tick end" style="left: 100.00%">4 s</span>`)
	spans := bars(t, body, `<a class="span `)
	if len(spans) != 3 {
		t.Fatalf("the page's axis draws %d runs, want 3", len(spans))
	}
	if x, y := spans[1], spans[2]; !(x.left < y.left+y.width && y.left < x.left+x.width) || spans[0].left+spans[0].width > x.left {
		t.Errorf("the page draws the runs at %+v; want the calls over one another, after the restore", spans)
	}

	var zoomed axisPage
	s.api(t, "/agents/a1?run=run-toolu_a", &zoomed)
	if len(zoomed.Runs) != 2 || zoomed.Axis.SpanMS != 1000 || labels(zoomed.Axis) != "0 | 0.2 s | 0.4 s | 0.6 s | 0.8 s | 1 s" ||
		zoomed.Runs[0].StartMS != 0 || zoomed.Runs[1].StartMS != 200 || zoomed.Runs[1].EndMS != 600 {
		t.Errorf("zoomed to the first call: axis %+v, runs %d; want its second, the calls alone", zoomed.Axis, len(zoomed.Runs))
	}
	zoomedBody := s.page(t, "/agents/a1?run=run-toolu_a")
	if strings.Contains(zoomedBody, `id="run-r1"`) || !strings.Contains(zoomedBody, `id="run-toolu_b"`) {
		t.Error("the zoomed page shows the restore outside its span, or not the call within it")
	}
}
