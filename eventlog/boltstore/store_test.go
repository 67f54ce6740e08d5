package boltstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) eventlog.Store {
		s, err := Open(filepath.Join(t.TempDir(), "events.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	want := fill(t, s, 3, 40)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, path, Options{})
	defer s.Close()
	if got := readAll(t, s); !sameEvents(got, want) {
		t.Fatalf("after reopening, ReadAll returned %d events, want the %d written", len(got), len(want))
	}
	evs, err := s.Append(context.Background(), []eventlog.Expect{{Stream: "stream/0", Seq: 40}}, []eventlog.Record{record("stream/0", "more")})
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Seq != 41 || evs[0].Position != uint64(len(want))+1 {
		t.Errorf("append after reopening got seq %d position %d, want 41 and %d", evs[0].Seq, evs[0].Position, len(want)+1)
	}
}

func TestLockedInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	for _, readOnly := range []bool{false, true} {
		start := time.Now()
		_, err := Open(path, Options{Timeout: 100 * time.Millisecond, ReadOnly: readOnly})
		checkLocked(t, path, err, time.Since(start))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, path, Options{Timeout: 100 * time.Millisecond}).Close()
}

// holdEnv names the store that TestHoldStoreHelper holds open when the test
// binary runs as TestLockedAcrossProcesses's second process.
const holdEnv = "BOLTSTORE_TEST_HOLD"

func TestLockedAcrossProcesses(t *testing.T) {
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no processes")
	}
	path := filepath.Join(t.TempDir(), "events.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldStoreHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	release := func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper process: %v", err)
		}
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && lines.Text() != "ready" {
	}
	if lines.Text() != "ready" {
		release()
		t.Fatalf("helper process never held the store")
	}

	for _, readOnly := range []bool{false, true} {
		start := time.Now()
		_, err := Open(path, Options{Timeout: 100 * time.Millisecond, ReadOnly: readOnly})
		checkLocked(t, path, err, time.Since(start))
		var locked *eventlog.LockedError
		if runtime.GOOS == "linux" && (!errors.As(err, &locked) || locked.PID != cmd.Process.Pid ||
			!strings.Contains(locked.Command, "TestHoldStoreHelper")) {
			t.Errorf("the error should name the holder, process %d: %#v", cmd.Process.Pid, err)
		}
	}
	release()
	mustOpen(t, path, Options{Timeout: 100 * time.Millisecond}).Close()
}

// TestHoldStoreHelper is TestLockedAcrossProcesses's second process: it
// holds the store named by holdEnv open until its stdin closes.
func TestHoldStoreHelper(t *testing.T) {
	path := os.Getenv(holdEnv)
	if path == "" {
		t.Skip("runs only as the second process of TestLockedAcrossProcesses")
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func checkLocked(t *testing.T, path string, err error, waited time.Duration) {
	t.Helper()
	if !errors.Is(err, eventlog.ErrLocked) {
		t.Fatalf("opening a held store: err = %v, want ErrLocked", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "is locked by") || !strings.Contains(msg, path) {
		t.Errorf("error %q should say the store is locked and name %s", msg, path)
	}
	if waited > time.Second {
		t.Errorf("gave up after %v with a 100ms timeout", waited)
	}
}

func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	want := fill(t, s, 2, 5)
	s.Close()
	before := fileBytes(t, path)

	r1 := mustOpen(t, path, Options{ReadOnly: true})
	defer r1.Close()
	r2 := mustOpen(t, path, Options{ReadOnly: true})
	defer r2.Close()
	if got := readAll(t, r2); !sameEvents(got, want) {
		t.Errorf("read-only ReadAll returned %d events, want %d", len(got), len(want))
	}
	_, err := r1.Append(ctx, []eventlog.Expect{{Stream: "stream/0", Seq: 5}}, []eventlog.Record{record("stream/0", "x")})
	if !errors.Is(err, eventlog.ErrReadOnly) {
		t.Errorf("Append on a read-only store: err = %v, want ErrReadOnly", err)
	}
	_, err = Open(path, Options{Timeout: 100 * time.Millisecond})
	checkLocked(t, path, err, 0)
	r1.Close()
	r2.Close()
	if !bytes.Equal(fileBytes(t, path), before) {
		t.Errorf("read-only use changed the file")
	}
}

func TestReadOnlyMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.db")
	_, err := Open(path, Options{ReadOnly: true})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only Open of a missing file: err = %v, want os.ErrNotExist", err)
	}
	if _, statErr := os.Stat(path); !errors.Is(statErr, os.ErrNotExist) {
		t.Errorf("read-only Open created the file")
	}
}

func TestZeroLengthFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{ReadOnly: true}); !errors.Is(err, ErrFormat) {
		t.Errorf("read-only Open of a zero-length file: err = %v, want ErrFormat", err)
	}
	s := mustOpen(t, path, Options{})
	defer s.Close()
	if got := readAll(t, s); len(got) != 0 {
		t.Errorf("a zero-length file opened as a store with %d events", len(got))
	}
	fill(t, s, 1, 1)
}

func TestNotAStore(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		tamper func(tx *bolt.Tx) error
		want   error
	}{
		{"OtherBuckets", func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte("someone-else"))
			return err
		}, ErrFormat},
		{"NewerLayout", func(tx *bolt.Tx) error {
			return tx.Bucket(metaBucket).Put(formatKey, []byte{layoutVersion + 1})
		}, ErrFormat},
		{"NoLayoutVersion", func(tx *bolt.Tx) error {
			return tx.Bucket(metaBucket).Delete(formatKey)
		}, eventlog.ErrCorrupt},
		{"BucketMissing", func(tx *bolt.Tx) error {
			return tx.DeleteBucket(positionsBucket)
		}, eventlog.ErrCorrupt},
		{"RecentBucketMissing", func(tx *bolt.Tx) error {
			return tx.DeleteBucket(recentBucket)
		}, eventlog.ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".db")
			if tt.name != "OtherBuckets" {
				mustOpen(t, path, Options{}).Close()
			}
			rawUpdate(t, path, tt.tamper)
			for _, readOnly := range []bool{false, true} {
				if _, err := Open(path, Options{ReadOnly: readOnly}); !errors.Is(err, tt.want) {
					t.Errorf("Open (read-only %v): err = %v, want %v", readOnly, err, tt.want)
				}
			}
		})
	}
}

func TestGarbageFile(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	// Bytes that are no bbolt file at all are no store; zeros, which a
	// bbolt file whose pages were wiped also holds, are a damaged one.
	files := map[string]struct {
		data []byte
		want error
	}{
		"OneByte":     {[]byte{0}, eventlog.ErrCorrupt},
		"Random100B":  {random(100), ErrFormat},
		"Random64KiB": {random(64 << 10), ErrFormat},
		"Zeros16KiB":  {make([]byte, 16<<10), eventlog.ErrCorrupt},
		"Text":        {[]byte(strings.Repeat("not a database\n", 1000)), ErrFormat},
	}
	for name, f := range files {
		data := f.data
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, readOnly := range []bool{true, false} {
				if _, err := Open(path, Options{ReadOnly: readOnly}); !errors.Is(err, f.want) {
					t.Errorf("Open (read-only %v): err = %v, want %v", readOnly, err, f.want)
				}
			}
			if !bytes.Equal(fileBytes(t, path), data) {
				t.Errorf("Open changed the garbage file")
			}
		})
	}
}

func TestTruncatedFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "full.db")
	s := mustOpen(t, src, Options{NoSync: true})
	want := fill(t, s, 10, 300)
	s.Close()
	full := fileBytes(t, src)
	pages := highWaterMark(t, src)
	t.Logf("%d events: file %d bytes, pages reach byte %d", len(want), len(full), pages)

	sizes := []int{len(full) / 2, 4096, 4097, 1, 8191, 8192, 3 * 4096, int(pages) - 1, int(pages)}
	for n := 16 << 10; n < len(full); n += 4096 * 29 {
		sizes = append(sizes, n, n+2048)
	}
	for _, size := range sizes {
		path := filepath.Join(dir, fmt.Sprintf("truncated-%d.db", size))
		if err := os.WriteFile(path, full[:size], 0o600); err != nil {
			t.Fatal(err)
		}
		for _, readOnly := range []bool{true, false} {
			s, err := Open(path, Options{ReadOnly: readOnly})
			if int64(size) < pages {
				if !errors.Is(err, eventlog.ErrCorrupt) {
					t.Errorf("truncated to %d bytes, Open (read-only %v): err = %v, want ErrCorrupt", size, readOnly, err)
				}
				if err == nil {
					s.Close()
				}
				continue
			}
			// Cutting only the file's unused tail loses nothing.
			if err != nil {
				t.Errorf("truncated to %d bytes (pages end at %d), Open: %v", size, pages, err)
				continue
			}
			if got := readAll(t, s); !sameEvents(got, want) {
				t.Errorf("truncated to %d bytes, ReadAll returned %d events, want %d", size, len(got), len(want))
			}
			s.Close()
		}
	}
}

