package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise/internal/bench"
)

// newBenchCmd returns the bench command: reprise measured against the
// physical floors of its storage and beside a JSONL file per session.
func newBenchCmd(a *app, runF func(context.Context, *benchOptions) error) *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure reprise against the floors of its storage and a JSONL file per session",
		Long: `bench measures what users choose a session store on: what a durable
append costs, how many sessions one process carries at once, how fast a long
conversation comes back, what a restore and a tool call cost with hooks,
and whether any of it grows with the store. Each figure is measured against
its floor, the same work done with bare bbolt transactions, a bare bbolt
cursor scan, a bare os/exec, a bare HTTP POST to a local server or a bare
call of a prompt hook's evaluator, in the same process, on the same disk,
with values of the same size, floor and reprise operations alternating; a
figure's ratio is the median of its rounds' ratios.

Peer rows measure, in the same rounds, what a host keeps transcripts in
without a session store: a JSONL file per session, appended to with
O_APPEND and fsynced per durable append, written in one write and one
fsync when saving many messages, read back with a line scan and
encoding/json. Their targets are informational: a missed one is reported
as missed and fails nothing. Every ratio is reprise's value over the floor's
or the peer's: for rates, above 1 means reprise is ahead; for times and
sizes, below 1.

The stores are temporary, in a directory made next to the store (--store,
else $REPRISE_STORE, else the default), which bench does not open. The
large stores of target 7 (100,000 sessions and 10 million events; with
--quick, 10,000 sessions and 200,000 events) take minutes to make, so they
are kept in --cache-dir between runs (by default reprise/bench in the user's
cache directory); the store itself is left alone.

With --postgres URL, or $REPRISE_BENCH_POSTGRES, it also measures
target 8 on that PostgreSQL server, in a schema of its own that it creates
and drops: one append against a bare one-row INSERT + COMMIT into a scratch
table in that schema, and the appends a second of 64 sessions at once,
from 64 goroutines of one process and from 4 processes of 16 goroutines,
the processes being bench's own executable run again. The rates' bound
is informational.

It prints a table of figure, floor or peer, reprise, ratio, target and
result, and exits with 1 if any target that is not informational is missed. --quick runs fewer rounds and the
smaller scale store, in under a minute. When standard output and standard
error are both a terminal, a progress bar shows how far the run got.`,
		Example: `  reprise bench
  reprise bench --quick --json
  reprise bench --only append,save
  reprise bench --quick --postgres 'postgres://localhost/test?sslmode=disable'`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runBench(cmd.Context(), &o)
		},
	}
	cmd.Flags().BoolVar(&o.quick, "quick", false, "fewer rounds and a smaller scale store, to finish in under a minute")
	cmd.Flags().BoolVar(&o.markdown, "markdown", false, "print the table in Markdown")
	cmd.Flags().StringVar(&o.cacheDir, "cache-dir", "", "`DIR` that keeps the large stores of target 7 between runs (default $XDG_CACHE_HOME/reprise/bench, ~/.cache/reprise/bench when XDG_CACHE_HOME is unset)")
	cmd.Flags().StringSliceVar(&o.only, "only", nil, "run only the benches `NAMES` (append, concurrent, save, save-100k, rebuild, restore-func, restore-command, scale, pg-append, pg-concurrent, tool-step, http-hook, prompt-hook, subagent-step, api)")
	cmd.Flags().StringVar(&o.postgres, "postgres", "", "also measure target 8 on the PostgreSQL server at `URL` (default $"+benchPostgresEnv+")")
	return cmd
}

// benchOptions are the options of bench.
type benchOptions struct {
	cmdIO
	quick    bool     // --quick
	markdown bool     // --markdown
	cacheDir string   // --cache-dir
	only     []string // --only, nil for every bench
	postgres string   // --postgres, else $REPRISE_BENCH_POSTGRES
}

// benchPostgresEnv names the variable that gives bench a PostgreSQL server
// when --postgres does not.
const benchPostgresEnv = "REPRISE_BENCH_POSTGRES"

// runBench checks o, then runs the benches next to the store and prints
// their results.
func runBench(ctx context.Context, o *benchOptions) error {
	if o.json && o.markdown {
		return usagef("--json and --markdown do not go together")
	}
	if o.postgres == "" {
		o.postgres = os.Getenv(benchPostgresEnv)
	}
	known := map[string]bench.Bench{}
	for _, b := range bench.Benches() {
		known[b.Name] = b
	}
	for _, name := range o.only {
		b, ok := known[name]
		switch {
		case !ok:
			return usagef("no bench named %q", name)
		case b.Postgres && o.postgres == "":
			return usagef("bench %s needs a PostgreSQL server: give --postgres or set $%s", name, benchPostgresEnv)
		}
	}
	if o.cacheDir == "" {
		dir, err := bench.DefaultCacheDir()
		if err != nil {
			return fmt.Errorf("%w; give --cache-dir", err)
		}
		o.cacheDir = dir
	}
	store, err := o.storePath()
	if err != nil {
		return err
	}
	return benchNextTo(ctx, o.app, store, bench.Options{CacheDir: o.cacheDir, Quick: o.quick, Only: o.only, Postgres: o.postgres}, o.markdown, o.stdout, o.stderr)
}

