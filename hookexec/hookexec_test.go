package hookexec_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

func TestMatcherFollowsClaudeCodeRules(t *testing.T) {
	cases := []struct {
		matcher string
		value   string
		want    bool
	}{
		{"", "resume", true},
		{"*", "startup", true},
		{"resume", "resume", true},
		{"resume", "resumed", false}, // a single word is exact, not a prefix
		{"startup|resume", "resume", true},
		{"startup|resume", "clear", false},
		{"res.*", "resume", true},
		{"^st", "startup", true},
		{"^st", "restart", false},
		{"sume", "resume", false},  // plain words are exact
		{"(sume)", "resume", true}, // a regular expression is unanchored
		// Claude Code 2.1.328's exact lists: split on '|' or ',', spaces
		// trimmed, '-' allowed.
		{"Edit, Write", "Write", true},
		{"Edit, Write", "Edit", true},
		{"Edit, Write", "Edit, Write", false},
		{"startup,resume", "resume", true},
		{"startup , resume|clear", "clear", true},
		{"code-reviewer", "code-reviewer", true},
		{"code-reviewer", "my-code-reviewer", false}, // a list, not an unanchored pattern
		{"Edit|Write", "MultiEdit", false},
		{"mcp__memory__.*", "mcp__memory__create", true},
		{"mcp__memory__.*", "mcp__github__create", false},
		// A tool's other names in Claude Code: Task is the Agent tool's
		// former name, Artifact a family, mcp__workspace__bash stands in
		// for Bash.
		{"Task", "Agent", true},
		{"Ta.k", "Agent", true},
		{"Bash|Task", "Agent", true},
		{"Bash", "Agent", false},
		{"Agent", "Task", false}, // a host's own Task tool is no Agent
		{"KillBash", "TaskStop", true},
		{"Artifact", "ArtifactComments", true},
		{"Bash", "mcp__workspace__bash", true},
		{"^Bash$", "mcp__workspace__bash", true},
		{"Bash", "mcp__other__bash", false},
	}
	for _, c := range cases {
		m, err := hookexec.ParseMatcher(c.matcher)
		if err != nil {
			t.Fatalf("ParseMatcher(%q): %v", c.matcher, err)
		}
		if got := m.Match(c.value); got != c.want {
			t.Errorf("%q.Match(%q) = %v, want %v", c.matcher, c.value, got, c.want)
		}
	}
	if _, err := hookexec.ParseMatcher("res(ume"); !errors.Is(err, hookexec.ErrBadMatcher) {
		t.Fatalf("invalid regexp: err = %v, want ErrBadMatcher", err)
	}
	// On FileChanged and StopFailure only '|' joins a list: a comma or a
	// space makes a regular expression, as in Claude Code.
	for _, c := range []struct {
		event   hookexec.Event
		matcher string
		value   string
		want    bool
	}{
		{"FileChanged", "app-config", "old-app-config", true}, // '-' is no list character there: an unanchored pattern
		{"FileChanged", "Makefile|go_mod", "go_mod", true},
		{"StopFailure", "rate_limit, overloaded", "overloaded", false},
		{"StopFailure", "rate_limit|overloaded", "overloaded", true},
		{"SessionStart", "startup, resume", "resume", true},
		{hookexec.Stop, "never", "anything", true}, // Stop has no matcher: it is ignored
	} {
		m, err := hookexec.ParseMatcherFor(c.event, c.matcher)
		if err != nil {
			t.Fatalf("ParseMatcherFor(%s, %q): %v", c.event, c.matcher, err)
		}
		if got := m.Match(c.value); got != c.want {
			t.Errorf("%s %q.Match(%q) = %v, want %v", c.event, c.matcher, c.value, got, c.want)
		}
	}
}

