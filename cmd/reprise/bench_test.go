package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/reprise-dev/reprise/internal/bench"
)

// TestBenchQuickJSON runs the quick bench through run. Whether the
// targets are met depends on the machine and its neighbours, so either
// exit code is accepted; the report must be whole and consistent.
func TestBenchQuickJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("the quick bench takes up to a minute")
	}
	if raceDetector {
		// It measures nothing meaningful there, and takes minutes.
		t.Skip("the quick bench is run without -race: .ci/run runs this test so")
	}
	c := newCLI(t)
	requireBench(t, c)
	cache := filepath.Join(c.dir, "cache")
	r := c.run("bench", "--quick", "--json", "--cache-dir", cache)
	switch {
	case r.code == exitFailure && strings.Contains(r.stderr, "missed their target"):
		t.Logf("some targets missed on this machine: %s", r.stderr)
	case r.code != exitOK:
		t.Fatalf("reprise bench --quick --json: exit %d\nstderr: %s", r.code, r.stderr)
	}
	var report benchReport
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("bench --json printed no report: %v\n%s", err, r.stdout)
	}
	if !report.Quick || report.Rounds != bench.Rounds(true) {
		t.Errorf("report says quick %v with %d rounds, want a quick run of %d", report.Quick, report.Rounds, bench.Rounds(true))
	}
	// The store's directory does not exist yet: the nearest one that does.
	if report.Dir != c.dir {
		t.Errorf("benched in %s, want %s, next to the store %s", report.Dir, c.dir, c.store)
	}
	var want []string
	for _, b := range bench.Benches() {
		if b.Postgres {
			continue // given no server, bench leaves them out
		}
		for _, row := range b.Rows {
			want = append(want, row.Name)
		}
	}
	if len(report.Results) != len(want) {
		t.Fatalf("report has %d figures, want %d: %+v", len(report.Results), len(want), report.Results)
	}
	pass := true
	for i, res := range report.Results {
		if res.Name != want[i] {
			t.Errorf("figure %d is %q, want %q", i, res.Name, want[i])
		}
		for what, v := range map[string]float64{"floor": res.Floor, "reprise": res.Reprise, "ratio": res.Ratio} {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("%s: %s is %v", res.Name, what, v)
			}
		}
		met := res.Ratio <= res.Limit
		if res.Min {
			met = res.Ratio >= res.Limit
		}
		if res.Limit == 0 {
			met = true // no target
		}
		if res.Pass != met {
			t.Errorf("%s: ratio %v against %v says pass %v", res.Name, res.Ratio, res.Limit, res.Pass)
		}
		if len(res.Ratios) != report.Rounds {
			t.Errorf("%s: %d rounds' ratios, want %d", res.Name, len(res.Ratios), report.Rounds)
		}
		if strings.HasSuffix(res.Name, "-peer") && !res.Informational && res.Limit != 0 {
			t.Errorf("%s: a peer row's target is not informational", res.Name)
		}
		// An informational target, missed, fails nothing.
		pass = pass && (res.Pass || res.Informational)
	}
	if report.Pass != pass || (r.code == exitOK) != pass {
		t.Errorf("report pass %v and exit %d, with every figure passing %v", report.Pass, r.code, pass)
	}
	// The scale stores stay in the cache; the temporary stores do not.
	if entries, _ := os.ReadDir(cache); len(entries) == 0 {
		t.Errorf("no scale store kept in %s", cache)
	}
	leftovers, _ := filepath.Glob(filepath.Join(report.Dir, ".reprise-bench-*"))
	if len(leftovers) > 0 {
		t.Errorf("bench left %v behind", leftovers)
	}
}

func TestBenchUsage(t *testing.T) {
	c := newCLI(t)
	requireBench(t, c)
	for _, args := range [][]string{
		{"bench", "extra"},
		{"bench", "--only", "nothing"},
		{"bench", "--json", "--markdown"},
		{"bench", "--only", "pg-append"}, // no server given
	} {
		c.fails(exitUsage, args...)
	}
}

// requireBench fails the test at once when the command has no bench
// command, rather than with the output of a usage error.
func requireBench(t *testing.T, c *cli) {
	t.Helper()
	if r := c.run("bench", "--help"); r.code != exitOK {
		t.Fatalf("reprise bench --help: exit %d; is newBenchCmd added to the root command?\n%s", r.code, r.stderr)
	}
}