// benchReport is what bench --json prints.
type benchReport struct {
	Quick    bool           `json:"quick"`
	Dir      string         `json:"dir"`
	CacheDir string         `json:"cache_dir"`
	Rounds   int            `json:"rounds"`
	Seconds  float64        `json:"seconds"`
	Pass     bool           `json:"pass"`
	Results  []bench.Result `json:"results"`
}

// benchNextTo runs the benches in a temporary directory on the disk of
// store and prints their results.
func benchNextTo(ctx context.Context, a *app, store string, opts bench.Options, markdown bool, stdout, stderr io.Writer) error {
	parent, err := existingDir(filepath.Dir(store))
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(parent, ".reprise-bench-")
	if err != nil {
		return fmt.Errorf("temporary directory next to the store: %w", err)
	}
	defer os.RemoveAll(dir)
	opts.Dir = dir

	bar := newBenchBar(stdout, stderr)
	if bar != nil {
		opts.Progress = bar.update
	}
	start := time.Now()
	results, err := bench.Run(ctx, opts)
	if bar != nil {
		bar.finish()
	}
	if err != nil {
		return err
	}
	report := benchReport{Quick: opts.Quick, Dir: parent, CacheDir: opts.CacheDir, Rounds: bench.Rounds(opts.Quick),
		Seconds: time.Since(start).Seconds(), Pass: bench.Passed(results), Results: results}
	if a.json {
		err = printJSON(stdout, report)
	} else {
		err = printBench(stdout, report, markdown)
	}
	if err != nil {
		return err
	}
	if !report.Pass {
		missed, targets := 0, 0
		for _, r := range results {
			if r.Informational || r.Limit == 0 {
				continue
			}
			targets++
			if !r.Pass {
				missed++
			}
		}
		return fmt.Errorf("%d of %d figures missed their target", missed, targets)
	}
	return nil
}

// printBench writes the report as a table.
func printBench(w io.Writer, r benchReport, markdown bool) error {
	kind := "full run"
	if r.Quick {
		kind = "quick run"
	}
	fmt.Fprintf(w, "reprise bench: %s on the disk of %s, %d rounds a figure, %.0f s\n\n", kind, r.Dir, r.Rounds, r.Seconds)
	return bench.WriteTable(w, r.Results, markdown)
}

// existingDir returns dir, or its nearest ancestor that exists: the
// directory on the disk the store is, or will be, on.
func existingDir(dir string) (string, error) {
	for {
		info, err := os.Stat(dir)
		switch {
		case err == nil && info.IsDir():
			return dir, nil
		case err == nil:
			return "", fmt.Errorf("%s is not a directory", dir)
		case !errors.Is(err, fs.ErrNotExist):
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no directory of %s exists", dir)
		}
		dir = parent
	}
}

// benchBar draws how far a bench run got, on one line of a terminal.
type benchBar struct {
	w    io.Writer
	last time.Time
}

// newBenchBar returns a bar drawing on stderr, or nil unless stdout and
// stderr are both a terminal: output going to a file or a pipe is
// watched by no one, or read by a program.
func newBenchBar(stdout, stderr io.Writer) *benchBar {
	if !isTerminal(stdout) || !isTerminal(stderr) {
		return nil
	}
	return &benchBar{w: stderr}
}

// update redraws the bar at most every progressEvery.
func (b *benchBar) update(frac float64, what string) {
	if now := time.Now(); now.Sub(b.last) >= progressEvery {
		b.last = now
		fmt.Fprint(b.w, "\r"+renderBenchBar(frac, what)+"\x1b[K")
	}
}

// finish erases the bar.
func (b *benchBar) finish() { fmt.Fprint(b.w, "\r\x1b[K") }

// renderBenchBar returns the bar's text: a percentage, the bar and what the
// run is doing.
func renderBenchBar(frac float64, what string) string {
	frac = min(max(frac, 0), 1)
	filled := int(frac * progressWidth)
	return fmt.Sprintf("bench %3.0f%% [%s%s] %s", frac*100,
		strings.Repeat("=", filled), strings.Repeat(" ", progressWidth-filled), what)
}
