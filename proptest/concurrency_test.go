package proptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
)

// Iterations of each concurrency test, in the default and the long run.
const (
	defaultRaces = 10
	longRaces    = 200
)

func races() int {
	if long() {
		return longRaces
	}
	return defaultRaces
}

// lockingStore is a store shared by several Engines that implements
// eventlog.StreamLocker with a lock table, the way a database shared by
// several processes does with advisory locks.
type lockingStore struct {
	eventlog.Store
	mu    sync.Mutex
	locks map[string]bool
}

// TryLock implements eventlog.StreamLocker.
func (s *lockingStore) TryLock(ctx context.Context, stream string) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locks[stream] {
		return nil, fmt.Errorf("%w: %s", eventlog.ErrBusy, stream)
	}
	if s.locks == nil {
		s.locks = map[string]bool{}
	}
	s.locks[stream] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.locks, stream)
		})
	}, nil
}

// Close leaves the shared store to the test.
func (s *lockingStore) Close() error { return nil }

// raceSetup is one iteration's store and the Engines on it: one Engine, or
// two Engines sharing a store that locks streams, as two processes on a
// database would.
type raceSetup struct {
	store   eventlog.Store
	engines []*reprise.Engine
	side    *sideFile
	dir     string
}

// newRace opens a bbolt store in a new directory and n Engines on it,
// each with the hooks hooks adds to its registry.
func newRace(t *testing.T, n int, hooks func(*hookexec.Registry, *sideFile)) *raceSetup {
	t.Helper()
	dir := t.TempDir()
	bs, err := boltstore.Open(filepath.Join(dir, "reprise.db"), boltstore.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := &raceSetup{store: bs, side: newSideFile(dir), dir: dir}
	var store eventlog.Store = bs
	if n > 1 {
		store = &lockingStore{Store: bs}
	}
	for range n {
		reg := hookexec.NewRegistry()
		hooks(reg, r.side)
		r.engines = append(r.engines, reprise.New(store, reprise.Options{Hooks: reg, Logger: discard,
			TranscriptDir: filepath.Join(dir, "transcripts")}))
	}
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, e := range r.engines {
			e.Close()
		}
		bs.Close()
	})
	return r
}

func (r *raceSetup) session(t *testing.T, id string, texts ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := r.engines[0].CreateSession(ctx, id, filepath.Join(r.dir, "work")); err != nil {
		t.Fatal(err)
	}
	for _, text := range texts {
		if _, err := r.engines[0].Append(ctx, id, reprise.Text("user", text)); err != nil {
			t.Fatal(err)
		}
	}
}

// conversation reads session id from the log, whatever any Engine caches.
func (r *raceSetup) conversation(t *testing.T, id string) []reprise.Message {
	t.Helper()
	conv := projection.NewConversation(id)
	if err := r.store.ReadStream(context.Background(), projection.SessionStream(id), 1, conv.Apply); err != nil {
		t.Fatal(err)
	}
	return conv.Messages
}

// agentLog reads agent id from the log.
func (r *raceSetup) agentLog(t *testing.T, id string) *projection.Agent {
	t.Helper()
	a := projection.NewAgent(id)
	if err := r.store.ReadStream(context.Background(), projection.AgentStream(id), 1, a.Apply); err != nil {
		t.Fatal(err)
	}
	return a
}

func (r *raceSetup) audit(t *testing.T) {
	t.Helper()
	rep, err := reprise.Audit(context.Background(), r.store)
	if err != nil || len(rep.Violations) > 0 {
		t.Fatalf("Audit: %v %v", err, rep.Violations)
	}
}

// runs returns how many times each run line was recorded.
func (r *raceSetup) runs(t *testing.T) map[string]int {
	t.Helper()
	lines, err := r.side.all()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, l := range lines {
		count[l]++
	}
	return count
}

// rendezvous lets n hooks wait for each other, so that they overlap, but
// never for longer than a second.
type rendezvous struct {
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func newRendezvous(n int) *rendezvous {
	r := &rendezvous{all: make(chan struct{})}
	r.arrived = -n
	return r
}

func (r *rendezvous) wait() {
	r.mu.Lock()
	r.arrived++
	if r.arrived == 0 {
		close(r.all)
	}
	r.mu.Unlock()
	select {
	case <-r.all:
	case <-time.After(time.Second):
	}
}

// TestTwoAgentsRestoreIntoOneSession has two agents restore into the same
// session at once, in one Engine and in two Engines sharing a store. Both
// restores complete, each runs its hooks once, each injects its context
// once, messages buffered on either end are saved once, and the log
// audits clean.
func TestTwoAgentsRestoreIntoOneSession(t *testing.T) {
	t.Parallel()
	for _, engines := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d engines", engines), func(t *testing.T) {
			t.Parallel()
			for i := range races() {
				twoAgentsIntoOne(t, engines, i)
			}
		})
	}
}

