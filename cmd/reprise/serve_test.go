package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/internal/testkit"
)

// serving is a reprise serve (or demo --serve) running in process until
// stop.
type serving struct {
	url            string
	stdout, stderr *testkit.SyncBuffer
	cancel         context.CancelFunc
	code           chan int
}

// urlRE finds the address serve prints once it listens.
var urlRE = regexp.MustCompile(`(http://127\.0\.0\.1:\d+/)`)

// startServe runs reprise with args in process and waits until it serves.
func startServe(t *testing.T, args ...string) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{stdout: &testkit.SyncBuffer{}, stderr: &testkit.SyncBuffer{}, cancel: cancel, code: make(chan int, 1)}
	go func() { s.code <- run(ctx, args, strings.NewReader(""), s.stdout, s.stderr) }()
	t.Cleanup(func() { s.stop(t) })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := urlRE.FindStringSubmatch(s.stdout.String()); m != nil {
			s.url = m[1]
			return s
		}
		select {
		case code := <-s.code:
			s.code <- code
			t.Fatalf("reprise %s exited with %d before serving:\n%s\nstderr: %s", strings.Join(args, " "), code, s.stdout, s.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("reprise %s never said where it serves:\n%s\nstderr: %s", strings.Join(args, " "), s.stdout, s.stderr)
		}
	}
}

// stop interrupts the server and checks that it stops cleanly.
func (s *serving) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	select {
	case code := <-s.code:
		s.code <- code
		if code != exitOK {
			t.Errorf("serve stopped with exit %d: %s", code, s.stderr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not stop within 5s of its interruption")
	}
}

// get requests path with header (name, value pairs) and returns the
// status and body.
func (s *serving) get(t *testing.T, path string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", s.url+strings.TrimPrefix(path, "/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1] // the client sends this, not a Host header
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// liveStream is an open connection to the live endpoint.
type liveStream struct {
	lines chan string
}

// follow connects to /live, from the store's last event on, until the
// test ends.
func (s *serving) follow(t *testing.T) *liveStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", s.url+"live", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		t.Fatalf("GET /live = %d", res.StatusCode)
	}
	l := &liveStream{lines: make(chan string, 100)}
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				l.lines <- sc.Text()
			}
		}
	}()
	return l
}

// next returns the next data line the live endpoint sent.
func (l *liveStream) next(t *testing.T) string {
	t.Helper()
	select {
	case line := <-l.lines:
		return line
	case <-time.After(10 * time.Second):
		t.Fatal("the live endpoint sent nothing within 10s")
		return ""
	}
}

// field returns the raw JSON of key in the object body.
func field(t *testing.T, body, key string) string {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &obj); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return string(obj[key])
}

// The JSON API answers what the commands print with --json, byte for
// byte, and serve keeps no writer out: a command appends while it runs,
// and the view shows it.
func TestServeAnswersWhatTheCommandsPrint(t *testing.T) {
	c := newCLI(t)
	c.mkdir("state")
	c.ok("demo", "--store", c.store)
	s := startServe(t, "serve", "--addr", "127.0.0.1:0")

	_, sessions := s.get(t, "/api/sessions")
	if got, want := field(t, sessions, "sessions")+"\n", c.ok("sessions", "--json"); got != want {
		t.Errorf("/api/sessions lists %s\nsessions --json prints %s", got, want)
	}
	_, audit := s.get(t, "/api/audit")
	if want := c.ok("audit", "--json"); audit != want {
		t.Errorf("/api/audit = %s\naudit --json prints %s", audit, want)
	}
	_, events := s.get(t, "/api/events?stream=agent/demo-host")
	var lines []json.RawMessage
	if err := json.Unmarshal([]byte(field(t, events, "events")), &lines); err != nil {
		t.Fatal(err)
	}
	var joined strings.Builder
	for _, l := range lines {
		joined.Write(l)
		joined.WriteByte('\n')
	}
	if want := c.ok("log", "--agent", "demo-host", "--json"); joined.String() != want {
		t.Errorf("/api/events of agent/demo-host = %s\nlog --json prints %s", joined.String(), want)
	}
	var list []sessionJSON
	c.okJSON(&list, "sessions")
	id := list[1].ID
	_, conv := s.get(t, "/api/sessions/"+id)
	replay := c.ok("replay", id, "--json")
	if got, want := field(t, conv, "messages"), field(t, replay, "messages"); got != want {
		t.Errorf("/api/sessions/%s messages = %s\nreplay --json prints %s", id, got, want)
	}

	live := s.follow(t)
	c.ok("append", id, "--role", "user", "written while serve runs")
	if line := live.next(t); !strings.HasPrefix(line, `data: {"position":`) || !strings.Contains(line, `"stream":"session/`+id+`","type":"MessageAppended"}`) {
		t.Errorf("the live endpoint sent %q after an append", line)
	}
	if status, page := s.get(t, "/sessions/"+id, "Accept", "text/html"); status != 200 || !strings.Contains(page, "written while serve runs") {
		t.Errorf("the session page after an append = %d:\n%s", status, page)
	}
	h := holdServing(t, c.store)
	h.append(id, "from the host")
	if status, page := s.get(t, "/sessions/"+id); status != 200 || !strings.Contains(page, "from the host") {
		t.Errorf("the session page while a host holds the store = %d:\n%s", status, page)
	}
	if status, body := s.get(t, "/sessions/nosuch"); status != 404 || !strings.Contains(body, "no session nosuch") {
		t.Errorf("an unknown session = %d:\n%s", status, body)
	}
	h.release()
}