func TestFlippedValueByte(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	fill(t, s, 3, 20)
	const marker = "FLIP-ME-0123456789"
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "session/victim"}},
		[]eventlog.Record{record("session/victim", "first"), record("session/victim", marker), record("session/victim", "third")}); err != nil {
		t.Fatal(err)
	}
	// More appends rewrite the victim's page, leaving stale copies of it in
	// the file's free pages.
	for i := range 20 {
		if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "session/victim", Seq: uint64(3 + i)}},
			[]eventlog.Record{record("session/victim", "later")}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	data := fileBytes(t, path)
	n := bytes.Count(data, []byte(marker))
	if n == 0 {
		t.Fatal("marker not found in the file")
	}
	data = bytes.ReplaceAll(data, []byte(marker), []byte(strings.Replace(marker, "5", "%", 1)))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, path, Options{})
	defer s.Close()
	var seen []uint64
	err := s.ReadStream(ctx, "session/victim", 0, func(ev eventlog.Event) error {
		seen = append(seen, ev.Seq)
		return nil
	})
	checkEventError(t, "ReadStream", err, "session/victim", 2)
	if len(seen) != 1 || seen[0] != 1 {
		t.Errorf("ReadStream delivered seqs %v before the damaged one, want [1]", seen)
	}
	checkEventError(t, "ReadAll", s.ReadAll(ctx, 0, func(eventlog.Event) error { return nil }), "session/victim", 2)
	if got := readStream(t, s, "stream/0"); len(got) != 20 {
		t.Errorf("an undamaged stream returned %d events, want 20", len(got))
	}
}

