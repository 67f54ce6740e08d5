package hookexec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/schema"
)

// scopedCommand is a SessionStart command hook matching every source.
func scopedCommand(line string) hookexec.Hook {
	return hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.Command{Line: line}}
}

// scopedFunc is a named SessionStart function hook that returns err.
func scopedFunc(name string, err error) hookexec.Hook {
	return hookexec.Hook{Event: hookexec.SessionStart, Name: name,
		Body: hookexec.SessionStartFunc(func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			return hookexec.SessionStartOutput{AdditionalContext: name}, err
		})}
}

func mustAddWith(t *testing.T, s *hookexec.Scoped, session string, h hookexec.Hook, o hookexec.ScopedOptions) string {
	t.Helper()
	id, err := s.AddWith(session, h, o)
	if err != nil {
		t.Fatalf("AddWith(%s, %s, %+v): %v", session, h.Name, o, err)
	}
	return id
}

// outcome is the outcome of h with status.
func outcome(h hookexec.Hook, status string) schema.HookOutcome {
	name := h.Name
	if name == "" {
		name = h.CommandLine()
	}
	return schema.HookOutcome{Name: name, Source: h.Source, Status: status, Error: "original error"}
}

// listIDs returns the ids List returns.
func listIDs(s *hookexec.Scoped, session string, event hookexec.Event) []string {
	var ids []string
	for _, sh := range s.List(session, event) {
		ids = append(ids, sh.ID)
	}
	return ids
}

func TestScopedAddGeneratesIDsAndDedupes(t *testing.T) {
	var s hookexec.Scoped
	first, err := s.Add("a", scopedCommand("echo one"))
	if err != nil || first == "" {
		t.Fatalf("Add = %q, %v", first, err)
	}
	again, _ := s.Add("a", scopedCommand("echo one"))
	other, _ := s.Add("a", scopedCommand("echo two"))
	if again != first || other == first {
		t.Errorf("ids: first %q, equal hook %q, other hook %q", first, again, other)
	}
	hooks := s.Match("a", hookexec.SessionStart, "resume")
	if len(hooks) != 2 || hooks[0].Source != hookexec.ScopedSource || hooks[0].Name != "echo one" {
		t.Errorf("Match = %+v", hooks)
	}
}

func TestScopedChosenIDIsReturned(t *testing.T) {
	var s hookexec.Scoped
	if id := mustAddWith(t, &s, "a", scopedCommand("echo one"), hookexec.ScopedOptions{ID: "lint"}); id != "lint" {
		t.Fatalf("id = %q, want lint", id)
	}
	if got := listIDs(&s, "a", ""); !reflect.DeepEqual(got, []string{"lint"}) {
		t.Errorf("List = %v", got)
	}
	if !s.Remove("a", "lint") || len(s.List("a", "")) != 0 {
		t.Error("Remove by the chosen id did not remove the hook")
	}
}

func TestScopedChosenIDInUseIsAnError(t *testing.T) {
	var s hookexec.Scoped
	mustAddWith(t, &s, "a", scopedCommand("echo one"), hookexec.ScopedOptions{ID: "lint"})
	_, err := s.AddWith("a", scopedCommand("echo two"), hookexec.ScopedOptions{ID: "lint"})
	if !errors.Is(err, hookexec.ErrHookIDInUse) {
		t.Errorf("same id, other hook: %v, want ErrHookIDInUse", err)
	}
	if id := mustAddWith(t, &s, "b", scopedCommand("echo two"), hookexec.ScopedOptions{ID: "lint"}); id != "lint" {
		t.Errorf("other session: id %q, want lint", id)
	}
	if got := s.Match("a", hookexec.SessionStart, "startup"); len(got) != 1 || got[0].CommandLine() != "echo one" {
		t.Errorf("the refused hook was added: %+v", got)
	}
}

func TestScopedEqualHookKeepsFirstIDAndOptions(t *testing.T) {
	var s hookexec.Scoped
	first := mustAddWith(t, &s, "a", scopedCommand("echo one"), hookexec.ScopedOptions{ErrorMessage: "first"})
	again := mustAddWith(t, &s, "a", scopedCommand("echo one"), hookexec.ScopedOptions{ID: "mine", ErrorMessage: "second"})
	if again != first {
		t.Errorf("equal hook: id %q, want the first %q", again, first)
	}
	list := s.List("a", "")
	if len(list) != 1 || list[0].Options.ErrorMessage != "first" {
		t.Errorf("List = %+v, want one hook with the first options", list)
	}
}

