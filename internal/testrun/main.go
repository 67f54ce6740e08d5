// Command testrun runs the tests of every module of the workspace, as
// go test does, and says at its end which tests were skipped and why.
//
// Run it from the repository root:
//
//	go run ./internal/testrun              # quick: -short, no -race
//	go run ./internal/testrun -full -race  # everything, as .ci/run does
//
// By default it runs go test -short -vet=off (.ci/run runs go vet over
// every module), which skips the long runs (the
// quick bench, the kill runs, the 50 MB views) and shrinks the property
// tests, and it leaves out the modules whose dependencies take minutes to
// compile, saying so. -full runs every module without -short. Any other
// argument goes to go test.
//
// Beside the Go modules it runs the suites of the write API's clients in
// other languages (clients/typescript with npm, clients/python with
// pytest) against a reprise it builds; one whose interpreter this machine
// lacks is listed as skipped, unless REPRISE_TEST_CLIENTS_REQUIRED is set
// (.ci/run sets it).
//
// It prints one line a package (ok, FAIL, or no test files), the output
// of each failed test, and then the skipped tests grouped by the reason
// they gave. It exits 1 when a test or a build failed.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// slowToBuild are the modules the quick run leaves out, by directory
// under the repository root, with the reason it prints.
var slowToBuild = map[string]string{
	"adapters/openai": "compiling the OpenAI SDK takes minutes on 2 cores",
}

func main() {
	args := os.Args[1:]
	full := len(args) > 0 && args[0] == "-full"
	if full {
		args = args[1:]
	} else {
		// go vet runs whole over every module in .ci/run: the quick run
		// leaves out the part of it go test runs first, a minute of CPU
		// from a cold build cache.
		args = append([]string{"-short", "-vet=off"}, args...)
	}
	code, err := run(args, full, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// warmer compiles, into the build cache, the outside packages that only
// the later modules' tests import (the model SDK, OpenTelemetry, the
// browser driver), while the first module's tests run. go test runs at
// most -p actions at once, compiles and test binaries alike, and starts
// the test binaries in package order: in a cold build two tests of the
// first module that wait on subprocesses, fsync or PostgreSQL hold both
// slots for minutes while the cores idle, and those packages are compiled
// only after them. One go build at -p=1 fills the idle time without
// running more tests at once; go test then finds them in the cache. It
// starts once the first test binary runs, so that it does not compile the
// standard library alongside go test.
type warmer struct {
	first string   // pattern of the first module
	rest  []string // patterns of the others
	cmd   *exec.Cmd
}

func newWarmer(first string, rest []string) *warmer {
	return &warmer{first: first, rest: rest}
}

// outside lists the packages, outside the workspace and the standard
// library, that the tests of patterns import.
func outside(patterns []string) (map[string]bool, error) {
	const f = `{{if and (not .Standard) .Module}}{{if not .Module.Main}}{{.ImportPath}}{{end}}{{end}}`
	list, err := exec.Command("go", append([]string{"list", "-e", "-deps", "-test", "-f", f}, patterns...)...).Output()
	if err != nil {
		return nil, err
	}
	pkgs := map[string]bool{}
	for _, p := range strings.Fields(string(list)) {
		pkgs[p] = true
	}
	return pkgs, nil
}

// start starts the go build; it fails silently, as go test reports any
// build failure itself.
func (w *warmer) start() {
	theirs, err := outside(w.rest)
	if err != nil {
		return
	}
	ours, err := outside([]string{w.first})
	if err != nil {
		return
	}
	var only []string
	for p := range theirs {
		if !ours[p] {
			only = append(only, p)
		}
	}
	if len(only) == 0 {
		return
	}
	sort.Strings(only)
	w.cmd = exec.Command("go", append([]string{"build", "-p=1"}, only...)...)
	if w.cmd.Start() != nil {
		w.cmd = nil
	}
}

// stop ends the go build if it still runs.
func (w *warmer) stop() {
	if w == nil || w.cmd == nil {
		return
	}
	_ = w.cmd.Process.Kill()
	_ = w.cmd.Wait()
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // of build-output
	Test       string
	Elapsed    float64
	Output     string
}

// run runs go test -json with args over the modules of the workspace,
// all of them when full, else all but slowToBuild, writing the summary to
// out, and returns the exit status.
func run(args []string, full bool, out io.Writer) (int, error) {
	list, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return 0, fmt.Errorf("go list -m: %w", err)
	}
	dirs := strings.Fields(string(list))
	if len(dirs) == 0 {
		return 0, fmt.Errorf("go list -m lists no module: run from the repository root")
	}
	work, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil || strings.TrimSpace(string(work)) == "" || strings.TrimSpace(string(work)) == "off" {
		return 0, fmt.Errorf("no go.work: run from the repository root")
	}
	root := filepath.Dir(strings.TrimSpace(string(work)))
	var patterns, left []string
	for _, dir := range dirs {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return 0, err
		}
		if why, ok := slowToBuild[filepath.ToSlash(rel)]; ok && !full {
			left = append(left, fmt.Sprintf("%s: %s; -full runs it", rel, why))
			continue
		}
		patterns = append(patterns, dir+"/...")
	}
	var warm *warmer
	if !full && len(args) == 1 && len(patterns) > 1 {
		warm = newWarmer(patterns[0], patterns[1:])
	}
	// The tests' temporary directory is one of this run's own: what a
	// test leaves there, outside its t.TempDir, fails the run.
	tmp, err := os.MkdirTemp("", "reprise-tests-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", append(append([]string{"test", "-json"}, args...), patterns...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	// The clients' suites wait mostly on their server and their
	// interpreter: they run beside go test.
	clients := make(chan []clientRun, 1)
	go func() { clients <- runClients(root) }()
	s := newSummary(out)
	if warm != nil {
		s.started = warm.start
	}
	err = s.read(stdout)
	warm.stop()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, err
	}
	failed := cmd.Wait() != nil || s.failed > 0
	if left, err := os.ReadDir(tmp); err != nil {
		fmt.Fprintf(out, "\nThe tests' temporary directory: %v\n", err)
		failed = true
	} else if len(left) > 0 {
		fmt.Fprintln(out, "\nThe tests left files in their temporary directory, outside their t.TempDir:")
		for _, e := range left {
			fmt.Fprintf(out, "\t%s\n", e.Name())
		}
		failed = true
	}
	if reportClients(out, <-clients, s) > 0 {
		failed = true
	}
	s.report()
	if len(left) > 0 {
		fmt.Fprintln(out, "\nModules left out:")
		for _, l := range left {
			fmt.Fprintf(out, "\t%s\n", l)
		}
	}
	if !full {
		fmt.Fprintln(out, "\nThis was the quick run (-short, no -race, no vet); .ci/run runs go vet and everything: go run ./internal/testrun -full -race")
	}
	if failed {
		return 1, nil
	}
	return 0, nil
}

// summary follows the events of a run.
type summary struct {
	out     io.Writer
	output  map[string][]string // a test's output lines so far, by package and test
	skipped map[string][]string // "package.Test" lines, by reason
	passed  int
	failed  int
	started func() // called at the first test binary's start, if set
}

func newSummary(out io.Writer) *summary {
	return &summary{out: out, output: map[string][]string{}, skipped: map[string][]string{}}
}

// read reads the events of a run to their end.
func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if !bytes.HasPrefix(line, []byte("{")) || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(s.out, "%s\n", line)
			continue
		}
		s.add(e)
	}
	return sc.Err()
}

