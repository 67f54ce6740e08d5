package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/internal/testkit"
)

// readmeDir is the working directory the README's walkthrough shows in its
// output; the test runs it in a temporary directory and writes this path
// in its place.
const readmeDir = "/home/me/src/payments"

// walkStep is one command of a walkthrough and the output shown for it.
type walkStep struct {
	line    int    // of the command in the README
	command string // after "$ "
	output  string // the lines up to the next command, each ending in "\n"
}

// walkthroughs returns the steps of each ```console block of the markdown
// in md: a line "$ COMMAND" is a command, the lines after it until the next
// one are its output.
func walkthroughs(md string) [][]walkStep {
	var blocks [][]walkStep
	var steps []walkStep
	in := false
	for i, line := range strings.Split(md, "\n") {
		switch {
		case !in && line == "```console":
			in, steps = true, nil
		case in && line == "```":
			in, blocks = false, append(blocks, steps)
		case in && strings.HasPrefix(line, "$ "):
			steps = append(steps, walkStep{line: i + 1, command: strings.TrimPrefix(line, "$ ")})
		case in && len(steps) > 0:
			steps[len(steps)-1].output += line + "\n"
		}
	}
	return blocks
}

// The things that differ from run to run, in the order normalize replaces
// them.
var (
	uuidPattern     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timePattern     = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	durationPattern = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s)\b`)
	spacesPattern   = regexp.MustCompile(` +`)
)

// normalize makes a walkthrough's output comparable: each UUID becomes
// <id N>, numbered in the order the walkthrough first shows it (so an id
// shown twice must be the same id twice), times become <time>, hook
// durations <duration>, and runs of spaces one space, since column widths
// follow the durations. ids maps the UUIDs seen so far to their numbers.
func normalize(s string, ids map[string]int) string {
	s = uuidPattern.ReplaceAllStringFunc(s, func(id string) string {
		if _, ok := ids[id]; !ok {
			ids[id] = len(ids) + 1
		}
		return fmt.Sprintf("<id %d>", ids[id])
	})
	s = timePattern.ReplaceAllString(s, "<time>")
	s = durationPattern.ReplaceAllString(s, "<duration>")
	return spacesPattern.ReplaceAllString(s, " ")
}

// The README's shell walkthrough is what the commands print today: each
// ```console block is run, command by command, with the built binary in a
// fresh home and an empty store, and each command's output (stdout and
// stderr as they interleave) must match what the README shows, after
// normalize. A "cat FILE" of a file that does not exist yet shows the
// file the walkthrough starts from: the test writes it first.
func TestREADMEWalkthrough(t *testing.T) {
	c := newBinaryCLI(t)
	data, err := os.ReadFile(testkit.Abs(t, "../../README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := walkthroughs(string(data))
	if len(blocks) == 0 || len(blocks[0]) < 5 {
		t.Fatalf("README.md has no ```console walkthrough to check (found %d blocks)", len(blocks))
	}
	os.Unsetenv(storeEnv) // restored when the test ends: the default store
	path := filepath.Dir(c.binary) + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, steps := range blocks {
		dir := c.mkdir(fmt.Sprintf("walk%d", steps[0].line))
		wantIDs, gotIDs := map[string]int{}, map[string]int{}
		for _, step := range steps {
			if name, ok := strings.CutPrefix(step.command, "cat "); ok && !strings.ContainsAny(name, " <>|") {
				if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
					testkit.WriteFile(t, filepath.Join(dir, name), step.output)
				}
			}
			cmd := exec.Command("/bin/sh", "-c", step.command)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "PATH="+path)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("README.md:%d: $ %s: %v\n%s", step.line, step.command, err, out.String())
			}
			got := strings.ReplaceAll(out.String(), dir, readmeDir)
			if want, got := normalize(step.output, wantIDs), normalize(got, gotIDs); got != want {
				t.Errorf("README.md:%d: $ %s\nthe README shows:\n%s\nthe command prints:\n%s", step.line, step.command, step.output, out.String())
			}
		}
	}
}
