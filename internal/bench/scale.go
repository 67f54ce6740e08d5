package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// scaleBench is target 7: restoring on a store of 100,000 sessions and 10
// million events against the same on a store of 10 sessions of the same
// length, each time in a freshly opened Engine.
var scaleBench = Bench{
	Name: "scale",
	Rows: []Row{
		{Target: 7, Name: "scale-restore", Figure: "restore latency, large store",
			Floor: "the same on a 10-session store", Unit: PerOp, What: "restore", Limit: 1.2},
		{Target: 7, Name: "scale-memory", Figure: "Engine memory after it, large store",
			Floor: "the same on a 10-session store", Unit: Bytes, Limit: 1.2},
		{Target: 7, Name: "scale-open", Figure: "opening the large store",
			Floor: "opening the 10-session store", Unit: PerOp, What: "open", Limit: 1.2},
	},
	Reps: 30, QuickReps: 6,
	Open: openScale,
}

// Scale gives the size of the stores of target 7.
type Scale struct {
	Sessions int // in the large store; the small one has 10
	Events   int // per session: SessionCreated and Events-1 messages
}

// FullScale and QuickScale are the large stores of full and quick runs.
var (
	FullScale  = Scale{Sessions: 100_000, Events: 100}
	QuickScale = Scale{Sessions: 10_000, Events: 20}
)

// smallSessions is the number of sessions of the store the large one is
// compared with.
const smallSessions = 10

// scaleFormat versions the cached stores: a change to what they hold must
// change it, so that stale caches are not used.
const scaleFormat = 4

type scaleRunner struct {
	dir          string // transcripts
	small, large string // store paths
	scale        Scale
	rng          *rand.Rand
	n            int
}

func openScale(ctx context.Context, env *Env) (Runner, error) {
	scale := FullScale
	if env.Quick {
		scale = QuickScale
	}
	dir, err := mkdir(env, "scale")
	if err != nil {
		return nil, err
	}
	r := &scaleRunner{dir: dir, scale: scale, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))}
	if err := os.MkdirAll(env.CacheDir, 0o700); err != nil {
		r.Close()
		return nil, err
	}
	r.small, err = ScaleStore(ctx, env.CacheDir, Scale{Sessions: smallSessions, Events: scale.Events}, nil)
	if err == nil {
		r.large, err = ScaleStore(ctx, env.CacheDir, scale, func(frac float64) {
			env.progress(fmt.Sprintf("making the %d-session store (once; cached in %s)", scale.Sessions, env.CacheDir), frac*0.95)
		})
	}
	if err == nil {
		env.progress("reading the large store into the page cache", 0.95)
		err = warm(r.large)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *scaleRunner) Close() error { return os.RemoveAll(r.dir) }

func (r *scaleRunner) Note(row string) string {
	if row == "scale-restore" {
		return fmt.Sprintf("%d sessions, %d events vs %d sessions, %d events per session", r.scale.Sessions,
			r.scale.Sessions*r.scale.Events, smallSessions, r.scale.Events)
	}
	return ""
}

func (r *scaleRunner) Run(ctx context.Context) ([]Sample, error) {
	var restore, memory, open Sample
	run := func(path string, sessions int, restore, memory, open *Amount) func() error {
		return func() error {
			o, d, m, err := r.coldRestore(ctx, path, sessions)
			*open = Amount{Work: 1, Time: o}
			*restore = Amount{Work: 1, Time: d}
			*memory = Amount{Bytes: m}
			return err
		}
	}
	err := alternate(&r.n,
		run(r.small, smallSessions, &restore.Floor, &memory.Floor, &open.Floor),
		run(r.large, r.scale.Sessions, &restore.Reprise, &memory.Reprise, &open.Reprise))
	return []Sample{restore, memory, open}, err
}

// coldRestore opens the store at path in a new Engine, has a new agent
// start on one session and restore another, both picked at random, and
// returns how long the open and the restore took and the heap the Engine
// then holds.
func (r *scaleRunner) coldRestore(ctx context.Context, path string, sessions int) (open, restore time.Duration, heap float64, err error) {
	from := r.rng.IntN(sessions)
	to := (from + 1 + r.rng.IntN(sessions-1)) % sessions
	base := heapBytes()
	var e *reprise.Engine
	open, err = timed(func() (err error) {
		e, err = reprise.Open(path, reprise.Options{Logger: quiet, TranscriptDir: r.dir})
		return err
	})
	if err != nil {
		return 0, 0, 0, err
	}
	defer func() {
		if cerr := e.Close(); err == nil {
			err = cerr
		}
	}()
	a, err := e.Agent(ctx, fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), r.n))
	if err == nil {
		_, err = a.Start(ctx, scaleSessionID(from))
	}
	if err != nil {
		return 0, 0, 0, err
	}
	restore, err = timed(func() error {
		_, err := a.Restore(ctx, scaleSessionID(to))
		return err
	})
	heap = heapBytes() - base
	runtime.KeepAlive(e)
	return open, restore, heap, err
}

