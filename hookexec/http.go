package hookexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/reprise-dev/reprise/schema"
)

// HTTP is the body of an http hook: the event's JSON input is POSTed to
// URL, and a 2xx answer's JSON body is read as a command hook's stdout
// on exit 0 (an empty body as {}). Any other answer, a body that is not
// JSON, a refused connection or a timeout is a failure that blocks
// nothing, as Claude Code has it; redirects are not followed, and a
// body over MaxCapture bytes is a failure.
type HTTP struct {
	URL string
	// Headers are sent with the request. $VAR and ${VAR} in a value are
	// replaced by the variable of this process's environment when
	// AllowedEnvVars names it, and by nothing when it does not.
	Headers        map[string]string
	AllowedEnvVars []string
	// Unrunnable, when not empty, says why the hook fails whenever it
	// runs, such as a URL that managed settings' allowedHttpHookUrls
	// does not allow.
	Unrunnable string
}

func (b HTTP) runsOn(e Event) bool {
	spec, _ := schema.LookupEvent(e)
	return b.URL != "" && spec.Accepts(schema.HookHTTP)
}

// headerVar is a variable a header value names, as Claude Code reads it.
var headerVar = regexp.MustCompile(`\$\{([A-Z_][A-Z0-9_]*)\}|\$([A-Z_][A-Z0-9_]*)`)

// header returns value with the variables it names replaced: by their
// value when allowed names them, else by nothing. Line breaks and NUL
// are removed from the result, so that no value adds a header.
func header(value string, allowed []string, env CommandEnv) string {
	v := headerVar.ReplaceAllStringFunc(value, func(m string) string {
		name := strings.Trim(m, "${}")
		if !slices.Contains(allowed, name) {
			env.warn("hookexec: an http hook's header names a variable its allowedEnvVars does not list; it is left empty", "variable", name)
			return ""
		}
		return os.Getenv(name)
	})
	return strings.NewReplacer("\r", "", "\n", "", "\x00", "").Replace(v)
}

// hookClient sends http hooks' requests. It follows no redirect, and it
// connects to no link-local address (the cloud metadata service's among
// them), where Claude Code sends no hook either.
var hookClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport: func() *http.Transport {
		t := http.DefaultTransport.(*http.Transport).Clone()
		dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: refuseLinkLocal}
		t.DialContext = dialer.DialContext
		return t
	}(),
}

// refuseLinkLocal refuses to connect to a link-local or unspecified
// address.
func refuseLinkLocal(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip != nil && (ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified()) {
		return fmt.Errorf("%s is a link-local address, which http hooks may not reach", host)
	}
	return nil
}

// post runs an http hook: it POSTs stdin to its URL and reads the
// answer as a command's stdout.
func post(ctx context.Context, body HTTP, stdin []byte, env CommandEnv) *commandRun {
	r := &commandRun{stdout: capture{limit: MaxCapture}, stderr: capture{limit: MaxCapture}, kind: schema.HookHTTP}
	if body.Unrunnable != "" {
		r.err = errors.New(body.Unrunnable)
		return r
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, body.URL, bytes.NewReader(stdin))
	if err != nil {
		r.err = fmt.Errorf("http hook: %w", err)
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range body.Headers {
		if strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
			continue // the body says how long it is
		}
		req.Header.Set(k, header(v, body.AllowedEnvVars, env))
	}
	resp, err := hookClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return r // stopped: the caller reports the timeout or the cancel
		}
		r.err = fmt.Errorf("http hook: %w", err)
		return r
	}
	defer func() { _ = resp.Body.Close() }()
	n, err := io.Copy(&r.stdout, io.LimitReader(resp.Body, MaxCapture+1))
	switch {
	case err != nil && ctx.Err() != nil:
		return r
	case err != nil:
		r.err = fmt.Errorf("http hook: reading the answer: %w", err)
		return r
	case n > MaxCapture:
		r.err = fmt.Errorf("http hook: the answer's body is over %d bytes", MaxCapture)
		return r
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		r.err = fmt.Errorf("http hook answered %s", resp.Status)
		return r
	}
	text := bytes.TrimSpace(r.stdout.buf)
	r.answer = string(text)
	switch {
	case len(text) == 0:
		r.stdout.buf = []byte("{}") // as Claude Code reads an empty body
	case !isJSONObject(text):
		r.err = fmt.Errorf("http hook: HTTP hook must return JSON, but got non-JSON response body: %s", firstChars(strings.ToValidUTF8(string(text), "\uFFFD"), 200))
		return r
	}
	r.ran, r.status = true, resp.Status
	return r
}

// urlAllowed reports whether url matches one of patterns, in which *
// stands for any run of characters, as managed settings'
// allowedHttpHookUrls says.
func urlAllowed(url string, patterns []string) bool {
	for _, p := range patterns {
		parts := strings.Split(p, "*")
		for i, part := range parts {
			parts[i] = regexp.QuoteMeta(part)
		}
		if regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(url) {
			return true
		}
	}
	return false
}
