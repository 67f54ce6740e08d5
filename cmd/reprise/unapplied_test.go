package main

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A store whose holder was killed between acknowledging appends and
// applying them (the golden killed store: its log ends with the deletion
// of session stale, which its file lacks) reads as a write-open would
// leave it: a read command applies the log first, so the deleted session
// is gone, and the log's segment with it.
func TestAReadCommandAppliesWhatAKilledHolderAcknowledged(t *testing.T) {
	src, err := filepath.Abs(filepath.Join("..", "..", "testdata", "golden", "v5-killed"))
	if err != nil {
		t.Fatal(err)
	}
	c := newCLI(t)
	if err := os.MkdirAll(filepath.Dir(c.store), 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(src, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.store, data, 0o600); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(src, "store.db.wal.*.gz"))
	if len(segs) == 0 {
		t.Fatalf("%s holds no log segment", src)
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
		name := strings.Replace(strings.TrimSuffix(filepath.Base(seg), ".gz"), "store.db", filepath.Base(c.store), 1)
		if err := os.WriteFile(filepath.Join(filepath.Dir(c.store), name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	var list []sessionJSON
	c.okJSON(&list, "sessions")
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	if slices.Contains(ids, "stale") || !slices.Contains(ids, "kept") {
		t.Fatalf("sessions of the killed store: %v; want kept, and not stale, whose deletion only the log held", ids)
	}
	if left, _ := filepath.Glob(c.store + ".wal.*"); len(left) != 0 {
		t.Fatalf("the log's segments are still there after the read applied them: %v", left)
	}
}