func twoAgentsIntoOne(t *testing.T, engines, i int) {
	ctx := context.Background()
	meet := newRendezvous(2)
	r := newRace(t, engines, func(reg *hookexec.Registry, side *sideFile) {
		start := startFunc("start", side, func() string { return behaveContext })
		reg.OnSessionStart("start", "", func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			if in.SessionID == "x" {
				meet.wait()
			}
			return start(ctx, in)
		})
		reg.OnSessionEnd("end", "", endFunc("end", side, func() string { return behaveEmpty }))
	})
	r.session(t, "a", "a1")
	r.session(t, "b", "b1")
	r.session(t, "x", "x1", "x2")
	e1, e2 := r.engines[0], r.engines[len(r.engines)-1]
	agents := make([]*reprise.Agent, 2)
	for j, e := range []*reprise.Engine{e1, e2} {
		a, err := e.Agent(ctx, fmt.Sprintf("agent%d", j))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Start(ctx, []string{"a", "b"}[j]); err != nil {
			t.Fatal(err)
		}
		agents[j] = a
	}
	buffered := map[string][]string{}
	for _, b := range []struct {
		e       *reprise.Engine
		session string
	}{{e1, "a"}, {e2, "b"}, {e1, "x"}, {e2, "x"}} {
		text := fmt.Sprintf("buffered on %s, %d", b.session, len(buffered[b.session]))
		if _, err := b.e.Buffer(ctx, b.session, reprise.Text("user", text)); err != nil {
			t.Fatal(err)
		}
		buffered[b.session] = append(buffered[b.session], text)
	}

	results := make([]*reprise.Transition, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for j, a := range agents {
		wg.Go(func() { results[j], errs[j] = a.Restore(ctx, "x") })
	}
	wg.Wait()

	for j := range agents {
		if errs[j] != nil || results[j] == nil || results[j].To != "x" || results[j].InjectedUUID == "" {
			t.Fatalf("iteration %d: agent %d: restore %+v, %v", i, j, results[j], errs[j])
		}
	}
	if results[0].InjectedUUID == results[1].InjectedUUID {
		t.Fatalf("iteration %d: both restores claim the injected message %s", i, results[0].InjectedUUID)
	}
	runs := r.runs(t)
	want := map[string]int{"SessionStart a startup start": 1, "SessionStart b startup start": 1,
		"SessionEnd a resume end": 1, "SessionEnd b resume end": 1, "SessionStart x resume start": 2}
	if fmt.Sprint(runs) != fmt.Sprint(want) {
		t.Fatalf("iteration %d: hook runs %v, want %v", i, runs, want)
	}
	reminderText := reminder(hookContext("start", "x", "resume")).text
	for _, id := range []string{"a", "b", "x"} {
		conv := r.conversation(t, id)
		texts := map[string]int{}
		parent := ""
		for k, m := range conv {
			texts[m.Content[0].Text]++
			if m.ParentUUID != parent {
				t.Fatalf("iteration %d: %s message %d has parent %q, want %q", i, id, k, m.ParentUUID, parent)
			}
			parent = m.UUID
		}
		for _, text := range buffered[id] {
			if texts[text] != 1 {
				t.Fatalf("iteration %d: %q is %d times in %s", i, text, texts[text], id)
			}
		}
		if id != "x" {
			continue
		}
		if texts[reminderText] != 2 {
			t.Fatalf("iteration %d: x holds %d reminders, want 2", i, texts[reminderText])
		}
		for _, res := range results {
			k := slices.IndexFunc(conv, func(m reprise.Message) bool { return m.UUID == res.InjectedUUID })
			if k < 0 || !conv[k].IsMeta || conv[k].Content[0].Text != reminderText {
				t.Fatalf("iteration %d: injected message %s not found as a reminder in x", i, res.InjectedUUID)
			}
		}
	}
	for j := range agents {
		log := r.agentLog(t, fmt.Sprintf("agent%d", j))
		if log.Current != "x" || len(log.History) != 2 || fmt.Sprint(log.History[1]) != fmt.Sprint(*results[j]) {
			t.Fatalf("iteration %d: agent %d in the log: current %q, history %+v; returned %+v", i, j, log.Current, log.History, results[j])
		}
	}
	r.audit(t)
}

