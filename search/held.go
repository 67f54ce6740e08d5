package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/remote"
)

// Held is the index of the process that holds a store: opened at the
// first search, which builds it when it is missing or stale, brought up
// to date from the log before each search, and kept until Close. It
// answers the holder's own searches (Search) and, served on the store's
// socket (remote.Serve, or reprise.Options.ServeSearch), those of the
// store's readers in other processes (ServeHTTP), which ask it with
// Remote. It is safe for concurrent use.
type Held struct {
	open func(context.Context) (*Index, error)

	mu     sync.Mutex // held while the index is opened and updated
	x      *Index
	closed bool
}

// Hold returns the Held index that open opens: Open or OpenPostgres of
// the holder's store.
func Hold(open func(context.Context) (*Index, error)) *Held {
	return &Held{open: open}
}

// Served returns what reprise.Options.ServeSearch takes for the bbolt
// file at path: the Held index in Dir(path) of the store the Engine
// opens there.
func Served(path string) func(eventlog.Store) remote.Searcher {
	return func(store eventlog.Store) remote.Searcher {
		return Hold(func(ctx context.Context) (*Index, error) { return Open(ctx, Dir(path), store) })
	}
}

// Search returns the page of hits that Index.Search returns, once the
// index holds what the log gained since the last search. The updates of a
// burst of searches run one at a time, so the log is read once.
func (h *Held) Search(ctx context.Context, q string, limit, offset int) (Result, error) {
	x, err := h.update(ctx)
	if err != nil {
		return Result{}, err
	}
	return x.Search(ctx, q, limit, offset)
}

// Update folds into the index what the log gained since the last search
// or Update, opening the index when none has.
func (h *Held) Update(ctx context.Context) error {
	_, err := h.update(ctx)
	return err
}

// update opens the index if it is not open yet and folds in the log's new
// events.
func (h *Held) update(ctx context.Context) (*Index, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if h.x == nil {
		x, err := h.open(ctx)
		if err != nil {
			return nil, err
		}
		h.x = x
	}
	if _, err := h.x.Update(ctx); err != nil {
		return nil, err
	}
	return h.x, nil
}

// Close closes the index if a search opened it. Searches after it fail
// with ErrClosed.
func (h *Held) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	if h.x == nil {
		return nil
	}
	return h.x.Close()
}

// The answer of ServeHTTP to an error, and the codes it names it by.
type wireError struct {
	Code    string `json:"error"`
	Message string `json:"message"`
}

const (
	codeBadRequest = "bad_request"
	codeLocked     = "locked"
	codeNotIndex   = "not_index"
	codeClosed     = "closed"
	codeInternal   = "internal"
)

// wireErrors maps the codes that stand for an error of this package back
// to it.
var wireErrors = map[string]error{codeLocked: ErrLocked, codeNotIndex: ErrNotIndex, codeClosed: ErrClosed}

// ServeHTTP answers GET ?q=Q&limit=N&offset=N with the Result of Search
// as JSON, or an error as {"error": code, "message": text} with a status:
// 400 for a bad limit or offset, 503 once closed, 500 otherwise.
func (h *Held) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, lerr := intParam(q, "limit")
	offset, oerr := intParam(q, "offset")
	if err := errors.Join(lerr, oerr); err != nil {
		writeJSON(w, http.StatusBadRequest, wireError{Code: codeBadRequest, Message: err.Error()})
		return
	}
	res, err := h.Search(r.Context(), q.Get("q"), limit, offset)
	if err != nil {
		code, status := codeInternal, http.StatusInternalServerError
		for c, e := range wireErrors {
			if errors.Is(err, e) {
				code = c
			}
		}
		if code == codeClosed {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, wireError{Code: code, Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// intParam is the query's value of name as a number, 0 when absent.
func intParam(q url.Values, name string) (int, error) {
	if !q.Has(name) {
		return 0, nil
	}
	n, err := strconv.Atoi(q.Get(name))
	if err != nil {
		return 0, fmt.Errorf("bad %s %q: want a number", name, q.Get(name))
	}
	return n, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// holderError is an error the store's holder answered a search with: its
// message, and the error of this package its code names, if any.
type holderError struct {
	message string
	err     error
}

func (e *holderError) Error() string { return "the store's holder: " + e.message }
func (e *holderError) Unwrap() error { return e.err }

// maxAnswer bounds the bytes of a holder's answer that Remote reads: a
// page of MaxLimit hits, each with its snippet, with room to spare.
const maxAnswer = 16 << 20

// Remote searches the store that c reads through the index its holder
// keeps (Held, served at remote.SearchPath), as Held.Search does there.
// A holder that serves no searches is ErrNotServed; an error of the
// holder's that this package names (ErrLocked, ErrNotIndex, ErrClosed)
// matches it here too.
func Remote(ctx context.Context, c *remote.Client, q string, limit, offset int) (Result, error) {
	resp, err := c.Get(ctx, remote.SearchPath, url.Values{"q": {q}, "limit": {strconv.Itoa(limit)}, "offset": {strconv.Itoa(offset)}})
	if err != nil {
		return Result{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return Result{}, ErrNotServed
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	switch {
	case err != nil:
		return Result{}, fmt.Errorf("%w: the holder's answer broke off: %w", remote.ErrDisconnected, err)
	case len(body) > maxAnswer:
		return Result{}, fmt.Errorf("search: the holder's answer is over %d bytes", maxAnswer)
	case resp.StatusCode != http.StatusOK:
		var we wireError
		if json.Unmarshal(body, &we) != nil || we.Code == "" {
			return Result{}, fmt.Errorf("search: the holder answered %s", resp.Status)
		}
		return Result{}, &holderError{message: we.Message, err: wireErrors[we.Code]}
	}
	var res Result
	if err := json.Unmarshal(body, &res); err != nil {
		return Result{}, fmt.Errorf("search: the holder's answer is not a result: %w", err)
	}
	return res, nil
}
