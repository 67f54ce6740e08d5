package main

import (
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
// physical floors of its storage.
func newBenchCmd() *cobra.Command {
	var (
		quick, markdown bool
		cacheDir        string
		only            []string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure reprise against the physical floors of its storage",
		Long: `bench measures what users choose a session store on: what a durable
append costs, how many sessions one process carries at once, how fast a long
conversation comes back, what a restore costs with hooks, and whether any of
it grows with the store. Each figure is measured against its floor, the same
work done with bare bbolt transactions, a bare bbolt cursor scan or a bare
os/exec, in the same process, on the same disk, with values of the same
size, floor and reprise operations alternating; a figure's ratio is the
median of its rounds' ratios.

The stores are temporary, in a directory made next to the store (--store,
else $REPRISE_STORE, else the default), which bench does not open. The
large stores of target 7 (100,000 sessions and 10 million events; with
--quick, 10,000 sessions and 200,000 events) take minutes to make, so they
are kept in --cache-dir between runs; the store itself is left alone.

It prints a table of figure, floor, reprise, ratio, target and result, and
exits with 1 if any target is missed. --quick runs fewer rounds and the
smaller scale store, in under a minute.`,
		Example: `  reprise bench
  reprise bench --quick --json
  reprise bench --only append,save`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			a := &app{store: stringFlag(cmd, "store"), json: boolFlag(cmd, "json")}
			if a.json && markdown {
				return usagef("--json and --markdown do not go together")
			}
			known := map[string]bool{}
			for _, b := range bench.Benches() {
				known[b.Name] = true
			}
			for _, name := range only {
				if !known[name] {
					return usagef("no bench named %q", name)
				}
			}
			store, err := a.storePath()
			if err != nil {
				return err
			}
			return runBench(cmd, a, store, bench.Options{CacheDir: cacheDir, Quick: quick, Only: only}, markdown)
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "fewer rounds and a smaller scale store, to finish in under a minute")
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the table in Markdown")
	cmd.Flags().StringVar(&cacheDir, "cache-dir", bench.DefaultCacheDir(), "`DIR` that keeps the large stores of target 7 between runs")
	cmd.Flags().StringSliceVar(&only, "only", nil, "run only the benches `NAMES` (append, concurrent, save, rebuild, restore-func, restore-command, scale)")
	return cmd
}

// benchReport is what bench --json prints.
type benchReport struct {
	Quick   bool           `json:"quick"`
	Dir     string         `json:"dir"`
	Rounds  int            `json:"rounds"`
	Seconds float64        `json:"seconds"`
	Pass    bool           `json:"pass"`
	Results []bench.Result `json:"results"`
}

// runBench runs the benches in a temporary directory on the disk of store
// and prints their results.
func runBench(cmd *cobra.Command, a *app, store string, opts bench.Options, markdown bool) error {
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

	bar := newBenchBar(cmd.ErrOrStderr())
	if bar != nil {
		opts.Progress = bar.update
	}
	start := time.Now()
	ctx := cmd.Context()
	results, err := bench.Run(ctx, opts)
	if bar != nil {
		bar.finish()
	}
	if err != nil {
		return err
	}
	report := benchReport{Quick: opts.Quick, Dir: parent, Rounds: bench.Rounds(opts.Quick),
		Seconds: time.Since(start).Seconds(), Pass: bench.Passed(results), Results: results}
	w := cmd.OutOrStdout()
	if a.json {
		err = printJSON(w, report)
	} else {
		err = printBench(w, report, markdown)
	}
	if err != nil {
		return err
	}
	if !report.Pass {
		missed := 0
		for _, r := range results {
			if !r.Pass {
				missed++
			}
		}
		return fmt.Errorf("%d of %d figures missed their target", missed, len(results))
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

// stringFlag returns the value of the string flag name, "" when the
// command has no such flag.
func stringFlag(cmd *cobra.Command, name string) string {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// boolFlag returns the value of the boolean flag name, false when the
// command has no such flag.
func boolFlag(cmd *cobra.Command, name string) bool {
	f := cmd.Flags().Lookup(name)
	return f != nil && f.Value.String() == "true"
}

// benchBar draws how far a bench run got, on one line of a terminal.
type benchBar struct {
	w    io.Writer
	last time.Time
}

// newBenchBar returns a bar drawing on w, or nil when w is not a terminal.
func newBenchBar(w io.Writer) *benchBar {
	if !isTerminal(w) {
		return nil
	}
	return &benchBar{w: w}
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
