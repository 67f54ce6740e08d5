package boltstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/internal/testkit"
)

func checkMeta(t *testing.T, path string, opts boltstore.Options) [2]boltstore.MetaPage {
	t.Helper()
	s, err := boltstore.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pages, err := s.CheckMeta(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// CheckMeta finds both meta pages of an intact file valid, one transaction
// apart, and names the page that was zeroed; bbolt itself opens such a
// file at the transaction before, without a word, which is why the check
// exists. Three and four appends leave the newest transaction on each of
// the two pages.
func TestCheckMeta(t *testing.T) {
	for _, appends := range []int{3, 4} {
		t.Run(fmt.Sprint(appends), func(t *testing.T) { testCheckMeta(t, appends) })
	}
}

func testCheckMeta(t *testing.T, appends int) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range appends {
		rec := eventlog.Record{Stream: "session/s", Type: "T", Version: 1, Payload: []byte{byte(i)}}
		if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "session/s", Seq: uint64(i)}}, []eventlog.Record{rec}); err != nil {
			t.Fatal(err)
		}
	}
	pages, err := s.CheckMeta(ctx) // while open for writing
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if pages[0].Damage != "" || pages[1].Damage != "" || pages[0].PageSize != os.Getpagesize() ||
		max(pages[0].Txid, pages[1].Txid)-min(pages[0].Txid, pages[1].Txid) != 1 {
		t.Fatalf("intact file: %+v", pages)
	}
	if again := checkMeta(t, path, boltstore.Options{ReadOnly: true}); again != pages {
		t.Fatalf("read-only: %+v, want %+v", again, pages)
	}

	fallback := testkit.ZeroNewestMeta(t, path)
	got := checkMeta(t, path, boltstore.Options{ReadOnly: true})
	newest := 0
	if got[1].Damage != "" {
		newest = 1
	}
	if got[newest].Damage != "zeroed" || got[1-newest].Damage != "" || got[1-newest].Txid != fallback {
		t.Fatalf("after zeroing the newest meta page: %+v", got)
	}
	r, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if head, err := r.Head(ctx, "session/s"); err != nil || head != uint64(appends-1) {
		t.Fatalf("bbolt opened the file at head %d, %v; want %d, the last append silently lost", head, err, appends-1)
	}
}