func TestExistingDir(t *testing.T) {
	dir := t.TempDir()
	got, err := existingDir(filepath.Join(dir, "a", "b", "c"))
	if err != nil || got != dir {
		t.Errorf("existingDir of a path under %s = %q, %v; want %s", dir, got, err, dir)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := existingDir(filepath.Join(file, "x")); err == nil {
		t.Errorf("existingDir under a file succeeded")
	}
}

func TestRenderBenchBar(t *testing.T) {
	for _, tc := range []struct {
		frac float64
		want string
	}{
		{0, "bench   0% [                              ] setting up"},
		{0.5, "bench  50% [===============               ] setting up"},
		{1.5, "bench 100% [==============================] setting up"},
	} {
		if got := renderBenchBar(tc.frac, "setting up"); got != tc.want {
			t.Errorf("renderBenchBar(%v) = %q, want %q", tc.frac, got, tc.want)
		}
	}
}

// Without --cache-dir the scale stores are kept in the user's cache
// directory; with none, bench asks for --cache-dir.
func TestBenchCacheDirDefaultsToTheUsersCache(t *testing.T) {
	c := newBinaryCLI(t)
	requireBench(t, c)
	report := quickAppendBench(t, c)
	if want := filepath.Join(os.Getenv("XDG_CACHE_HOME"), "reprise", "bench"); report.CacheDir != want {
		t.Errorf("cache dir %s, want %s", report.CacheDir, want)
	}
	os.Unsetenv("XDG_CACHE_HOME") // restored when the test ends
	report = quickAppendBench(t, c)
	if want := filepath.Join(c.home, ".cache", "reprise", "bench"); report.CacheDir != want {
		t.Errorf("cache dir %s, want %s", report.CacheDir, want)
	}
	t.Setenv("HOME", "")
	if r := c.fails(exitFailure, "bench", "--quick", "--only", "append"); !strings.Contains(r.stderr, "give --cache-dir") {
		t.Errorf("bench without a cache directory: %s", r.stderr)
	}
}

// quickAppendBench runs bench --quick --only append --json and returns its
// report. Whether the target is met depends on the machine and its load,
// so a miss (exit 1) is accepted.
func quickAppendBench(t *testing.T, c *cli) benchReport {
	t.Helper()
	r := c.run("bench", "--quick", "--only", "append", "--json")
	var report benchReport
	if (r.code != exitOK && !strings.Contains(r.stderr, "missed their target")) || json.Unmarshal([]byte(r.stdout), &report) != nil {
		t.Fatalf("bench --quick --only append --json: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return report
}

// bench draws its progress bar when stdout and stderr are a terminal, and
// only then.
func TestBinaryBenchProgressOnlyOnATerminal(t *testing.T) {
	c := newBinaryCLI(t)
	requireBench(t, c)
	args := []string{c.binary, "--store", c.store, "bench", "--quick", "--only", "append", "--cache-dir", filepath.Join(c.dir, "cache")}
	const bar = "\rbench   0% ["
	// Whether the target is met depends on the machine and its load: a
	// miss (exit 1) is a finished run too.
	const missed = "missed their target"
	if r := c.run(args[1:]...); (r.code != exitOK && !strings.Contains(r.stderr, missed)) || strings.Contains(r.stderr+r.stdout, "\r") {
		t.Fatalf("bench into pipes: exit %d\nstdout: %q\nstderr: %q", r.code, r.stdout, r.stderr)
	}
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) here to give bench a terminal")
	}
	// script runs the command line on a terminal of its own and copies
	// what it shows to its stdout.
	onTerminal := func(line string) string {
		t.Helper()
		out, err := exec.Command(script, "-qec", line, "/dev/null").CombinedOutput()
		if err != nil && !strings.Contains(string(out), missed) {
			t.Fatalf("script -c %q: %v\n%s", line, err, out)
		}
		return string(out)
	}
	quoted := make([]string, len(args))
	for i, arg := range args {
		quoted[i] = shellQuote(arg)
	}
	line := strings.Join(quoted, " ")
	if out := onTerminal(line); !strings.Contains(out, bar) || !strings.Contains(out, "durable message append") {
		t.Errorf("bench on a terminal shows no progress:\n%q", out)
	}
	file := filepath.Join(c.dir, "table.txt")
	if out := onTerminal(line + " > " + shellQuote(file)); strings.Contains(out, bar) {
		t.Errorf("bench with stdout in a file shows progress:\n%q", out)
	}
	if data, _ := os.ReadFile(file); !strings.Contains(string(data), "durable message append") || strings.Contains(string(data), "\r") {
		t.Errorf("bench's table in a file: %q", data)
	}
}

// With a PostgreSQL server, bench adds the rows of target 8, measured in
// schemas of their own that it drops; their numbers depend on the server
// and its load, so only their shape and consistency are checked.
func TestBenchPostgresRows(t *testing.T) {
	base := os.Getenv("REPRISE_TEST_POSTGRES")
	if base == "" {
		t.Skip("REPRISE_TEST_POSTGRES is not set: set it to a PostgreSQL URL, such as postgres://postgres@127.0.0.1:5432/test?sslmode=disable, to run the PostgreSQL tests")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("REPRISE_TEST_POSTGRES is set, but the server cannot be reached: %v", err)
	}
	defer conn.Close(ctx)
	schemas := func() map[string]bool {
		t.Helper()
		rows, err := conn.Query(ctx, "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'reprise_bench_%'")
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		for _, n := range names {
			set[n] = true
		}
		return set
	}
	before := schemas()

	c := newCLI(t)
	requireBench(t, c)
	r := c.run("bench", "--quick", "--json", "--only", "pg-append,pg-concurrent", "--postgres", base)
	if r.code != exitOK && !strings.Contains(r.stderr, "missed their target") {
		t.Fatalf("bench --postgres: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var report benchReport
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("bench --json printed no report: %v\n%s", err, r.stdout)
	}
	want := []string{"pg-append", "pg-concurrent", "pg-processes"}
	if len(report.Results) != len(want) {
		t.Fatalf("report has %d figures, want %v: %+v", len(report.Results), want, report.Results)
	}
	for i, res := range report.Results {
		if res.Name != want[i] || res.Target != 8 {
			t.Errorf("figure %d is %q of target %d, want %q of target 8", i, res.Name, res.Target, want[i])
		}
		for what, v := range map[string]float64{"floor": res.Floor, "reprise": res.Reprise, "ratio": res.Ratio} {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("%s: %s is %v", res.Name, what, v)
			}
		}
		if len(res.Ratios) != report.Rounds {
			t.Errorf("%s: %d rounds' ratios, want %d", res.Name, len(res.Ratios), report.Rounds)
		}
		if !strings.HasPrefix(res.Note, "payloads of ") {
			t.Errorf("%s: note %q", res.Name, res.Note)
		}
		var met bool
		switch res.Name {
		case "pg-append":
			// One append is held to its floor, a ratio, as the bbolt
			// figures are.
			if res.Unit != "ms/append" || res.Limit != 1.5 || res.Min || res.Informational {
				t.Errorf("%s: unit %s, bound %v (min %v), informational %v; want ms/append, at most 1.5, not informational",
					res.Name, res.Unit, res.Limit, res.Min, res.Informational)
			}
			met = res.Ratio <= 1.5
		default:
			// The rates are held to 10k appends/s, informationally.
			if res.Unit != "appends/s" || res.AtLeast != 10_000 || !res.Informational {
				t.Errorf("%s: unit %s, rate bound %v, informational %v; want appends/s, 10000, informational",
					res.Name, res.Unit, res.AtLeast, res.Informational)
			}
			met = res.Reprise >= 10_000
		}
		if res.Pass != met {
			t.Errorf("%s: ratio %v, value %v says pass %v, want %v", res.Name, res.Ratio, res.Reprise, res.Pass, met)
		}
	}
	if report.Pass != report.Results[0].Pass {
		t.Errorf("report pass %v, with the one non-informational figure passing %v", report.Pass, report.Results[0].Pass)
	}
	for name := range schemas() {
		if !before[name] {
			t.Errorf("bench left the schema %s behind", name)
		}
	}

	// The server may come from the environment instead.
	t.Setenv(benchPostgresEnv, base)
	r = c.run("bench", "--quick", "--only", "pg-append", "--cache-dir", filepath.Join(c.dir, "cache"))
	if (r.code != exitOK && !strings.Contains(r.stderr, "missed their target")) || !strings.Contains(r.stdout, "durable message append on PostgreSQL") {
		t.Errorf("bench with $%s: exit %d\nstdout: %s\nstderr: %s", benchPostgresEnv, r.code, r.stdout, r.stderr)
	}
}