func TestTamperedLayout(t *testing.T) {
	ctx := context.Background()
	nop := func(eventlog.Event) error { return nil }
	readS := func(s *Store) error { return s.ReadStream(ctx, "s", 0, nop) }
	readAll := func(s *Store) error { return s.ReadAll(ctx, 0, nop) }
	tests := []struct {
		name   string
		tamper func(tx *bolt.Tx) error
		read   func(s *Store) error
		seq    uint64 // 0: the error need not name an event
	}{
		{"EventMissing", func(tx *bolt.Tx) error {
			return tx.Bucket(eventsBucket).Delete(eventKey("s", 2))
		}, readS, 2},
		// A stream's head is its last event's key: losing that event
		// shortens the stream, which the store-wide order reports.
		{"LastEventMissing", func(tx *bolt.Tx) error {
			return tx.Bucket(eventsBucket).Delete(eventKey("s", 4))
		}, readAll, 4},
		{"LastBatchMissing", func(tx *bolt.Tx) error {
			b := tx.Bucket(eventsBucket)
			if err := b.Delete(eventKey("s", 4)); err != nil {
				return err
			}
			return b.Delete(eventKey("s", 2))
		}, readAll, 2},
		{"EventMissingReadAll", func(tx *bolt.Tx) error {
			return tx.Bucket(eventsBucket).Delete(eventKey("s", 2))
		}, readAll, 2},
		{"EnvelopeUnderWrongKey", func(tx *bolt.Tx) error {
			b := tx.Bucket(eventsBucket)
			return b.Put(eventKey("s", 2), bytes.Clone(b.Get(eventKey("s", 1))))
		}, readS, 2},
		{"EnvelopeAtWrongPosition", func(tx *bolt.Tx) error {
			b := runsIn(tx)
			return b.Put(be64(2), bytes.Clone(b.Get(be64(1))))
		}, readAll, 1},
		{"PositionMissing", func(tx *bolt.Tx) error {
			return runsIn(tx).Delete(be64(2))
		}, readAll, 0},
		{"LastKeyMalformed", func(tx *bolt.Tx) error {
			return tx.Bucket(eventsBucket).Put([]byte("s\x00\xff"), []byte{3})
		}, func(s *Store) error { _, err := s.Head(ctx, "s"); return err }, 0},
		{"LastBatchCountsOne", func(tx *bolt.Tx) error {
			b := tx.Bucket(eventsBucket)
			if err := b.Delete(eventKey("s", 4)); err != nil {
				return err
			}
			v := bytes.Clone(b.Get(eventKey("s", 2)))
			binary.BigEndian.PutUint32(v[1:], 1)
			return b.Put(eventKey("s", 2), v)
		}, func(s *Store) error { _, err := s.Head(ctx, "s"); return err }, 2},
		{"BatchCountsMore", func(tx *bolt.Tx) error {
			b := tx.Bucket(eventsBucket)
			v := bytes.Clone(b.Get(eventKey("s", 2)))
			binary.BigEndian.PutUint32(v[1:], 3)
			return b.Put(eventKey("s", 2), v)
		}, readS, 4},
		{"BatchCountsFewer", func(tx *bolt.Tx) error {
			b := tx.Bucket(eventsBucket)
			v := bytes.Clone(b.Get(eventKey("s", 2)))
			return b.Put(eventKey("s", 2), append(v, v[batchHeader:]...))
		}, readS, 3},
		{"BatchLengthOverruns", func(tx *bolt.Tx) error {
			b := tx.Bucket(eventsBucket)
			v := bytes.Clone(b.Get(eventKey("s", 2)))
			return b.Put(eventKey("s", 2), v[:len(v)-1])
		}, readAll, 3},
		{"BatchEnvelopeDamaged", func(tx *bolt.Tx) error {
			b := tx.Bucket(eventsBucket)
			v := bytes.Clone(b.Get(eventKey("s", 2)))
			v[len(v)-10] ^= 1
			return b.Put(eventKey("s", 2), v)
		}, readS, 3},
		{"LastKeyMalformedStreams", func(tx *bolt.Tx) error {
			return tx.Bucket(eventsBucket).Put([]byte("s\x00\xff"), []byte{3})
		}, func(s *Store) error {
			return s.Streams(ctx, "", func(eventlog.StreamInfo) error { return nil })
		}, 0},
		{"LastKeyMalformedAppend", func(tx *bolt.Tx) error {
			return tx.Bucket(eventsBucket).Put([]byte("s\x00\xff"), []byte{3})
		}, func(s *Store) error {
			_, err := s.Append(ctx, []eventlog.Expect{{Stream: "s", Seq: 3}}, []eventlog.Record{record("s", "4")})
			return err
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			s := mustOpen(t, path, Options{})
			if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "s"}, {Stream: "t"}},
				[]eventlog.Record{record("s", "1"), record("t", "1"), record("s", "2"), record("s", "3"), record("t", "2")}); err != nil {
				t.Fatal(err)
			}
			// s#2 and s#3 are one batch, under the key of s#2; s#4 is
			// stored alone.
			if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "s", Seq: 3}}, []eventlog.Record{record("s", "4")}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			rawUpdate(t, path, tt.tamper)
			s = mustOpen(t, path, Options{})
			defer s.Close()
			err := tt.read(s)
			if tt.seq == 0 {
				if !errors.Is(err, eventlog.ErrCorrupt) {
					t.Errorf("err = %v, want ErrCorrupt", err)
				}
				return
			}
			checkEventError(t, "read", err, "s", tt.seq)
		})
	}
}