func TestScopedGeneratedIDSkipsChosenOnes(t *testing.T) {
	var s hookexec.Scoped
	mustAddWith(t, &s, "a", scopedCommand("echo one"), hookexec.ScopedOptions{ID: "sh-2"})
	id := mustAddWith(t, &s, "a", scopedCommand("echo two"), hookexec.ScopedOptions{})
	if id == "sh-2" || id == "" {
		t.Errorf("generated id %q collides with a chosen one", id)
	}
	if n := len(s.List("a", "")); n != 2 {
		t.Errorf("%d hooks, want 2", n)
	}
}

func TestScopedListByEventInOrder(t *testing.T) {
	var s hookexec.Scoped
	end := hookexec.Hook{Event: hookexec.SessionEnd, Body: hookexec.Command{Line: "echo end"}}
	onSuccess := func(schema.HookOutcome) {}
	a := mustAddWith(t, &s, "x", scopedCommand("echo a"), hookexec.ScopedOptions{Once: true})
	e := mustAddWith(t, &s, "x", end, hookexec.ScopedOptions{ID: "end"})
	b := mustAddWith(t, &s, "x", scopedCommand("echo b"), hookexec.ScopedOptions{ErrorMessage: "b failed", OnSuccess: onSuccess})
	mustAddWith(t, &s, "y", scopedCommand("echo other session"), hookexec.ScopedOptions{})
	if got := listIDs(&s, "x", hookexec.SessionStart); !reflect.DeepEqual(got, []string{a, b}) {
		t.Errorf("SessionStart: %v, want %v", got, []string{a, b})
	}
	if got := listIDs(&s, "x", hookexec.SessionEnd); !reflect.DeepEqual(got, []string{e}) {
		t.Errorf("SessionEnd: %v", got)
	}
	if got := listIDs(&s, "x", ""); !reflect.DeepEqual(got, []string{a, e, b}) {
		t.Errorf("all: %v, want %v", got, []string{a, e, b})
	}
	list := s.List("x", hookexec.SessionStart)
	if o := list[0].Options; !o.Once || o.ID != a {
		t.Errorf("options of %s: %+v", a, o)
	}
	if o := list[1].Options; o.ErrorMessage != "b failed" || o.OnSuccess == nil {
		t.Errorf("options of %s: %+v", b, o)
	}
	if h := list[1].Hook; h.Source != hookexec.ScopedSource || h.CommandLine() != "echo b" {
		t.Errorf("hook of %s: %+v", b, h)
	}
	if got := s.List("none", ""); got != nil {
		t.Errorf("unknown session: %v", got)
	}
}

func TestSettleReplacesErrorOfFailedScopedHooks(t *testing.T) {
	var s hookexec.Scoped
	mustAddWith(t, &s, "a", scopedCommand("echo one"), hookexec.ScopedOptions{ErrorMessage: "lint hook failed"})
	mustAddWith(t, &s, "a", scopedCommand("echo plain"), hookexec.ScopedOptions{})
	scoped := s.Match("a", hookexec.SessionStart, "startup")
	// A settings hook with the same command is not the scoped one.
	configured := scopedCommand("echo one")
	configured.Name, configured.Source = "echo one", "/home/u/.claude/settings.json"
	hooks := append(scoped, configured)
	for _, status := range []string{schema.HookFailed, schema.HookTimedOut, schema.HookCancelled, schema.HookPanicked} {
		in := []schema.HookOutcome{outcome(hooks[0], status), outcome(hooks[1], status), outcome(hooks[2], status)}
		keep := append([]schema.HookOutcome(nil), in...)
		out := s.Settle("a", hooks, in)
		if out[0].Error != "lint hook failed" {
			t.Errorf("%s: scoped hook's error %q, want its ErrorMessage", status, out[0].Error)
		}
		if out[1].Error != "original error" || out[2].Error != "original error" {
			t.Errorf("%s: hooks without ErrorMessage changed: %q, %q", status, out[1].Error, out[2].Error)
		}
		if !reflect.DeepEqual(in, keep) {
			t.Errorf("%s: Settle modified its input", status)
		}
	}
	ok := s.Settle("a", hooks, []schema.HookOutcome{outcome(hooks[0], schema.HookOK)})
	if ok[0].Error != "original error" {
		t.Errorf("ok outcome's error changed to %q", ok[0].Error)
	}
}

