package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/api"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/web"
)

// serveTokenEnv names the environment variable that gives serve its
// token.
const serveTokenEnv = "REPRISE_SERVE_TOKEN"

// defaultServeAddr is where serve listens unless --addr says otherwise:
// this machine only.
const defaultServeAddr = "127.0.0.1:7777"

// serveOptions are the options of serve.
type serveOptions struct {
	cmdIO
	addr    string   // --addr
	addrSet bool     // --addr was given
	token   bool     // --token was given: refused, see checkServeOptions
	noToken bool     // --no-token
	socket  string   // --socket
	write   bool     // --write
	origins []string // --origin
	hooks   hookOptions
}

// serveJSON is what serve --json prints once it listens.
type serveJSON struct {
	URL       string `json:"url,omitempty"` // with ?token= when one is needed
	Socket    string `json:"socket,omitempty"`
	Store     string `json:"store"`
	Token     bool   `json:"token"`                // every request must carry the token
	TokenFile string `json:"token_file,omitempty"` // where the generated token is kept
}

// newServeCmd returns the serve command: the web view of the store.
func newServeCmd(a *app, runF func(context.Context, *serveOptions) error) *cobra.Command {
	o := serveOptions{addr: defaultServeAddr}
	cmd := &cobra.Command{
		Use:   "serve [--addr HOST:PORT] [--no-token] | serve --socket PATH | serve --write [--socket PATH | --addr HOST:PORT] [--settings FILE]...",
		Short: "Serve a read-only web view of the store, and with --write the actions of agent hosts",
		Long: `serve serves the store's sessions, conversations, agents' restores as
timelines of steps and hooks, the audit and the raw event log, as web
pages that update as the log grows, and the same as JSON under /api
(the objects --json prints). It only reads. Each request reads the store
as the read commands do: through the socket of a process that holds the
file, else by opening it for that request alone, so that writers are not
kept out.

The view shows every conversation and hook output in the store, which
only you may read, so on TCP every request must carry a token: an
"Authorization: Bearer TOKEN" header, or ?token=TOKEN once in a browser,
which then keeps it in a cookie. The token is $REPRISE_SERVE_TOKEN,
else the one kept in STORE.serve-token (mode 0600) beside the store,
which serve makes the first time, so that the address serve prints,
which carries it, keeps working across restarts; write your own token
there to choose it. A token is at least 16 characters, each a letter, a
digit or one of - . _ ~. serve takes no --token: a command line is
readable by every user of this machine (ps, /proc).
--no-token serves without one, on a loopback address only, to every
user of this machine. --socket PATH serves on a Unix socket instead,
mode 0600, which only you can connect to, without a token
(curl --unix-socket PATH http://localhost/).

It listens on 127.0.0.1:7777 unless --addr says otherwise, and runs
until interrupted (Ctrl-C).

--write also serves, under /api, the actions of agent hosts written in any
language, as JSON over HTTP: sessions created, appended to, saved and
deleted, hooks of a session's own, and each agent's start, resume, new,
clear, fork, compact, end, stop, prompt, tool, tool-result, fire and
finish, each answering what its command prints with --json. Its OpenAPI
document is at /api/openapi.json; docs/api.md describes it. serve then
holds the store for writing until it stops (other commands read it
through serve), with the hooks of --settings, --plugin-dir and, unless
--no-default-settings, each session's Claude Code settings. On TCP it
listens on a loopback address only, and every write must carry the token
in an "Authorization: Bearer TOKEN" header; --no-token is refused. A
browser's page may call it only from an origin --origin names.`,
		Example: `  reprise serve
  reprise serve --addr 127.0.0.1:8080
  reprise serve --socket ~/reprise.sock
  reprise serve --write --socket ~/reprise.sock --settings hooks.json
  REPRISE_SERVE_TOKEN=$(openssl rand -hex 16) reprise serve --addr 0.0.0.0:7777`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.addrSet = cmd.Flags().Changed("addr")
			o.token = cmd.Flags().Changed("token")
			o.cmdIO = newCmdIO(a, cmd)
			if runF != nil {
				return runF(cmd.Context(), &o)
			}
			return runServe(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.addr, "addr", o.addr, "listen on `HOST:PORT`")
	// --token is refused, and hidden, but known, so that its refusal says
	// where the token goes rather than that the flag is unknown.
	cmd.Flags().String("token", "", "refused: the token goes in $"+serveTokenEnv+" or the token file")
	if err := cmd.Flags().MarkHidden("token"); err != nil {
		panic(err)
	}
	cmd.Flags().BoolVar(&o.noToken, "no-token", false, "serve without a token, to every user of this machine (loopback only)")
	cmd.Flags().StringVar(&o.socket, "socket", "", "serve on a Unix socket at `PATH`, mode 0600, without a token")
	cmd.Flags().BoolVar(&o.write, "write", false, "also serve the actions of agent hosts (the write API), holding the store")
	cmd.Flags().StringArrayVar(&o.origins, "origin", nil, "with --write, let pages of the web `ORIGIN` (such as http://localhost:5173) call the write API from a browser (repeatable)")
	o.hooks.register(cmd)
	return cmd
}

// minTokenLen is the shortest token serve takes.
const minTokenLen = 16

// checkServeOptions refuses options that contradict each other, and
// --token, whose value every user of this machine would read in the
// command line (ps, /proc/PID/cmdline) and then read the store with.
func checkServeOptions(o serveOptions) error {
	switch {
	case o.token:
		return usagef("serve takes no --token: a command line is readable by every user of this machine (ps, /proc), who could then read the store; "+
			"put the token in $%s, or write it to the token file beside the store (STORE%s, mode 0600), which serve reads", serveTokenEnv, serveTokenSuffix)
	case o.socket != "" && (o.addrSet || o.noToken):
		return usagef("--socket serves on a Unix socket that only you can reach, without a token: it takes no --addr or --no-token")
	case o.write && o.noToken:
		return usagef("--write takes no --no-token: every user of this machine could run hooks as you; serve on --socket, or with the token")
	case !o.write && len(o.origins) > 0:
		return usagef("--origin names the pages that may call the write API: give --write, or leave it out")
	case !o.write && (len(o.hooks.settings) > 0 || len(o.hooks.plugins) > 0 || o.hooks.noDefault):
		return usagef("--settings, --plugin-dir and --no-default-settings choose the hooks of --write's actions: give --write, or leave them out")
	}
	return nil
}

// checkToken refuses a token that is short or that a browser's login
// (?token=TOKEN) would not carry as it is.
func checkToken(token, from string) error {
	if len(token) < minTokenLen {
		return usagef("the token (%s) is %d characters; give one of at least %d that nobody could guess, such as the output of: openssl rand -hex 16",
			from, len(token), minTokenLen)
	}
	if !web.ValidToken(token) {
		return usagef("the token (%s) may hold only letters, digits and - . _ ~, which an address carries as they are", from)
	}
	return nil
}

// runServe serves the web view of the store until ctx ends.
func runServe(ctx context.Context, o *serveOptions) (err error) {
	if err := checkServeOptions(*o); err != nil {
		return err
	}
	var token string
	if !o.noToken && o.socket == "" {
		if token = os.Getenv(serveTokenEnv); token != "" {
			if err := checkToken(token, "$"+serveTokenEnv); err != nil {
				return err
			}
		}
	}
	if o.socket == "" {
		host, _, err := net.SplitHostPort(o.addr)
		if err != nil {
			return usagef("--addr must be HOST:PORT, such as %s: %v", defaultServeAddr, err)
		}
		if o.write && !web.IsLoopback(host) {
			return usagef("--addr %s is reachable from other machines, and --write runs hooks as you: listen on a loopback address such as %s, or on --socket",
				o.addr, defaultServeAddr)
		}
		if o.noToken && !web.IsLoopback(host) {
			return usagef("--addr %s is reachable from other machines, and the view shows every conversation in the store: "+
				"serve there with a token (leave out --no-token), or listen on a loopback address such as %s", o.addr, defaultServeAddr)
		}
	}
	path, err := o.storePath()
	if err != nil {
		return err
	}
	var held *reprise.Engine
	if o.write {
		if err := o.hooks.check(); err != nil {
			return err
		}
		if held, err = o.openHooked(ctx, o.hooks, o.stderr); err != nil {
			return err
		}
		defer closeEngine(held, &err)
	} else {
		// Fail now, not at the first request, when there is no store to read.
		e, err := o.openReadOnly(ctx, o.stderr)
		if err != nil {
			return err
		}
		if err := e.Close(); err != nil {
			return fmt.Errorf("close store: %w", err)
		}
	}
	out := serveJSON{Store: redact(path)}
	if token == "" && !o.noToken && o.socket == "" {
		out.TokenFile = serveTokenFile(path)
		if token, err = keptToken(out.TokenFile); err != nil {
			return err
		}
	}
	var (
		ln     net.Listener
		remove = func() {}
	)
	if o.socket != "" {
		ln, remove, err = listenSocket(o.socket)
		out.Socket = o.socket
	} else {
		ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", o.addr)
		if err != nil {
			err = fmt.Errorf("cannot listen on %s: %w", o.addr, err)
		}
	}
	if err != nil {
		return err
	}
	defer remove()
	var h http.Handler = newStoreView(o.app, o.stderr)
	if held != nil {
		find, closeIndex := o.heldSearch(path, held)
		defer func() {
			if cerr := closeIndex(); cerr != nil && err == nil {
				err = fmt.Errorf("close the search index: %w", cerr)
			}
		}()
		h = web.New(held, web.Options{FinishCommand: o.finishCommand, Logger: o.engineLogger(o.stderr), Search: find})
	}
	switch {
	case token != "":
		h = web.RequireToken(token, h)
		out.Token = true
	case o.socket == "":
		h = web.RequireLoopbackHost(h)
	}
	if held != nil {
		h = api.New(held, api.Options{Fallback: h, Token: token, LoopbackOnly: o.socket == "", Origins: o.origins, Logger: o.engineLogger(o.stderr)})
	}
	if o.socket == "" {
		out.URL = serveURL(ln.Addr(), token)
	}
	switch {
	case o.json:
		err = printJSON(o.stdout, out)
	case o.socket != "":
		_, err = fmt.Fprintf(o.stdout, "serving %s on the socket %s, which only you can reach (Ctrl-C stops): curl --unix-socket %s http://localhost/api/sessions\n",
			out.Store, o.socket, shellQuote(o.socket))
	default:
		_, err = fmt.Fprintf(o.stdout, "serving %s at %s (Ctrl-C stops)\n", out.Store, out.URL)
	}
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(stop); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// storeView serves the web view, reading the store afresh for each
// request as the read commands do, so that it never keeps writers out for
// longer than a request; the live endpoint follows the log as log
// --follow does.
type storeView struct {
	a      *app
	stderr io.Writer
	audits *web.Audits // shared by the requests, so that checks of the log run one at a time and their report is kept
	hooks  *web.Hooks  // the health page's count of hook runs, shared by the requests
	// searching is held by a search, so that searches open the index one
	// at a time.
	searching sync.Mutex
}

// newStoreView returns the web view of a's store.
func newStoreView(a *app, stderr io.Writer) *storeView {
	v := &storeView{a: a, stderr: stderr, hooks: web.NewHooks()}
	v.audits = web.NewAudits(func(ctx context.Context) (_ *reprise.AuditReport, _ uint64, err error) {
		a := *v.a
		e, err := a.openReadOnly(ctx, v.stderr)
		if err != nil {
			return nil, 0, err
		}
		defer closeEngine(e, &err)
		head, err := eventlog.LastPosition(ctx, e.Store())
		if err != nil {
			return nil, 0, err
		}
		rep, err := reprise.Audit(ctx, e.Store())
		return rep, head, err
	})
	return v
}

// ServeHTTP serves r.
func (v *storeView) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := *v.a // each request learns on its own whether a holder serves the store
	if r.URL.Path == "/live" {
		web.Live(func(ctx context.Context, from uint64, fn func(eventlog.Event) error) error {
			return follow(ctx, &a, v.stderr, from, fn)
		}, func(ctx context.Context) (_ uint64, err error) {
			e, err := a.openReadOnly(ctx, v.stderr)
			if err != nil {
				return 0, err
			}
			defer closeEngine(e, &err)
			return eventlog.LastPosition(ctx, e.Store())
		}, nil).ServeHTTP(w, r)
		return
	}
	e, err := a.openReadOnly(r.Context(), v.stderr)
	if err != nil {
		http.Error(w, "cannot read the store: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer e.Close()
	web.New(e, web.Options{FinishCommand: a.finishCommand, RunningIn: a.heldBy, Audits: v.audits, Hooks: v.hooks, Search: v.search}).ServeHTTP(w, r)
}

// serveURL is the address a browser on this machine opens to reach addr,
// with ?token= when token is not empty: one that listens on every address
// of the machine is reached at 127.0.0.1.
func serveURL(addr net.Addr, token string) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		host = net.JoinHostPort(host, port)
	} else {
		host = addr.String()
	}
	url := "http://" + host + "/"
	if token != "" {
		url += "?token=" + token // ValidToken: nothing to escape
	}
	return url
}
