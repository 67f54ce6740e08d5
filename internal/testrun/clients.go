package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// requireClientsEnv, when set, makes a client suite whose tools are
// missing a failure rather than a skip: .ci/run sets it, having installed
// them.
const requireClientsEnv = "REPRISE_TEST_CLIENTS_REQUIRED"

// clientSuite is the test suite of a client of the write API in another
// language, run in its directory against a real reprise serve --write
// (REPRISE_BIN names the binary its tests start).
type clientSuite struct {
	dir string
	// tools are the interpreters it may run on, the first that answers
	// its probe (the system's python3 has Debian's pytest, a pyenv one may
	// not); the steps then run with it in place of the word "TOOL".
	tools []string
	probe []string
	steps [][]string
}

var clientSuites = []clientSuite{
	{dir: "clients/typescript", tools: []string{"npm"}, probe: []string{"--version"},
		steps: [][]string{{"TOOL", "ci", "--no-audit", "--no-fund", "--loglevel=error"}, {"TOOL", "run", "--silent", "check-types"}, {"TOOL", "test", "--silent"}}},
	{dir: "clients/python", tools: []string{"python3", "/usr/bin/python3"}, probe: []string{"-m", "pytest", "--version"},
		steps: [][]string{{"TOOL", "scripts/gen_types.py", "--check"}, {"TOOL", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"}}},
}

// clientRun is how one suite ended.
type clientRun struct {
	dir     string
	skipped string // why it did not run, "" when it ran
	failed  bool
	output  []byte
	elapsed time.Duration
}

// runClients builds reprise into a temporary directory and runs every
// client suite at once, under root; it returns when they are all done.
func runClients(root string) []clientRun {
	tmp, err := os.MkdirTemp("", "reprise-testrun-")
	if err != nil {
		return []clientRun{{dir: "clients", failed: true, output: []byte(err.Error())}}
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "reprise")
	build := exec.Command("go", "build", "-o", bin, "./cmd/reprise")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return []clientRun{{dir: "clients", failed: true, output: append(out, err.Error()...)}}
	}
	runs := make([]clientRun, len(clientSuites))
	var wg sync.WaitGroup
	for i, s := range clientSuites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = s.run(root, bin)
		}()
	}
	wg.Wait()
	return runs
}

// run runs s against the binary bin.
func (s clientSuite) run(root, bin string) clientRun {
	r := clientRun{dir: s.dir}
	tool := ""
	for _, t := range s.tools {
		if exec.Command(t, s.probe...).Run() == nil {
			tool = t
			break
		}
	}
	if tool == "" {
		r.skipped = fmt.Sprintf("%s needs %s (%s %s answering), which this machine lacks", s.dir, s.tools[0], s.tools[0], strings.Join(s.probe, " "))
		if os.Getenv(requireClientsEnv) != "" {
			r.failed, r.output, r.skipped = true, []byte(r.skipped+"\n"), ""
		}
		return r
	}
	began := time.Now()
	for _, step := range s.steps {
		args := append([]string{}, step...)
		args[0] = tool
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = filepath.Join(root, s.dir)
		cmd.Env = append(os.Environ(), "REPRISE_BIN="+bin)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			r.failed = true
			r.output = append(r.output, fmt.Sprintf("$ %s\n", strings.Join(args, " "))...)
			r.output = append(r.output, out.Bytes()...)
			r.output = append(r.output, fmt.Sprintf("%v\n", err)...)
			break
		}
	}
	r.elapsed = time.Since(began)
	return r
}

// reportClients prints a line a suite, the output of a failed one, and
// adds the skipped ones to s; it returns how many failed.
func reportClients(out io.Writer, runs []clientRun, s *summary) int {
	failed := 0
	for _, r := range runs {
		switch {
		case r.skipped != "":
			s.skipped[r.skipped] = append(s.skipped[r.skipped], r.dir+" (its whole suite)")
		case r.failed:
			out.Write(r.output)
			fmt.Fprintf(out, "FAIL\t%s\t%.1fs\n", r.dir, r.elapsed.Seconds())
			failed++
		default:
			fmt.Fprintf(out, "ok  \t%s\t%.1fs\n", r.dir, r.elapsed.Seconds())
			s.passed++
		}
	}
	return failed
}
