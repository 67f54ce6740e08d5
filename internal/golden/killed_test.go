package golden_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/internal/golden"
	"github.com/reprise-dev/reprise/schema"
)

// killed is the set of a store whose holder was killed right after its
// last acknowledged append: store.db as the kill left it, each log
// segment beside it gzipped (STORE.wal.N.gz: a segment is preallocated to
// 8 MiB, mostly zeros), acked.txt, every event the dying process was
// told was appended ("position stream seq type"), and expected.txt, what
// the store reads as once a write-open has replayed its log.
var killed = "../../testdata/golden/v5-killed"

const (
	ackedFile     = "acked.txt"
	killedDirEnv  = "REPRISE_GOLDEN_KILLED_DIR"
	segmentSuffix = ".gz"
)

// The store a killed holder left is refused by a read-only open, as its
// log holds acknowledged appends its file lacks; a write-open replays the
// log, after which every event the dead process was told was appended is
// there, at its stream, sequence and position, unless a vacuum of that
// history removed it, and the store reads as expected.txt and audits
// clean.
func TestGoldenKilled(t *testing.T) {
	if *write {
		regenerateKilled(t, killed)
	}
	ctx := context.Background()
	path := unpackKilled(t, killed)
	if err := openReadOnly(path); !errors.Is(err, boltstore.ErrUnapplied) {
		t.Fatalf("read-only open of the killed store: %v; want ErrUnapplied", err)
	}
	e, err := reprise.Open(path, reprise.Options{TranscriptDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	closing(t, e)
	want, err := os.ReadFile(filepath.Join(killed, expectedFile))
	if err != nil {
		t.Fatal(err)
	}
	compare(t, want, render(t, e))
	audit(t, e)

	type at struct {
		stream string
		seq    uint64
		typ    eventlog.Type
	}
	got := map[uint64]at{}
	var vacuumed []schema.PositionRange
	err = e.Store().ReadAll(ctx, 1, func(ev eventlog.Event) error {
		got[ev.Position] = at{ev.Stream, ev.Seq, ev.Type}
		if ev.Type == schema.TypeVacuumed {
			p, err := schema.Decode(ev)
			if err != nil {
				return err
			}
			vacuumed = append(vacuumed, p.(*schema.Vacuumed).Positions...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	acked, err := os.ReadFile(filepath.Join(killed, ackedFile))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(acked)) {
		var (
			pos, seq    uint64
			stream, typ string
		)
		if _, err := fmt.Sscanf(line, "%d %s %d %s", &pos, &stream, &seq, &typ); err != nil {
			t.Fatalf("%s: %q: %v", ackedFile, line, err)
		}
		n++
		if g, ok := got[pos]; ok {
			if g != (at{stream, seq, eventlog.Type(typ)}) {
				t.Errorf("position %d holds %s#%d %s; the dead process was told %s#%d %s", pos, g.stream, g.seq, g.typ, stream, seq, typ)
			}
			continue
		}
		removed := false
		for _, r := range vacuumed {
			removed = removed || r.First <= pos && pos <= r.Last
		}
		if !removed {
			t.Errorf("acknowledged %s#%d %s at position %d is lost", stream, seq, typ, pos)
		}
	}
	if n == 0 {
		t.Fatalf("%s lists no acknowledged event", ackedFile)
	}
}

// openReadOnly opens the bbolt store at path read-only and closes it
// again, returning the error of the open.
func openReadOnly(path string) error {
	s, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	return errors.Join(errors.New("the store opened"), s.Close())
}

// unpackKilled copies the killed set's store and its segments, unzipped,
// into a temporary directory, and returns the store's path there.
func unpackKilled(t *testing.T, dir string) string {
	t.Helper()
	tmp := t.TempDir()
	data, err := os.ReadFile(filepath.Join(dir, boltFile))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tmp, boltFile)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	segs, err := filepath.Glob(filepath.Join(dir, boltFile+".wal.*"+segmentSuffix))
	if err != nil || len(segs) == 0 {
		t.Fatalf("%s holds no log segment (%v)", dir, err)
	}
	for _, seg := range segs {
		f, err := os.Open(seg)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(seg), segmentSuffix)
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// killingStore is the store of TestGoldenKillHelper: it writes each event
// it acknowledges to stdout, and its Close kills the process instead of
// closing, so the log is left as a crash leaves it.
type killingStore struct{ *boltstore.Store }

func (k killingStore) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	evs, err := k.Store.Append(ctx, expect, recs)
	for _, ev := range evs {
		fmt.Printf("%d %s %d %s\n", ev.Position, ev.Stream, ev.Seq, ev.Type)
	}
	return evs, err
}

func (k killingStore) Purge(ctx context.Context, p eventlog.Purge) ([]eventlog.Event, error) {
	evs, err := k.Store.Purge(ctx, p)
	for _, ev := range evs {
		fmt.Printf("%d %s %d %s\n", ev.Position, ev.Stream, ev.Seq, ev.Type)
	}
	return evs, err
}

func (k killingStore) Close() error {
	os.Stdout.Sync()
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// TestGoldenKillHelper is the process regenerateKilled kills: it writes
// the scripted history into a new store in the directory killedDirEnv
// names, and dies where it would close it.
func TestGoldenKillHelper(t *testing.T) {
	dir := os.Getenv(killedDirEnv)
	if dir == "" {
		t.Skip("run by -golden.write")
	}
	store, err := boltstore.Open(filepath.Join(dir, boltFile), boltstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	jsonl, err := os.ReadFile(transcript)
	if err == nil {
		err = golden.Generate(context.Background(), killingStore{store}, filepath.Join(dir, "transcripts"), jsonl)
	}
	fmt.Fprintln(os.Stderr, "the history ended without its Close:", err)
	os.Exit(2)
}

// regenerateKilled writes the killed set into dir: it runs
// TestGoldenKillHelper until a kill leaves acknowledged appends in the
// log only (the applier may have committed them all before the kill),
// then keeps what that kill left.
func regenerateKilled(t *testing.T, dir string) {
	if _, err := os.Stat(filepath.Join(dir, boltFile)); err == nil {
		t.Fatalf("%s already holds a released golden store, which is never regenerated", dir)
	}
	for try := range 20 {
		tmp := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestGoldenKillHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), killedDirEnv+"="+tmp)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("helper ended with %v, want death by SIGKILL\n%s", err, stderr.String())
		}
		path := filepath.Join(tmp, boltFile)
		if err := openReadOnly(path); !errors.Is(err, boltstore.ErrUnapplied) {
			t.Logf("kill %d left no unapplied append (%v); again", try, err)
			continue
		}
		var acked bytes.Buffer
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			// The test binary's own output (PASS, ok) never comes: it died.
			acked.WriteString(sc.Text() + "\n")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		segs, err := filepath.Glob(path + ".wal.*")
		if err != nil {
			t.Fatal(err)
		}
		for _, seg := range segs {
			data, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			var z bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
			zw.Write(data)
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(seg)+segmentSuffix), z.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, boltFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ackedFile), acked.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		replayed := unpackKilled(t, dir)
		e, err := reprise.Open(replayed, reprise.Options{TranscriptDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		rendering := render(t, e)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, expectedFile), rendering, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("20 kills in a row left every acknowledged append applied")
}