func TestSettleCallsOnSuccessAfterOKOutcomes(t *testing.T) {
	var s hookexec.Scoped
	var got []schema.HookOutcome
	mustAddWith(t, &s, "a", scopedFunc("fmt", nil), hookexec.ScopedOptions{
		OnSuccess: func(o schema.HookOutcome) { got = append(got, o) },
	})
	hooks := s.Match("a", hookexec.SessionStart, "resume")
	s.Settle("a", hooks, []schema.HookOutcome{outcome(hooks[0], schema.HookFailed)})
	if len(got) != 0 {
		t.Fatalf("OnSuccess called for a failure: %+v", got)
	}
	s.Settle("a", hooks, []schema.HookOutcome{outcome(hooks[0], schema.HookOK)})
	s.Settle("a", hooks, []schema.HookOutcome{outcome(hooks[0], schema.HookOK)})
	if len(got) != 2 || got[0].Name != "fmt" || got[0].Status != schema.HookOK {
		t.Errorf("OnSuccess got %+v, want two ok outcomes of fmt", got)
	}
}

func TestSettleIgnoresAPanickingOnSuccess(t *testing.T) {
	var s hookexec.Scoped
	called := false
	mustAddWith(t, &s, "a", scopedFunc("boom", nil), hookexec.ScopedOptions{OnSuccess: func(schema.HookOutcome) { panic("host bug") }})
	mustAddWith(t, &s, "a", scopedFunc("after", nil), hookexec.ScopedOptions{OnSuccess: func(schema.HookOutcome) { called = true }})
	hooks := s.Match("a", hookexec.SessionStart, "resume")
	out := s.Settle("a", hooks, []schema.HookOutcome{outcome(hooks[0], schema.HookOK), outcome(hooks[1], schema.HookOK)})
	if len(out) != 2 || !called {
		t.Errorf("after a panicking callback: outcomes %+v, next callback called %v", out, called)
	}
}

func TestOnceHookIsRemovedAfterItsFirstSuccess(t *testing.T) {
	var s hookexec.Scoped
	calls := 0
	id := mustAddWith(t, &s, "a", scopedCommand("echo once"), hookexec.ScopedOptions{Once: true, OnSuccess: func(schema.HookOutcome) { calls++ }})
	hooks := s.Match("a", hookexec.SessionStart, "resume")
	s.Settle("a", hooks, []schema.HookOutcome{outcome(hooks[0], schema.HookFailed)})
	if got := listIDs(&s, "a", ""); !reflect.DeepEqual(got, []string{id}) {
		t.Fatalf("after a failure: %v, want the once hook kept", got)
	}
	s.Settle("a", hooks, []schema.HookOutcome{outcome(hooks[0], schema.HookOK)})
	if got := s.List("a", ""); got != nil || calls != 1 {
		t.Fatalf("after a success: hooks %v, OnSuccess calls %d; want none left, 1 call", got, calls)
	}
	s.Settle("a", hooks, []schema.HookOutcome{outcome(hooks[0], schema.HookOK)})
	if calls != 1 {
		t.Errorf("a settled once hook's OnSuccess ran again (%d calls)", calls)
	}
	// The same hook may be added again, and runs once more.
	if _, err := s.Add("a", scopedCommand("echo once")); err != nil {
		t.Fatal(err)
	}
}

func TestSettleWithoutScopedHooks(t *testing.T) {
	var s hookexec.Scoped
	if out := s.Settle("a", nil, nil); out != nil {
		t.Errorf("no outcomes: %v, want nil", out)
	}
	h := scopedCommand("echo x")
	h.Source = hookexec.ScopedSource
	in := []schema.HookOutcome{outcome(h, schema.HookFailed)}
	out := s.Settle("unknown", []hookexec.Hook{h}, in)
	if !reflect.DeepEqual(out, in) || &out[0] == &in[0] {
		t.Errorf("unknown session: %+v, want an unchanged copy", out)
	}
	// A removed hook's options no longer apply.
	id := mustAddWith(t, &s, "a", h, hookexec.ScopedOptions{ErrorMessage: "custom"})
	s.Remove("a", id)
	if out := s.Settle("a", []hookexec.Hook{h}, in); out[0].Error != "original error" {
		t.Errorf("removed hook: error %q", out[0].Error)
	}
	// More outcomes than hooks: the extra ones are copied.
	if out := s.Settle("a", nil, in); !reflect.DeepEqual(out, in) {
		t.Errorf("outcomes without hooks: %+v", out)
	}
}

