package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
	"github.com/reprise-dev/reprise/eventlog/remote"
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

// serveSearch is the Engine's Options.ServeSearch for the bbolt file at
// path: the index the command serves the store's readers while it holds
// the store, opened at their first search; it is kept as a.held, for the
// holder's own searches.
func (a *app) serveSearch(path string) func(eventlog.Store) remote.Searcher {
	serve := search.Served(path)
	return func(store eventlog.Store) remote.Searcher {
		s := serve(store)
		a.held, _ = s.(*search.Held)
		return s
	}
}

// heldSearch returns the Searcher of serve --write, which holds the store
// in e: the index the Engine serves the store's readers, or, when it
// serves none (on PostgreSQL), one of its own, which close closes.
func (a *app) heldSearch(path string, e *reprise.Engine) (find web.Searcher, close func() error) {
	if a.held != nil {
		return a.held.Search, func() error { return nil }
	}
	x := search.Hold(func(ctx context.Context) (*search.Index, error) { return openIndex(ctx, path, e.Store()) })
	return x.Search, x.Close
}

// search is the view's Searcher when serve does not hold the store: the
// store's holder answers through its socket, when it serves searches;
// else each search opens the store as a read command does and the index
// over it, brings the index up to date and closes both, one search at a
// time, so that serve keeps neither the store nor the index from a
// writer for longer than a search.
func (v *storeView) search(ctx context.Context, q string, limit, offset int) (_ search.Result, err error) {
	a := *v.a
	e, err := a.openReadOnly(ctx, v.stderr)
	if err != nil {
		return search.Result{}, err
	}
	defer closeEngine(e, &err)
	if held, ok := e.Store().(*heldStore); ok {
		if c := held.client(); c != nil {
			res, err := search.Remote(ctx, c, q, limit, offset)
			if !errors.Is(err, search.ErrNotServed) && !holderGone(err) {
				return res, err
			}
		}
	}
	v.searching.Lock()
	defer v.searching.Unlock()
	path, err := a.storePath()
	if err != nil {
		return search.Result{}, err
	}
	x := search.Hold(func(ctx context.Context) (*search.Index, error) { return openIndex(ctx, path, e.Store()) })
	defer func() {
		if cerr := x.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close the search index: %w", cerr)
		}
	}()
	return x.Search(ctx, q, limit, offset)
}

// updateIndex brings the search index of the store at path, which store
// holds, up to date after a deletion or a vacuum, so that the words of
// what they removed leave it: at once, through the index the command
// serves its readers when it holds a bbolt store (a.held), or when no
// serve holds the index, else at its holder's next search. A store
// without an index gets none.
func (a *app) updateIndex(ctx context.Context, path string, store eventlog.Store) error {
	if pgstore.IsURL(path) {
		if ok, err := search.PostgresIndexed(ctx, path); err != nil || !ok {
			return err
		}
	} else if _, err := os.Stat(search.Dir(path)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var err error
	if a.held != nil {
		err = a.held.Update(ctx)
	} else {
		x := search.Hold(func(ctx context.Context) (*search.Index, error) { return openIndex(ctx, path, store) })
		err = errors.Join(x.Update(ctx), x.Close())
	}
	if errors.Is(err, search.ErrLocked) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the search index %s still holds the words removed, until the next search brings it up to date: %w", search.Dir(path), err)
	}
	return nil
}