func TestRegistryMatchesInConfigurationOrder(t *testing.T) {
	reg := hookexec.NewRegistry()
	noop := func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		return hookexec.SessionStartOutput{}, nil
	}
	reg.OnSessionStart("first", "startup|resume", noop)
	reg.OnSessionStart("startup-only", "startup", noop)
	reg.OnSessionStart("third", "", noop)
	reg.OnSessionEnd("end", "", func(context.Context, hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
		return hookexec.SessionEndOutput{}, nil
	})
	got := hookexec.Names(reg.Match(hookexec.SessionStart, "resume"))
	if strings.Join(got, ",") != "first,third" {
		t.Fatalf("matched %v", got)
	}
	if err := reg.Add(hookexec.Hook{Event: hookexec.SessionStart, Name: "no body"}); !errors.Is(err, hookexec.ErrBadHook) {
		t.Fatalf("hook without a body: err = %v", err)
	}
	if err := reg.OnSessionStart("bad", "a(", noop); !errors.Is(err, hookexec.ErrBadMatcher) {
		t.Fatalf("bad matcher: err = %v", err)
	}
}

func startHook(name string, timeout time.Duration, fn hookexec.SessionStartFunc) hookexec.Hook {
	m, _ := hookexec.ParseMatcher("")
	return hookexec.Hook{Event: hookexec.SessionStart, Name: name, Source: "function", Matcher: m, Timeout: timeout, Body: hookexec.SessionStartFunc(fn)}
}

// All hooks of an event run at once: each waits until every other has
// started, which only finishes if they run in parallel.
func TestHooksRunInParallelAndJoinContextInOrder(t *testing.T) {
	const n = 4
	var started sync.WaitGroup
	started.Add(n)
	var hooks []hookexec.Hook
	for i := range n {
		text := string(rune('A' + i))
		hooks = append(hooks, startHook(text, 5*time.Second, func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			started.Done()
			started.Wait()
			if i == 2 {
				return hookexec.SessionStartOutput{}, nil // empty context is skipped
			}
			return hookexec.SessionStartOutput{AdditionalContext: text + " for " + in.SessionID}, nil
		}))
	}
	outcomes, text := hookexec.RunSessionStart(context.Background(), hooks, hookexec.SessionStartInput{SessionID: "s1", Source: "resume"}, hookexec.CommandEnv{})
	if text != "A for s1\nB for s1\nD for s1" {
		t.Fatalf("context = %q", text)
	}
	for i, o := range outcomes {
		if o.Status != schema.HookOK || o.Name != hooks[i].Name {
			t.Fatalf("outcome %d = %+v", i, o)
		}
	}
}

// Command and function hooks of one event run at once too: each command
// hook makes a file and waits for the other's, and the function hook waits
// for both files.
func TestCommandAndFunctionHooksRunInParallel(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	wait := func(mine, other string) string {
		return fmt.Sprintf("touch %s; i=0; while [ ! -e %s ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; [ -e %s ] && echo %s",
			mine, other, other, filepath.Base(mine))
	}
	m, _ := hookexec.ParseMatcher("")
	hooks := []hookexec.Hook{
		startHook("func", 10*time.Second, func(ctx context.Context, _ hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			for {
				_, errA := os.Stat(a)
				_, errB := os.Stat(b)
				if errA == nil && errB == nil {
					return hookexec.SessionStartOutput{AdditionalContext: "func"}, nil
				}
				select {
				case <-ctx.Done():
					return hookexec.SessionStartOutput{}, ctx.Err()
				case <-time.After(10 * time.Millisecond):
				}
			}
		}),
		{Event: hookexec.SessionStart, Matcher: m, Body: hookexec.Command{Line: wait(a, b)}, Timeout: 10 * time.Second},
		{Event: hookexec.SessionStart, Matcher: m, Body: hookexec.Command{Line: wait(b, a)}, Timeout: 10 * time.Second},
	}
	outcomes, text := hookexec.RunSessionStart(context.Background(), hooks, hookexec.SessionStartInput{}, hookexec.CommandEnv{ProjectDir: dir})
	for i, o := range outcomes {
		if o.Status != schema.HookOK {
			t.Errorf("outcome %d = %+v", i, o)
		}
	}
	if text != "func\na\nb" {
		t.Fatalf("context = %q, want the three in configuration order", text)
	}
}

