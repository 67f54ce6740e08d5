package proptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
)

// Hook behaviours. A function hook or a command hook acts out one of them
// on each run; the model knows what each leads to.
const (
	behaveContext = "text"  // succeeds with context (function hooks and command hooks printing text)
	behaveJSON    = "json"  // succeeds with context given as Claude Code JSON (command hooks)
	behaveEmpty   = "empty" // succeeds with no output
	behaveFail    = "fail"  // returns an error, or exits 2
	behavePanic   = "panic" // panics (function hooks)
	behaveHang    = "hang"  // never answers: its timeout stops it
	behaveBlock   = "block" // a Stop hook that blocks the stop
)

// stopReason is why a blocking Stop hook blocks.
const stopReason = "the tests are not green yet"

// stopFunc is a Stop hook tagged tag that records its run, with the
// stop_hook_active it got, and blocks when its behaviour says so.
func stopFunc(tag string, side *sideFile, behave func() string) hookexec.StopFunc {
	return func(ctx context.Context, in hookexec.StopInput) (hookexec.StopOutput, error) {
		if err := side.appendRun(runLine(hookexec.Stop, in.SessionID, fmt.Sprint(in.StopHookActive), tag)); err != nil {
			return hookexec.StopOutput{}, err
		}
		if behave() == behaveBlock {
			return hookexec.StopOutput{Decision: "block", Reason: stopReason}, nil
		}
		return hookexec.StopOutput{}, nil
	}
}

// hangTimeout is the timeout of hooks that hang on purpose. Only those have
// a short timeout, so a slow machine cannot make a working hook time out.
const hangTimeout = 30 * time.Millisecond

// workingTimeout is the timeout of every other hook.
const workingTimeout = 10 * time.Second

// fataler is what helpers need of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

// hookScript returns the absolute path of testdata/hooks/hook.sh.
func hookScript(t fataler) string {
	t.Helper()
	return testkit.Script(t, "hook.sh")
}

// hookContext is the context a succeeding hook tagged tag returns when it
// runs for session with source (or reason) value. Function hooks and
// testdata/hooks/hook.sh build it the same way.
func hookContext[V ~string](tag, session string, value V) string {
	return tag + " for " + session + " " + string(value)
}

// runLine is how a hook run is written to the side file.
func runLine[V ~string](event hookexec.Event, session string, value V, tag string) string {
	return strings.Join([]string{string(event), session, string(value), tag}, " ")
}

// sideFile is the file every hook run appends one line to, so that tests
// observe runs instead of trusting the log's account of them. Command hooks
// append to it from their own processes; function hooks through appendRun.
type sideFile struct {
	path string
	mu   sync.Mutex
	read int // bytes already returned by newRuns
}

func newSideFile(dir string) *sideFile {
	return &sideFile{path: filepath.Join(dir, "runs")}
}

// appendRun records one run. It returns when the line is in the file.
func (s *sideFile) appendRun(line string) error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	return errors.Join(err, f.Close())
}

// all returns every run recorded so far, in the order they were written.
func (s *sideFile) all() ([]string, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return splitLines(string(data)), nil
}

// newRuns returns the runs recorded since its last call.
func (s *sideFile) newRuns() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(data) < s.read {
		return nil, fmt.Errorf("side file shrank from %d to %d bytes", s.read, len(data))
	}
	fresh := string(data[s.read:])
	if i := strings.LastIndexByte(fresh, '\n'); i >= 0 {
		fresh = fresh[:i+1]
	} else {
		fresh = ""
	}
	s.read += len(fresh)
	return splitLines(fresh), nil
}

func splitLines(s string) []string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

// behaviours holds the current behaviour of each function hook slot of a
// registry, so that a test can change what a registered hook does.
type behaviours struct {
	mu sync.Mutex
	m  map[string]string
}

func (b *behaviours) get(slot string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[slot]
}

func (b *behaviours) set(slot, behaviour string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]string{}
	}
	b.m[slot] = behaviour
}

// startFunc returns a SessionStart function hook tagged tag that records
// its runs in side and acts out the behaviour behave returns at each run.
func startFunc(tag string, side *sideFile, behave func() string) hookexec.SessionStartFunc {
	return func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		text, err := act(ctx, behave(), side, runLine(hookexec.SessionStart, in.SessionID, in.Source, tag), hookContext(tag, in.SessionID, in.Source))
		return hookexec.SessionStartOutput{AdditionalContext: text}, err
	}
}

// endFunc is startFunc for SessionEnd.
func endFunc(tag string, side *sideFile, behave func() string) hookexec.SessionEndFunc {
	return func(ctx context.Context, in hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
		_, err := act(ctx, behave(), side, runLine(hookexec.SessionEnd, in.SessionID, in.Reason, tag), "")
		return hookexec.SessionEndOutput{SessionSummary: "ended " + in.SessionID}, err
	}
}

// act is the body of every function hook: record the run, then behave.
func act(ctx context.Context, behaviour string, side *sideFile, line, text string) (string, error) {
	if behaviour == behaveHang {
		<-ctx.Done()
		return "too late", ctx.Err()
	}
	if err := side.appendRun(line); err != nil {
		return "", err
	}
	switch behaviour {
	case behaveContext, behaveJSON:
		return text, nil
	case behaveFail:
		return "context of a failed hook", errors.New("failing on purpose")
	case behavePanic:
		panic("panicking on purpose")
	}
	return "", nil
}

// commandLine is the command of a testdata/hooks/hook.sh hook.
func commandLine(script, tag, mode, side string) string {
	return strings.Join([]string{script, tag, mode, side}, " ")
}
