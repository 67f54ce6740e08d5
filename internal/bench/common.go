package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// DefaultCacheDir is where the scale stores are kept between runs unless
// Options.CacheDir says otherwise: reprise/bench in the user's cache
// directory (os.UserCacheDir), which fails when the user has none.
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the scale stores: %w", err)
	}
	return filepath.Join(dir, "reprise", "bench"), nil
}

// rawDB is a bare bbolt database with one bucket: the floors' store.
type rawDB struct {
	db     *bolt.DB
	bucket []byte
	next   uint64 // the last key written
}

// openRaw creates a bbolt database at path with fsync on, as a reprise
// store has it.
func openRaw(path string) (*rawDB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	r := &rawDB{db: db, bucket: []byte("floor")}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(r.bucket)
		return err
	}); err != nil {
		db.Close()
		return nil, err
	}
	return r, nil
}

// update is the floor of a durable write: one bbolt Update holding n puts
// of value under increasing 8-byte keys. It returns how long it took.
func (r *rawDB) update(n int, value []byte) (time.Duration, error) {
	start := time.Now()
	err := r.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(r.bucket)
		for range n {
			r.next++
			if err := b.Put(binary.BigEndian.AppendUint64(nil, r.next), value); err != nil {
				return err
			}
		}
		return nil
	})
	return time.Since(start), err
}

func (r *rawDB) Close() error { return r.db.Close() }

// countingStore counts the appends made through it: the durable writes a
// restore makes. Its Close leaves the store open when shared is set, so
// that several Engines can be made over one store.
type countingStore struct {
	eventlog.Store
	appends atomic.Int64
	started atomic.Int64 // the count when SessionStart hooks last ran
	shared  bool
}

func (c *countingStore) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	n := c.appends.Add(1)
	if len(recs) > 0 && recs[0].Type == schema.TypeSessionStartHookRan {
		c.started.Store(n - 1) // the hooks ran after the appends before this one
	}
	return c.Store.Append(ctx, expect, recs)
}

// syncs returns the syncs the bbolt store under c has made, none for a
// store that does not count them.
func (c *countingStore) syncs() boltstore.Syncs {
	if s, ok := c.Store.(interface{ Syncs() boltstore.Syncs }); ok {
		return s.Syncs()
	}
	return boltstore.Syncs{}
}

// syncNote says what the appends of one operation cost in syncs: the log's,
// which the operation waited for, against the two of a bbolt commit each
// append took before the store kept a log; and the bbolt commits applying
// the log in the background, per operation over the run.
func syncNote(appends, logSyncs int64, commits float64) string {
	return fmt.Sprintf("%d appends: %d fdatasyncs waited for (%d before the write-ahead log, 2 a commit), and %.1f bbolt commits applying it in the background",
		appends, logSyncs, 2*appends, commits)
}

func (c *countingStore) Close() error {
	if c.shared {
		return nil
	}
	return c.Store.Close()
}

// quiet is the logger of the benches' Engines: failed hooks are part of no
// bench, and logging them would only slow the run.
var quiet = slog.New(slog.DiscardHandler)

// engineAt opens an Engine on a new bbolt store at path, with fsync on
// unless noSync, and returns it with the store's append counter.
func engineAt(path string, noSync bool, hooks *hookexec.Registry) (*reprise.Engine, *countingStore, error) {
	s, err := boltstore.Open(path, boltstore.Options{NoSync: noSync})
	if err != nil {
		return nil, nil, err
	}
	c := &countingStore{Store: s}
	e := reprise.New(c, reprise.Options{Hooks: hooks, Logger: quiet,
		TranscriptDir: filepath.Join(filepath.Dir(path), "transcripts")})
	return e, c, nil
}

// benchText is the text of the benches' messages: a typical short turn,
// which makes a stored message of a little over 200 bytes.
const benchText = "Why does TestRefund fail on CI but pass locally? It started after the retry change."

// message returns the i-th message of a bench conversation.
func message(i int) reprise.Message {
	role := "user"
	if i%2 == 1 {
		role = "assistant"
	}
	return reprise.Text(role, benchText)
}

// lastEvent returns the last event of session id: a stored message, whose
// size the floors' values take.
func lastEvent(ctx context.Context, s eventlog.Store, id string) (eventlog.Event, error) {
	stream := projection.SessionStream(id)
	head, err := s.Head(ctx, stream)
	if err != nil {
		return eventlog.Event{}, err
	}
	var last eventlog.Event
	err = s.ReadStream(ctx, stream, head, func(ev eventlog.Event) error {
		last = ev
		last.Payload = bytes.Clone(ev.Payload)
		return nil
	})
	if err == nil && len(last.Payload) == 0 {
		err = errors.New("no stored message")
	}
	return last, err
}

// storedSize returns the size of the envelope the store holds for the last
// event of session id: the value size the floors write.
func storedSize(ctx context.Context, s eventlog.Store, id string) (int, error) {
	ev, err := lastEvent(ctx, s, id)
	return boltstore.EnvelopeSize(ev), err
}

// timed runs f and returns how long it took.
func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// heapBytes returns the bytes of live heap objects after a full collection.
func heapBytes() float64 {
	runtime.GC()
	runtime.GC() // a second cycle empties the sync.Pools' victim caches
	return readMetric("/memory/classes/heap/objects:bytes")
}

// allocatedBytes returns the bytes allocated on the heap so far.
func allocatedBytes() float64 { return readMetric("/gc/heap/allocs:bytes") }

func readMetric(name string) float64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64())
}

// closeAll closes every closer, returning the first error.
// teardown closes a runner's Engine and floor database, those it got to
// open, and removes its directory.
func teardown(dir string, e *reprise.Engine, floor *rawDB) error {
	var closers []interface{ Close() error }
	if e != nil {
		closers = append(closers, e)
	}
	if floor != nil {
		closers = append(closers, floor)
	}
	err := closeAll(closers...)
	if rerr := os.RemoveAll(dir); err == nil {
		err = rerr
	}
	return err
}

func closeAll(closers ...interface{ Close() error }) error {
	var first error
	for _, c := range closers {
		if c == nil {
			continue
		}
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// mkdir makes a fresh directory for one bench under env.Dir.
func mkdir(env *Env, name string) (string, error) {
	dir, err := os.MkdirTemp(env.Dir, name+"-")
	if err != nil {
		return "", fmt.Errorf("bench directory: %w", err)
	}
	return dir, nil
}
