package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/search"
	"github.com/reprise-dev/reprise/web"
)

// openIndex opens the search index of the store at path, which store
// reads: bleve's in the directory beside a bbolt file, or the table of a
// PostgreSQL store.
func openIndex(ctx context.Context, path string, store eventlog.Store) (*search.Index, error) {
	if pgstore.IsURL(path) {
		return search.OpenPostgres(ctx, path, store)
	}
	return search.Open(ctx, search.Dir(path), store)
}

// heldSearch is the search of serve --write, which holds the store: the
// index is opened at the first search, which builds it when it is missing
// or stale, and kept until close.
type heldSearch struct {
	path  string
	store eventlog.Store
	mu    sync.Mutex
	x     *search.Index
	find  web.Searcher
}

// search is the view's Searcher.
func (s *heldSearch) search(ctx context.Context, q string, limit, offset int) (search.Result, error) {
	s.mu.Lock()
	if s.x == nil {
		x, err := openIndex(ctx, s.path, s.store)
		if err != nil {
			s.mu.Unlock()
			return search.Result{}, err
		}
		s.x, s.find = x, web.IndexSearcher(x)
	}
	find := s.find
	s.mu.Unlock()
	return find(ctx, q, limit, offset)
}

// close closes the index if a search opened it.
func (s *heldSearch) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.x == nil {
		return nil
	}
	return s.x.Close()
}

// search is the view's Searcher when serve does not hold the store: each
// search opens the store as a read command does and the index over it,
// brings the index up to date and closes both, one search at a time, so
// that serve keeps neither the store nor the index from a writer for
// longer than a search.
func (v *storeView) search(ctx context.Context, q string, limit, offset int) (_ search.Result, err error) {
	v.searching.Lock()
	defer v.searching.Unlock()
	a := *v.a
	e, err := a.openReadOnly(ctx, v.stderr)
	if err != nil {
		return search.Result{}, err
	}
	defer closeEngine(e, &err)
	path, err := a.storePath()
	if err != nil {
		return search.Result{}, err
	}
	x, err := openIndex(ctx, path, e.Store())
	if err != nil {
		return search.Result{}, err
	}
	defer func() {
		if cerr := x.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close the search index: %w", cerr)
		}
	}()
	return web.IndexSearcher(x)(ctx, q, limit, offset)
}

// updateIndex brings the search index of the store at path, which store
// holds, up to date after a deletion or a vacuum, so that the words of
// what they removed leave it: at once, when no serve holds a bbolt
// store's index, else at its holder's next search. A store without an
// index gets none.
func updateIndex(ctx context.Context, path string, store eventlog.Store) error {
	if pgstore.IsURL(path) {
		if ok, err := search.PostgresIndexed(ctx, path); err != nil || !ok {
			return err
		}
	} else if _, err := os.Stat(search.Dir(path)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	x, err := openIndex(ctx, path, store)
	if errors.Is(err, search.ErrLocked) {
		return nil
	}
	if err == nil {
		_, err = x.Update(ctx)
		if cerr := x.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("the search index %s still holds the words removed, until the next search brings it up to date: %w", search.Dir(path), err)
	}
	return nil
}
