package boltstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
)

// killStoreEnv names the store TestAppendKillHelper appends to.
const killStoreEnv = "REPRISE_TEST_KILL_STORE"

// killPayload is the payload of stream's event seq: its name and sequence,
// then up to 96 KiB, so that the log rotates within a few hundred appends.
func killPayload(stream string, seq uint64) []byte {
	head := fmt.Sprintf("%s#%d ", stream, seq)
	return []byte(head + strings.Repeat("x", int(seq*7919%(96<<10))))
}

// TestAppendKillHelper is the process TestKilledWhileAppending kills: four
// writers append to their own streams, and each append acknowledged is
// written to stdout as "stream seq position".
func TestAppendKillHelper(t *testing.T) {
	path := os.Getenv(killStoreEnv)
	if path == "" {
		t.Skip("run by TestKilledWhileAppending")
	}
	s, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			stream := fmt.Sprintf("w/%d", w)
			head, err := s.Head(context.Background(), stream)
			for err == nil {
				// Every third append carries two events.
				recs := []eventlog.Record{{Stream: stream, Type: "test.Event", Version: 1, Payload: killPayload(stream, head+1)}}
				if head%3 == 0 {
					recs = append(recs, eventlog.Record{Stream: stream, Type: "test.Event", Version: 1, Payload: killPayload(stream, head+2)})
				}
				var evs []eventlog.Event
				evs, err = s.Append(context.Background(), []eventlog.Expect{{Stream: stream, Seq: head}}, recs)
				mu.Lock()
				for _, ev := range evs {
					fmt.Fprintf(os.Stdout, "%s %d %d\n", ev.Stream, ev.Seq, ev.Position)
				}
				mu.Unlock()
				head += uint64(len(evs))
			}
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		})
	}
	wg.Wait()
}

// acked is an append the helper acknowledged.
type acked struct{ seq, pos uint64 }

// TestKilledWhileAppending kills a process appending to a store with
// SIGKILL, at random points of writing, syncing, applying, rotating and
// removing segments, several times over the same store: every append it
// acknowledged is there after the next Open, once, with the sequence and
// position it was given.
func TestKilledWhileAppending(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes")
	}
	path := filepath.Join(t.TempDir(), "events.db")
	all := map[string][]acked{} // by stream, in order
	rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
	unapplied, rotated := 0, 0
	const rounds = 8
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAppendKillHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), killStoreEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAt := 20 + rng.IntN(300)
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			var (
				stream   string
				seq, pos uint64
			)
			if _, err := fmt.Sscanf(sc.Text(), "%s %d %d", &stream, &seq, &pos); err != nil {
				t.Fatalf("round %d: helper wrote %q", round, sc.Text())
			}
			all[stream] = append(all[stream], acked{seq, pos})
			if n++; n == killAt {
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		err = cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: helper ended with %v after %d appends, want death by SIGKILL\n%s", round, err, n, stderr.String())
		}

		// Each process's log starts at segment 0, the write-open before
		// it having removed the segments: a later one means it rotated.
		segs, err := listSegments(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(segs) > 0 && segs[len(segs)-1].num > 0 {
			rotated++
		}
		// A reader either sees every acknowledged append or refuses.
		r, err := Open(path, Options{ReadOnly: true})
		switch {
		case errors.Is(err, ErrUnapplied):
			unapplied++
		case err != nil:
			t.Fatalf("round %d: read-only open after the kill: %v", round, err)
		default:
			checkAcked(t, r, round, all)
			r.Close()
		}
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("round %d: open after the kill: %v", round, err)
		}
		checkAcked(t, s, round, all)
		s.Close()
	}
	t.Logf("%d of %d kills left acknowledged appends in the log only, the log rotated in %d", unapplied, rounds, rotated)
}

// checkAcked checks that s holds every acknowledged append, once, as it
// was acknowledged, and nothing else but appends that were under way.
func checkAcked(t *testing.T, s *Store, round int, all map[string][]acked) {
	t.Helper()
	var last uint64
	if err := s.ReadAll(context.Background(), 0, func(ev eventlog.Event) error {
		if ev.Position != last+1 {
			return fmt.Errorf("position %d follows %d", ev.Position, last)
		}
		last = ev.Position
		if want := killPayload(ev.Stream, ev.Seq); string(ev.Payload) != string(want) {
			return fmt.Errorf("%s#%d holds another payload", ev.Stream, ev.Seq)
		}
		return nil
	}); err != nil {
		t.Fatalf("round %d: ReadAll: %v", round, err)
	}
	for stream, acks := range all {
		pos := map[uint64]uint64{}
		if err := s.ReadStream(context.Background(), stream, 0, func(ev eventlog.Event) error {
			if _, ok := pos[ev.Seq]; ok {
				return fmt.Errorf("%s#%d twice", stream, ev.Seq)
			}
			pos[ev.Seq] = ev.Position
			return nil
		}); err != nil {
			t.Fatalf("round %d: ReadStream %s: %v", round, stream, err)
		}
		for _, a := range acks {
			if got, ok := pos[a.seq]; !ok || got != a.pos {
				t.Fatalf("round %d: acknowledged %s#%d at position %d is lost (found at %d, %v)", round, stream, a.seq, a.pos, got, ok)
			}
		}
	}
}