// serve listens on loopback unless given a token; with one, every
// request must carry it.
func TestServeNeedsATokenOffLoopback(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hello")
	r := c.fails(exitUsage, "serve", "--addr", "0.0.0.0:0")
	if !strings.Contains(r.stderr, "--token") {
		t.Errorf("refusal does not name --token: %s", r.stderr)
	}
	c.fails(exitUsage, "serve", "--addr", "nonsense")
	if r := c.fails(exitUsage, "serve", "--addr", "0.0.0.0:0", "--token", "short"); !strings.Contains(r.stderr, "at least 16") {
		t.Errorf("a short token: %s", r.stderr)
	}
	const token = "c3f1a9e07b5d4c2e"
	t.Setenv(serveTokenEnv, token)
	s := startServe(t, "--json", "serve", "--addr", "127.0.0.1:0")
	if got := field(t, s.stdout.String(), "token"); got != "true" {
		t.Errorf("serve --json says token %s: %s", got, s.stdout)
	}
	if status, _ := s.get(t, "/api/sessions"); status != http.StatusUnauthorized {
		t.Errorf("a request without the token got %d", status)
	}
	for _, auth := range []string{"Bearer " + token, "bearer " + token} {
		if status, _ := s.get(t, "/api/sessions", "Authorization", auth); status != http.StatusOK {
			t.Errorf("a request with %q got %d", auth, status)
		}
	}
}

// demo --serve serves the store it made; the plain demo says how to see
// it.
func TestDemoServe(t *testing.T) {
	c := newCLI(t)
	out := c.ok("demo")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "reprise demo --serve") {
		t.Errorf("the demo's last line is %q", last)
	}
	s := startServe(t, "demo", "--serve", "--addr", "127.0.0.1:0")
	status, page := s.get(t, "/agents/demo-host")
	if status != 200 || !strings.Contains(page, `<span class="hook ok">ok</span> project-context`) {
		t.Errorf("/agents/demo-host = %d:\n%s", status, page)
	}
}

// Without a token, serve answers only requests addressed to a loopback
// name: a page whose DNS name the browser resolves to 127.0.0.1 (DNS
// rebinding) cannot read the view.
func TestServeRefusesOtherHostsOnLoopback(t *testing.T) {
	c := newCLI(t)
	c.session("s", "the secret plan")
	s := startServe(t, "serve", "--addr", "127.0.0.1:0")
	for host, want := range map[string]int{
		"":                       http.StatusOK, // the listening address itself
		"localhost":              http.StatusOK,
		"localhost.:7777":        http.StatusOK,
		"[::1]:7777":             http.StatusOK,
		"evil.example.com:7777":  http.StatusMisdirectedRequest,
		"127.0.0.1.evil.example": http.StatusMisdirectedRequest,
		"reprise.example.com":    http.StatusMisdirectedRequest,
	} {
		var hdr []string
		if host != "" {
			hdr = []string{"Host", host}
		}
		status, body := s.get(t, "/api/sessions", hdr...)
		if status != want || (want != http.StatusOK && strings.Contains(body, "secret")) {
			t.Errorf("Host %q: %d %s; want %d", host, status, body, want)
		}
	}
}
