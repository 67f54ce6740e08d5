package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/reprise-dev/reprise"
)

// appendBench is target 1: one durable Engine.Append against one bbolt
// Update of one put (F1), and against the JSONL peer's durable append.
var appendBench = Bench{
	Name: "append",
	Rows: []Row{
		{Target: 1, Name: "append", Figure: "durable message append (Engine.Append)",
			Floor: "F1: bbolt Update, 1 put, fsync", Unit: PerOp, What: "append", Limit: 1.25},
		{Target: 1, Name: "append-peer", Figure: "durable message append (Engine.Append)",
			Floor: "JSONL peer: 1 line, O_APPEND, fsync", Unit: PerOp, What: "append"},
		{Target: 1, Name: "append-cc", Figure: "durable message append (Engine.Append)",
			Floor: "Claude Code-shaped peer: 1 line made and written, fsync", Unit: PerOp, What: "append"},
	},
	Reps: 400, QuickReps: 60,
	Open: openAppend,
}

// durable is what the append benches share: an Engine on a store with
// fsync, a floor database beside it, the size of a stored message, and a
// JSONL peer file for each session.
type durable struct {
	dir   string
	e     *reprise.Engine
	floor *rawDB
	value []byte // a floor value, as long as a stored message
	ids   []string
	peers []*peerFile // one per session, in the order of ids
	cc    []*ccPeer   // the same, in Claude Code's line shape
	n     int         // operations so far, to rotate which side goes first
}