// ScaleStore returns the path of a store in dir holding scale.Sessions
// sessions of scale.Events events each, making it first if it is not there
// yet. The store is written with fsync off and in large appends, then
// compacted, synced once and renamed into place, so a store that is there
// is whole.
// Benchmarks append a few agent events to it each time they use it.
// progress, when not nil, is told the fraction made so far.
func ScaleStore(ctx context.Context, dir string, scale Scale, progress func(float64)) (string, error) {
	path := filepath.Join(dir, fmt.Sprintf("scale-v%d-%d-sessions-%d-events.db", scaleFormat, scale.Sessions, scale.Sessions*scale.Events))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	written, compacted := path+".partial", path+".compacting"
	for _, p := range []string{written, compacted} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	err := writeScaleStore(ctx, written, scale, func(frac float64) {
		if progress != nil {
			progress(frac * 0.8)
		}
	})
	if err == nil {
		err = compact(compacted, written)
	}
	os.Remove(written)
	if err == nil {
		err = os.Rename(compacted, path)
	}
	if err != nil {
		os.Remove(compacted)
		return "", fmt.Errorf("make %s: %w", path, err)
	}
	return path, nil
}

// compact copies the bbolt file src to dst, page by page in key order and
// with nothing free: the bulk appends that made src leave free pages
// behind, which a store in steady use has few of. It syncs dst once.
func compact(dst, src string) error {
	from, err := bolt.Open(src, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := bolt.Open(dst, 0o600, &bolt.Options{NoSync: true, Timeout: time.Second})
	if err != nil {
		return err
	}
	if err := bolt.Compact(to, from, 64<<20); err != nil {
		to.Close()
		return err
	}
	to.NoSync = false
	if err := to.Sync(); err != nil {
		to.Close()
		return err
	}
	return to.Close()
}

// sessionsPerAppend is how many whole sessions one append of the
// generator writes.
const sessionsPerAppend = 100

func writeScaleStore(ctx context.Context, path string, scale Scale, progress func(float64)) error {
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer s.Close()
	// The session index is kept as it is by an Engine's store, so that the
	// benchmarks do not build it on their first open.
	if err := s.Index(ctx, projection.SessionIndex); err != nil {
		return err
	}
	const base = 1_750_000_000_000_000_000 // a time in 2025, in unix nanoseconds
	var (
		expect []eventlog.Expect
		recs   []eventlog.Record
	)
	for first := 0; first < scale.Sessions; first += sessionsPerAppend {
		expect, recs = expect[:0], recs[:0]
		for i := first; i < min(first+sessionsPerAppend, scale.Sessions); i++ {
			id := scaleSessionID(i)
			stream := projection.SessionStream(id)
			expect = append(expect, eventlog.Expect{Stream: stream})
			t := int64(base + i*1000)
			rec, err := schema.NewRecord(stream, &schema.SessionCreated{ID: id, Cwd: "/src/project"}, t, "")
			if err != nil {
				return err
			}
			recs = append(recs, rec)
			parent := ""
			for j := 1; j < scale.Events; j++ {
				m := message(j)
				m.UUID, m.ParentUUID, m.Timestamp = pseudoUUID(uint64(i)<<20|uint64(j)), parent, t+int64(j)
				parent = m.UUID
				rec, err := schema.NewRecord(stream, &schema.MessageAppended{Message: m}, m.Timestamp, "")
				if err != nil {
					return err
				}
				recs = append(recs, rec)
			}
		}
		if _, err := s.Append(ctx, expect, recs); err != nil {
			return err
		}
		if progress != nil {
			progress(float64(first+sessionsPerAppend) / float64(scale.Sessions))
		}
	}
	return s.Close()
}

// scaleSessionID is the id of session i of a scale store: a UUID made
// from i, so that ids spread over the key space as random ones do.
func scaleSessionID(i int) string { return pseudoUUID(uint64(i) | 1<<63) }

// pseudoUUID returns a version 4 UUID made from n by a bijective mix.
func pseudoUUID(n uint64) string {
	a, b := splitmix(n), splitmix(n^0x9e3779b97f4a7c15)
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, a>>16&0xffff, a&0xfff, b>>48&0x3fff|0x8000, b&0xffffffffffff)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// warm reads the file at path once, so that the measurements find it in
// the page cache, as a store in use is, rather than on disk.
func warm(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}
