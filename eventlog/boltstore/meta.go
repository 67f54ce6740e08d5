package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"strconv"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/internal/private"
)

// bbolt keeps two meta pages, pages 0 and 1 of the file, and writes them in
// turn, transaction t to page t%2. Each is a page header, then the meta:
//
//	header: id u64, flags u16, count u16, overflow u32        (16 bytes)
//	meta:   magic u32, version u32, pageSize u32, flags u32,
//	        root {pgid u64, sequence u64}, freelist u64, pgid u64,
//	        txid u64, checksum u64 (FNV-64a of the meta before it)
//
// in the machine's byte order. On open bbolt uses the valid page with the
// higher txid; when the newest page is damaged it silently falls back to
// the other, and with it to the transaction before, losing the last one.
// CheckMeta reads both pages itself so that an audit can say so.
const (
	metaHeaderSize = 16
	metaMagic      = 0xED0CDAED
	metaVersion    = 2
	metaSumOffset  = 56 // bytes of the meta the checksum covers
	metaSize       = metaSumOffset + 8
)

// MetaPage is what one of the file's two meta pages holds.
type MetaPage struct {
	Page     int    // 0 or 1
	Txid     uint64 // the transaction it records, when the page is valid
	PageSize int    // the file's page size, when the page is valid
	// Damage says why bbolt would not use the page: "zeroed", "bad
	// magic", "unknown version" or "bad checksum"; empty for a valid page.
	Damage string
}

// CheckMeta reads the file's two meta pages directly, as bbolt would on
// opening it, and returns them, page 0 first. A store open for writing
// holds its write lock meanwhile, so that no commit is writing a meta page
// while it is read.
func (s *Store) CheckMeta(ctx context.Context) ([2]MetaPage, error) {
	var pages [2]MetaPage
	if err := ctx.Err(); err != nil {
		return pages, err
	}
	// The file is checked once it holds every append acknowledged.
	if err := s.caughtUp(ctx); err != nil {
		return pages, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return pages, eventlog.ErrClosed
	}
	if !s.readOnly {
		tx, err := s.db.Begin(true)
		if err != nil {
			return pages, fmt.Errorf("boltstore: check meta pages: %w", err)
		}
		defer func() { _ = tx.Rollback() }()
	}
	f, err := os.Open(s.path) // a compaction renames its file there
	if err != nil {
		return pages, fmt.Errorf("boltstore: check meta pages: %w", err)
	}
	defer f.Close()
	return readMetaPages(f)
}

var _ eventlog.MetaChecker = (*Store)(nil)

