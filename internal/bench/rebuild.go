package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// rebuildBench is target 4: rebuilding a 100,000-message conversation from
// the log against a bbolt cursor scan that msgpack-decodes every record
// (F3) and against the JSONL peer reading the same conversation, and the
// memory the rebuild needs against the conversation's own.
var rebuildBench = Bench{
	Name: "rebuild",
	Rows: []Row{
		{Target: 4, Name: "rebuild", Figure: "rebuild a 100,000-message conversation",
			Floor: "F3: bbolt cursor scan + msgpack decode", Unit: Rate, What: "record", Min: true, Limit: 0.7},
		{Target: 4, Name: "rebuild-peer", Figure: "rebuild a 100,000-message conversation",
			Floor: "JSONL peer: open, bufio line scan, encoding/json decode", Unit: Rate, What: "record",
			Min: true, Limit: 3, Informational: true},
		{Target: 4, Name: "rebuild-memory", Figure: "peak memory of that rebuild",
			Floor: "the decoded conversation", Unit: Bytes, Limit: 3},
	},
	Reps: 3, QuickReps: 1,
	Open: openRebuild,
}

// rebuildMessages is the length of the rebuilt conversation.
const rebuildMessages = 100_000

type rebuildRunner struct {
	dir   string
	store *countingStore // shared: Engines made over it leave it open
	id    string
	floor *rawDB
	peer  string // the path of the conversation's peer file
	value int    // the size of a stored message
	n     int
	// allocated and decoded are the last memory sample's total allocation
	// and conversation size.
	allocated, decoded float64
}

func openRebuild(ctx context.Context, env *Env) (Runner, error) {
	dir, err := mkdir(env, "rebuild")
	if err != nil {
		return nil, err
	}
	r := &rebuildRunner{dir: dir}
	if err := r.fill(ctx, env); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// fill writes the conversation, then F3's records: each is a stored
// message's payload with its text lengthened so that the record is as
// long as the envelope reprise stores.
func (r *rebuildRunner) fill(ctx context.Context, env *Env) error {
	s, err := boltstore.Open(filepath.Join(r.dir, "reprise.db"), boltstore.Options{NoSync: true})
	if err != nil {
		return err
	}
	r.store = &countingStore{Store: s, shared: true}
	e := reprise.New(r.store, reprise.Options{Logger: quiet, TranscriptDir: filepath.Join(r.dir, "transcripts")})
	if r.id, err = e.CreateSession(ctx, "", r.dir); err != nil {
		return err
	}
	for i := range rebuildMessages {
		if _, err := e.Buffer(ctx, r.id, message(i)); err != nil {
			return err
		}
		if (i+1)%10_000 == 0 {
			if _, err := e.Save(ctx, r.id); err != nil {
				return err
			}
			env.progress("writing the conversation", float64(i+1)/rebuildMessages/2)
		}
	}
	if r.value, err = storedSize(ctx, s, r.id); err != nil {
		return err
	}
	// One stored payload, to size F3's records from.
	var payload []byte
	err = s.ReadStream(ctx, projection.SessionStream(r.id), 2, func(ev eventlog.Event) error {
		if payload == nil {
			payload = append([]byte(nil), ev.Payload...)
		}
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	var p schema.MessageAppended
	if err := msgpack.Unmarshal(payload, &p); err != nil {
		return err
	}
	for {
		data, err := msgpack.Marshal(&p)
		if err != nil {
			return err
		}
		if len(data) >= r.value {
			payload = data
			break
		}
		p.Message.Content[0].Text += "."
	}

	if r.floor, err = openRaw(filepath.Join(r.dir, "floor.db")); err != nil {
		return err
	}
	r.floor.db.NoSync = true
	for i := 0; i < rebuildMessages; i += 10_000 {
		if _, err := r.floor.update(10_000, payload); err != nil {
			return err
		}
		env.progress("writing the floor's records", 0.5+float64(i+10_000)/rebuildMessages/2)
	}
	r.floor.db.NoSync = false

	r.peer = filepath.Join(r.dir, "peer.jsonl")
	pf, err := createPeerFile(r.peer, r.id)
	if err != nil {
		return err
	}
	err = pf.WriteAll(peerMessages(r.id, rebuildMessages))
	if cerr := pf.Close(); err == nil {
		err = cerr
	}
	return err
}

// errStop ends a read early.
var errStop = errors.New("stop")

func (r *rebuildRunner) Close() error {
	var closers []interface{ Close() error }
	if r.store != nil {
		closers = append(closers, r.store.Store)
	}
	if r.floor != nil {
		closers = append(closers, r.floor)
	}
	err := closeAll(closers...)
	if rerr := os.RemoveAll(r.dir); err == nil {
		err = rerr
	}
	return err
}

func (r *rebuildRunner) Run(ctx context.Context) ([]Sample, error) {
	var speed, peer, memory Sample
	floor := func() (err error) {
		speed.Floor.Time, err = timed(r.scan)
		return err
	}
	rep := func() (err error) {
		speed.Reprise.Time, err = timed(func() error { _, err := r.rebuild(ctx); return err })
		return err
	}
	jsonl := func() (err error) {
		peer.Floor.Time, err = timed(r.read)
		return err
	}
	if err := alternate(&r.n, floor, rep, jsonl); err != nil {
		return nil, err
	}
	speed.Floor.Work, speed.Reprise.Work = rebuildMessages, rebuildMessages
	peer.Floor.Work, peer.Reprise = rebuildMessages, speed.Reprise
	var err error
	memory.Floor.Bytes, memory.Reprise.Bytes, err = r.memory(ctx)
	return []Sample{speed, peer, memory}, err
}

// read is the JSONL peer's rebuild: open the conversation's file, scan
// its lines and decode each into a message kept in a slice.
func (r *rebuildRunner) read() error {
	msgs, err := readPeer(r.peer)
	if err == nil && len(msgs) != rebuildMessages {
		err = fmt.Errorf("read %d peer messages, want %d", len(msgs), rebuildMessages)
	}
	return err
}

// scan is F3: one read transaction, a cursor over every record, each
// decoded into a message kept in a slice.
func (r *rebuildRunner) scan() error {
	var msgs []schema.Message
	err := r.floor.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(r.floor.bucket).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var p schema.MessageAppended
			if err := msgpack.Unmarshal(v, &p); err != nil {
				return err
			}
			msgs = append(msgs, p.Message)
		}
		return nil
	})
	if err == nil && len(msgs) != rebuildMessages {
		err = fmt.Errorf("scanned %d records, want %d", len(msgs), rebuildMessages)
	}
	return err
}