func TestSettleRealRunOutcomes(t *testing.T) {
	var s hookexec.Scoped
	var succeeded []string
	record := func(o schema.HookOutcome) { succeeded = append(succeeded, o.Name) }
	mustAddWith(t, &s, "a", scopedFunc("good", nil), hookexec.ScopedOptions{OnSuccess: record, Once: true})
	mustAddWith(t, &s, "a", scopedFunc("bad", errors.New("exit 3")), hookexec.ScopedOptions{ErrorMessage: "the bad hook failed", OnSuccess: record})
	hooks := s.Match("a", hookexec.SessionStart, "resume")
	outcomes, _ := hookexec.RunSessionStart(context.Background(), hooks, hookexec.SessionStartInput{SessionID: "a", Source: "resume"}, hookexec.CommandEnv{})
	out := s.Settle("a", hooks, outcomes)
	if out[0].Status != schema.HookOK || out[1].Status != schema.HookFailed || out[1].Error != "the bad hook failed" {
		t.Errorf("settled outcomes: %+v", out)
	}
	if !reflect.DeepEqual(succeeded, []string{"good"}) {
		t.Errorf("OnSuccess called for %v", succeeded)
	}
	if got := s.Match("a", hookexec.SessionStart, "resume"); len(got) != 1 || got[0].Name != "bad" {
		t.Errorf("after the run: %+v, want only bad (good was once)", got)
	}
}

func TestConcurrentSettleRunsAOnceHookOnce(t *testing.T) {
	var s hookexec.Scoped
	var calls atomic.Int32
	mustAddWith(t, &s, "a", scopedCommand("echo once"), hookexec.ScopedOptions{Once: true, OnSuccess: func(schema.HookOutcome) { calls.Add(1) }})
	hooks := s.Match("a", hookexec.SessionStart, "resume")
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() { s.Settle("a", hooks, []schema.HookOutcome{outcome(hooks[0], schema.HookOK)}) })
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("OnSuccess called %d times, want 1", n)
	}
	if got := s.List("a", ""); got != nil {
		t.Errorf("once hook still there: %+v", got)
	}
}

func TestScopedIsSafeForConcurrentUse(t *testing.T) {
	var s hookexec.Scoped
	var calls atomic.Int32
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			session := fmt.Sprintf("s%d", g%2) // two sessions, four writers each
			for i := range 50 {
				h := scopedCommand(fmt.Sprintf("echo %d-%d", g, i))
				id, err := s.AddWith(session, h, hookexec.ScopedOptions{
					ID:        fmt.Sprintf("g%d-%d", g, i),
					Once:      i%2 == 0,
					OnSuccess: func(schema.HookOutcome) { calls.Add(1) },
				})
				if err != nil {
					t.Error(err)
					return
				}
				hooks := s.Match(session, hookexec.SessionStart, "resume")
				outcomes := make([]schema.HookOutcome, len(hooks))
				for j, h := range hooks {
					outcomes[j] = outcome(h, schema.HookOK)
				}
				s.Settle(session, hooks, outcomes)
				s.List(session, "")
				if i%3 == 0 {
					s.Remove(session, id)
				}
			}
		})
	}
	wg.Wait()
	for _, session := range []string{"s0", "s1"} {
		for _, sh := range s.List(session, "") {
			if sh.Options.Once {
				t.Errorf("%s: once hook %s survived its successes", session, sh.ID)
			}
		}
	}
	if calls.Load() == 0 {
		t.Error("no OnSuccess call")
	}
}

