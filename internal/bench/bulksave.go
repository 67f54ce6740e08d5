package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bulkSaveBench is target 3 at the size of a long imported conversation:
// saving 100,000 buffered messages, each time into a new store, against
// the JSONL peer writing the same messages to a new file in one write and
// one fsync; and the bytes the store file grew by for them against the
// same conversation exported as a Claude Code transcript.
var bulkSaveBench = Bench{
	Name: "save-100k",
	Rows: []Row{
		{Target: 3, Name: "save-100k-peer", Figure: "Save of 100,000 buffered messages",
			Floor: "JSONL peer: 1 write of 100,000 lines, 1 fsync", Unit: Rate, What: "message",
			Min: true, Limit: 1, Informational: true},
		{Target: 3, Name: "save-100k-host", Figure: "100,000 messages: the Buffer calls and the Save",
			Floor: "Claude Code-shaped peer: 100,000 lines made, written through bufio, 1 fsync", Unit: Rate,
			What: "message", Min: true, Limit: 1.2, Informational: true},
		{Target: 3, Name: "save-100k-cc", Figure: "Save of 100,000 buffered messages",
			Floor: "Claude Code-shaped peer: 100,000 lines made, written through bufio, 1 fsync", Unit: Rate,
			What: "message", Min: true},
		{Target: 3, Name: "store-size", Figure: "store file growth for those 100,000 messages",
			Floor: "the same conversation as Engine.Export writes it (Claude Code JSONL)", Unit: Bytes,
			Limit: 1, Informational: true},
	},
	Reps: 1, QuickReps: 1,
	Open: openBulkSave,
}

// bulkMessages is the length of the saved conversation.
const bulkMessages = 100_000

type bulkSaveRunner struct {
	dir string
	n   int
	// The last operation's sizes, for the notes: the store file after the
	// save, the part of it that holds pages, and the peer file.
	file, used, peerSize float64
}

func openBulkSave(_ context.Context, env *Env) (Runner, error) {
	dir, err := mkdir(env, "save-100k")
	if err != nil {
		return nil, err
	}
	return &bulkSaveRunner{dir: dir}, nil
}

func (r *bulkSaveRunner) Close() error { return os.RemoveAll(r.dir) }

func (r *bulkSaveRunner) Run(ctx context.Context) ([]Sample, error) {
	var speed, host, cc, size Sample
	rep := func() (err error) {
		host.Reprise.Time, speed.Reprise.Time, size.Reprise.Bytes, size.Floor.Bytes, err = r.save(ctx)
		return err
	}
	jsonl := func() (err error) {
		speed.Floor.Time, err = r.peer()
		return err
	}
	ccWrite := func() (err error) {
		cc.Floor.Time, err = r.ccPeer()
		return err
	}
	if err := alternate(&r.n, jsonl, rep, ccWrite); err != nil {
		return nil, err
	}
	speed.Floor.Work, speed.Reprise.Work = bulkMessages, bulkMessages
	cc.Reprise, cc.Floor.Work = speed.Reprise, bulkMessages
	host.Floor, host.Reprise.Work = cc.Floor, bulkMessages
	return []Sample{speed, host, cc, size}, nil
}

// save buffers the conversation in a session of a new store with fsync
// on, and returns how long buffering and saving it took, how long saving
// it took, how many bytes the store file grew by, and how long its export
// is.
func (r *bulkSaveRunner) save(ctx context.Context) (whole, took time.Duration, growth, exported float64, err error) {
	path := filepath.Join(r.dir, "reprise.db")
	defer os.Remove(path)
	e, _, err := engineAt(path, false, nil)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	var before, after float64
	var out countingWriter
	took, err = func() (time.Duration, error) {
		id, err := e.CreateSession(ctx, "", r.dir)
		if err != nil {
			return 0, err
		}
		if before, err = fileSize(path); err != nil {
			return 0, err
		}
		began := time.Now()
		for i := range bulkMessages {
			if _, err := e.Buffer(ctx, id, message(i)); err != nil {
				return 0, err
			}
		}
		var n int
		took, err := timed(func() (err error) {
			n, err = e.Save(ctx, id)
			return err
		})
		whole = time.Since(began)
		if err == nil && n != bulkMessages {
			err = fmt.Errorf("saved %d messages, want %d", n, bulkMessages)
		}
		if err == nil {
			err = e.Export(ctx, id, &out)
		}
		if err == nil {
			// After the export, which read the session back, once the
			// store's log was applied to the file.
			after, err = fileSize(path)
		}
		return took, err
	}()
	if cerr := e.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if r.used, err = usedSize(path); err != nil {
		return 0, 0, 0, 0, err
	}
	r.file = after
	return whole, took, after - before, float64(out), nil
}

// fileSize returns the size of the file at path.
func fileSize(path string) (float64, error) {
	info, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return float64(info.Size()), nil
}

// usedSize returns the bytes of the bbolt file at path that hold pages,
// free ones included: the file's size without what bbolt preallocated
// past its last page.
func usedSize(path string) (float64, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return 0, err
	}
	var size int64
	err = db.View(func(tx *bolt.Tx) error {
		size = tx.Size()
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return float64(size), err
}

// countingWriter counts the bytes written to it.
type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// peer writes the conversation's lines to a new peer file and returns how
// long the write and its fsync took.
func (r *bulkSaveRunner) peer() (time.Duration, error) {
	path := filepath.Join(r.dir, "peer.jsonl")
	defer os.Remove(path)
	msgs := peerMessages(newUUID(), bulkMessages)
	p, err := createPeerFile(path, msgs[0].SessionID)
	if err != nil {
		return 0, err
	}
	took, err := timed(func() error { return p.WriteAll(msgs) })
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		r.peerSize, err = fileSize(path)
	}
	return took, err
}

// ccPeer makes and writes the conversation's lines in Claude Code's shape
// to a new file, and returns how long that and its fsync took.
func (r *bulkSaveRunner) ccPeer() (time.Duration, error) {
	path := filepath.Join(r.dir, "peer.cc.jsonl")
	defer os.Remove(path)
	p, err := createCCPeer(path, newUUID())
	if err != nil {
		return 0, err
	}
	took, err := timed(func() error { return p.WriteAll(bulkMessages) })
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	return took, err
}

func (r *bulkSaveRunner) Note(row string) string {
	if row == "save-100k-host" || row == "save-100k-cc" {
		return "lines in Claude Code's shape: parent, uuid, timestamp, session, content blocks"
	}
	if row == "store-size" {
		return fmt.Sprintf("the file is %.1f MB after the save, %.1f MB of it pages (free ones included), the rest space bbolt preallocated", r.file/1e6, r.used/1e6)
	}
	return fmt.Sprintf("peer file of %.1f MB, lines of %d bytes", r.peerSize/1e6, peerLineSize(newUUID()))
}