func TestDamagedFreelist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	want := fill(t, s, 2, 50)
	s.Close()

	// Find the freelist pages and break their page type.
	var pageSize int
	var freelist []int
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pageSize = db.Info().PageSize
	if err := db.View(func(tx *bolt.Tx) error {
		for id := 2; int64(id*pageSize) < tx.Size(); id++ {
			if info, err := tx.Page(id); err == nil && info != nil && info.Type == "freelist" {
				freelist = append(freelist, id)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if len(freelist) == 0 {
		t.Fatal("no freelist page found")
	}
	data := fileBytes(t, path)
	for _, id := range freelist {
		data[id*pageSize+8] ^= 0xff // the page flags
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	if _, err := Open(path, Options{Timeout: 100 * time.Millisecond}); !errors.Is(err, eventlog.ErrCorrupt) {
		t.Fatalf("Open with a damaged freelist: err = %v, want ErrCorrupt", err)
	}
	// The failed open released its lock: a reader, which does not load the
	// freelist, still gets everything.
	r := mustOpen(t, path, Options{ReadOnly: true, Timeout: 100 * time.Millisecond})
	defer r.Close()
	if got := readAll(t, r); !sameEvents(got, want) {
		t.Errorf("ReadAll returned %d events, want %d", len(got), len(want))
	}
}

func TestFileShrunkWhileOpen(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a mapped file cannot be truncated on Windows")
	}
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	defer s.Close()
	fill(t, s, 4, 100)
	s.applied(t)
	if err := os.Truncate(path, 2*int64(os.Getpagesize())); err != nil {
		t.Fatal(err)
	}
	err := s.ReadAll(context.Background(), 0, func(eventlog.Event) error { return nil })
	if !errors.Is(err, eventlog.ErrCorrupt) || !strings.Contains(err.Error(), "memory fault") {
		t.Errorf("ReadAll of a file shrunk under the mapping: err = %v, want ErrCorrupt from a memory fault", err)
	}
}

// TestMemoryFaultNamesTheStream checks that a read that runs off the end
// of a file shrunk under the mapping names the stream and sequence it was
// reading.
func TestMemoryFaultNamesTheStream(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a mapped file cannot be truncated on Windows")
	}
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	defer s.Close()
	big := bytes.Repeat([]byte("x"), 3000)
	for i := range 64 {
		rec := eventlog.Record{Stream: "session/long", Type: "Blob", Version: 1, Payload: big}
		if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: rec.Stream, Seq: uint64(i)}}, []eventlog.Record{rec}); err != nil {
			t.Fatal(err)
		}
	}
	// Cut the file shorter, a page at a time from the end of what its
	// pages hold (bbolt grows the file beyond it), until a cut lands in
	// an event: the read must name it.
	var size int64
	if err := s.applied(t).View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	page := int64(os.Getpagesize())
	var err error
	var ee *eventlog.EventError
	for cut := size - page; cut > 2*page; cut -= page {
		if err := os.Truncate(path, cut); err != nil {
			t.Fatal(err)
		}
		err = s.ReadStream(context.Background(), "session/long", 1, func(eventlog.Event) error { return nil })
		if errors.As(err, &ee) {
			break
		}
	}
	if !errors.Is(err, eventlog.ErrCorrupt) || !errors.As(err, &ee) || ee.Stream != "session/long" || ee.Seq == 0 {
		t.Fatalf("ReadStream of a stream cut off under the mapping: err = %v, want ErrCorrupt at session/long#N", err)
	}
	if !strings.Contains(err.Error(), "memory fault") {
		t.Errorf("err = %v, want it to say it was a memory fault", err)
	}
}

func TestCallbackPanicIsNotCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	defer s.Close()
	want := fill(t, s, 1, 3)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the callback's panic", r)
			}
		}()
		err := s.ReadStream(context.Background(), "stream/0", 0, func(eventlog.Event) error { panic("boom") })
		t.Errorf("ReadStream returned %v instead of panicking", err)
	}()
	if got := readAll(t, s); !sameEvents(got, want) {
		t.Errorf("after a callback panic, ReadAll returned %d events, want %d", len(got), len(want))
	}
}

func TestLongReadStopsOnCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{NoSync: true})
	defer s.Close()
	fill(t, s, 1, 1000)
	for name, read := range map[string]func(context.Context, func(eventlog.Event) error) error{
		"ReadStream": func(ctx context.Context, fn func(eventlog.Event) error) error {
			return s.ReadStream(ctx, "stream/0", 0, fn)
		},
		"ReadAll": func(ctx context.Context, fn func(eventlog.Event) error) error {
			return s.ReadAll(ctx, 0, fn)
		},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := read(ctx, func(eventlog.Event) error {
			calls++
			cancel()
			return nil
		})
		if !errors.Is(err, context.Canceled) || calls > ctxCheckEvery {
			t.Errorf("%s cancelled during the first event: err = %v after %d events; want context.Canceled within %d", name, err, calls, ctxCheckEvery)
		}
	}
}

