// Package web is a read-only view of a reprise store for people and
// programs: its sessions, each conversation, each agent's restores as a
// timeline of steps and hooks, the audit and the raw event log, as HTML
// pages and as the JSON objects that reprise --json prints. A host mounts
// the handler in its own process, so it works while the host holds a
// bbolt store; reprise serve serves it over a store of its own.
package web

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Options tune the handler. The zero value is ready for use.
type Options struct {
	// Logger receives a warning for each request that failed on the
	// store; nil means slog.Default().
	Logger *slog.Logger
	// FinishCommand returns the command that rolls forward what an agent
	// has in progress, shown by the audit; nil means
	// "reprise finish --agent NAME".
	FinishCommand func(agent string) string
	// Prefix is the path the host mounts the handler under, such as
	// "/reprise" (with http.StripPrefix), for the pages' links; "" at the
	// root.
	Prefix string
	// RunningIn names the process that holds the store when the Engine
	// reads it through that process's socket, as the audit reports it.
	RunningIn string
	// Follow, when set, is how the live endpoint waits for new events;
	// nil means reading the Engine's store every Poll.
	Follow Follow
	// Audits runs the audit page's checks; nil means checks of the
	// Engine's store that this handler keeps to itself. Handlers made
	// afresh for each request share one to keep its report.
	Audits *Audits
	// AuditWait is how long the audit page waits for a check of the
	// newest events before it shows the previous report; 0 means
	// DefaultAuditWait.
	AuditWait time.Duration
	// Budget bounds the memory that requests take at once to read large
	// messages; nil means one of DefaultBudget bytes that every handler
	// of the process without a Budget of its own shares.
	Budget *Budget
	// BudgetWait is how long a request waits for its share of the Budget
	// before it is answered 503, with Retry-After; 0 means
	// DefaultBudgetWait.
	BudgetWait time.Duration
	// Hooks keeps the health page's count of hook runs; nil means one
	// that this handler keeps to itself. Handlers made afresh for each
	// request share one, as they share Audits.
	Hooks *Hooks
	// Search answers /search and /api/search, and puts a search box on
	// every page; nil means the view has none, and /search answers 501
	// (IndexSearcher makes one of a search.Index).
	Search Searcher
}

// Poll is how often the live endpoint looks for new events in the store
// when Options.Follow is not set.
const Poll = 200 * time.Millisecond

// handler serves the pages and the API over one Engine.
type handler struct {
	e      *reprise.Engine
	opts   Options
	log    *slog.Logger
	mux    *http.ServeMux
	audits *Audits
	// hookStats is Options.Hooks, or the handler's own.
	hookStats *Hooks
	// budget and budgetWait bound the memory of large messages in
	// flight: Options.Budget and Options.BudgetWait, or their defaults.
	budget     *Budget
	budgetWait time.Duration
}

// New returns the read-only handler over e. Every route answers HTML, or
// JSON under /api or when the request accepts application/json only.
func New(e *reprise.Engine, opts Options) http.Handler {
	h := &handler{e: e, opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.audits = opts.Audits; h.audits == nil {
		h.audits = engineAudits(e)
	}
	if h.hookStats = opts.Hooks; h.hookStats == nil {
		h.hookStats = NewHooks()
	}
	if h.budget = opts.Budget; h.budget == nil {
		h.budget = sharedBudget
	}
	if h.budgetWait = opts.BudgetWait; h.budgetWait <= 0 {
		h.budgetWait = DefaultBudgetWait
	}
	if h.opts.FinishCommand == nil {
		h.opts.FinishCommand = func(agent string) string { return "reprise finish --agent " + agent }
	}
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embedded tree always has the directory
	}
	files := http.StripPrefix("/static/", http.FileServerFS(static))
	h.mux.HandleFunc("GET /static/code.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Write(codeCSS)
	})
	h.mux.HandleFunc("GET /static/{file}", func(w http.ResponseWriter, r *http.Request) {
		// The files only: no listing, and the view's own page for a
		// file that is not there.
		if _, err := fs.Stat(static, r.PathValue("file")); err != nil {
			h.fail(w, r, false, notFound("no file %s", clip(r.PathValue("file"))))
			return
		}
		files.ServeHTTP(w, r)
	})
	h.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, h.opts.Prefix+"/sessions", http.StatusFound)
	})
	follow := h.opts.Follow
	if follow == nil {
		follow = h.poll
	}
	h.mux.Handle("GET /live", Live(follow, func(ctx context.Context) (uint64, error) {
		return eventlog.LastPosition(ctx, e.Store())
	}, h.log))
	routes := []struct {
		pattern string
		page    func(*http.Request) (*view, error)
	}{
		{"/sessions", h.sessions},
		{"/sessions/{id}", h.session},
		{"/agents", h.agents},
		{"/agents/{id}", h.agent},
		{"/audit", h.audit},
		{"/events", h.events},
		{"/hooks", h.hooks},
		{"/search", h.search},
	}
	for _, rt := range routes {
		h.mux.Handle("GET "+rt.pattern, h.serve(rt.page, false))
		h.mux.Handle("GET /api"+rt.pattern, h.serve(rt.page, true))
	}
	h.mux.Handle("GET /sessions/{id}/messages/{seq}", h.whole(false))
	h.mux.Handle("GET /api/sessions/{id}/messages/{seq}", h.whole(true))
	h.mux.Handle("GET /events/{position}", h.wholeEvent())
	h.mux.Handle("GET /api/events/{position}", h.wholeEvent())
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, wantsJSON(r, strings.HasPrefix(r.URL.Path, "/api/")), notFound("no page at %s", r.URL.Path))
	})
	return h
}

