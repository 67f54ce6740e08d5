// Package bench measures reprise against the physical floors of its
// storage: the same work done with bare bbolt transactions, a bare bbolt
// cursor scan, a bare os/exec, a bare HTTP POST and a bare call of a
// prompt hook's evaluator, in the same process, on the same disk, with
// values of the same size; and beside the JSONL peer, a file per
// session, doing the same work with the same messages. The reprise bench
// command and the Go benchmarks both use it.
//
// Each figure is measured in rounds. Within a round the floor, reprise
// and peer operations take turns, so all see the same disk and the same
// neighbours, and each side's number is the median of its operations; a
// round's ratio compares reprise with the floor or the peer, and a
// figure's ratio is the median of its rounds' ratios, which a burst of
// noise in one round does not move.
package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// Options configure Run.
type Options struct {
	// Dir is where the temporary stores go: a directory on the disk under
	// test. It must exist; Run leaves nothing in it.
	Dir string
	// CacheDir keeps the large stores of the scale figures between runs,
	// since making them takes minutes. It must be set.
	CacheDir string
	// Quick runs fewer rounds and a smaller scale store, to finish in
	// under a minute.
	Quick bool
	// Postgres, when set, is the URL of a PostgreSQL server (a postgres://
	// URL or a key=value connection string) for the benches of target 8,
	// which run only then, each in a schema of its own that it creates
	// and drops.
	Postgres string
	// Only, when not empty, runs only the benches with these names.
	Only []string
	// Progress, when not nil, is told how far the run got, from 0 to 1,
	// and what it is doing.
	Progress func(frac float64, what string)
}

// Unit says how a row's samples become the numbers of the table.
type Unit int

const (
	// PerOp is milliseconds per unit of work: lower is better.
	PerOp Unit = iota
	// Rate is units of work per second: higher is better.
	Rate
	// Bytes is megabytes, the median of the samples: lower is better.
	Bytes
)

// Row is one figure of the table: what reprise does, what its floor is,
// and the ratio the two must keep.
//
// A peer row has the JSONL peer (see jsonl.go) in the floor's place: what a
// host would keep its sessions in instead. Its target is Informational,
// one reprise aims at but does not yet meet: a miss is reported and fails
// nothing. A row with no Limit has no target at all.
type Row struct {
	Target int     `json:"target"` // the number of the target it checks
	Name   string  `json:"name"`   // short, stable id
	Figure string  `json:"figure"` // what reprise does
	Floor  string  `json:"floor_is"`
	Unit   Unit    `json:"-"`
	What   string  `json:"-"`     // the unit of work, as shown: "append", "record", ...
	Min    bool    `json:"min"`   // the ratio must be at least Limit, else at most
	Limit  float64 `json:"limit"` // the bound on reprise / floor; 0 for none
	// AtLeast, when not 0, bounds reprise's own value, in the row's unit,
	// rather than the ratio: a rate it must reach.
	AtLeast float64 `json:"at_least,omitempty"`
	// Informational is set when missing the target fails nothing.
	Informational bool `json:"informational,omitempty"`
}

// Amount is what one side of one operation measured: the work it did and
// the time it took, or for memory figures a number of bytes.
type Amount struct {
	Work  float64
	Time  time.Duration
	Bytes float64
}

// Sample is one operation of each side of a row.
type Sample struct{ Floor, Reprise Amount }

// Runner measures the rows of one bench on the stores it set up.
type Runner interface {
	// Run does one operation of each side of every row and returns one
	// sample per row, in the bench's row order.
	Run(ctx context.Context) ([]Sample, error)
	// Close removes what the runner set up.
	Close() error
}

// Bench is a set of rows measured together by one runner.
type Bench struct {
	Name string
	Rows []Row
	// Reps is how many operations a round does, in full and quick runs.
	Reps, QuickReps int
	// Postgres is set for the benches that need a PostgreSQL server.
	Postgres bool
	// Open sets up the stores, in env.Dir, and returns the runner.
	Open func(ctx context.Context, env *Env) (Runner, error)
}

// Env is what a bench sets up in.
type Env struct {
	Dir      string
	CacheDir string
	Quick    bool
	Postgres string // the server of the PostgreSQL benches
	// progress reports a fraction of a long setup step.
	progress func(what string, frac float64)
}

// NewEnv returns the environment Run gives benches, for the Go benchmarks
// that open them directly: temporary stores in dir, scale stores kept in
// cacheDir.
func NewEnv(dir, cacheDir string, quick bool) *Env {
	return &Env{Dir: dir, CacheDir: cacheDir, Quick: quick, progress: func(string, float64) {}}
}

// Result is a row as measured.
type Result struct {
	Row
	Unit    string    `json:"unit"`
	Floor   float64   `json:"floor"`   // the floor, in Unit
	Reprise float64   `json:"reprise"` // reprise, in Unit
	Ratio   float64   `json:"ratio"`   // median of the rounds' reprise / floor
	Ratios  []float64 `json:"ratios"`  // each round's ratio
	Pass    bool      `json:"pass"`    // the ratio is within Limit, or there is none
	Note    string    `json:"note,omitempty"`
}

// met reports whether ratio, and reprise's value, are within row's
// bounds; every value is within no bound.
func (row Row) met(ratio, value float64) bool {
	switch {
	case row.AtLeast != 0:
		return value >= row.AtLeast
	case row.Limit == 0:
		return true
	case row.Min:
		return ratio >= row.Limit
	}
	return ratio <= row.Limit
}

