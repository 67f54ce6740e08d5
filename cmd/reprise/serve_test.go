package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/internal/testkit"
)

// serving is a reprise serve (or demo --serve) running in process until
// stop.
type serving struct {
	url            string
	token          string // from the printed URL's ?token=, "" for none
	stdout, stderr *testkit.SyncBuffer
	cancel         context.CancelFunc
	code           chan int
}

// urlRE finds the address serve prints once it listens, and its token.
var urlRE = regexp.MustCompile(`(http://127\.0\.0\.1:\d+/)(?:\?token=([A-Za-z0-9._~-]+))?`)

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
			s.url, s.token = m[1], m[2]
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
// status and body. The request carries the printed token, unless header
// gives an Authorization of its own ("" for none).
func (s *serving) get(t *testing.T, path string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", s.url+strings.TrimPrefix(path, "/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
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
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
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

// On TCP serve needs a token by default: it makes one the first time,
// keeps it in a file beside the store that only the user may read, so
// that the address it prints (which carries it) survives restarts, and
// refuses every request without it. Another user of the machine, who used
// to read every conversation with curl, gets 401 and cannot read the file.
func TestServeNeedsATokenByDefault(t *testing.T) {
	c := newCLI(t)
	c.session("s", "the secret plan")
	s := startServe(t, "serve", "--addr", "127.0.0.1:0")
	if s.token == "" || len(s.token) < minTokenLen {
		t.Fatalf("serve printed no token in its address: %s", s.stdout)
	}
	if status, body := s.get(t, "/api/sessions", "Authorization", ""); status != http.StatusUnauthorized || strings.Contains(body, "secret") {
		t.Errorf("a request without the token got %d:\n%s", status, body)
	}
	if status, body := s.get(t, "/sessions/s"); status != http.StatusOK || !strings.Contains(body, "the secret plan") {
		t.Errorf("a request with the token got %d", status)
	}
	file := c.store + serveTokenSuffix
	info, err := os.Lstat(file)
	if err != nil || info.Mode() != 0o600 {
		t.Fatalf("the token file: %v, %v; want a regular file of mode 0600", info, err)
	}
	if data, _ := os.ReadFile(file); strings.TrimSpace(string(data)) != s.token {
		t.Errorf("the token file holds %q; serve printed %q", data, s.token)
	}
	if os.Getuid() == 0 {
		openToOthers(t, filepath.Dir(file))
		if curl, err := exec.LookPath("curl"); err == nil {
			out, _ := asAnotherUser(exec.Command(curl, "-s", "-o", "/dev/null", "-w", "%{http_code}", s.url+"api/sessions")).Output()
			if string(out) != "401" {
				t.Errorf("another user's curl got %q; want 401", out)
			}
		}
		if out, err := asAnotherUser(exec.Command("cat", file)).CombinedOutput(); err == nil {
			t.Errorf("another user read the token file: %s", out)
		}
	}
	s.stop(t)

	// A restart serves the same token, which --json shows in the address.
	again := startServe(t, "--json", "serve", "--addr", "127.0.0.1:0")
	if again.token != s.token || field(t, again.stdout.String(), "token") != "true" ||
		field(t, again.stdout.String(), "token_file") != strconv.Quote(file) {
		t.Errorf("after a restart serve printed %s; want the token %s, kept in %s", again.stdout, s.token, file)
	}
}

// openToOthers lets other users pass through dir and the test's temporary
// directories above it, so that what keeps them out of a file in it is
// the file's own mode.
func openToOthers(t *testing.T, dir string) {
	t.Helper()
	for p := dir; strings.HasPrefix(p, os.TempDir()+string(filepath.Separator)); p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
}

// asAnotherUser makes cmd run as user 65534 (nobody); only root can.
func asAnotherUser(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Dir = "/"
	return cmd
}

// A token chosen in $REPRISE_SERVE_TOKEN replaces the kept one; it must
// be long and made of characters a browser's ?token= login carries as
// they are. A token written to the token file is the one served. --token
// is refused, whatever its value, since a command line is readable by
// every user of the machine. --no-token serves without one, on loopback
// only.
func TestServeTokenOptions(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hello")
	for _, args := range [][]string{
		{"--no-token", "--addr", "0.0.0.0:0"},
		{"--socket", "x.sock", "--no-token"},
		{"--socket", "x.sock", "--addr", "127.0.0.1:0"},
		{"--addr", "nonsense"},
	} {
		c.fails(exitUsage, append([]string{"serve"}, args...)...)
	}
	for _, args := range [][]string{
		{"--token", "other-token.0123456789"},
		{"--token=other-token.0123456789", "--addr", "127.0.0.1:0"},
		{"--token", "short"},
		{"--token", "other-token.0123456789", "--no-token"},
		{"--socket", "x.sock", "--token", "other-token.0123456789"},
	} {
		r := c.fails(exitUsage, append([]string{"serve"}, args...)...)
		if !strings.Contains(r.stderr, "takes no --token") || !strings.Contains(r.stderr, serveTokenEnv) ||
			!strings.Contains(r.stderr, serveTokenSuffix) {
			t.Errorf("serve %q: the refusal does not say where the token goes: %s", args, r.stderr)
		}
	}
	if _, err := os.Lstat(c.store + serveTokenSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused serve made a token file: %v", err)
	}
	for _, bad := range []string{"short", "abcdefghijklmnop;q", `abcdefghijklmnop"q`, "abcdefghijklmnopé", "with space in it!"} {
		t.Setenv(serveTokenEnv, bad)
		if r := c.fails(exitUsage, "serve"); !strings.Contains(r.stderr, serveTokenEnv) {
			t.Errorf("a bad $%s (%q): %s", serveTokenEnv, bad, r.stderr)
		}
	}

	const token = "c3f1a9e07b5d4c2e"
	t.Setenv(serveTokenEnv, token)
	s := startServe(t, "--json", "serve", "--addr", "127.0.0.1:0")
	if s.token != token || field(t, s.stdout.String(), "token") != "true" {
		t.Errorf("serve --json with $%s printed %s", serveTokenEnv, s.stdout)
	}
	for _, auth := range []string{"", "Bearer wrong-token-of-16", "Bearer " + token, "bearer " + token} {
		want := http.StatusOK
		if !strings.HasSuffix(auth, token) {
			want = http.StatusUnauthorized
		}
		if status, _ := s.get(t, "/api/sessions", "Authorization", auth); status != want {
			t.Errorf("a request with %q got %d; want %d", auth, status, want)
		}
	}
	s.stop(t)
	if _, err := os.Lstat(c.store + serveTokenSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a token file was made though a token was given: %v", err)
	}

	t.Setenv(serveTokenEnv, "")
	if err := os.WriteFile(c.store+serveTokenSuffix, []byte("chosen-token.0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = startServe(t, "serve", "--addr", "127.0.0.1:0")
	if s.token != "chosen-token.0123456789" {
		t.Errorf("a token written to the token file: serve printed %s", s.stdout)
	}
	s.stop(t)
	if err := os.Remove(c.store + serveTokenSuffix); err != nil {
		t.Fatal(err)
	}

	t.Setenv(serveTokenEnv, "")
	s = startServe(t, "serve", "--addr", "127.0.0.1:0", "--no-token")
	if s.token != "" {
		t.Errorf("--no-token printed a token: %s", s.stdout)
	}
	if status, _ := s.get(t, "/api/sessions"); status != http.StatusOK {
		t.Errorf("--no-token: a request got %d", status)
	}
}

// A token file that is not the user's alone is not trusted: another user
// who could read or write it could read the view or choose its token.
func TestServeRefusesAKeptTokenOthersCouldTouch(t *testing.T) {
	c := newCLI(t)
	c.session("s", "hello")
	file := c.store + serveTokenSuffix
	for name, plant := range map[string]func(){
		"a link": func() {
			if err := os.Symlink(c.writeFile("theirs", "aaaaaaaaaaaaaaaaaaaa\n"), file); err != nil {
				t.Fatal(err)
			}
		},
		"a file others may read": func() {
			if err := os.WriteFile(file, []byte("aaaaaaaaaaaaaaaaaaaa\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"no token": func() {
			if err := os.WriteFile(file, []byte("short\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
	} {
		plant()
		if r := c.fails(exitFailure, "serve", "--addr", "127.0.0.1:0"); !strings.Contains(r.stderr, file) {
			t.Errorf("serve with %s as its token file said %s", name, r.stderr)
		}
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
	}
}

// serve --socket serves without a token on a Unix socket that only the
// user can connect to; it never replaces a file, only a crashed serve's
// socket, and removes its socket when it stops.
func TestServeOnASocket(t *testing.T) {
	c := newCLI(t)
	c.session("s", "the secret plan")
	path := filepath.Join(c.dir, "view.sock")
	planted := c.writeFile("view.sock", "mine")
	if r := c.fails(exitFailure, "serve", "--socket", path); !strings.Contains(r.stderr, "exists") {
		t.Errorf("serve --socket over a file said %s", r.stderr)
	}
	if data, _ := os.ReadFile(planted); string(data) != "mine" {
		t.Fatal("the file at the socket's path was replaced")
	}
	os.Remove(planted)
	stale, err := net.Listen("unix", path) // a crashed serve's socket: nothing answers on it
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	stdout := &testkit.SyncBuffer{}
	go func() {
		code <- run(ctx, []string{"serve", "--socket", path}, strings.NewReader(""), stdout, io.Discard)
	}()
	defer func() {
		cancel()
		if got := <-code; got != exitOK {
			t.Errorf("serve --socket stopped with exit %d", got)
		}
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the socket is left after serve stopped: %v", err)
		}
	}()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(stdout.String(), "serving"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve --socket never said it serves: %s", stdout)
		}
	}
	info, err := os.Lstat(path)
	if err != nil || info.Mode().Type() != fs.ModeSocket || info.Mode().Perm() != 0o600 {
		t.Fatalf("the socket: %v, %v; want a socket of mode 0600", info, err)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	res, err := client.Get("http://localhost/sessions/s")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "the secret plan") {
		t.Errorf("on the socket, /sessions/s = %d", res.StatusCode)
	}
	if os.Getuid() == 0 {
		openToOthers(t, filepath.Dir(path))
		if curl, err := exec.LookPath("curl"); err == nil {
			out, err := asAnotherUser(exec.Command(curl, "-s", "--unix-socket", path, "http://localhost/api/sessions")).Output()
			if err == nil || strings.Contains(string(out), "secret") {
				t.Errorf("another user read the view through the socket: %v %s", err, out)
			}
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
	if s.token == "" {
		t.Errorf("demo --serve printed no token in its address: %s", s.stdout)
	}
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
	s := startServe(t, "serve", "--addr", "127.0.0.1:0", "--no-token")
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