// ServeHTTP serves r.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.mux.ServeHTTP(w, r)
}

// view is what one page shows: the template that renders it with Data,
// and the object its JSON API answers.
type view struct {
	Template string
	Title    string
	Data     any
	API      any
	Refresh  int    // seconds after which the page reloads itself; 0 for never
	Query    string // the words searched for, which the search box shows
}

// page is what the layout renders.
type page struct {
	Title string
	Nav   string // the section the page belongs to
	Head  uint64 // the store's last position when the page was read
	Base  string // the path prefix of the handler, for links: "" or "/prefix"
	Data  any
	// Refresh is the seconds after which the page reloads itself; 0 for
	// never.
	Refresh int
	// Search says whether the view has a search, whose box the page then
	// shows with Query in it.
	Search bool
	Query  string
}

// serve answers r with what build returns, as HTML or as JSON.
func (h *handler) serve(build func(*http.Request) (*view, error), api bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asJSON := wantsJSON(r, api)
		// The page's live updates start after the last event read before
		// the page was built, so that none is missed.
		var head uint64
		if !asJSON {
			var err error
			if head, err = eventlog.LastPosition(r.Context(), h.e.Store()); err != nil {
				h.fail(w, r, asJSON, err)
				return
			}
		}
		v, err := build(r)
		if err != nil {
			h.fail(w, r, asJSON, err)
			return
		}
		if asJSON {
			writeJSON(w, http.StatusOK, v.API)
			return
		}
		h.render(w, http.StatusOK, v.Template, page{Title: v.Title, Nav: v.Template, Head: head, Base: h.opts.Prefix, Data: v.Data, Refresh: v.Refresh,
			Search: h.opts.Search != nil, Query: v.Query})
	})
}

// wantsJSON reports whether r asked for JSON: under /api, or with an
// Accept header that names application/json and not text/html.
func wantsJSON(r *http.Request, api bool) bool {
	accept := r.Header.Get("Accept")
	return api || strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

// writeJSON writes v as the JSON body, one object and a newline, as
// reprise --json prints it.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, "cannot encode the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// render writes the page tmpl with p, or a 500 when the template fails.
func (h *handler) render(w http.ResponseWriter, status int, tmpl string, p page) {
	var buf bytes.Buffer
	if err := templates[tmpl].ExecuteTemplate(&buf, "layout", p); err != nil {
		h.log.Warn("web: page not rendered", "page", tmpl, "error", err)
		http.Error(w, "the page could not be rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// httpError is an error with the status it answers.
type httpError struct {
	status int
	code   string // the write API's code for it; "" for the status's own (ErrorCodes)
	msg    string
	// retryAfter, when not 0, is the seconds after which the client may
	// ask again, for a 503.
	retryAfter int
}

func (e *httpError) Error() string { return e.msg }

// notFound is the error of a session, agent or page that does not exist.
func notFound(format string, args ...any) error {
	return &httpError{status: http.StatusNotFound, msg: fmt.Sprintf(format, args...)}
}

// noSession is the error of a session that does not exist, or no longer.
func noSession(format string, args ...any) error {
	return &httpError{status: http.StatusNotFound, code: "session_not_found", msg: fmt.Sprintf(format, args...)}
}

// statusCodes are the codes of the error answers by their status, as the
// write API's document names them, for those without a code of their own.
var statusCodes = map[int]string{
	http.StatusBadRequest:          "bad_request",
	http.StatusNotFound:            "not_found",
	http.StatusMethodNotAllowed:    "method_not_allowed",
	http.StatusInternalServerError: "internal",
	http.StatusServiceUnavailable:  "unavailable",
}

// ErrorCodes lists the codes the view's error answers carry, beside the
// write API's own (package api, which documents them all).
func ErrorCodes() []string {
	codes := []string{"session_not_found", "search_unavailable"}
	for _, c := range statusCodes {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	return codes
}

// badRequest is the error of a query the handler cannot read.
func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// errorJSON is the body of an API error.
type errorJSON struct {
	Error  string `json:"error"`
	Code   string `json:"code"`
	Status int    `json:"status"`
}

// fail answers r with err: its own status for an httpError, 500 with the
// message for anything else (a store that cannot be read).
func (h *handler) fail(w http.ResponseWriter, r *http.Request, asJSON bool, err error) {
	status, code := http.StatusInternalServerError, ""
	var he *httpError
	if errors.As(err, &he) {
		status, code = he.status, he.code
		if he.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(he.retryAfter))
		}
	} else if r.Context().Err() == nil {
		h.log.Warn("web: request failed", "path", r.URL.Path, "error", err)
	}
	body := errorJSON{Error: err.Error(), Code: cmp.Or(code, statusCodes[status], "internal"), Status: status}
	if asJSON {
		writeJSON(w, status, body)
		return
	}
	h.render(w, status, "error", page{Title: http.StatusText(status), Base: h.opts.Prefix, Data: body, Search: h.opts.Search != nil})
}

// queryLimit reads the limit parameter: def when absent, else a number
// from 1 to maxLimit.
func queryLimit(r *http.Request, def int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, badRequest("limit must be a number from 1 to %d, not %q", maxLimit, v)
	}
	return n, nil
}

// maxLimit bounds the rows of one page.
const maxLimit = 1000

// errEnough stops a read once a page is full.
var errEnough = errors.New("page full")
