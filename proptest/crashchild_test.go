package proptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// childEnv, when set, makes the test binary a crash child instead of
// running tests. The child reads the rest of its orders from these:
const (
	childEnv = "REPRISE_CRASH_CHILD" // the run directory
	seedEnv  = "REPRISE_CRASH_SEED"
	kindEnv  = "REPRISE_CRASH_KIND"  // "function" or "command" hooks
	pointEnv = "REPRISE_CRASH_POINT" // where to stop, as point.String
)

// crashChild runs a scenario against a bbolt store until it reaches its
// crash point, says so on the report FIFO and waits to be killed. On the
// FIFO it reports, one line each:
//
//	ack SESSION UUID     a message is durable (reported before going on)
//	at POINT [PGID]      it is at the point; PGID is a blocked hook's group
//	done                 it finished without reaching the point
//	error TEXT           something failed
//
// It returns the process's exit code.
func crashChild() int {
	fifo, err := os.OpenFile(os.Getenv(fifoEnv), os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 2
	}
	var mu sync.Mutex
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		// One write per line: a FIFO keeps writes of this size whole, and
		// what is written survives the writer's death.
		if _, err := fifo.WriteString(fmt.Sprintf(format, args...) + "\n"); err != nil {
			fmt.Fprintln(os.Stderr, "crash child: report:", err)
			os.Exit(2)
		}
	}
	if err := runChild(report); err != nil {
		report("error %s", strings.ReplaceAll(err.Error(), "\n", " | "))
		return 1
	}
	report("done")
	return 0
}

func runChild(report func(string, ...any)) error {
	paths := crashPaths{dir: os.Getenv(childEnv)}
	seed, err := strconv.ParseUint(os.Getenv(seedEnv), 10, 64)
	if err != nil {
		return err
	}
	p, err := parsePoint(os.Getenv(pointEnv))
	if err != nil {
		return err
	}
	sc := newScenario(seed)
	if p.when == "running" {
		key, peers := sc.blockFor(p)
		os.Setenv(blockEnv, key)
		os.Setenv(peersEnv, strconv.Itoa(peers))
	}
	script, err := filepath.Abs(filepath.Join("testdata", "hooks", "hook.sh"))
	if err != nil {
		return err
	}
	side := newSideFile(paths.dir)
	block := func(event hookexec.Event, session, tag string) {
		_, peers := sc.blockFor(p)
		for {
			runs, _ := side.all()
			n := 0
			for _, r := range runs {
				if strings.HasPrefix(r, string(event)+" "+session+" ") {
					n++
				}
			}
			if n >= peers {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		report("at %s 0", p)
		waitForKill()
	}
	reg, _, err := sc.crashHooks(os.Getenv(kindEnv), script, side, block)
	if err != nil {
		return err
	}
	bs, err := boltstore.Open(paths.store(), boltstore.Options{Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	store := &pointStore{Store: bs, p: p, sc: sc, report: report}
	e := reprise.New(store, reprise.Options{Hooks: reg, Logger: discard, TranscriptDir: paths.transcripts()})
	ctx := context.Background()
	a, err := e.Agent(ctx, "ide")
	if err != nil {
		return err
	}
	pending := map[string][]string{}
	for _, o := range sc.ops() {
		switch o.kind {
		case "create":
			if _, err := e.CreateSession(ctx, o.session, paths.work()); err != nil {
				return err
			}
		case "append":
			m := reprise.Text("user", o.text)
			m.UUID = "uuid-" + o.text
			if _, err := e.Append(ctx, o.session, m); err != nil {
				return err
			}
			report("ack %s %s", o.session, m.UUID)
		case "buffer":
			m := reprise.Text("user", o.text)
			m.UUID = "uuid-" + o.text
			if _, err := e.Buffer(ctx, o.session, m); err != nil {
				return err
			}
			pending[o.session] = append(pending[o.session], m.UUID)
		case "start", "restore":
			store.restore.Store(int64(o.restore))
			var r *reprise.Transition
			if o.kind == "start" {
				r, err = a.Start(ctx, o.session)
			} else {
				r, err = a.Restore(ctx, o.session)
			}
			if err != nil {
				return err
			}
			acked := func(session string) {
				for _, id := range pending[session] {
					report("ack %s %s", session, id)
				}
				delete(pending, session)
			}
			if r.From != "" && r.Saved == len(pending[r.From]) && r.SaveError == "" && o.kind == "restore" {
				acked(r.From)
			}
			if r.InjectedUUID != "" {
				acked(r.To)
			}
		}
	}
	return errors.Join(fmt.Errorf("the scenario ended without reaching %s", p), e.Close())
}

// pointStore is the child's store: a real bbolt store that, at the crash
// point, reports it and blocks until the process is killed, before or
// after carrying out the append.
type pointStore struct {
	eventlog.Store
	p       point
	sc      scenario
	report  func(string, ...any)
	restore atomic.Int64 // the restore being run
	appends atomic.Int64 // durable message appends so far
}

// Append implements eventlog.Store.
func (s *pointStore) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	hit := false
	switch kind := appendKind(recs); {
	case s.p.when == "running":
	case s.p.op == "append":
		hit = kind == "message" && s.appends.Add(1) == int64(s.sc.append)
	default:
		hit = kind == s.p.what && s.restore.Load() == int64(s.sc.restoreIndex(s.p))
	}
	if hit && s.p.when == "before" {
		s.stop()
	}
	evs, err := s.Store.Append(ctx, expect, recs)
	if hit && err == nil {
		s.stop()
	}
	return evs, err
}

func (s *pointStore) stop() {
	s.report("at %s 0", s.p)
	waitForKill()
}

// waitForKill blocks the calling goroutine for good. It sleeps rather than
// blocking on nothing, which the runtime could report as a deadlock and
// exit on before the parent kills the process.
func waitForKill() {
	for {
		time.Sleep(time.Hour)
	}
}

// appendKind names an append by the lifecycle step it records, "message"
// for messages alone, or "other".
func appendKind(recs []eventlog.Record) string {
	last := recs[len(recs)-1]
	if strings.HasPrefix(last.Stream, projection.AgentStream("")) {
		return string(last.Type)
	}
	for _, r := range recs {
		if r.Type != schema.TypeMessageAppended {
			return "other"
		}
	}
	return "message"
}
