// Package api serves the actions of an agent host as JSON over HTTP, so
// that a host in any language gets what a Go host gets from the Engine:
// sessions created, appended to, saved and deleted; an agent's restores,
// prompts, stops, tool calls and fired events, each recorded once; hooks
// of a session's own. openapi.json, served at /api/openapi.json, is the
// contract: its routes, bodies, answers and error codes. Each agent
// action answers what its command (reprise start, resume, ...) prints
// with --json.
//
// The handler only acts: where it listens, who may reach it, and the
// read-only pages and /api of package web beside it are the caller's
// (reprise serve --write puts them together). Ids are taken whole, never
// as prefixes. A request whose client goes away is cancelled as Ctrl-C
// cancels a command: the action stops at its next step boundary, and the
// next call on the agent finishes it.
package api

import (
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/jsonview"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/web"
)

// Document is the OpenAPI 3.1 document of the routes New serves.
//
//go:embed openapi.json
var Document []byte

// DefaultMaxBody is the largest request body New reads unless
// Options.MaxBody says otherwise: room for a long tool output.
const DefaultMaxBody = 16 << 20

// Options configure New.
type Options struct {
	// MaxBody bounds a request's body, in bytes; DefaultMaxBody when 0.
	MaxBody int64
	// Fallback serves every request no route of the write API takes, such
	// as the read view's pages and /api (package web); nil answers them
	// 404.
	Fallback http.Handler
	// Token, when set, is the token every request of the write API must
	// carry, as an "Authorization: Bearer TOKEN" header (a cookie is not
	// enough: a write is never a browser's); others get 401 unauthorized.
	// Leave it empty on a Unix socket only.
	Token string
	// LoopbackOnly answers 403 forbidden to a write whose Host header does
	// not name this machine by a loopback name or address, as a listener
	// on TCP needs against DNS rebinding.
	LoopbackOnly bool
	// Origins are the web origins (scheme://host[:port]) whose pages may
	// call the write API from a browser: their requests are answered with
	// CORS headers, preflights included. A request from any other origin
	// (one that carries an Origin header) is refused with 403 forbidden;
	// with none named, no CORS header is ever sent.
	Origins []string
	// Logger gets a warning for each request that failed on the server's
	// side (status 500); slog.Default when nil.
	Logger *slog.Logger
}

// handler serves the write API of one Engine.
type handler struct {
	e        *reprise.Engine
	maxBody  int64
	token    string
	loopback bool
	origins  []string
	log      *slog.Logger
}

// New returns the handler of the write API on e.
func New(e *reprise.Engine, opts Options) http.Handler {
	h := &handler{e: e, maxBody: opts.MaxBody, token: opts.Token, loopback: opts.LoopbackOnly, origins: opts.Origins, log: opts.Logger}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBody
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	mux := http.NewServeMux()
	for _, rt := range h.routes() {
		mux.Handle(rt.Method+" "+rt.Path, h.route(rt.serve))
	}
	mux.HandleFunc("OPTIONS /api/", h.preflight)
	fallback := opts.Fallback
	if fallback == nil {
		fallback = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, &apiError{status: http.StatusNotFound, code: "not_found", msg: "no route " + r.Method + " " + r.URL.Path})
		})
	}
	mux.Handle("/", fallback)
	return mux
}

// Route is one route of the write API: its method and path pattern, as
// the OpenAPI document names them.
type Route struct {
	Method, Path string
	serve        func(*http.Request) (answer, error)
}

// Routes lists the routes New serves.
func Routes() []Route { return (&handler{}).routes() }

// routes are the routes of h.
func (h *handler) routes() []Route {
	rs := []Route{
		{"GET", "/api/openapi.json", func(*http.Request) (answer, error) { return ok(json.RawMessage(Document)), nil }},
		{"POST", "/api/sessions", h.createSession},
		{"DELETE", "/api/sessions/{session}", h.deleteSession},
		{"POST", "/api/sessions/{session}/messages", h.appendMessage},
		{"POST", "/api/sessions/{session}/save", h.save},
		{"POST", "/api/sessions/{session}/hooks", h.addHooks},
		{"DELETE", "/api/sessions/{session}/hooks/{hook}", h.removeHook},
		{"POST", "/api/agents/{agent}/finish", h.finish},
		{"POST", "/api/agents/{agent}/turn", h.turnStep},
	}
	for _, name := range slices.Sorted(maps.Keys(actions)) {
		rs = append(rs, Route{"POST", "/api/agents/{agent}/" + name, h.agentAction(actions[name])})
	}
	return rs
}

// answer is what a route returns: its status and the value to encode.
type answer struct {
	status int
	body   any
}

// ok is a 200 answer.
func ok(v any) answer { return answer{http.StatusOK, v} }

// route adapts fn to an http.Handler: its answer as JSON, or its error as
// an Error object.
func (h *handler) route(fn func(*http.Request) (answer, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.allowCORS(w, r) {
			writeError(w, &apiError{status: http.StatusForbidden, code: "forbidden",
				msg: "a page of origin " + r.Header.Get("Origin") + " may not call the write API: serve names its origins with --origin"})
			return
		}
		if err := h.admit(r); err != nil {
			writeError(w, err)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, h.maxBody)
		a, err := fn(r)
		if err != nil {
			ae := classify(r.Context(), err)
			if ae.status == http.StatusInternalServerError {
				h.log.Warn("write API request failed", "method", r.Method, "path", r.URL.Path, "error", err)
			}
			writeError(w, ae)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.Encode(a.body)
	})
}