// A function hook's outcome is decided by when it answered, not by when its
// answer was collected: here a command hook runs for longer than the
// function hooks' timeout before they are collected.
func TestFunctionHookJudgedByWhenItAnswered(t *testing.T) {
	m, _ := hookexec.ParseMatcher("")
	hooks := []hookexec.Hook{
		startHook("quick", 100*time.Millisecond, func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			return hookexec.SessionStartOutput{AdditionalContext: "in time"}, nil
		}),
		startHook("slow", 100*time.Millisecond, func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			time.Sleep(250 * time.Millisecond) // ignores its context, then answers late
			return hookexec.SessionStartOutput{AdditionalContext: "too late"}, nil
		}),
		{Event: hookexec.SessionStart, Matcher: m, Body: hookexec.Command{Line: "sleep 0.6"}, Timeout: 10 * time.Second},
	}
	outcomes, text := hookexec.RunSessionStart(context.Background(), hooks, hookexec.SessionStartInput{}, hookexec.CommandEnv{ProjectDir: t.TempDir()})
	want := []string{schema.HookOK, schema.HookTimedOut, schema.HookOK}
	for i, o := range outcomes {
		if o.Status != want[i] {
			t.Errorf("outcome %d = %+v, want status %s", i, o, want[i])
		}
	}
	if text != "in time" {
		t.Fatalf("context = %q, want only the hook that answered in time", text)
	}
}

func TestFailuresAreOutcomesNotErrors(t *testing.T) {
	hooks := []hookexec.Hook{
		startHook("err", 0, func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			return hookexec.SessionStartOutput{AdditionalContext: "ignored"}, errors.New("no database")
		}),
		startHook("panic", 0, func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			panic("cache not loaded")
		}),
		startHook("stuck", 20*time.Millisecond, func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			select {} // ignores its context entirely
		}),
	}
	outcomes, text := hookexec.RunSessionStart(context.Background(), hooks, hookexec.SessionStartInput{}, hookexec.CommandEnv{})
	if text != "" {
		t.Fatalf("failed hooks gave context %q", text)
	}
	want := []string{schema.HookFailed, schema.HookPanicked, schema.HookTimedOut}
	for i, o := range outcomes {
		if o.Status != want[i] || o.Error == "" {
			t.Errorf("outcome %d = %+v, want status %s with an error", i, o, want[i])
		}
	}
	if !strings.Contains(outcomes[0].Error, "no database") || outcomes[1].Error != "panic: cache not loaded" {
		t.Fatalf("errors not kept: %+v", outcomes)
	}
}

// A caller that has given up before the hooks run gets them all
// cancelled, and none of them is started.
func TestCancelledCallerCancelsHooks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var started atomic.Bool
	hooks := []hookexec.Hook{startHook("waits", time.Minute, func(ctx context.Context, _ hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		started.Store(true)
		<-ctx.Done()
		return hookexec.SessionStartOutput{}, ctx.Err()
	})}
	outcomes, _ := hookexec.RunSessionStart(ctx, hooks, hookexec.SessionStartInput{}, hookexec.CommandEnv{})
	if s := outcomes[0].Status; s != schema.HookCancelled {
		t.Fatalf("status = %s, want cancelled", s)
	}
	time.Sleep(10 * time.Millisecond) // a hook started by mistake has run by now
	if started.Load() {
		t.Fatal("the hook was started for a caller that had given up")
	}
}

func TestSessionEndHooksGetTheirInput(t *testing.T) {
	var got hookexec.SessionEndInput
	m, _ := hookexec.ParseMatcher("resume")
	hooks := []hookexec.Hook{{Event: hookexec.SessionEnd, Name: "e", Matcher: m, Body: hookexec.SessionEndFunc(func(_ context.Context, in hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
		got = in
		return hookexec.SessionEndOutput{}, nil
	})}}
	in := hookexec.SessionEndInput{SessionID: "s", Cwd: "/w", Reason: "resume", Timestamp: 42}
	outcomes := hookexec.RunSessionEnd(context.Background(), hooks, in, hookexec.CommandEnv{})
	if !reflect.DeepEqual(got, in) || outcomes[0].Status != schema.HookOK {
		t.Fatalf("input %+v outcome %+v", got, outcomes[0])
	}
}