// Rounds returns how many rounds Run measures each bench for.
func Rounds(quick bool) int {
	if quick {
		return 3
	}
	return 11
}

// Lookup returns the bench called name.
func Lookup(name string) (Bench, bool) {
	for _, b := range Benches() {
		if b.Name == name {
			return b, true
		}
	}
	return Bench{}, false
}

// Benches returns every bench, in table order.
func Benches() []Bench {
	return []Bench{appendBench, concurrentBench, saveBench, bulkSaveBench, rebuildBench, restoreFuncBench, restoreCommandBench, scaleBench,
		pgAppendBench, pgConcurrentBench, toolBench, httpHookBench, promptHookBench, subagentBench, apiBench}
}

// Run measures every bench and returns their rows, in order: the
// PostgreSQL benches only when opts.Postgres is set. A setup or operation
// that fails stops the run.
func Run(ctx context.Context, opts Options) ([]Result, error) {
	env := NewEnv(opts.Dir, opts.CacheDir, opts.Quick)
	env.Postgres = opts.Postgres
	rounds := Rounds(opts.Quick)
	var benches []Bench
	for _, b := range Benches() {
		if b.Postgres && opts.Postgres == "" {
			continue
		}
		if len(opts.Only) == 0 || slices.Contains(opts.Only, b.Name) {
			benches = append(benches, b)
		}
	}
	// Each bench is one step to set up and one per round.
	total, done := float64(len(benches)*(rounds+1)), 0.0
	report := func(part float64, what string) {
		if opts.Progress != nil {
			opts.Progress(min((done+part)/total, 1), what)
		}
	}
	var results []Result
	for _, b := range benches {
		env.progress = func(what string, frac float64) { report(frac, b.Name+": "+what) }
		report(0, b.Name+": setting up")
		rs, err := measure(ctx, b, env, rounds, func(round int) {
			done++
			report(0, fmt.Sprintf("%s: round %d of %d", b.Name, round, rounds))
		})
		if err != nil {
			return results, fmt.Errorf("bench %s: %w", b.Name, err)
		}
		done++
		results = append(results, rs...)
	}
	report(0, "done")
	return results, nil
}

// measure sets b up and measures its rows for rounds rounds, calling
// roundDone before each round.
func measure(ctx context.Context, b Bench, env *Env, rounds int, roundDone func(round int)) (results []Result, err error) {
	r, err := b.Open(ctx, env)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := r.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	reps := b.Reps
	if env.Quick {
		reps = b.QuickReps
	}
	if _, err := r.Run(ctx); err != nil { // warm up
		return nil, err
	}
	perRound := make([][]Sample, len(b.Rows)) // per row, the samples of the current round
	floors := make([][]float64, len(b.Rows))
	reprises := make([][]float64, len(b.Rows))
	ratios := make([][]float64, len(b.Rows))
	for round := 1; round <= rounds; round++ {
		roundDone(round)
		for i := range perRound {
			perRound[i] = perRound[i][:0]
		}
		for range reps {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			samples, err := r.Run(ctx)
			if err != nil {
				return nil, err
			}
			for i, s := range samples {
				perRound[i] = append(perRound[i], s)
			}
		}
		for i, row := range b.Rows {
			f, p := value(row.Unit, perRound[i], floorSide), value(row.Unit, perRound[i], repriseSide)
			floors[i] = append(floors[i], f)
			reprises[i] = append(reprises[i], p)
			ratios[i] = append(ratios[i], p/f)
		}
	}
	for i, row := range b.Rows {
		res := Result{Row: row, Unit: unitName(row), Floor: Median(floors[i]), Reprise: Median(reprises[i]),
			Ratio: Median(ratios[i]), Ratios: ratios[i]}
		res.Pass = row.met(res.Ratio, res.Reprise)
		if note, ok := r.(interface{ Note(row string) string }); ok {
			res.Note = note.Note(row.Name)
		}
		results = append(results, res)
	}
	return results, nil
}

type side int

const (
	floorSide side = iota
	repriseSide
)

// value turns one side of a round's samples into the table's number: the
// median of the samples' times per unit of work, rates or byte counts. A
// median, unlike a mean, is not moved by the few operations that a busy
// disk or a neighbour's burst slows tenfold.
func value(u Unit, samples []Sample, s side) float64 {
	xs := make([]float64, 0, len(samples))
	for _, sm := range samples {
		a := sm.Floor
		if s == repriseSide {
			a = sm.Reprise
		}
		switch u {
		case PerOp:
			xs = append(xs, a.Time.Seconds()*1000/a.Work)
		case Rate:
			xs = append(xs, a.Work/a.Time.Seconds())
		default:
			xs = append(xs, a.Bytes/1e6)
		}
	}
	return Median(xs)
}

// Value returns the table's number for one side of samples: the floor's
// when floor is true, else reprise's. The Go benchmarks report it.
func Value(u Unit, samples []Sample, floor bool) float64 {
	if floor {
		return value(u, samples, floorSide)
	}
	return value(u, samples, repriseSide)
}

func unitName(r Row) string {
	switch r.Unit {
	case PerOp:
		return "ms/" + r.What
	case Rate:
		return r.What + "s/s"
	}
	return "MB"
}

// Median returns the median of xs, or NaN for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// Passed reports whether every result met its target, informational
// targets aside.
func Passed(results []Result) bool {
	for _, r := range results {
		if !r.Pass && !r.Informational {
			return false
		}
	}
	return true
}
