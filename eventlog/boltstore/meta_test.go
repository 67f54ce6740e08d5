package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/internal/testkit"
	bolt "go.etcd.io/bbolt"
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
		// A read waits for the log to be applied: each append is then a
		// bbolt commit of its own, as the damage below needs.
		if err := s.ReadAll(ctx, 0, func(eventlog.Event) error { return nil }); err != nil {
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

// appendN writes a store at a new path in t's temporary directory with n
// appends of one event each to stream session/s, and returns the path.
func appendN(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range n {
		rec := eventlog.Record{Stream: "session/s", Type: "T", Version: 1, Payload: []byte{byte(i)}}
		if _, err := s.Append(context.Background(), []eventlog.Expect{{Stream: "session/s", Seq: uint64(i)}}, []eventlog.Record{rec}); err != nil {
			t.Fatal(err)
		}
		if err := s.ReadAll(context.Background(), 0, func(eventlog.Event) error { return nil }); err != nil { // one commit each: see testCheckMeta
			t.Fatal(err)
		}
	}
	return path
}

// A write-open of a file whose newest meta page is damaged would overwrite
// that page at its first commit, and with it the only trace of the commit
// it held: Open refuses, naming the file and the transaction bbolt falls
// back to, and leaves the file as it was. Read-only opens still work, so
// the store can be audited and copied. Three and four appends leave the
// newest transaction on each of the two pages.
func TestWriteOpenRefusesADamagedMetaPage(t *testing.T) {
	for _, appends := range []int{3, 4} {
		t.Run(fmt.Sprint(appends), func(t *testing.T) {
			path := appendN(t, appends)
			fallback := testkit.ZeroNewestMeta(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = boltstore.Open(path, boltstore.Options{})
			var damaged *boltstore.DamagedMetaError
			if !errors.Is(err, boltstore.ErrDamagedMeta) || !errors.As(err, &damaged) {
				t.Fatalf("write-open: %v, want ErrDamagedMeta", err)
			}
			if damaged.Path != path || damaged.Used.Txid != fallback || damaged.Damaged.Damage != "zeroed" ||
				damaged.Damaged.Page != 1-damaged.Used.Page || damaged.Damaged.Page != int(fallback+1)%2 {
				t.Fatalf("error %+v, want page %d zeroed and transaction %d used", damaged, (fallback+1)%2, fallback)
			}
			for _, want := range []string{path, fmt.Sprintf("opens at transaction %d,", fallback), boltstore.AcceptDamagedMetaEnv} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q does not say %q", err, want)
				}
			}
			if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
				t.Fatalf("the refused open changed the file (%v)", err)
			}

			r, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
			if err != nil {
				t.Fatalf("read-only open: %v", err)
			}
			defer r.Close()
			if head, err := r.Head(context.Background(), "session/s"); err != nil || head != uint64(appends-1) {
				t.Fatalf("read-only head %d, %v; want %d", head, err, appends-1)
			}
		})
	}
}

// AcceptDamagedMeta, or the environment variable, opens such a file for
// writing with a warning that names the transaction; the file changes only
// at the next commit, which overwrites the damaged page, after which the
// store opens without either.
func TestAcceptDamagedMeta(t *testing.T) {
	for _, how := range []string{"option", "environment"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			path := appendN(t, 3)
			fallback := testkit.ZeroNewestMeta(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			opts := boltstore.Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))}
			if how == "option" {
				opts.AcceptDamagedMeta = true
			} else {
				t.Setenv(boltstore.AcceptDamagedMetaEnv, "1")
			}
			s, err := boltstore.Open(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), fmt.Sprintf(" txid=%d ", fallback)) {
				t.Errorf("warning %q does not name transaction %d", logged.String(), fallback)
			}
			if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
				t.Fatalf("opening changed the file before any commit (%v)", err)
			}
			rec := eventlog.Record{Stream: "session/s", Type: "T", Version: 1, Payload: []byte("after")}
			if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "session/s", Seq: 2}}, []eventlog.Record{rec}); err != nil {
				t.Fatalf("append after the lost one: %v", err)
			}
			pages, err := s.CheckMeta(ctx)
			s.Close()
			if err != nil || pages[0].Damage != "" || pages[1].Damage != "" {
				t.Fatalf("meta pages after a commit: %+v, %v", pages, err)
			}
			t.Setenv(boltstore.AcceptDamagedMetaEnv, "")
			s, err = boltstore.Open(path, boltstore.Options{})
			if err != nil {
				t.Fatalf("open after the damage was overwritten: %v", err)
			}
			s.Close()
		})
	}
}

// A store whose meta pages are both valid opens for writing, whatever
// their transactions, and so does one that falls back to one of the two
// empty transactions bbolt writes when it creates a file: at most the
// store's first commit, which creates its buckets, is lost, and a crash
// during the first Open of a store leaves it so. The buckets are created
// again.
func TestWriteOpenOfANewStore(t *testing.T) {
	ctx := context.Background()
	// Transactions 0 and 1 only: bbolt created the file and nothing more.
	raw := filepath.Join(t.TempDir(), "raw.db")
	db, err := bolt.Open(raw, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if pages := checkMeta(t, raw, boltstore.Options{}); pages[0].Txid+pages[1].Txid != 1+2 {
		// Open created the buckets in transaction 2.
		t.Fatalf("a new bbolt file opened as a store: %+v", pages)
	}

	// Transactions 1 and 2, the store's first commit, then page 0, which
	// holds 2, torn: Open falls back to 1, an empty database.
	path := appendN(t, 0)
	if fallback := testkit.ZeroNewestMeta(t, path); fallback != 1 {
		t.Fatalf("a new store falls back to transaction %d, want 1", fallback)
	}
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatalf("write-open of a store whose first commit was torn: %v", err)
	}
	defer s.Close()
	rec := eventlog.Record{Stream: "session/s", Type: "T", Version: 1, Payload: []byte("first")}
	if _, err := s.Append(ctx, []eventlog.Expect{{Stream: "session/s"}}, []eventlog.Record{rec}); err != nil {
		t.Fatal(err)
	}
	if pages, err := s.CheckMeta(ctx); err != nil || pages[0].Damage != "" || pages[1].Damage != "" {
		t.Fatalf("meta pages: %+v, %v", pages, err)
	}
}

// The same file, one transaction earlier: page 1 of a file bbolt has just
// created, holding transaction 1, damaged. Open falls back to transaction
// 0 and creates the store.
func TestWriteOpenOfANewFileWithPage1Damaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	size := os.Getpagesize()
	_, err = f.WriteAt(make([]byte, size), int64(size))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if pages := checkMeta(t, path, boltstore.Options{}); pages[0].Damage != "" || pages[1].Damage != "" {
		t.Fatalf("meta pages after the store was created: %+v", pages)
	}
}