// rebuild is what a new Engine does when a conversation is first needed:
// read its stream and fold it into the conversation.
func (r *rebuildRunner) rebuild(ctx context.Context) (*reprise.Engine, error) {
	e := reprise.New(r.store, reprise.Options{Logger: quiet, TranscriptDir: filepath.Join(r.dir, "transcripts")})
	info, err := e.Session(ctx, r.id)
	if err == nil && info.Messages != rebuildMessages {
		err = fmt.Errorf("rebuilt %d messages, want %d", info.Messages, rebuildMessages)
	}
	return e, err
}

// memory rebuilds the conversation while sampling the heap, and returns
// the live heap the conversation adds once rebuilt and the peak the heap
// reached above where it started. It also keeps the total allocated, which
// bounds the peak whatever the collector does.
func (r *rebuildRunner) memory(ctx context.Context) (decoded, peak float64, err error) {
	base := heapBytes()
	before := allocatedBytes()
	stop, sampled := make(chan struct{}), make(chan float64)
	go func() {
		high := 0.0
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			high = max(high, readMetric("/memory/classes/heap/objects:bytes"))
			select {
			case <-stop:
				sampled <- max(high, readMetric("/memory/classes/heap/objects:bytes"))
				return
			case <-tick.C:
			}
		}
	}()
	e, err := r.rebuild(ctx)
	close(stop)
	peak = <-sampled - base
	r.allocated = allocatedBytes() - before
	decoded = heapBytes() - base
	runtime.KeepAlive(e)
	r.decoded = decoded
	return decoded, peak, err
}

func (r *rebuildRunner) Note(row string) string {
	if row == "rebuild-memory" {
		return fmt.Sprintf("heap sampled every 0.1 ms; %.0f MB allocated in all (%.2fx)", r.allocated/1e6, r.allocated/r.decoded)
	}
	if row == "rebuild-peer" {
		return fmt.Sprintf("lines of %d bytes", peerLineSize(r.id))
	}
	return fmt.Sprintf("records of %d bytes", r.value)
}