// A skill's or subagent's frontmatter hooks are added to a session with
// their "once" honoured, as Claude Code honours it there, and removed by
// their ids when the skill ends.
func TestFrontmatterHooksHonourOnce(t *testing.T) {
	var s hookexec.Scoped
	frontmatter := json.RawMessage(`{"PreToolUse": [{"matcher": "Bash", "hooks": [
		{"type": "command", "command": "echo every", "if": "Bash(git *)"},
		{"type": "command", "command": "echo first", "once": true}]}]}`)
	ids, err := s.AddFrontmatter("s1", "skill:deploy", frontmatter)
	if err != nil || len(ids) != 2 {
		t.Fatalf("ids %v, %v", ids, err)
	}
	hooks := s.Match("s1", hookexec.PreToolUse, "Bash")
	if len(hooks) != 2 || hooks[0].If != "Bash(git *)" {
		t.Fatalf("matched %+v", hooks)
	}
	ok := []schema.HookOutcome{{Name: hooks[0].Name, Source: hookexec.ScopedSource, Status: schema.HookOK}, {Name: hooks[1].Name, Source: hookexec.ScopedSource, Status: schema.HookOK}}
	s.Settle("s1", hooks, ok)
	if left := s.Match("s1", hookexec.PreToolUse, "Bash"); len(left) != 1 || left[0].CommandLine() != "echo every" {
		t.Fatalf("after one run: %+v, want only the hook without once", left)
	}
	for _, id := range ids {
		s.Remove("s1", id)
	}
	if left := s.Match("s1", hookexec.PreToolUse, "Bash"); len(left) != 0 {
		t.Fatalf("after the skill ended: %+v", left)
	}
	if _, err := s.AddFrontmatter("s1", "skill:bad", json.RawMessage(`{"PreToolUse": [{"hooks": [{"type": "command", "command": ""}]}]}`)); !errors.Is(err, hookexec.ErrBadConfig) || !strings.Contains(err.Error(), "skill:bad") {
		t.Fatalf("bad frontmatter: %v", err)
	}
}

// ListFunctions lists a session's Go hooks only, of any event, Notification
// and CwdChanged among them, in the order they were added.
func TestScopedListFunctionsLeavesCommandsOut(t *testing.T) {
	var s hookexec.Scoped
	fn := hookexec.EventFunc(func(context.Context, hookexec.EventInput) (hookexec.EventOutput, error) {
		return hookexec.EventOutput{}, nil
	})
	n := mustAddWith(t, &s, "x", hookexec.Hook{Event: schema.HookNotification, Body: fn}, hookexec.ScopedOptions{ID: "notify"})
	mustAddWith(t, &s, "x", scopedCommand("echo a"), hookexec.ScopedOptions{})
	c := mustAddWith(t, &s, "x", hookexec.Hook{Event: schema.HookCwdChanged, Body: fn}, hookexec.ScopedOptions{ID: "cd"})
	got := s.ListFunctions("x", "")
	if len(got) != 2 || got[0].ID != n || got[1].ID != c || len(s.List("x", "")) != 3 {
		t.Fatalf("ListFunctions = %+v", got)
	}
	if got := s.ListFunctions("x", schema.HookCwdChanged); len(got) != 1 || got[0].ID != c {
		t.Fatalf("ListFunctions of CwdChanged = %+v", got)
	}
}

// TestScopedHooksOfTheOtherTypes checks that a session gets http and
// prompt hooks as Claude Code's session hooks add them: named by their
// type, the same one added twice kept once, and refused on an event that
// does not take their type.
func TestScopedHooksOfTheOtherTypes(t *testing.T) {
	var s hookexec.Scoped
	gate := hookexec.Hook{Event: hookexec.PreToolUse, Body: hookexec.HTTP{URL: "http://127.0.0.1:9/gate"}}
	id1, err := s.Add("s1", gate)
	if err != nil {
		t.Fatal(err)
	}
	if id2, err := s.Add("s1", gate); err != nil || id2 != id1 {
		t.Errorf("the same http hook again: %q, %v; want %q", id2, err, id1)
	}
	check := hookexec.Hook{Event: hookexec.Stop, Body: hookexec.Prompt{Text: "the tests pass"}}
	if _, err := s.Add("s1", check); err != nil {
		t.Fatal(err)
	}
	pre, stop := s.List("s1", hookexec.PreToolUse), s.List("s1", hookexec.Stop)
	if len(pre) != 1 || pre[0].Hook.Name != "http: http://127.0.0.1:9/gate" || len(stop) != 1 || stop[0].Hook.Type() != schema.HookPrompt {
		t.Errorf("listed %+v and %+v", pre, stop)
	}
	if fns := s.ListFunctions("s1", hookexec.PreToolUse); len(fns) != 0 {
		t.Errorf("ListFunctions lists the http hook: %+v", fns)
	}
	if _, err := s.Add("s1", hookexec.Hook{Event: hookexec.SessionStart, Body: hookexec.HTTP{URL: "http://127.0.0.1:9/"}}); !errors.Is(err, hookexec.ErrBadHook) {
		t.Errorf("an http hook on SessionStart: %v; want ErrBadHook", err)
	}
}