func mustOpen(t *testing.T, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func record(stream, payload string) eventlog.Record {
	return eventlog.Record{Stream: stream, Type: "test.Event", Version: 1, Time: 1, Payload: []byte(payload)}
}

// fill appends perStream events to each of streams "stream/0".., in appends
// of up to 100 records spread over the streams, and returns them.
func fill(t *testing.T, s *Store, streams, perStream int) []eventlog.Event {
	t.Helper()
	ctx := context.Background()
	var all []eventlog.Event
	heads := make([]uint64, streams)
	for heads[streams-1] < uint64(perStream) {
		var expect []eventlog.Expect
		var recs []eventlog.Record
		for i := range streams {
			name := fmt.Sprintf("stream/%d", i)
			expect = append(expect, eventlog.Expect{Stream: name, Seq: heads[i]})
			for n := 0; n < 100/streams && heads[i] < uint64(perStream); n++ {
				heads[i]++
				recs = append(recs, record(name, fmt.Sprintf("%s event %d %s", name, heads[i], strings.Repeat("x", 150))))
			}
		}
		evs, err := s.Append(ctx, expect, recs)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
	}
	return all
}

func readAll(t *testing.T, s *Store) []eventlog.Event {
	t.Helper()
	var evs []eventlog.Event
	if err := s.ReadAll(context.Background(), 0, func(ev eventlog.Event) error {
		ev.Payload = bytes.Clone(ev.Payload)
		evs = append(evs, ev)
		return nil
	}); err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	return evs
}

func readStream(t *testing.T, s *Store, stream string) []eventlog.Event {
	t.Helper()
	var evs []eventlog.Event
	if err := s.ReadStream(context.Background(), stream, 0, func(ev eventlog.Event) error {
		ev.Payload = bytes.Clone(ev.Payload)
		evs = append(evs, ev)
		return nil
	}); err != nil {
		t.Fatalf("ReadStream(%s): %v", stream, err)
	}
	return evs
}

func sameEvents(got, want []eventlog.Event) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Stream != w.Stream || g.Seq != w.Seq || g.Position != w.Position || g.Type != w.Type ||
			g.Version != w.Version || g.Time != w.Time || g.RestoreID != w.RestoreID || !bytes.Equal(g.Payload, w.Payload) {
			return false
		}
	}
	return true
}

func checkEventError(t *testing.T, what string, err error, stream string, seq uint64) {
	t.Helper()
	var ee *eventlog.EventError
	if !errors.Is(err, eventlog.ErrCorrupt) || !errors.As(err, &ee) || ee.Stream != stream || ee.Seq != seq {
		t.Errorf("%s: err = %v, want ErrCorrupt at %s#%d", what, err, stream, seq)
		return
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("%s#%d", stream, seq)) {
		t.Errorf("%s: error %q does not name %s#%d", what, err, stream, seq)
	}
}

func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// highWaterMark returns the size the meta page of the bbolt file at path
// says its pages take.
func highWaterMark(t *testing.T, path string) int64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var size int64
	if err := db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	return size
}

// rawUpdate changes the bbolt file at path behind the store's back.
func rawUpdate(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// TestOpenSaysAFileThatIsNoBboltFileIsNotAStore checks that a text file or
// random bytes given as the store are ErrFormat, not a damaged store, for
// reading and for writing, and are left as they were; a bbolt file whose
// meta pages are both zeroed is still damaged, not foreign.
func TestOpenSaysAFileThatIsNoBboltFileIsNotAStore(t *testing.T) {
	dir := t.TempDir()
	random := make([]byte, 20000)
	for i := range random {
		random[i] = byte(rand.IntN(256))
	}
	for name, data := range map[string][]byte{"notes.txt": []byte("hello world\n"), "random.bin": random} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, readOnly := range []bool{true, false} {
			s, err := Open(path, Options{ReadOnly: readOnly, Timeout: time.Second})
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, ErrFormat) || errors.Is(err, eventlog.ErrCorrupt) || !strings.Contains(err.Error(), "not a bbolt file") {
				t.Errorf("Open(%s, read-only %v): %v; want ErrFormat, not a bbolt file", name, readOnly, err)
			}
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
			t.Errorf("%s was changed", name)
		}
	}
	path := filepath.Join(dir, "zeroed.db")
	s, err := Open(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 2*os.Getpagesize())
	if _, err := f.WriteAt(zeros, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Open(path, Options{ReadOnly: true, Timeout: time.Second}); errors.Is(err, ErrFormat) || err == nil {
		t.Errorf("Open of a bbolt file with zeroed meta pages: %v; want it damaged, not foreign", err)
	}
}
