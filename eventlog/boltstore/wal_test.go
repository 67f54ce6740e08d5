package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/reprise-dev/reprise/eventlog"
)

// faultFile wraps a segment file, counting its syncs and failing a write
// or a sync on request.
type faultFile struct {
	walFile
	mu        *sync.Mutex
	syncs     *int
	failSync  *bool // the next sync fails
	tearWrite *bool // the next write writes half its bytes and fails
}

func (f faultFile) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	tear := *f.tearWrite
	*f.tearWrite = false
	f.mu.Unlock()
	if tear {
		n, _ := f.walFile.WriteAt(p[:len(p)/2], off)
		return n, errors.New("injected torn write")
	}
	return f.walFile.WriteAt(p, off)
}

func (f faultFile) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	*f.syncs++
	if *f.failSync {
		*f.failSync = false
		return errors.New("injected sync failure")
	}
	return f.walFile.Sync()
}

// faults controls the faultFiles of one store.
type faults struct {
	mu        sync.Mutex
	syncs     int
	failSync  bool
	tearWrite bool
}

func (fs *faults) options() Options {
	return Options{walWrap: func(f walFile) walFile {
		return faultFile{walFile: f, mu: &fs.mu, syncs: &fs.syncs, failSync: &fs.failSync, tearWrite: &fs.tearWrite}
	}}
}

func (fs *faults) set(fn func()) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fn()
}

func (fs *faults) syncCount() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.syncs
}

// appendOne appends one event to stream at head and returns it.
func appendOne(s *Store, stream string, head uint64, payload string) (eventlog.Event, error) {
	evs, err := s.Append(context.Background(), []eventlog.Expect{{Stream: stream, Seq: head}}, []eventlog.Record{record(stream, payload)})
	if err != nil {
		return eventlog.Event{}, err
	}
	return evs[0], nil
}