// add takes one event.
func (s *summary) add(e event) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "start":
		if s.started != nil {
			s.started()
			s.started = nil
		}
	case "build-output":
		fmt.Fprint(s.out, e.Output)
	case "output":
		s.output[key] = append(s.output[key], e.Output)
	case "skip":
		if e.Test != "" {
			r := reason(s.output[key])
			s.skipped[r] = append(s.skipped[r], e.Package+" "+e.Test)
		} else {
			fmt.Fprintf(s.out, "?   \t%s\t[no test files]\n", e.Package)
		}
		delete(s.output, key)
	case "pass":
		if e.Test == "" {
			fmt.Fprintf(s.out, "ok  \t%s\t%.1fs\n", e.Package, e.Elapsed)
			s.passed++
		}
		delete(s.output, key)
	case "fail":
		if e.Test == "" {
			for _, l := range s.output[key] { // the package's own output: a panic, a build failure
				if !strings.HasPrefix(l, "FAIL\t"+e.Package) { // go test's own line, printed below
					fmt.Fprint(s.out, l)
				}
			}
			fmt.Fprintf(s.out, "FAIL\t%s\t%.1fs\n", e.Package, e.Elapsed)
			s.failed++
		} else {
			for _, l := range s.output[key] {
				fmt.Fprint(s.out, l)
			}
		}
		delete(s.output, key)
	}
}

// location is the file:line that t.Log and t.Skip put before a message.
var location = regexp.MustCompile(`^\s+\S+\.go:\d+: `)

// reason returns what a skipped test said, without its file and line and
// go test's own lines: "=== RUN", "--- SKIP".
func reason(lines []string) string {
	var said []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		said = append(said, strings.TrimSpace(location.ReplaceAllString(l, "")))
	}
	if len(said) == 0 {
		return "(no reason given)"
	}
	return said[len(said)-1] // t.Skip's message comes last
}

// report prints the totals and the skipped tests, fewest-skipped reason
// last so that the common ones (PostgreSQL) are read first.
func (s *summary) report() {
	n := 0
	for _, tests := range s.skipped {
		n += len(tests)
	}
	fmt.Fprintf(s.out, "\n%d packages passed, %d failed; %d tests skipped", s.passed, s.failed, n)
	if n == 0 {
		fmt.Fprintln(s.out, ".")
		return
	}
	fmt.Fprintln(s.out, ", for these reasons:")
	reasons := make([]string, 0, len(s.skipped))
	for r := range s.skipped {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		a, b := s.skipped[reasons[i]], s.skipped[reasons[j]]
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return reasons[i] < reasons[j]
	})
	for _, r := range reasons {
		fmt.Fprintf(s.out, "\n%s\n", r)
		byPackage := map[string][]string{}
		var packages []string
		for _, t := range s.skipped[r] {
			pkg, test, _ := strings.Cut(t, " ")
			if byPackage[pkg] == nil {
				packages = append(packages, pkg)
			}
			byPackage[pkg] = append(byPackage[pkg], test)
		}
		sort.Strings(packages)
		for _, pkg := range packages {
			tests := byPackage[pkg]
			sort.Strings(tests)
			if len(tests) > 3 {
				tests = append(tests[:3:3], fmt.Sprintf("and %d more", len(tests)-3))
			}
			fmt.Fprintf(s.out, "\t%s: %s\n", pkg, strings.Join(tests, ", "))
		}
	}
}
