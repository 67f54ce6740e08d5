package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// The benchmarks below measure the backend against the floors it stands
// on, in the same process and on the same disk: every iteration does one
// floor operation and one store operation, in alternating order. Each
// reports ns/op for the store, floor-ns/op for the floor and their ratio.
// The Engine-level figures, with the targets, are in the root
// package's benchmarks and in `reprise bench`.

// benchPayload is the payload of the benchmarks' records: the size of a
// short stored message.
var benchPayload = bytes.Repeat([]byte("p"), 200)

// benchStream is a stream named like a session's.
const benchStream = "session/6f1c8a52-3f0e-4d2b-9a57-0c8e4b1d2f3a"

// floorDB is a bare bbolt database with one bucket, with fsync on.
type floorDB struct {
	db   *bolt.DB
	next uint64
	fill float64
}

// openFloor returns a floor database whose bucket fills its pages to
// fill, bbolt's default 0.5 unless set otherwise.
func openFloor(b *testing.B) *floorDB { return openFloorFill(b, bolt.DefaultFillPercent) }

func openFloorFill(b *testing.B, fill float64) *floorDB {
	b.Helper()
	db, err := bolt.Open(filepath.Join(b.TempDir(), "floor.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("b"))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return &floorDB{db: db, fill: fill}
}

// update is one Update holding n puts of value under increasing keys.
func (f *floorDB) update(b *testing.B, n int, value []byte) time.Duration {
	start := time.Now()
	if err := f.db.Update(func(tx *bolt.Tx) error {
		bucket := tx.Bucket([]byte("b"))
		bucket.FillPercent = f.fill
		for range n {
			f.next++
			if err := bucket.Put(be64(f.next), value); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// storedSize is the size of the envelope the store writes for rec.
func storedSize(rec eventlog.Record) int {
	return EnvelopeSize(eventlog.Event{Stream: rec.Stream, Seq: 1 << 20, Position: 1 << 20, Type: rec.Type,
		Version: rec.Version, Time: rec.Time, RestoreID: rec.RestoreID, Payload: rec.Payload})
}

// pairs runs floor and store operations in turn, b.N of each, and reports
// the median of the store's times, the floor's and their ratio: medians,
// because on a shared disk a few operations take ten times the others.
func pairs(b *testing.B, floor, store func() time.Duration) {
	b.Helper()
	var floorTimes, storeTimes []time.Duration
	for b.Loop() {
		if len(floorTimes)%2 == 0 {
			floorTimes = append(floorTimes, floor())
			storeTimes = append(storeTimes, store())
		} else {
			storeTimes = append(storeTimes, store())
			floorTimes = append(floorTimes, floor())
		}
	}
	f, s := median(floorTimes), median(storeTimes)
	b.ReportMetric(float64(s.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(f.Nanoseconds()), "floor-ns/op")
	b.ReportMetric(s.Seconds()/f.Seconds(), "ratio")
}

func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func openBench(b *testing.B, opts Options) *Store {
	b.Helper()
	s, err := Open(filepath.Join(b.TempDir(), "events.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func benchRecord() eventlog.Record {
	return eventlog.Record{Stream: benchStream, Type: schema.TypeMessageAppended, Version: 1,
		Time: 1_750_000_000_000_000_000, Payload: benchPayload}
}

// BenchmarkAppendOne appends one record per operation, with fsync, against
// one Update of one put of the same stored size.
func BenchmarkAppendOne(b *testing.B) {
	ctx := context.Background()
	s, floor := openBench(b, Options{}), openFloor(b)
	rec := benchRecord()
	value := make([]byte, storedSize(rec))
	var head uint64
	pairs(b, func() time.Duration { return floor.update(b, 1, value) }, func() time.Duration {
		start := time.Now()
		evs, err := s.Append(ctx, []eventlog.Expect{{Stream: rec.Stream, Seq: head}}, []eventlog.Record{rec})
		if err != nil {
			b.Fatal(err)
		}
		head = evs[0].Seq
		return time.Since(start)
	})
}

// BenchmarkAppendOneAfterBatches appends one record per operation, with
// fsync, to a stream whose last values are batches, which bbolt rewrites
// with the leaf the new key goes to: an append of 1,000 records, not
// timed, comes before each.
func BenchmarkAppendOneAfterBatches(b *testing.B) {
	ctx := context.Background()
	s, floor := openBench(b, Options{}), openFloor(b)
	rec := benchRecord()
	batch := make([]eventlog.Record, 1000)
	for i := range batch {
		batch[i] = benchRecord()
	}
	value := make([]byte, storedSize(rec))
	var head uint64
	pairs(b, func() time.Duration { return floor.update(b, 1, value) }, func() time.Duration {
		evs, err := s.Append(ctx, []eventlog.Expect{{Stream: rec.Stream, Seq: head}}, batch)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		evs, err = s.Append(ctx, []eventlog.Expect{{Stream: rec.Stream, Seq: evs[len(evs)-1].Seq}}, []eventlog.Record{rec})
		if err != nil {
			b.Fatal(err)
		}
		head = evs[0].Seq
		return time.Since(start)
	})
}

// BenchmarkAppend1000 appends 1,000 records in one append, against one
// Update of 1,000 puts: with bbolt's default fill, as the F2 is
// defined, and with the pages filled as the store fills its own.
func BenchmarkAppend1000(b *testing.B) {
	for _, floor := range []struct {
		name string
		fill float64
	}{{"floor=default-fill", bolt.DefaultFillPercent}, {"floor=full-pages", 1}} {
		b.Run(floor.name, func(b *testing.B) {
			ctx := context.Background()
			s, fl := openBench(b, Options{}), openFloorFill(b, floor.fill)
			recs := make([]eventlog.Record, 1000)
			for i := range recs {
				recs[i] = benchRecord()
			}
			value := make([]byte, storedSize(recs[0]))
			var head uint64
			pairs(b, func() time.Duration { return fl.update(b, len(recs), value) }, func() time.Duration {
				start := time.Now()
				evs, err := s.Append(ctx, []eventlog.Expect{{Stream: benchStream, Seq: head}}, recs)
				if err != nil {
					b.Fatal(err)
				}
				head = evs[len(evs)-1].Seq
				return time.Since(start)
			})
		})
	}
}

// BenchmarkAppendConcurrent has 64 goroutines append one record at a time
// to 64 streams at once, against the same number of Updates done serially:
// its ratio is the time per append over the floor's, so 0.25 is four
// times the floor's throughput.
func BenchmarkAppendConcurrent(b *testing.B) {
	const writers, each = 64, 10
	ctx := context.Background()
	s, floor := openBench(b, Options{}), openFloor(b)
	value := make([]byte, storedSize(benchRecord()))
	heads := make([]uint64, writers)
	pairs(b, func() time.Duration {
		var d time.Duration
		for range writers * each {
			d += floor.update(b, 1, value)
		}
		return d
	}, func() time.Duration {
		var wg sync.WaitGroup
		start := time.Now()
		for w := range writers {
			wg.Go(func() {
				rec := benchRecord()
				rec.Stream = fmt.Sprintf("%s-%d", benchStream, w)
				for range each {
					evs, err := s.Append(ctx, []eventlog.Expect{{Stream: rec.Stream, Seq: heads[w]}}, []eventlog.Record{rec})
					if err != nil {
						b.Error(err)
						return
					}
					heads[w] = evs[0].Seq
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	})
}

// BenchmarkReadStream100k reads a stream of 100,000 message events, each
// decoded into its message, against a cursor scan of 100,000 records of
// the same stored size decoded the same way.
func BenchmarkReadStream100k(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	s, floor := openBench(b, Options{NoSync: true}), openFloor(b)
	msg := schema.MessageAppended{Message: schema.Message{UUID: "0b8a1f52-3f0e-4d2b-9a57-0c8e4b1d2f3a",
		ParentUUID: "6f1c8a52-3f0e-4d2b-9a57-0c8e4b1d2f3a", Role: "user", Timestamp: 1_750_000_000_000_000_000,
		Content: []schema.Block{{Type: "text", Text: "Why does TestRefund fail on CI but pass locally?"}}}}
	rec, err := schema.NewRecord(benchStream, &msg, 1_750_000_000_000_000_000, "")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i += 10_000 {
		recs := make([]eventlog.Record, 10_000)
		for j := range recs {
			recs[j] = rec
		}
		if _, err := s.Append(ctx, []eventlog.Expect{{Stream: benchStream, Seq: uint64(i)}}, recs); err != nil {
			b.Fatal(err)
		}
	}
	// The floor's records are as long as the stored envelopes.
	for msgpackLen(b, &msg) < storedSize(rec) {
		msg.Message.Content[0].Text += "."
	}
	value, _ := msgpack.Marshal(&msg)
	floor.db.NoSync = true
	for range n / 10_000 {
		floor.update(b, 10_000, value)
	}
	decode := func(data []byte, msgs []schema.Message) []schema.Message {
		var p schema.MessageAppended
		if err := msgpack.Unmarshal(data, &p); err != nil {
			b.Fatal(err)
		}
		return append(msgs, p.Message)
	}
	pairs(b, func() time.Duration {
		start := time.Now()
		var msgs []schema.Message
		_ = floor.db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket([]byte("b")).Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				msgs = append(msgs, decode(v, nil)...)
			}
			return nil
		})
		return time.Since(start)
	}, func() time.Duration {
		start := time.Now()
		var msgs []schema.Message
		if err := s.ReadStream(ctx, benchStream, 1, func(ev eventlog.Event) error {
			msgs = decode(ev.Payload, msgs)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	})
}

func msgpackLen(b *testing.B, v any) int {
	data, err := msgpack.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return len(data)
}

// BenchmarkIndexKept appends to one of 200 sessions, with fsync, on a
// store keeping the session index against one keeping none: the ratio is
// what keeping the index costs an append (one record, and a bulk save of
// 1,000); floor-ns/op is the store keeping none.
func BenchmarkIndexKept(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			ctx := context.Background()
			plain, kept := openSessions(b, false), openSessions(b, true)
			recs := make([]eventlog.Record, n)
			for i := range recs {
				recs[i] = benchRecord()
			}
			appender := func(s *Store) func() time.Duration {
				head, err := s.Head(ctx, benchStream)
				if err != nil {
					b.Fatal(err)
				}
				return func() time.Duration {
					start := time.Now()
					evs, err := s.Append(ctx, []eventlog.Expect{{Stream: benchStream, Seq: head}}, recs)
					if err != nil {
						b.Fatal(err)
					}
					head = evs[len(evs)-1].Seq
					return time.Since(start)
				}
			}
			pairs(b, appender(plain), appender(kept))
		})
	}
}

// openSessions returns a durable store holding 200 sessions, benchStream's
// among them, that keeps the session index if kept.
func openSessions(b *testing.B, kept bool) *Store {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "events.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 200 {
		id := fmt.Sprintf("6f1c8a52-3f0e-4d2b-9a57-%012d", i)
		if i == 0 {
			id = strings.TrimPrefix(benchStream, "session/")
		}
		rec, err := schema.NewRecord("session/"+id, &schema.SessionCreated{ID: id, Cwd: "/w"}, 1, "")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Append(ctx, []eventlog.Expect{{Stream: rec.Stream}}, []eventlog.Record{rec}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if s, err = Open(path, Options{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if kept {
		if err := s.Index(ctx, projection.SessionIndex); err != nil {
			b.Fatal(err)
		}
	}
	return s
}