// segmentsBeside returns the log segments beside the store at path.
func segmentsBeside(t *testing.T, path string) []string {
	t.Helper()
	segs, err := listSegments(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range segs {
		names = append(names, filepath.Base(s.path))
	}
	return names
}

func TestAppendSyncsTheLogOnce(t *testing.T) {
	var fs faults
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, fs.options())
	defer s.Close()
	for i := range 5 {
		before := fs.syncCount()
		if _, err := appendOne(s, "a", uint64(i), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		if n := fs.syncCount() - before; n != 1 {
			t.Errorf("append %d synced the log %d times, want 1", i, n)
		}
	}
	if got := segmentsBeside(t, path); len(got) != 1 {
		t.Errorf("segments while open: %v, want one", got)
	}
	info, err := os.Stat(segmentName(path, 0))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 || info.Size() < segmentSize {
		t.Errorf("segment is %v, %d bytes; want 0600, preallocated to %d", info.Mode().Perm(), info.Size(), segmentSize)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := segmentsBeside(t, path); len(got) != 0 {
		t.Errorf("segments after Close: %v, want none", got)
	}
	r := mustOpen(t, path, Options{ReadOnly: true})
	defer r.Close()
	if got := readStream(t, r, "a"); len(got) != 5 {
		t.Errorf("after Close the file holds %d events, want 5", len(got))
	}
}

// TestFailedSyncIsFatal fails a sync of the log: that append fails, and so
// does every later call, without another sync; the appends acknowledged
// before are there after a reopen.
func TestFailedSyncIsFatal(t *testing.T) {
	var fs faults
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, fs.options())
	for i := range 3 {
		if _, err := appendOne(s, "a", uint64(i), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	fs.set(func() { fs.failSync = true })
	if _, err := appendOne(s, "a", 3, "3"); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("append whose sync failed: %v, want ErrLogFailed", err)
	}
	syncs := fs.syncCount()
	if _, err := appendOne(s, "b", 0, "b"); !errors.Is(err, ErrLogFailed) {
		t.Errorf("append after a failed sync: %v, want ErrLogFailed", err)
	}
	if _, err := s.Head(context.Background(), "a"); !errors.Is(err, ErrLogFailed) {
		t.Errorf("Head after a failed sync: %v, want ErrLogFailed", err)
	}
	if err := s.ReadAll(context.Background(), 0, func(eventlog.Event) error { return nil }); !errors.Is(err, ErrLogFailed) {
		t.Errorf("ReadAll after a failed sync: %v, want ErrLogFailed", err)
	}
	if n := fs.syncCount(); n != syncs {
		t.Errorf("the log was synced %d more times after its sync failed", n-syncs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path, Options{})
	defer s.Close()
	got := readStream(t, s, "a")
	if len(got) < 3 {
		t.Fatalf("after reopening, a holds %d events; the 3 acknowledged are lost", len(got))
	}
	for i, ev := range got[:3] {
		if string(ev.Payload) != fmt.Sprint(i) {
			t.Errorf("a#%d = %q", ev.Seq, ev.Payload)
		}
	}
	if _, err := appendOne(s, "a", uint64(len(got)), "next"); err != nil {
		t.Errorf("append after reopening: %v", err)
	}
}

// TestTornWriteIsCutOnOpen tears a record in half: the store fails, and on
// reopening the torn record, never acknowledged, is gone and the rest is
// there.
func TestTornWriteIsCutOnOpen(t *testing.T) {
	var fs faults
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, fs.options())
	for i := range 3 {
		if _, err := appendOne(s, "a", uint64(i), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	fs.set(func() { fs.tearWrite = true })
	if _, err := appendOne(s, "a", 3, strings.Repeat("torn", 100)); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("torn append: %v, want ErrLogFailed", err)
	}
	if _, err := appendOne(s, "a", 3, "after"); !errors.Is(err, ErrLogFailed) {
		t.Errorf("append after a torn write: %v, want ErrLogFailed", err)
	}
	s.Close()
	if len(segmentsBeside(t, path)) == 0 {
		t.Fatal("a failed store removed its log")
	}
	s = mustOpen(t, path, Options{})
	got := readStream(t, s, "a")
	if len(got) != 3 {
		t.Fatalf("after reopening, a holds %d events, want the 3 acknowledged", len(got))
	}
	if _, err := appendOne(s, "a", 3, "3"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = mustOpen(t, path, Options{})
	defer s.Close()
	if got := readStream(t, s, "a"); len(got) != 4 || string(got[3].Payload) != "3" {
		t.Errorf("a holds %d events after the torn one was replaced", len(got))
	}
}

// crashedStore makes a store holding stream a up to 2 (positions 1 and 2),
// with a log beside it as a holder killed before applying leaves it: a
// segment with records for positions 2 (applied), 3 to 4 and 5.
func crashedStore(t *testing.T) (path string, offsets []int64) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	for i := range 2 {
		if _, err := appendOne(s, "a", uint64(i), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	ev := func(seq uint64) eventlog.Event {
		return eventlog.Event{Stream: "a", Seq: seq, Position: seq, Type: "test.Event", Version: 1, Time: 1, Payload: []byte(fmt.Sprint(seq - 1))}
	}
	var data []byte
	for _, rec := range [][]eventlog.Event{{ev(2)}, {ev(3), ev(4)}, {ev(5)}} {
		offsets = append(offsets, int64(len(data)))
		data = appendRecord(data, rec)
	}
	offsets = append(offsets, int64(len(data)))
	data = append(data, make([]byte, 4096)...) // preallocated
	if err := os.WriteFile(segmentName(path, 7), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, offsets
}

func TestOpenReplaysTheLog(t *testing.T) {
	path, _ := crashedStore(t)
	s := mustOpen(t, path, Options{})
	got := readStream(t, s, "a")
	if len(got) != 5 {
		t.Fatalf("after replay a holds %d events, want 5", len(got))
	}
	for i, ev := range got {
		if ev.Seq != uint64(i+1) || ev.Position != uint64(i+1) || string(ev.Payload) != fmt.Sprint(i) {
			t.Errorf("event %d = #%d at %d %q", i, ev.Seq, ev.Position, ev.Payload)
		}
	}
	if segs := segmentsBeside(t, path); len(segs) != 0 {
		t.Errorf("segments after replay: %v", segs)
	}
	ev, err := appendOne(s, "a", 5, "5")
	if err != nil || ev.Position != 6 {
		t.Fatalf("append after replay: %+v, %v", ev, err)
	}
	if got := segmentsBeside(t, path); len(got) != 1 || got[0] != filepath.Base(segmentName(path, 8)) {
		t.Errorf("the new segment is %v, want number 8, after the replayed one", got)
	}
	s.Close()
	// Replayed once: opening again adds nothing.
	s = mustOpen(t, path, Options{})
	defer s.Close()
	if got := readStream(t, s, "a"); len(got) != 6 {
		t.Errorf("after a second open a holds %d events, want 6", len(got))
	}
}

func TestReadOnlyOpenRefusesAnUnappliedLog(t *testing.T) {
	path, _ := crashedStore(t)
	_, err := Open(path, Options{ReadOnly: true})
	if !errors.Is(err, ErrUnapplied) || !strings.Contains(err.Error(), "position 5") {
		t.Fatalf("read-only open of a store with an unapplied log: %v, want ErrUnapplied naming position 5", err)
	}
	s := mustOpen(t, path, Options{})
	s.Close()
	r := mustOpen(t, path, Options{ReadOnly: true})
	defer r.Close()
	if got := readStream(t, r, "a"); len(got) != 5 {
		t.Errorf("read-only after the replay: %d events, want 5", len(got))
	}
}

func TestOpenCutsATornLastRecord(t *testing.T) {
	for _, tear := range []struct {
		name string
		do   func(data []byte, last int64) []byte
	}{
		{"flipped byte", func(data []byte, last int64) []byte { data[last+recordHeader+3] ^= 1; return data }},
		{"half written", func(data []byte, last int64) []byte {
			end := int64(len(data)) - 4096
			clear(data[last+(end-last)/2:])
			return data
		}},
		{"header only", func(data []byte, last int64) []byte { clear(data[last+recordHeader:]); return data }},
		{"cut short", func(data []byte, last int64) []byte { return data[:last+5] }},
	} {
		t.Run(tear.name, func(t *testing.T) {
			path, offsets := crashedStore(t)
			seg := segmentName(path, 7)
			data, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(seg, tear.do(data, offsets[2]), 0o600); err != nil {
				t.Fatal(err)
			}
			s := mustOpen(t, path, Options{})
			defer s.Close()
			if got := readStream(t, s, "a"); len(got) != 4 {
				t.Errorf("a holds %d events, want 4: the torn fifth cut off", len(got))
			}
		})
	}
}

func TestOpenRefusesADamagedRecordBeforeAGoodOne(t *testing.T) {
	path, offsets := crashedStore(t)
	seg := segmentName(path, 7)
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[offsets[1]+recordHeader+3] ^= 1
	if err := os.WriteFile(seg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	_, err = Open(path, Options{})
	want := fmt.Sprintf("%s: the record at offset %d", seg, offsets[1])
	if !errors.Is(err, eventlog.ErrCorrupt) || !strings.Contains(err.Error(), want) {
		t.Fatalf("open with a damaged record before a good one: %v, want ErrCorrupt naming %q", err, want)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("the refused open changed the store's file")
	}
	if len(segmentsBeside(t, path)) != 1 {
		t.Error("the refused open removed the segment")
	}
	// The last record of a segment damaged, and a good one in a later
	// segment, is refused too.
	clear(data[offsets[1]:])
	data[offsets[0]+recordHeader] ^= 1
	if err := os.WriteFile(seg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	later := appendRecord(nil, []eventlog.Event{{Stream: "a", Seq: 4, Position: 4, Type: "test.Event", Version: 1, Payload: []byte("x")}})
	if err := os.WriteFile(segmentName(path, 9), later, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, eventlog.ErrCorrupt) {
		t.Errorf("open with a damaged record before a later segment: %v, want ErrCorrupt", err)
	}
}

func TestOpenRefusesALinkedSegment(t *testing.T) {
	path, _ := crashedStore(t)
	seg := segmentName(path, 7)
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(seg, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, seg); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrNotPrivate) {
		t.Errorf("open with a segment that is a link: %v, want ErrNotPrivate", err)
	}
}

func TestSegmentsRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{NoSync: true})
	defer s.Close()
	big := strings.Repeat("x", 256<<10)
	n := 2 * segmentSize / len(big)
	for i := range n {
		if _, err := appendOne(s, "a", uint64(i), big); err != nil {
			t.Fatal(err)
		}
	}
	s.w.mu.Lock()
	next := s.w.nextSeg
	s.w.mu.Unlock()
	if next < 3 {
		t.Errorf("%d bytes of records took %d segments, want them rotated at %d", n*len(big), next, segmentSize)
	}
	if got := readStream(t, s, "a"); len(got) != n {
		t.Errorf("a holds %d events, want %d", len(got), n)
	}
}

func TestApplyRemovesFullSegments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{NoSync: true})
	defer s.Close()
	big := strings.Repeat("x", 256<<10)
	n := 3 * segmentSize / len(big)
	for i := range n {
		if _, err := appendOne(s, "a", uint64(i), big); err != nil {
			t.Fatal(err)
		}
	}
	s.applied(t)
	// The applier removes what it applied once it has moved on.
	for range 100 {
		if len(segmentsBeside(t, path)) == 1 {
			break
		}
		s.applied(t)
	}
	if got := segmentsBeside(t, path); len(got) > 2 {
		t.Errorf("segments once applied: %v, want only the one written (and at most one being removed)", got)
	}
}

func TestUpgradesLayout5(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	want := fill(t, s, 2, 10)
	s.Close()
	rawUpdate(t, path, func(tx *bolt.Tx) error { return tx.Bucket(metaBucket).Put(formatKey, []byte{5}) })
	r := mustOpen(t, path, Options{ReadOnly: true})
	if got := readAll(t, r); !sameEvents(got, want) {
		t.Errorf("read-only, a layout 5 store returned %d events, want %d", len(got), len(want))
	}
	r.Close()
	if v := formatOf(t, path); v != 5 {
		t.Fatalf("a read-only open changed the layout to %d", v)
	}
	s = mustOpen(t, path, Options{})
	s.Close()
	if v := formatOf(t, path); v != 6 {
		t.Errorf("after a write-open the layout is %d, want 6, which builds that know no log refuse", v)
	}
}

// TestLoadPurgeCompactDrainTheLog runs the calls that write to bbolt
// themselves while appends are unapplied: they see them, and leave no
// segment behind.
func TestLoadPurgeCompactDrainTheLog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s := mustOpen(t, path, Options{})
	defer s.Close()
	fill(t, s, 2, 50)
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if segs := segmentsBeside(t, path); len(segs) != 0 {
		t.Errorf("segments after Compact: %v", segs)
	}
	if got := readAll(t, s); len(got) != 100 {
		t.Fatalf("after Compact the store holds %d events, want 100", len(got))
	}
	// A Load moves the last position on; appends after it follow it.
	ev, err := appendOne(s, "c", 0, "c1")
	if err != nil {
		t.Fatal(err)
	}
	load := []eventlog.Event{{Stream: "d", Seq: 1, Position: ev.Position + 1, Type: "test.Event", Version: 1, Payload: []byte("d1")}}
	if err := s.Load(ctx, load); err != nil {
		t.Fatal(err)
	}
	ev, err = appendOne(s, "c", 1, "c2")
	if err != nil || ev.Position != load[0].Position+1 {
		t.Fatalf("append after a Load: %+v, %v; want position %d", ev, err, load[0].Position+1)
	}
	if got := readAll(t, s); len(got) != 103 {
		t.Errorf("the store holds %d events, want 103", len(got))
	}
}

func TestOpenRefusesSegmentsOfARemovedStore(t *testing.T) {
	path, _ := crashedStore(t)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "log segments") {
		t.Fatalf("open of a removed store with its log left: %v, want ErrFormat naming the segments", err)
	}
	if len(segmentsBeside(t, path)) != 1 {
		t.Error("the refused open removed the segment")
	}
}

// TestReadsSeeEveryAcknowledgedAppend reads each append back at once,
// while others append to other streams: Head answers from what the log
// acknowledged, ReadStream waits for the apply of the events it returns.
func TestReadsSeeEveryAcknowledgedAppend(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), Options{NoSync: true})
	defer s.Close()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			stream := fmt.Sprintf("w/%d", w)
			for i := range 200 {
				ev, err := appendOne(s, stream, uint64(i), fmt.Sprint(i))
				if err != nil {
					t.Error(err)
					return
				}
				if head, err := s.Head(ctx, stream); err != nil || head != ev.Seq {
					t.Errorf("%s: Head after append %d = %d, %v", stream, ev.Seq, head, err)
					return
				}
				var got []string
				if err := s.ReadStream(ctx, stream, ev.Seq, func(ev eventlog.Event) error {
					got = append(got, string(ev.Payload))
					return nil
				}); err != nil || len(got) != 1 || got[0] != fmt.Sprint(i) {
					t.Errorf("%s: ReadStream from %d after appending it = %v, %v", stream, ev.Seq, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