// allowCORS adds the CORS headers to w when r comes from a named origin,
// and reports whether r may go on: it carries no Origin, or a named one.
func (h *handler) allowCORS(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if !slices.Contains(h.origins, origin) {
		return false
	}
	w.Header().Set("Access-Control-Allow-Origin", origin)
	w.Header().Set("Vary", "Origin")
	return true
}

// preflight answers a browser's CORS preflight of a write from a named
// origin.
func (h *handler) preflight(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") == "" || !h.allowCORS(w, r) {
		writeError(w, &apiError{status: http.StatusForbidden, code: "forbidden", msg: "no origin named with --origin may call the write API from a browser"})
		return
	}
	w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
	w.Header().Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// admit refuses r when it lacks the token, or names a Host that is not
// loopback where that matters.
func (h *handler) admit(r *http.Request) *apiError {
	if h.loopback && !web.LoopbackHost(r.Host) {
		return &apiError{status: http.StatusForbidden, code: "forbidden",
			msg: "the write API answers only to a loopback address, such as 127.0.0.1 or localhost"}
	}
	if h.token == "" {
		return nil
	}
	scheme, got, found := strings.Cut(r.Header.Get("Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(got), []byte(h.token)) != 1 {
		return &apiError{status: http.StatusUnauthorized, code: "unauthorized",
			msg: "the write API needs the serve token, as an Authorization: Bearer TOKEN header"}
	}
	return nil
}

// decode reads r's body, a JSON object, into v, refusing unknown fields
// and anything after the object; an empty body is {}.
func decode(r *http.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return &apiError{status: http.StatusRequestEntityTooLarge, code: "too_large",
			msg: fmt.Sprintf("the request body is over %d bytes", tooLarge.Limit)}
	case err != nil:
		return err
	}
	if strings.TrimSpace(string(data)) == "" {
		data = []byte("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("the body is not the JSON object this route takes: %v", err)
	}
	if dec.More() {
		return badRequest("the body holds more than one JSON value")
	}
	return nil
}

// createSessionBody is the body of POST /api/sessions.
type createSessionBody struct {
	ID  string `json:"id"`
	Cwd string `json:"cwd"`
}

func (h *handler) createSession(r *http.Request) (answer, error) {
	var b createSessionBody
	if err := decode(r, &b); err != nil {
		return answer{}, err
	}
	if b.Cwd == "" {
		return answer{}, badRequest("cwd is required: the session's working directory")
	}
	id, err := h.e.CreateSession(r.Context(), b.ID, b.Cwd)
	if err != nil {
		return answer{}, err
	}
	info, err := h.e.Session(r.Context(), id)
	if err != nil {
		return answer{}, err
	}
	return answer{http.StatusCreated, jsonview.NewSession(info)}, nil
}

func (h *handler) deleteSession(r *http.Request) (answer, error) {
	id := r.PathValue("session")
	if err := h.e.DeleteSession(r.Context(), id); err != nil {
		return answer{}, err
	}
	return ok(map[string]any{"session": id, "deleted": true}), nil
}

// messageBody is the body of POST /api/sessions/{session}/messages.
type messageBody struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Meta    bool            `json:"meta"`
	Buffer  bool            `json:"buffer"`
}

func (h *handler) appendMessage(r *http.Request) (answer, error) {
	var b messageBody
	if err := decode(r, &b); err != nil {
		return answer{}, err
	}
	if b.Role != "user" && b.Role != "assistant" {
		return answer{}, badRequest("role must be user or assistant, not %q", b.Role)
	}
	blocks, valid := projection.Content(b.Content)
	if !valid {
		return answer{}, badRequest("content must be a string or an array of content blocks")
	}
	m := reprise.Message{Role: b.Role, Content: blocks, IsMeta: b.Meta}
	id := r.PathValue("session")
	var err error
	if b.Buffer {
		m, err = h.e.Buffer(r.Context(), id, m)
	} else {
		m, err = h.e.Append(r.Context(), id, m)
	}
	if err != nil {
		return answer{}, err
	}
	return ok(map[string]any{"session": id, "uuid": m.UUID, "buffered": b.Buffer}), nil
}

func (h *handler) save(r *http.Request) (answer, error) {
	if err := decode(r, &struct{}{}); err != nil {
		return answer{}, err
	}
	id := r.PathValue("session")
	n, err := h.e.Save(r.Context(), id)
	if err != nil {
		return answer{}, err
	}
	return ok(map[string]any{"session": id, "saved": n}), nil
}

// hooksBody is the body of POST /api/sessions/{session}/hooks.
type hooksBody struct {
	Hooks json.RawMessage `json:"hooks"`
}

// hookSource is where the hooks a client adds are said to come from.
const hookSource = "api"

func (h *handler) addHooks(r *http.Request) (answer, error) {
	var b hooksBody
	if err := decode(r, &b); err != nil {
		return answer{}, err
	}
	id := r.PathValue("session")
	if len(b.Hooks) == 0 {
		return answer{}, badRequest("hooks is required: a settings file's hooks object")
	}
	if _, err := h.e.Session(r.Context(), id); err != nil {
		return answer{}, err
	}
	ids, err := h.e.AddFrontmatterHooks(id, hookSource, b.Hooks)
	if err != nil {
		return answer{}, badRequest("%v", err)
	}
	return answer{http.StatusCreated, map[string]any{"session": id, "ids": append([]string{}, ids...)}}, nil
}

func (h *handler) removeHook(r *http.Request) (answer, error) {
	id, hook := r.PathValue("session"), r.PathValue("hook")
	if !h.e.RemoveSessionHook(id, hook) {
		return answer{}, &apiError{status: http.StatusNotFound, code: "hook_not_found", msg: fmt.Sprintf("session %s has no hook %s", id, hook)}
	}
	return ok(map[string]any{"session": id, "id": hook, "removed": true}), nil
}
