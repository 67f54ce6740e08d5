package reprise_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/internal/bench"
)

// The benchmarks below measure the Engine against the physical floors of
// its storage, the targets of `reprise bench`: each iteration does one
// floor operation and one reprise operation, in alternating order, in the
// same process and on the same disk (the test's temporary directory).
// Each reports, for every figure of its bench, reprise's number, the
// floor's or the JSONL peer's (prefixed with the row's name) and their
// ratio, reprise over floor or peer, in the
// figure's unit, each the median over the iterations, as a disk shared
// with others makes a few operations very slow; ns/op is the median of
// reprise's time per iteration. With -short the
// scale benchmark uses the small scale store (10,000 sessions, 200,000
// events) instead of the full one (100,000 sessions, 10 million events),
// which is made once, in a few minutes, and kept in bench.DefaultCacheDir().
//
//	go test -run '^$' -bench . -count 5 .

func BenchmarkAppend(b *testing.B)         { runBench(b, "append") }
func BenchmarkConcurrent(b *testing.B)     { runBench(b, "concurrent") }
func BenchmarkSave(b *testing.B)           { runBench(b, "save") }
func BenchmarkSave100k(b *testing.B)       { runBench(b, "save-100k") }
func BenchmarkRebuild(b *testing.B)        { runBench(b, "rebuild") }
func BenchmarkRestoreFunc(b *testing.B)    { runBench(b, "restore-func") }
func BenchmarkRestoreCommand(b *testing.B) { runBench(b, "restore-command") }
func BenchmarkScale(b *testing.B)          { runBench(b, "scale") }

func runBench(b *testing.B, name string) {
	ctx := context.Background()
	bn, ok := bench.Lookup(name)
	if !ok {
		b.Fatalf("no bench %s", name)
	}
	cache, err := bench.DefaultCacheDir()
	if err != nil {
		b.Fatal(err)
	}
	r, err := bn.Open(ctx, bench.NewEnv(b.TempDir(), cache, testing.Short()))
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := r.Close(); err != nil {
			b.Error(err)
		}
	}()
	samples := make([][]bench.Sample, len(bn.Rows))
	for b.Loop() {
		s, err := r.Run(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for i := range s {
			samples[i] = append(samples[i], s[i])
		}
	}
	times := make([]float64, len(samples[0]))
	for i, s := range samples[0] {
		times[i] = float64(s.Reprise.Time.Nanoseconds())
	}
	b.ReportMetric(bench.Median(times), "ns/op")
	for i, row := range bn.Rows {
		floor := bench.Value(row.Unit, samples[i], true)
		rep := bench.Value(row.Unit, samples[i], false)
		unit := metricUnit(row)
		b.ReportMetric(rep, unit)
		b.ReportMetric(floor, row.Name+"-floor-"+unit)
		b.ReportMetric(rep/floor, row.Name+"-ratio")
	}
}

// metricUnit is the unit of row's metrics, without spaces.
func metricUnit(row bench.Row) string {
	switch row.Unit {
	case bench.PerOp:
		return "ms/" + row.What
	case bench.Rate:
		return row.What + "s/s"
	}
	return strings.ReplaceAll(row.Name, " ", "-") + "-MB"
}
