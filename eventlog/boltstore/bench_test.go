package boltstore

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise/eventlog"
)

// benchPayload is the ~200-byte value both benchmarks write.
var benchPayload = bytes.Repeat([]byte("p"), 200)

// BenchmarkFloorUpdateOnePut is the floor under BenchmarkAppendOne: one raw
// bbolt write transaction putting one ~200-byte value, with fsync.
func BenchmarkFloorUpdateOnePut(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "floor.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	bucket := []byte("b")
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket(bucket)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	var n uint64
	for b.Loop() {
		n++
		if err := db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(bucket).Put(be64(n), benchPayload)
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendOne appends one ~200-byte record to one stream per
// operation, with fsync: compare its ns/op with BenchmarkFloorUpdateOnePut's.
func BenchmarkAppendOne(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "events.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	rec := eventlog.Record{Stream: "session/bench", Type: eventlog.TypeMessageAppended, Version: 1, Payload: benchPayload}
	var head uint64
	for b.Loop() {
		evs, err := s.Append(ctx, []eventlog.Expect{{Stream: rec.Stream, Seq: head}}, []eventlog.Record{rec})
		if err != nil {
			b.Fatal(err)
		}
		head = evs[0].Seq
	}
}
