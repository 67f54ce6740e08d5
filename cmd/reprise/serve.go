package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/web"
)

// serveTokenEnv names the environment variable that gives serve its
// token when --token is not given.
const serveTokenEnv = "REPRISE_SERVE_TOKEN"

// defaultServeAddr is where serve listens unless --addr says otherwise:
// this machine only.
const defaultServeAddr = "127.0.0.1:7777"

// serveOptions are the options of serve.
type serveOptions struct {
	addr  string // --addr
	token string // --token
}

// serveJSON is what serve --json prints once it listens.
type serveJSON struct {
	URL   string `json:"url"`
	Store string `json:"store"`
	Token bool   `json:"token"` // every request must carry the token
}

// newServeCmd returns the serve command: the web view of the store.
func newServeCmd(a *app) *cobra.Command {
	o := serveOptions{addr: defaultServeAddr}
	cmd := &cobra.Command{
		Use:   "serve [--addr HOST:PORT] [--token TOKEN]",
		Short: "Serve a read-only web view of the store",
		Long: `serve serves the store's sessions, conversations, agents' restores as
timelines of steps and hooks, the audit and the raw event log, as web
pages that update as the log grows, and the same as JSON under /api
(the objects --json prints). It only reads. Each request reads the store
as the read commands do: through the socket of a process that holds the
file, else by opening it for that request alone, so that writers are not
kept out.

It listens on 127.0.0.1:7777 unless --addr says otherwise. The view shows
every conversation and hook output in the store, so binding to any other
address than a loopback one needs a token (--token or $REPRISE_SERVE_TOKEN);
without one it refuses. With a token, every request must carry it: an
"Authorization: Bearer TOKEN" header, or ?token=TOKEN once in a browser,
which then keeps it in a cookie. It runs until interrupted (Ctrl-C).`,
		Example: `  reprise serve
  reprise serve --addr 127.0.0.1:8080
  REPRISE_SERVE_TOKEN=$(openssl rand -hex 16) reprise serve --addr 0.0.0.0:7777`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), a, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&o.addr, "addr", o.addr, "listen on `HOST:PORT`")
	cmd.Flags().StringVar(&o.token, "token", "", "require `TOKEN` on every request (default $"+serveTokenEnv+")")
	return cmd
}

// minTokenLen is the shortest token serve takes.
const minTokenLen = 16

// runServe serves the web view of the store until ctx ends.
func runServe(ctx context.Context, a *app, o serveOptions, stdout, stderr io.Writer) error {
	token := o.token
	if token == "" {
		token = os.Getenv(serveTokenEnv)
	}
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return usagef("--addr must be HOST:PORT, such as %s: %v", defaultServeAddr, err)
	}
	if !web.IsLoopback(host) && token == "" {
		return usagef("--addr %s is reachable from other machines, and the view shows every conversation in the store: "+
			"give --token or set %s, or listen on a loopback address such as %s", o.addr, serveTokenEnv, defaultServeAddr)
	}
	path, err := a.storePath()
	if err != nil {
		return err
	}
	// Fail now, not at the first request, when there is no store to read.
	e, err := a.openReadOnly(ctx, stderr)
	if err != nil {
		return err
	}
	if err := e.Close(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", o.addr, err)
	}
	if token != "" && len(token) < minTokenLen {
		return usagef("the token is %d characters; give one of at least %d that nobody could guess, such as the output of: openssl rand -hex 16",
			len(token), minTokenLen)
	}
	var h http.Handler = newStoreView(a, stderr)
	if token != "" {
		h = web.RequireToken(token, h)
	} else {
		h = web.RequireLoopbackHost(h)
	}
	url := serveURL(ln.Addr())
	if a.json {
		err = printJSON(stdout, serveJSON{URL: url, Store: redact(path), Token: token != ""})
	} else {
		_, err = fmt.Fprintf(stdout, "serving %s at %s (Ctrl-C stops)\n", redact(path), url)
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
}

// newStoreView returns the web view of a's store.
func newStoreView(a *app, stderr io.Writer) *storeView {
	v := &storeView{a: a, stderr: stderr}
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
	web.New(e, web.Options{FinishCommand: a.finishCommand, RunningIn: a.heldBy, Audits: v.audits}).ServeHTTP(w, r)
}

// serveURL is the address a browser on this machine opens to reach addr:
// one that listens on every address of the machine is reached at
// 127.0.0.1.
func serveURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
