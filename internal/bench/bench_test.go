package bench

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{7}, 7}} {
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Errorf("Median of nothing is not NaN")
	}
}

func TestValue(t *testing.T) {
	samples := []Sample{
		{Floor: Amount{Work: 1, Time: time.Millisecond}, Reprise: Amount{Work: 10, Time: 2 * time.Second, Bytes: 3e6}},
		{Floor: Amount{Work: 1, Time: 3 * time.Millisecond}, Reprise: Amount{Work: 10, Time: time.Second, Bytes: 1e6}},
		{Floor: Amount{Work: 1, Time: 90 * time.Millisecond}, Reprise: Amount{Work: 10, Time: 4 * time.Second, Bytes: 2e6}},
	}
	if got := Value(PerOp, samples, true); got != 3 {
		t.Errorf("floor ms per op = %v, want the median, 3", got)
	}
	if got := Value(Rate, samples, false); got != 5 {
		t.Errorf("reprise rate = %v, want the median, 5", got)
	}
	if got := Value(Bytes, samples, false); got != 2 {
		t.Errorf("reprise MB = %v, want the median, 2", got)
	}
}

func TestWriteTable(t *testing.T) {
	results := []Result{
		{Row: Row{Target: 1, Name: "append", Figure: "durable append", Floor: "F1", Limit: 1.25}, Unit: "ms/append",
			Floor: 0.25, Reprise: 0.28, Ratio: 1.12, Pass: true, Note: "values of 314 bytes"},
		{Row: Row{Target: 2, Name: "concurrent", Figure: "64 sessions", Floor: "F1 serially", Min: true, Limit: 4}, Unit: "appends/s",
			Floor: 4200, Reprise: 3100, Ratio: 0.74},
	}
	for _, markdown := range []bool{false, true} {
		var buf bytes.Buffer
		if err := WriteTable(&buf, results, markdown); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, want := range []string{"durable append", "0.25 ms/append", "1.12", "<= 1.25", "pass", "4.2k appends/s", ">= 4", "FAIL", "append: values of 314 bytes"} {
			if !strings.Contains(out, want) {
				t.Errorf("table (markdown %v) lacks %q:\n%s", markdown, want, out)
			}
		}
		if markdown && !strings.Contains(out, "|---|") {
			t.Errorf("Markdown table has no header rule:\n%s", out)
		}
	}
}

// A peer row's target is informational: missed, it shows as such and
// fails nothing; a row with no target shows none.
func TestInformationalTargets(t *testing.T) {
	missed := Result{Row: Row{Target: 3, Name: "save-100k-peer", Figure: "Save of 100,000", Floor: "JSONL peer", Min: true,
		Limit: 1, Informational: true}, Unit: "messages/s", Floor: 1e6, Reprise: 1.6e5, Ratio: 0.16}
	missed.Pass = missed.met(missed.Ratio, missed.Reprise)
	none := Result{Row: Row{Target: 1, Name: "append-peer", Figure: "append", Floor: "JSONL peer"}, Unit: "ms/append",
		Floor: 0.15, Reprise: 0.28, Ratio: 1.87}
	none.Pass = none.met(none.Ratio, none.Reprise)
	if missed.Pass || !none.Pass {
		t.Fatalf("pass: missed %v, no target %v", missed.Pass, none.Pass)
	}
	if !Passed([]Result{missed, none}) {
		t.Errorf("a missed informational target failed the run")
	}
	failed := missed
	failed.Informational = false
	if Passed([]Result{failed, none}) {
		t.Errorf("a missed target passed the run")
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, []Result{missed, none}, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "missed (informational)") || strings.Contains(out, "FAIL") || strings.Contains(out, "pass") {
		t.Errorf("table:\n%s", out)
	}
	if !strings.Contains(out, "reprise/floor or peer") {
		t.Errorf("table header does not say what its ratio is:\n%s", out)
	}
}

// A row with a bound on its rate is judged on reprise's value, not on
// the ratio to its floor.
func TestRateBound(t *testing.T) {
	row := Row{Target: 8, Name: "pg-concurrent", Figure: "64 sessions", Floor: "P1 serially", Unit: Rate, What: "append",
		AtLeast: 10_000, Informational: true}
	for _, tc := range []struct {
		ratio, value float64
		want         bool
		verdict      string
	}{
		{ratio: 0.5, value: 12_000, want: true, verdict: "met (informational)"},
		{ratio: 9, value: 8_000, want: false, verdict: "missed (informational)"},
	} {
		res := Result{Row: row, Unit: "appends/s", Floor: tc.value / tc.ratio, Reprise: tc.value, Ratio: tc.ratio}
		res.Pass = row.met(tc.ratio, tc.value)
		if res.Pass != tc.want {
			t.Errorf("ratio %v, value %v: pass %v, want %v", tc.ratio, tc.value, res.Pass, tc.want)
		}
		var buf bytes.Buffer
		if err := WriteTable(&buf, []Result{res}, false); err != nil {
			t.Fatal(err)
		}
		if out := buf.String(); !strings.Contains(out, ">= 10k appends/s") || !strings.Contains(out, tc.verdict) {
			t.Errorf("table shows neither the rate bound nor %q:\n%s", tc.verdict, out)
		}
	}
}

func TestScaleIDsAreValidAndDistinct(t *testing.T) {
	seen := map[string]bool{}
	for i := range 100_000 {
		id := scaleSessionID(i)
		if seen[id] {
			t.Fatalf("session %d has the id of an earlier one: %s", i, id)
		}
		seen[id] = true
	}
	if id := scaleSessionID(0); len(id) != 36 || strings.Count(id, "-") != 4 {
		t.Errorf("scale session id %q is not shaped like a UUID", id)
	}
}

func TestScaleStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	scale := Scale{Sessions: 250, Events: 5}
	path, err := ScaleStore(ctx, dir, scale, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := reprise.Open(path, reprise.Options{ReadOnly: true, TranscriptDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 99, 100, 249} {
		info, err := e.Session(ctx, scaleSessionID(i))
		if err != nil || info.Messages != scale.Events-1 {
			t.Errorf("session %d: %+v, %v; want %d messages", i, info, err, scale.Events-1)
		}
	}
	sessions, err := e.Sessions(ctx)
	if err != nil || len(sessions) != scale.Sessions {
		t.Errorf("the store has %d sessions (%v), want %d", len(sessions), err, scale.Sessions)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	again, err := ScaleStore(ctx, dir, scale, nil)
	after, _ := os.Stat(path)
	if err != nil || again != path || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("a second ScaleStore = %s, %v, and the file changed %v; want the kept store", again, err, !after.ModTime().Equal(before.ModTime()))
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, "*.partial")); len(leftovers) > 0 {
		t.Errorf("ScaleStore left %v", leftovers)
	}
}

// The command restore's floor runs its exec where the restore runs its
// hook: after the five appends up to SessionStartHookStarted.
func TestCommandRestoreFloorFollowsTheRestore(t *testing.T) {
	ctx := context.Background()
	run, err := openRestore(ctx, NewEnv(t.TempDir(), t.TempDir(), true), true)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if _, err := run.Run(ctx); err != nil {
		t.Fatal(err)
	}
	r := run.(*restoreRunner)
	if r.appends != 7 || r.hookAt != 5 {
		t.Fatalf("a restore made %d appends with the hook after %d, want 7 and 5", r.appends, r.hookAt)
	}
	if note := r.Note(""); !strings.Contains(note, "after the first 5") {
		t.Fatalf("note = %q", note)
	}
}
