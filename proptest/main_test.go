package proptest

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// Environment variables that size a run. See the package documentation.
const (
	envLong       = "REPRISE_PROPTEST_LONG"  // 1: the long run
	envCases      = "REPRISE_PROPTEST_CASES" // rapid cases of each property
	envCrashSeeds = "REPRISE_CRASH_SEEDS"    // scenarios of the crash test
)

// Budgets of the default run, which CI does, and of the long run.
const (
	defaultCases      = 100
	shortCases        = 20 // with -short, the quick run of a newcomer
	longCases         = 1000
	longSteps         = 50 // rapid's average actions per case in the long run; 30 otherwise
	defaultCrashSeeds = 3
	longCrashSeeds    = 40
	// defaultSeed is rapid's seed when none is given, so that the default
	// run tries the same cases every time. The long run draws a new one.
	defaultSeed = 20240611
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(crashChild())
	}
	flag.Parse()
	if err := configureRapid(); err != nil {
		fmt.Fprintln(os.Stderr, "proptest:", err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// long reports whether this is the long run.
func long() bool { return os.Getenv(envLong) == "1" }

// envInt returns the positive integer in environment variable name, or def.
func envInt(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q is not a positive integer", name, v)
	}
	return n, nil
}

// configureRapid sets rapid's number of cases, steps and seed from this
// package's budgets, unless they were given with -rapid.checks,
// -rapid.steps and -rapid.seed or RAPID_CHECKS, RAPID_STEPS and RAPID_SEED.
func configureRapid() error {
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["rapid.checks"] && os.Getenv("RAPID_CHECKS") == "" {
		def := defaultCases
		switch {
		case long():
			def = longCases
		case testing.Short():
			def = shortCases
		}
		n, err := envInt(envCases, def)
		if err != nil {
			return err
		}
		if err := flag.Set("rapid.checks", strconv.Itoa(n)); err != nil {
			return err
		}
	}
	if long() && !given["rapid.steps"] && os.Getenv("RAPID_STEPS") == "" {
		if err := flag.Set("rapid.steps", strconv.Itoa(longSteps)); err != nil {
			return err
		}
	}
	if !given["rapid.seed"] && os.Getenv("RAPID_SEED") == "" {
		seed := uint64(defaultSeed)
		if long() {
			seed = rand.Uint64N(1<<53) + 1
		}
		if err := flag.Set("rapid.seed", strconv.FormatUint(seed, 10)); err != nil {
			return err
		}
	}
	return nil
}

// rapidBudget describes the cases and seed rapid runs with, for logs.
func rapidBudget() string {
	return fmt.Sprintf("-rapid.checks=%s -rapid.seed=%s -rapid.steps=%s",
		flag.Lookup("rapid.checks").Value, flag.Lookup("rapid.seed").Value, flag.Lookup("rapid.steps").Value)
}
