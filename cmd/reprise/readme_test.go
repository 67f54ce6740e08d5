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

// fence returns the lines of the first ```lang block after the line
// heading in md.
func fence(t *testing.T, md, heading, lang string) string {
	t.Helper()
	_, rest, ok := strings.Cut(md, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "\n```"+lang+"\n")
	if !ok {
		t.Fatalf("README.md has no ```%s block under %q", lang, heading)
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatalf("README.md's ```%s block under %q does not end", lang, heading)
	}
	return block + "\n"
}

// The README says how to depend on the unpublished module: its two
// commands, run in a new module beside a clone (here a link to this
// repository) with no network, give a go.mod that builds the README's Go
// code, wrapped in a function.
func TestREADMEDependOnAClone(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	data, err := os.ReadFile(testkit.Abs(t, "../../README.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(data)
	commands, code := fence(t, md, "## Use it from Go", "sh"), fence(t, md, "## Use it from Go", "go")
	dir := t.TempDir()
	if err := os.Symlink(testkit.Abs(t, "../.."), filepath.Join(dir, "reprise")); err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(dir, "host")
	testkit.WriteFile(t, filepath.Join(host, "go.mod"), "module example.com/host\n\ngo 1.26.8\n")
	testkit.WriteFile(t, filepath.Join(host, "main.go"), `package main

import (
	"context"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
)

func main() { _ = run(context.Background(), "") }

func run(ctx context.Context, other string) error {
`+code+`	_ = r
	return nil
}
`)
	// Offline: modules come from the module cache alone.
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(strings.TrimSpace(string(modcache)), "cache", "download")
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=file://"+cache, "GOSUMDB=off", "GOTOOLCHAIN=local")
	for _, line := range append(strings.Split(strings.TrimSpace(commands), "\n"), "go build -o /dev/null .") {
		cmd := exec.Command("/bin/sh", "-c", line)
		cmd.Dir, cmd.Env = host, env
		out, err := cmd.CombinedOutput()
		if err != nil && bytes.Contains(out, []byte(cache)) && bytes.Contains(out, []byte("no such file")) {
			t.Skipf("the module cache lacks a module the repository's go.mod requires, and this test stays offline: "+
				"run GOWORK=off go mod download in the repository first (.ci/run does)\n%s", out)
		}
		if err != nil {
			t.Fatalf("$ %s: %v\n%s", line, err, out)
		}
	}
}