// openDurable sets up sessions sessions with two messages each, so that
// the second, like every later one, has a parent; and their peer files,
// each with the same two lines.
func openDurable(ctx context.Context, env *Env, name string, sessions int) (*durable, error) {
	dir, err := mkdir(env, name)
	if err != nil {
		return nil, err
	}
	d := &durable{dir: dir}
	d.e, _, err = engineAt(filepath.Join(dir, "reprise.db"), false, nil)
	if err == nil {
		d.floor, err = openRaw(filepath.Join(dir, "floor.db"))
	}
	for i := 0; err == nil && i < sessions; i++ {
		var id string
		if id, err = d.e.CreateSession(ctx, "", dir); err == nil {
			d.ids = append(d.ids, id)
			if _, err = d.e.Append(ctx, id, message(0)); err == nil {
				_, err = d.e.Append(ctx, id, message(1))
			}
		}
		var p *peerFile
		if err == nil {
			p, err = createPeerFile(filepath.Join(dir, id+".jsonl"), id)
		}
		if err == nil {
			d.peers = append(d.peers, p)
			err = p.WriteAll(peerMessages(id, 2))
		}
		var cc *ccPeer
		if err == nil {
			cc, err = createCCPeer(filepath.Join(dir, id+".cc.jsonl"), id)
		}
		if err == nil {
			d.cc = append(d.cc, cc)
			err = cc.WriteAll(2)
		}
	}
	var size int
	if err == nil {
		size, err = storedSize(ctx, d.e.Store(), d.ids[0])
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	d.value = make([]byte, size)
	return d, nil
}

func (d *durable) Close() error {
	var err error
	if d.e != nil {
		err = d.e.Close()
	}
	if d.floor != nil {
		if cerr := d.floor.Close(); err == nil {
			err = cerr
		}
	}
	for _, p := range d.peers {
		if cerr := p.Close(); err == nil {
			err = cerr
		}
	}
	for _, p := range d.cc {
		if cerr := p.Close(); err == nil {
			err = cerr
		}
	}
	if rerr := os.RemoveAll(d.dir); err == nil {
		err = rerr
	}
	return err
}

func (d *durable) Note(row string) string {
	if strings.HasSuffix(row, "-peer") {
		return fmt.Sprintf("lines of %d bytes", peerLineSize(d.ids[0]))
	}
	if strings.HasSuffix(row, "-cc") {
		return "lines in Claude Code's shape: parent, uuid, timestamp, session, content blocks"
	}
	return fmt.Sprintf("values of %d bytes", len(d.value))
}

func openAppend(ctx context.Context, env *Env) (Runner, error) {
	d, err := openDurable(ctx, env, "append", 1)
	if err != nil {
		return nil, err
	}
	return &appendRunner{d}, nil
}

type appendRunner struct{ *durable }

func (r *appendRunner) Run(ctx context.Context) ([]Sample, error) {
	var s, peer Sample
	floor := func() (err error) {
		s.Floor.Time, err = r.floor.update(1, r.value)
		return err
	}
	rep := func() (err error) {
		s.Reprise.Time, err = timed(func() error {
			_, err := r.e.Append(ctx, r.ids[0], message(r.n))
			return err
		})
		return err
	}
	jsonl := func() (err error) {
		m := newPeerMessage(r.ids[0], r.n)
		peer.Floor.Time, err = timed(func() error { return r.peers[0].Append(m) })
		return err
	}
	var cc Sample
	ccAppend := func() (err error) {
		cc.Floor.Time, err = timed(func() error { return r.cc[0].Append(r.n) })
		return err
	}
	if err := alternate(&r.n, floor, rep, jsonl, ccAppend); err != nil {
		return nil, err
	}
	s.Floor.Work, s.Reprise.Work = 1, 1
	peer.Reprise, peer.Floor.Work = s.Reprise, 1
	cc.Reprise, cc.Floor.Work = s.Reprise, 1
	return []Sample{s, peer, cc}, nil
}

// alternate runs sides in turn, starting with a different one on each
// call, so that no side always follows the same other.
func alternate(n *int, sides ...func() error) error {
	*n++
	for i := range sides {
		if err := sides[(*n+i)%len(sides)](); err != nil {
			return err
		}
	}
	return nil
}

// concurrentBench is target 2: 64 sessions appending durably at once, from
// 64 goroutines, against F1 done serially, and against 64 JSONL peer files
// appended to at once.
var concurrentBench = Bench{
	Name: "concurrent",
	Rows: []Row{
		{Target: 2, Name: "concurrent", Figure: "64 sessions appending at once, 64 goroutines",
			Floor: "F1 used serially", Unit: Rate, What: "append", Min: true, Limit: 4},
		{Target: 2, Name: "concurrent-peer", Figure: "64 sessions appending at once, 64 goroutines",
			Floor: "JSONL peer: 64 files, each goroutine appends + fsyncs its own", Unit: Rate, What: "append",
			Min: true, Limit: 1.5, Informational: true},
		{Target: 2, Name: "concurrent-cc", Figure: "64 sessions appending at once, 64 goroutines",
			Floor: "Claude Code-shaped peer: 64 files, each goroutine makes, appends + fsyncs its lines", Unit: Rate,
			What: "append", Min: true, Limit: 1.5, Informational: true},
	},
	Reps: 16, QuickReps: 3,
	Open: openConcurrent,
}

const (
	writers          = 64
	appendsPerWriter = 10
)

func openConcurrent(ctx context.Context, env *Env) (Runner, error) {
	d, err := openDurable(ctx, env, "concurrent", writers)
	if err != nil {
		return nil, err
	}
	return &concurrentRunner{d}, nil
}

type concurrentRunner struct{ *durable }

func (r *concurrentRunner) Run(ctx context.Context) ([]Sample, error) {
	var s, peer Sample
	floor := func() error {
		// As many serial floor writes as take about as long as the burst
		// with a quarter of its throughput.
		const n = writers * appendsPerWriter / 4
		for range n {
			d, err := r.floor.update(1, r.value)
			if err != nil {
				return err
			}
			s.Floor.Time += d
		}
		s.Floor.Work = n
		return nil
	}
	rep := func() error {
		d, err := r.burst(func(w, i int) error {
			_, err := r.e.Append(ctx, r.ids[w], message(i))
			return err
		})
		s.Reprise.Time, s.Reprise.Work = d, writers*appendsPerWriter
		return err
	}
	jsonl := func() error {
		d, err := r.burst(func(w, i int) error {
			return r.peers[w].Append(newPeerMessage(r.ids[w], i))
		})
		peer.Floor.Time, peer.Floor.Work = d, writers*appendsPerWriter
		return err
	}
	var cc Sample
	ccBurst := func() error {
		d, err := r.burst(func(w, i int) error { return r.cc[w].Append(i) })
		cc.Floor.Time, cc.Floor.Work = d, writers*appendsPerWriter
		return err
	}
	if err := alternate(&r.n, floor, rep, jsonl, ccBurst); err != nil {
		return nil, err
	}
	peer.Reprise, cc.Reprise = s.Reprise, s.Reprise
	return []Sample{s, peer, cc}, nil
}

// burst has every writer w make appendsPerWriter durable appends,
// appendOne(w, i), to its own session, all starting together, and returns
// how long until all were durable.
func (r *concurrentRunner) burst(appendOne func(w, i int) error) (time.Duration, error) {
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, writers)
	)
	for w := range r.ids {
		wg.Go(func() {
			<-start
			for i := range appendsPerWriter {
				if err := appendOne(w, i); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return elapsed, nil
}

// saveBench is target 3: saving 1,000 buffered messages against one bbolt
// Update of 1,000 puts (F2).
var saveBench = Bench{
	Name: "save",
	Rows: []Row{{Target: 3, Name: "save", Figure: "Save of 1,000 buffered messages",
		Floor: "F2: bbolt Update, 1,000 puts, fsync", Unit: PerOp, What: "save", Limit: 1.3}},
	Reps: 30, QuickReps: 4,
	Open: openSave,
}

const saveBatch = 1000

func openSave(ctx context.Context, env *Env) (Runner, error) {
	d, err := openDurable(ctx, env, "save", 1)
	if err != nil {
		return nil, err
	}
	return &saveRunner{d}, nil
}

type saveRunner struct{ *durable }

func (r *saveRunner) Run(ctx context.Context) ([]Sample, error) {
	var s Sample
	floor := func() (err error) {
		s.Floor.Time, err = r.floor.update(saveBatch, r.value)
		return err
	}
	rep := func() error {
		// A new session each time, so that what is measured is the save
		// and not the growth of an ever longer conversation in memory.
		id, err := r.e.CreateSession(ctx, "", r.dir)
		if err != nil {
			return err
		}
		for i := range saveBatch {
			if _, err := r.e.Buffer(ctx, id, message(i)); err != nil {
				return err
			}
		}
		var n int
		d, err := timed(func() (err error) {
			n, err = r.e.Save(ctx, id)
			return err
		})
		if err == nil && n != saveBatch {
			err = fmt.Errorf("saved %d messages, want %d", n, saveBatch)
		}
		s.Reprise.Time = d
		return err
	}
	if err := alternate(&r.n, floor, rep); err != nil {
		return nil, err
	}
	s.Floor.Work, s.Reprise.Work = 1, 1
	return []Sample{s}, nil
}