// DamagedMeta reports each damaged meta page of the file, with the
// transaction the store opens at instead and the one that may be lost. It
// implements eventlog.MetaChecker.
func (s *Store) DamagedMeta(ctx context.Context) ([]string, error) {
	pages, err := s.CheckMeta(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, p := range pages {
		if p.Damage == "" {
			continue
		}
		used := pages[1-i]
		out = append(out, fmt.Sprintf("meta page %d of the file is damaged (%s): the store opens at transaction %d, from meta page %d; if the damaged page held the newest transaction, %d, what it appended is lost",
			p.Page, p.Damage, used.Txid, used.Page, used.Txid+1))
	}
	return out, nil
}

// readMetaPages reads both meta pages of a bbolt file. Page 1 lies one
// page size after page 0; when page 0 is damaged the size is not known, so
// page 1 is looked for at every size bbolt can use, as bbolt does.
func readMetaPages(f io.ReaderAt) ([2]MetaPage, error) {
	var pages [2]MetaPage
	first, err := readMeta(f, 0)
	if err != nil {
		return pages, err
	}
	first.Page = 0
	pages[0] = first
	sizes := []int{first.PageSize}
	if first.Damage != "" {
		sizes = []int{os.Getpagesize(), 4096, 8192, 16384, 32768, 65536}
	}
	second := MetaPage{Damage: "not found at any page size"}
	for _, size := range sizes {
		m, err := readMeta(f, int64(size))
		if err != nil {
			return pages, err
		}
		if first.Damage == "" || m.Damage == "" && m.PageSize == size {
			second = m
			break
		}
	}
	second.Page = 1
	pages[1] = second
	return pages, nil
}

// notBolt reports whether the file at path is no bbolt file at all, as a
// text file given as the store is: its first page does not start as a
// meta page does, and no second meta page is found; a bbolt file whose
// meta pages are damaged still has one of them, or both marks.
func notBolt(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|private.NoFollow, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	pages, err := readMetaPages(f)
	if err != nil {
		return false
	}
	return pages[0].Damage == "bad magic" && (pages[1].Damage == "bad magic" || pages[1].Damage == "zeroed" ||
		pages[1].Damage == "not found at any page size")
}

// readMeta reads and checks the meta page at off.
func readMeta(f io.ReaderAt, off int64) (MetaPage, error) {
	buf := make([]byte, metaHeaderSize+metaSize)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return MetaPage{}, fmt.Errorf("boltstore: read the meta page at %d: %w", off, err)
	}
	meta := buf[metaHeaderSize:]
	le := binary.NativeEndian
	h := fnv.New64a()
	h.Write(meta[:metaSumOffset])
	switch {
	case isZero(buf):
		return MetaPage{Damage: "zeroed"}, nil
	case le.Uint32(meta[0:]) != metaMagic:
		return MetaPage{Damage: "bad magic"}, nil
	case le.Uint32(meta[4:]) != metaVersion:
		return MetaPage{Damage: "unknown version"}, nil
	case le.Uint64(meta[metaSumOffset:]) != h.Sum64():
		return MetaPage{Damage: "bad checksum"}, nil
	}
	return MetaPage{Txid: le.Uint64(meta[48:]), PageSize: int(le.Uint32(meta[8:]))}, nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// checkFallback reads the meta pages of the file at path, which bbolt has
// just opened for writing, and fails with a *DamagedMetaError when bbolt
// opened it at the older of them because the newer may be damaged, unless
// opts or the environment accept that; then it logs a warning.
func checkFallback(path string, opts Options) error {
	damaged, used, ok, err := fileFallback(path)
	if err != nil || !ok {
		return err
	}
	if accept, _ := strconv.ParseBool(os.Getenv(AcceptDamagedMetaEnv)); !accept && !opts.AcceptDamagedMeta {
		return &DamagedMetaError{Path: path, Damaged: damaged, Used: used}
	}
	opts.logger().Warn("opening a store whose newest meta page may be damaged, as asked: its next commit overwrites the page, and the commit it may have held is lost",
		"path", path, "page", damaged.Page, "damage", damaged.Damage, "txid", used.Txid, "lost_txid", used.Txid+1)
	return nil
}

// warnFallback logs a warning when bbolt opened the file at path, read
// only, at the older of its meta pages because the newer may be damaged:
// what the reader sees may lack the last acknowledged commit. A file
// whose pages cannot be read says nothing here; the open reports it.
func warnFallback(path string, opts Options) {
	damaged, used, ok, err := fileFallback(path)
	if err != nil || !ok {
		return
	}
	opts.logger().Warn("the store's newest meta page may be damaged: it reads as of an earlier transaction, and the commit after it may be lost; run reprise audit",
		"path", path, "page", damaged.Page, "damage", damaged.Damage, "txid", used.Txid, "lost_txid", used.Txid+1)
}

// fileFallback reads the meta pages of the file at path and tells, as
// fallback does, whether bbolt opens it at the older of them.
func fileFallback(path string) (damaged, used MetaPage, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return damaged, used, false, fmt.Errorf("boltstore: check meta pages: %w", err)
	}
	defer f.Close()
	pages, err := readMetaPages(f)
	if err != nil {
		return damaged, used, false, err
	}
	damaged, used, ok = fallback(pages)
	return damaged, used, ok, nil
}

// logger returns the logger of the options, slog's default when none.
func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// fallback returns the damaged meta page and the valid one that bbolt
// opens the file at instead, when one of the two may have held a commit
// after the other's. bbolt writes transaction t to page t%2, so the
// damaged page held either the transaction before the valid one's or the
// one after it, and nothing in the file tells which.
//
// A new file holds transactions 0 and 1, both empty, and a store's first
// commit, transaction 2, only creates its buckets. A file that falls back
// to transaction 0 or 1 therefore loses at most that commit: a crash
// during the first Open of a store leaves it so, and the Open that falls
// back creates the buckets again, as a new store.
func fallback(pages [2]MetaPage) (damaged, used MetaPage, ok bool) {
	damaged, used = pages[0], pages[1]
	if damaged.Damage == "" {
		damaged, used = used, damaged
	}
	if damaged.Damage == "" || used.Damage != "" || used.Txid <= 1 {
		return MetaPage{}, MetaPage{}, false
	}
	return damaged, used, true
}
