package reprise_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// calls records every hook run, in the order they happened.
type calls struct {
	mu   sync.Mutex
	list []string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, s)
}

func (c *calls) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.list)
}

// recordingHooks registers a SessionEnd and a SessionStart hook that log
// "End <session> <reason>" and "Start <session> <source>"; the start hook
// returns context.
func recordingHooks(t *testing.T, reg *hookexec.Registry, c *calls, text string) {
	t.Helper()
	err := reg.OnSessionEnd("end-log", "", func(ctx context.Context, in hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
		c.add(fmt.Sprintf("End %s %s", in.SessionID, in.Reason))
		return hookexec.SessionEndOutput{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = reg.OnSessionStart("start-log", "", func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		c.add(fmt.Sprintf("Start %s %s", in.SessionID, in.Source))
		return hookexec.SessionStartOutput{AdditionalContext: text}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// lastPosition returns the store-wide position of the newest event.
func lastPosition(t *testing.T, s eventlog.Store) uint64 {
	t.Helper()
	var last uint64
	if err := s.ReadAll(context.Background(), 1, func(ev eventlog.Event) error { last = ev.Position; return nil }); err != nil {
		t.Fatal(err)
	}
	return last
}

var (
	startupSteps = []eventlog.Type{schema.TypeSessionLoaded, schema.TypeSessionStartHookStarted,
		schema.TypeSessionStartHookRan, schema.TypeContextInjected}
	resumeSteps = []eventlog.Type{schema.TypeSaveAttempted, schema.TypeSessionEndHookStarted,
		schema.TypeSessionEndHookRan, schema.TypeSessionLoaded, schema.TypeSessionStartHookStarted,
		schema.TypeSessionStartHookRan, schema.TypeContextInjected}
)

func TestRuntimeRestoreEndsTheOldSessionBeforeStartingTheNew(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	var c calls
	recordingHooks(t, e.Hooks(), &c, "project uses Go")
	testkit.Session(t, e, "a", "", "hello", "hi")
	testkit.Session(t, e, "b", "", "other")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	r, err := a.Restore(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Start a startup", "End a resume", "Start b resume"}
	if got := c.get(); !reflect.DeepEqual(got, want) {
		t.Fatalf("hook runs = %q, want %q", got, want)
	}
	if a.Current() != "b" || r.From != "a" || r.To != "b" || r.Source != "resume" {
		t.Fatalf("after restore: current %q, restore %+v", a.Current(), r)
	}
	got := testkit.StreamTypes(t, e.Store(), projection.AgentStream("ide"))
	if want := append(slices.Clone(startupSteps), resumeSteps...); !reflect.DeepEqual(got, want) {
		t.Fatalf("agent stream = %v, want %v", got, want)
	}
	if len(r.EndOutcomes) != 1 || r.EndOutcomes[0].Status != schema.HookOK || r.EndReason != "resume" {
		t.Fatalf("end outcomes %+v reason %q", r.EndOutcomes, r.EndReason)
	}
}

func TestNoOpRestoresRecordAndRunNothing(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	var c calls
	recordingHooks(t, e.Hooks(), &c, "ctx")
	testkit.Session(t, e, "a", "", "hello")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	before, runs := lastPosition(t, e.Store()), len(c.get())
	for _, id := range []string{"", "a"} {
		r, err := a.Restore(ctx, id)
		if err != nil || r != nil {
			t.Fatalf("Restore(%q) = %v, %v; want a no-op", id, r, err)
		}
	}
	if r, err := a.Start(ctx, ""); err != nil || r != nil {
		t.Fatalf("Start(\"\") = %v, %v; want a no-op", r, err)
	}
	if after := lastPosition(t, e.Store()); after != before {
		t.Fatalf("no-op restores wrote events: position %d -> %d", before, after)
	}
	if got := len(c.get()); got != runs {
		t.Fatalf("no-op restores ran %d hooks", got-runs)
	}
}

func TestMissingOrHostileTargetChangesNothing(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	var c calls
	recordingHooks(t, e.Hooks(), &c, "ctx")
	testkit.Session(t, e, "a", "", "hello")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	before, runs := lastPosition(t, e.Store()), len(c.get())
	for _, id := range []string{"nope", "../../etc/passwd", "a/b", "a\x00b", "-rf", string(make([]byte, 500))} {
		if _, err := a.Restore(ctx, id); !errors.Is(err, reprise.ErrSessionNotFound) {
			t.Errorf("Restore(%q): err = %v, want ErrSessionNotFound", id, err)
		}
		if _, err := a.Start(ctx, id); !errors.Is(err, reprise.ErrSessionNotFound) {
			t.Errorf("Start(%q): err = %v, want ErrSessionNotFound", id, err)
		}
	}
	if after := lastPosition(t, e.Store()); after != before {
		t.Fatalf("failed restores wrote events: position %d -> %d", before, after)
	}
	if got := len(c.get()); got != runs {
		t.Fatalf("failed restores ran %d hooks", got-runs)
	}
	if a.Current() != "a" {
		t.Fatalf("current = %q, want a", a.Current())
	}
}

func TestRestoreSavesPendingMessagesOfTheCurrentSession(t *testing.T) {
	ctx := context.Background()
	e, path := testkit.NewEngine(t, reprise.Options{})
	testkit.Session(t, e, "a", "", "hello")
	testkit.Session(t, e, "b", "")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two"} {
		if _, err := e.Buffer(ctx, "a", reprise.Text("user", text)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := a.Restore(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if r.Saved != 2 || r.SaveError != "" {
		t.Fatalf("saved %d, error %q; want 2 saved", r.Saved, r.SaveError)
	}
	e.Close()
	e2 := testkit.OpenEngine(t, path, reprise.Options{})
	msgs, err := e2.Conversation(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 || msgs[2].Content[0].Text != "two" || msgs[2].ParentUUID != msgs[1].UUID || msgs[1].ParentUUID != msgs[0].UUID {
		t.Fatalf("after reopen: %+v", msgs)
	}
}

// A save that fails (here: another writer appended to the session first)
// is recorded and logged, the restore completes, and the buffered messages
// stay pending until a later Save writes them after the other writer's.
func TestFailedSaveDoesNotStopTheRestoreAndLosesNothing(t *testing.T) {
	ctx := context.Background()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "r.db"), boltstore.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	host := reprise.New(store, reprise.Options{})
	defer host.Close()
	other := reprise.New(store, reprise.Options{TranscriptDir: t.TempDir()}) // a second writer on the same log
	var c calls
	recordingHooks(t, host.Hooks(), &c, "")
	testkit.Session(t, host, "a", "", "hello")
	testkit.Session(t, host, "b", "")
	a := testkit.Agent(t, host, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := host.Buffer(ctx, "a", reprise.Text("user", "buffered")); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Append(ctx, "a", reprise.Text("assistant", "from elsewhere")); err != nil {
		t.Fatal(err)
	}
	r, err := a.Restore(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if r.Saved != 0 || r.SaveError == "" {
		t.Fatalf("saved %d, error %q; want a recorded failure", r.Saved, r.SaveError)
	}
	if a.Current() != "b" || !slices.Contains(c.get(), "Start b resume") || !slices.Contains(c.get(), "End a resume") {
		t.Fatalf("restore did not complete: current %q, hooks %q", a.Current(), c.get())
	}
	pending, _ := host.Pending(ctx, "a")
	if len(pending) != 1 {
		t.Fatalf("pending after failed save = %d, want 1", len(pending))
	}
	if n, err := host.Save(ctx, "a"); err != nil || n != 1 {
		t.Fatalf("Save after catching up = %d, %v", n, err)
	}
	msgs, _ := host.Conversation(ctx, "a")
	texts := []string{}
	for _, m := range msgs {
		texts = append(texts, m.Content[0].Text)
	}
	if !reflect.DeepEqual(texts, []string{"hello", "from elsewhere", "buffered"}) || msgs[2].ParentUUID != msgs[1].UUID {
		t.Fatalf("conversation = %q", texts)
	}
}

func TestFailingHooksAreRecordedAndNeverBlockTheRestore(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	reg := e.Hooks()
	add := func(name string, timeout time.Duration, fn hookexec.SessionStartFunc) {
		t.Helper()
		m, _ := hookexec.ParseMatcher("")
		if err := reg.Add(hookexec.Hook{Event: hookexec.SessionStart, Name: name, Source: "function", Matcher: m, Timeout: timeout, Body: hookexec.SessionStartFunc(fn)}); err != nil {
			t.Fatal(err)
		}
	}
	add("fails", 0, func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		return hookexec.SessionStartOutput{AdditionalContext: "must not appear"}, errors.New("boom")
	})
	add("panics", 0, func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		panic("kaboom")
	})
	add("hangs", 50*time.Millisecond, func(ctx context.Context, _ hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		<-ctx.Done()
		return hookexec.SessionStartOutput{AdditionalContext: "too late"}, nil
	})
	add("works", 0, func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		return hookexec.SessionStartOutput{AdditionalContext: "good context"}, nil
	})
	testkit.Session(t, e, "a", "", "hello")
	testkit.Session(t, e, "b", "", "hi")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	r, err := a.Restore(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[string]string{}
	for _, o := range r.StartOutcomes {
		statuses[o.Name] = o.Status
	}
	want := map[string]string{"fails": "failed", "panics": "panicked", "hangs": "timeout", "works": "ok"}
	if !reflect.DeepEqual(statuses, want) {
		t.Fatalf("statuses = %v, want %v", statuses, want)
	}
	if r.Context != "good context" {
		t.Fatalf("context = %q, want only the working hook's", r.Context)
	}
	msgs, _ := e.Conversation(ctx, "b")
	if got := msgs[len(msgs)-1].Content[0].Text; got != "<system-reminder>\nSessionStart hook additional context: good context\n</system-reminder>" {
		t.Fatalf("injected %q", got)
	}
}

func TestContextIsInjectedLastAsOneMetaUserMessage(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	var c calls
	recordingHooks(t, e.Hooks(), &c, "line one\nline two")
	testkit.Session(t, e, "a", "", "hello")
	testkit.Session(t, e, "b", "", "q1", "a1", "q2")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	r, err := a.Restore(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := e.Conversation(ctx, "b")
	if len(msgs) != 4 {
		t.Fatalf("b has %d messages, want 3 + 1 injected", len(msgs))
	}
	last := msgs[3]
	want := "<system-reminder>\nSessionStart hook additional context: line one\nline two\n</system-reminder>"
	if last.Role != "user" || !last.IsMeta || len(last.Content) != 1 || last.Content[0].Text != want {
		t.Fatalf("injected message = %+v", last)
	}
	if last.UUID != r.InjectedUUID || last.ParentUUID != msgs[2].UUID {
		t.Fatalf("injected uuid %q parent %q; restore says %q, previous is %q", last.UUID, last.ParentUUID, r.InjectedUUID, msgs[2].UUID)
	}
	// The message and ContextInjected share one atomic append: adjacent positions.
	var msgPos, injPos uint64
	e.Store().ReadAll(ctx, 1, func(ev eventlog.Event) error {
		switch {
		case ev.Type == schema.TypeMessageAppended && ev.Stream == "session/b":
			msgPos = ev.Position
		case ev.Type == schema.TypeContextInjected:
			injPos = ev.Position
		}
		return nil
	})
	if injPos != msgPos+1 {
		t.Fatalf("message at %d, ContextInjected at %d", msgPos, injPos)
	}
}

func TestEmptyContextInjectsNothing(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	var c calls
	recordingHooks(t, e.Hooks(), &c, "")
	testkit.Session(t, e, "a", "", "hello")
	testkit.Session(t, e, "b", "", "hi")
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	r, err := a.Restore(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := e.Conversation(ctx, "b")
	if len(msgs) != 1 || r.InjectedUUID != "" || r.Context != "" {
		t.Fatalf("empty context injected something: %d messages, restore %+v", len(msgs), r)
	}
}

func TestStartupRunsSessionStartOnlyWithSourceStartup(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	var c calls
	recordingHooks(t, e.Hooks(), &c, "welcome back")
	testkit.Session(t, e, "a", "", "hello")
	a := testkit.Agent(t, e, "ide")
	r, err := a.Start(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.get(); !reflect.DeepEqual(got, []string{"Start a startup"}) {
		t.Fatalf("hook runs = %q", got)
	}
	if got := testkit.StreamTypes(t, e.Store(), projection.AgentStream("ide")); !reflect.DeepEqual(got, startupSteps) {
		t.Fatalf("startup steps = %v", got)
	}
	if r.Source != "startup" || r.From != "" || r.InjectedUUID == "" {
		t.Fatalf("restore = %+v", r)
	}
}

func TestStartupThenThreeRestoresRunEachHookOncePerRestore(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	var c calls
	recordingHooks(t, e.Hooks(), &c, "ctx")
	for _, id := range []string{"s1", "s2", "s3"} {
		testkit.Session(t, e, id, "", "hello "+id)
	}
	a := testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s2", "s3", "s1"} {
		if _, err := a.Restore(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"Start s1 startup",
		"End s1 resume", "Start s2 resume",
		"End s2 resume", "Start s3 resume",
		"End s3 resume", "Start s1 resume"}
	if got := c.get(); !reflect.DeepEqual(got, want) {
		t.Fatalf("hook runs = %q\nwant %q", got, want)
	}
	if h := a.History(); len(h) != 4 {
		t.Fatalf("history has %d restores, want 4", len(h))
	}
}

// Two Restore calls on one agent at once: one runs, the other is refused
// with ErrAgentBusy, and SessionStart runs once.
func TestConcurrentRestoresOfOneAgentRunOnce(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	var c calls
	recordingHooks(t, e.Hooks(), &c, "")
	a, finish := restoreHeldInSessionEnd(t, e)
	if _, err := a.Restore(ctx, "b"); !errors.Is(err, reprise.ErrAgentBusy) {
		t.Fatalf("second Restore: err = %v, want ErrAgentBusy", err)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	starts := 0
	for _, s := range c.get() {
		if s == "Start b resume" {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("SessionStart ran %d times on b", starts)
	}
}

// Many agents restoring at once in one process stay independent.
func TestManyAgentsRestoreConcurrently(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	var c calls
	recordingHooks(t, e.Hooks(), &c, "ctx")
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		from, to := fmt.Sprintf("from%d", i), fmt.Sprintf("to%d", i)
		testkit.Session(t, e, from, "", "hi")
		testkit.Session(t, e, to, "", "hi")
		wg.Go(func() {
			a, err := e.Agent(ctx, fmt.Sprintf("agent%d", i))
			if err == nil {
				_, err = a.Start(ctx, from)
			}
			if err == nil {
				_, err = a.Restore(ctx, to)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := len(c.get()); got != 3*n {
		t.Fatalf("%d hook runs, want %d", got, 3*n)
	}
}

func TestCreateSessionValidatesIdsAndRefusesDuplicates(t *testing.T) {
	ctx := context.Background()
	e, _ := testkit.NewEngine(t, reprise.Options{})
	id, err := e.CreateSession(ctx, "", "/tmp")
	if err != nil || reprise.ValidateID(id) != nil {
		t.Fatalf("default id %q, %v", id, err)
	}
	if _, err := e.CreateSession(ctx, id, "/tmp"); !errors.Is(err, reprise.ErrSessionExists) {
		t.Fatalf("duplicate: err = %v", err)
	}
	for _, bad := range []string{"../x", "a/b", `a\b`, "a..b", ".hidden", "a\nb", "tab\t", "é"} {
		if _, err := e.CreateSession(ctx, bad, ""); !errors.Is(err, reprise.ErrInvalidID) {
			t.Errorf("CreateSession(%q): err = %v, want ErrInvalidID", bad, err)
		}
	}
	if _, err := e.Append(ctx, id, reprise.Text("system", "x")); !errors.Is(err, reprise.ErrInvalidMessage) {
		t.Fatalf("bad role: err = %v", err)
	}
}

// Close saves what was buffered; a reopened Engine sees it.
func TestCloseSavesBufferedMessages(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	e, err := reprise.Open(path, reprise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "a", "")
	if _, err := e.Buffer(ctx, "a", reprise.Text("user", "kept")); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := testkit.OpenEngine(t, path, reprise.Options{})
	msgs, err := e2.Conversation(ctx, "a")
	if err != nil || len(msgs) != 1 || msgs[0].Content[0].Text != "kept" {
		t.Fatalf("after reopen: %+v, %v", msgs, err)
	}
}

// Two Engines sharing one store in a process take turns on an agent: the
// second neither runs a restore of its own nor takes the first one's live
// restore for an interrupted one.
func TestTwoEnginesOnOneStoreDoNotTakeOverALiveRestore(t *testing.T) {
	ctx := context.Background()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "r.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := reprise.New(store, reprise.Options{})
	defer first.Close()
	second := reprise.New(store, reprise.Options{TranscriptDir: t.TempDir()})
	_, finish := restoreHeldInSessionEnd(t, first)
	if _, err := second.Agent(ctx, "ide"); !errors.Is(err, reprise.ErrAgentBusy) {
		t.Fatalf("second Engine opening the agent mid-restore: err = %v, want ErrAgentBusy", err)
	}
	if err := finish(); err != nil {
		t.Fatalf("the first Engine's restore: %v", err)
	}
	b, err := second.Agent(ctx, "ide")
	if err != nil || b.Current() != "b" || len(b.History()) != 2 || b.History()[1].EndInterrupted {
		t.Fatalf("after the restore the second Engine sees %v, %v", b, err)
	}
}

// restoreHeldInSessionEnd makes sessions a and b in e, starts agent ide on
// a, and begins its restore to b, which it returns while a SessionEnd hook
// holds that restore. finish lets the restore go on and returns its error.
func restoreHeldInSessionEnd(t *testing.T, e *reprise.Engine) (a *reprise.Agent, finish func() error) {
	t.Helper()
	ctx := context.Background()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.Hooks().OnSessionEnd("slow", "", func(context.Context, hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
		once.Do(func() { close(entered) })
		<-release
		return hookexec.SessionEndOutput{}, nil
	})
	testkit.Session(t, e, "a", "")
	testkit.Session(t, e, "b", "")
	a = testkit.Agent(t, e, "ide")
	if _, err := a.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := a.Restore(ctx, "b"); done <- err }()
	<-entered
	return a, func() error {
		close(release)
		return <-done
	}
}