// TestConcurrentRestoresOfOneAgent hits one agent with several restores
// and a startup at once, from one Engine and from two Engines sharing a
// store. The hooks of whichever call wins hold it until every other call
// has returned, so exactly one call completes its restore, running its
// hooks once, and every other one is refused with ErrAgentBusy
// having run nothing. The log audits clean.
func TestConcurrentRestoresOfOneAgent(t *testing.T) {
	t.Parallel()
	for _, engines := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d engines", engines), func(t *testing.T) {
			t.Parallel()
			for i := range races() {
				oneAgentManyRestores(t, engines, i)
			}
		})
	}
}

// holdTimeout bounds how long a winning restore's hooks wait for the
// other callers; a restore that waits this long means they were not
// refused at once.
const holdTimeout = 3 * time.Second

func oneAgentManyRestores(t *testing.T, engines, i int) {
	const callers = 4
	ctx := context.Background()
	var armed atomic.Bool
	release := make(chan struct{})
	hold := func() {
		if !armed.Load() {
			return
		}
		select {
		case <-release:
		case <-time.After(holdTimeout):
		}
	}
	r := newRace(t, engines, func(reg *hookexec.Registry, side *sideFile) {
		end := endFunc("end", side, func() string { return behaveEmpty })
		reg.OnSessionEnd("end", "", func(ctx context.Context, in hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
			hold()
			return end(ctx, in)
		})
		start := startFunc("start", side, func() string { return behaveContext })
		reg.OnSessionStart("start", "", func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
			hold()
			return start(ctx, in)
		})
	})
	r.session(t, "s0", "hello")
	for g := range callers {
		r.session(t, fmt.Sprintf("x%d", g))
	}
	agents := make([]*reprise.Agent, len(r.engines))
	for k, e := range r.engines {
		a, err := e.Agent(ctx, "ide")
		if err != nil {
			t.Fatal(err)
		}
		agents[k] = a
	}
	if _, err := agents[0].Start(ctx, "s0"); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)

	type result struct {
		r    *reprise.Transition
		err  error
		took time.Duration
	}
	results := make([]result, callers)
	ready := make(chan struct{})
	var returned sync.WaitGroup
	returned.Add(callers - 1)
	var once sync.Once
	var wg sync.WaitGroup
	for g := range callers {
		a := agents[g%len(agents)]
		wg.Go(func() {
			<-ready
			began := time.Now()
			var res result
			if g == callers-1 {
				res.r, res.err = a.Start(ctx, "x3") // a startup among the restores
			} else {
				res.r, res.err = a.Restore(ctx, fmt.Sprintf("x%d", g))
			}
			res.took = time.Since(began)
			results[g] = res
			if res.err != nil {
				returned.Done()
			}
		})
	}
	go func() {
		returned.Wait()
		once.Do(func() { close(release) })
	}()
	close(ready)
	wg.Wait()
	once.Do(func() { close(release) })

	runs := r.runs(t)
	winner := -1
	for g, res := range results {
		target, source := fmt.Sprintf("x%d", g), reprise.SourceResume
		if g == callers-1 {
			source = reprise.SourceStartup
		}
		started := runs[runLine(hookexec.SessionStart, target, source, "start")]
		switch {
		case res.err == nil && res.r != nil && res.r.To == target && winner < 0:
			winner = g
			if started != 1 {
				t.Fatalf("iteration %d: the restore to %s ran SessionStart %d times", i, target, started)
			}
		case errors.Is(res.err, reprise.ErrAgentBusy) && res.r == nil && res.took < holdTimeout:
			if started != 0 {
				t.Fatalf("iteration %d: the refused restore to %s ran SessionStart %d times", i, target, started)
			}
		default:
			t.Fatalf("iteration %d: caller %d got %+v, %v after %s; want one restore to complete and the others refused at once",
				i, g, res.r, res.err, res.took)
		}
	}
	if winner < 0 {
		t.Fatalf("iteration %d: no caller completed a restore: %+v", i, results)
	}
	want := map[string]int{runLine(hookexec.SessionStart, "s0", reprise.SourceStartup, "start"): 1}
	if res := results[winner].r; res.Source == reprise.SourceResume {
		want[runLine(hookexec.SessionEnd, "s0", reprise.ReasonResume, "end")] = 1
	}
	want[runLine(hookexec.SessionStart, results[winner].r.To, results[winner].r.Source, "start")] = 1
	if fmt.Sprint(runs) != fmt.Sprint(want) {
		t.Fatalf("iteration %d: hook runs %v, want %v", i, runs, want)
	}
	log := r.agentLog(t, "ide")
	if len(log.History) != 2 || log.Restore != nil || fmt.Sprint(log.History[1]) != fmt.Sprint(*results[winner].r) {
		t.Fatalf("iteration %d: the log holds %+v (in flight: %+v), want the startup and %+v", i, log.History, log.Restore, results[winner].r)
	}
	r.audit(t)
}
