package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/search"
	"github.com/reprise-dev/reprise/web"
	"github.com/reprise-dev/reprise/web/internal/fixture"
)

// chromium is the browser the test drives, Debian's.
const chromium = "/usr/bin/chromium"

// artifactsEnv names a directory to keep the screenshots in; without it
// they go to the test's temporary directory.
const artifactsEnv = "REPRISE_TEST_ARTIFACTS"

// stepTimeout bounds each step, such as waiting for a live append to show.
const stepTimeout = 20 * time.Second

// browser is a headless Chromium with a page open, and what its console
// reported.
type browser struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

// newBrowser starts Chromium with a fresh profile, or skips the test when
// there is none.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromium
	if _, err := os.Stat(path); err != nil {
		found, lerr := exec.LookPath("chromium")
		if lerr != nil {
			t.Skipf("no browser: %s is missing and no chromium is on PATH (install Debian's chromium to run this test)", chromium)
		}
		path = found
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	// Chromium keeps settings and caches under HOME besides its profile
	// (dconf, fontconfig), and its own temporary files under TMPDIR: give
	// it a home and a TMPDIR of its own, so the test writes nothing outside
	// its temporary directories.
	// (Its socket's path must be short: t.TempDir's names are long.)
	home := t.TempDir()
	tmp, err := os.MkdirTemp("", "c")
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, chromedp.Env("HOME="+home, "TMPDIR="+tmp, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share")))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc() // waits for the browser to exit
		os.RemoveAll(tmp)
	})
	b := &browser{ctx: ctx}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("cannot start %s: %v", path, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.report(m.String())
			}
		}
	}()
	return b
}

func (b *browser) report(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errors = append(b.errors, msg)
}

// consoleErrors returns what the console reported since the last call.
func (b *browser) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.errors
	b.errors = nil
	return out
}

// do runs steps, failing the test on an error.
func (b *browser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// get runs action and returns its value, failing the test on an error.
func get[T any](t *testing.T, b *browser, what string, action chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// artifacts returns the directory screenshots go to.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(artifactsEnv)
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Every page opens without a console error and fits a phone's width; the
// agent timeline shows every hook with its outcome; a message appended
// through the Engine while the session page is open appears there without
// a reload.
func TestPagesInABrowser(t *testing.T) {
	s := fixture.New(t)
	// An answer in Markdown, with a link that must not run and code to
	// highlight; a word to search for.
	if _, err := s.Engine.Append(context.Background(), s.Work, reprise.Text("assistant",
		"The **zanzibar** fix: [run this](javascript:alert(1)) or\n\n```go\nfunc fix() {}\n```\n")); err != nil {
		t.Fatal(err)
	}
	nested := subagentTurn(t, s.Engine)
	x, err := search.Open(context.Background(), t.TempDir(), s.Engine.Store())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	srv := httptest.NewServer(web.New(s.Engine, web.Options{AuditWait: time.Minute, Search: web.IndexSearcher(x)}))
	t.Cleanup(srv.Close) // after the browser has gone, with its live connections
	b := newBrowser(t)
	dir := artifacts(t)
	pages := []struct{ name, path string }{
		{"sessions", "/sessions"},
		{"session", "/sessions/" + s.Work},
		{"fork", "/sessions/" + s.Demo.Fork.To},
		{"agents", "/agents"},
		{"agent", "/agents/" + s.CI},
		{"crashy", "/agents/" + s.Crashy},
		{"tools", "/agents/" + s.Tools},
		{"demo-agent", "/agents/demo-host"},
		{"audit", "/audit"},
		{"events", "/events"},
		{"hooks", "/hooks"},
		{"search", "/search?q=broken"},
	}
	for _, p := range pages {
		for _, width := range []int64{1280, 390} {
			start := time.Now()
			b.do(t, p.path,
				chromedp.EmulateViewport(width, 900),
				chromedp.Navigate(srv.URL+p.path),
				chromedp.WaitVisible(chromedp.CSS("main#content h1")),
			)
			scrollWidth := get(t, b, "scroll width", chromedp.Evaluate[int64](`document.documentElement.scrollWidth`))
			loaded := time.Since(start)
			shot := get(t, b, "screenshot", chromedp.FullScreenshot(100))
			if loaded > 5*time.Second {
				t.Errorf("%s took %v to load at %d px", p.path, loaded, width)
			}
			name := filepath.Join(dir, fmt.Sprintf("%s-%d.png", p.name, width))
			if err := os.WriteFile(name, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			if width == 390 && scrollWidth > 390 {
				t.Errorf("%s is %d px wide at 390 px: it scrolls sideways", p.path, scrollWidth)
			}
		}
		if errs := b.consoleErrors(); len(errs) > 0 {
			t.Errorf("%s: console errors: %q", p.path, errs)
		}
	}
	t.Logf("screenshots in %s", dir)

	// The timeline: every hook of every run, with its outcome.
	labels := `[...document.querySelectorAll("details.bar summary .label")].map(e => e.textContent)`
	b.do(t, "timeline",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(srv.URL+"/agents/"+s.CI),
		chromedp.WaitVisible(chromedp.CSS("ol.timeline")),
	)
	bars := get(t, b, "bars", chromedp.Evaluate[[]string](labels))
	want := map[string]string{"ok": "echo ready", "failed": "echo broken >&2; exit 3", "timeout": "sleep 5", "cancelled": "cancel"}
	for status, name := range want {
		if !hasBar(bars, status, name) {
			t.Errorf("the timeline of %s has no %s bar for %q: %q", s.CI, status, name, bars)
		}
	}
	b.do(t, "crashy timeline",
		chromedp.Navigate(srv.URL+"/agents/"+s.Crashy),
		chromedp.WaitVisible(chromedp.CSS("ol.timeline")),
	)
	crashyBars := get(t, b, "bars", chromedp.Evaluate[[]string](labels))
	if !hasBar(crashyBars, "interrupted", "echo ready") {
		t.Errorf("the timeline of %s has no interrupted bar: %q", s.Crashy, crashyBars)
	}
	// The tool calls: a row each, with its hooks, the one a dying process
	// cut short interrupted.
	b.do(t, "tools timeline",
		chromedp.Navigate(srv.URL+"/agents/"+s.Tools),
		chromedp.WaitVisible(chromedp.CSS("ol.timeline")),
	)
	toolBars := get(t, b, "bars", chromedp.Evaluate[[]string](labels))
	for _, want := range [][2]string{{"deny", "guard-rm"}, {"ok", "lint"}, {"ok", fixture.ApproveNotes}, {"interrupted", fixture.AllowReads}} {
		if !hasBar(toolBars, want[0], want[1]) {
			t.Errorf("the timeline of %s has no %s bar for %q: %q", s.Tools, want[0], want[1], toolBars)
		}
	}
	kinds := get(t, b, "tool rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll(".run h2 .kind")].map(e => e.textContent)`))
	if want := []string{"restore (resume)", "tool Bash", "tool Read", "tool Write", "tool Edit"}; !slices.Equal(kinds, want) {
		t.Errorf("the rows of %s are %q, want %q", s.Tools, kinds, want)
	}
	// A click opens a hook's details: its exit code and output.
	b.do(t, "open a hook",
		chromedp.Navigate(srv.URL+"/agents/"+s.CI),
		chromedp.WaitVisible(chromedp.CSS("ol.timeline")),
	)
	// The time axis: the startup restore's SessionStart hooks ran at once,
	// so their bars overlap on screen.
	overlap := get(t, b, "overlapping bars", chromedp.Evaluate[bool](`(() => {
		const run = document.getElementById("run-`+s.CIStart.ID+`");
		const fills = [...run.querySelector(".hookrun").querySelectorAll(".fill")].map(e => e.getBoundingClientRect());
		return fills.length > 1 && fills.some((a, i) => fills.some((b, j) => i != j && a.left < b.right && b.left < a.right));
	})()`))
	if !overlap {
		t.Error("the parallel SessionStart hooks of the startup restore do not overlap on the time axis")
	}
	b.do(t, "click a hook", chromedp.Click(chromedp.CSS(`details.bar.failed > summary`)))
	exit := get(t, b, "hook details", chromedp.Text(chromedp.CSS(`details.bar[open] .hookinfo`)))
	// Its own record, as text: its command, where it came from, status,
	// exit code, duration, stderr and its own context; not the run's list
	// of hooks as JSON.
	for _, want := range []string{"command", "echo broken >&2; exit 3", "configured in", "fixture", "status", "failed",
		"exit code", "3", "duration", "stderr", "broken", "its context", "none"} {
		if !strings.Contains(exit, want) {
			t.Errorf("the failed hook's details lack %q: %q", want, exit)
		}
	}
	if strings.Contains(exit, `\u003e`) || strings.Contains(exit, "input") || strings.Contains(exit, "echo ready") {
		t.Errorf("the failed hook's details show more than its own record: %q", exit)
	}

	// The search box of any page finds the answer, and its hit opens the
	// message, rendered from Markdown with its link disarmed and its code
	// highlighted.
	for _, width := range []int64{1280, 390} {
		b.do(t, "search from the agents page",
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(srv.URL+"/agents"),
			chromedp.WaitVisible(chromedp.CSS(`form.searchbox input[name="q"]`)),
			chromedp.SendKeys(chromedp.CSS(`form.searchbox input[name="q"]`), "zanzibar\n"),
			chromedp.WaitVisible(chromedp.CSS(`ol.hits li a`)),
		)
		marked := get(t, b, "marked word", chromedp.Text(chromedp.CSS(`ol.hits mark`)))
		if marked != "zanzibar" {
			t.Errorf("at %d px the hit marks %q, want zanzibar", width, marked)
		}
		b.do(t, "open the hit",
			chromedp.Click(chromedp.CSS(`ol.hits li a`)),
			chromedp.WaitVisible(chromedp.CSS(`.md strong`)),
		)
		hash := get(t, b, "hit's anchor", chromedp.Evaluate[string](`location.hash`))
		if !strings.HasPrefix(hash, "#m-") {
			t.Errorf("the hit opened %q, not a message's anchor", hash)
		}
		dangerous := get(t, b, "javascript links", chromedp.Evaluate[int64](`document.querySelectorAll('a[href^="javascript"]').length`))
		highlighted := get(t, b, "highlighted code", chromedp.Evaluate[int64](`document.querySelectorAll('.md pre.chroma span.kd').length`))
		text := get(t, b, "link text", chromedp.Text(chromedp.CSS(`.md`)))
		if dangerous != 0 || highlighted == 0 || !strings.Contains(text, "run this") {
			t.Errorf("at %d px the answer has %d javascript: links, %d highlighted keywords, text %q", width, dangerous, highlighted, text)
		}
	}
	// A tool call folds its result and its hooks' decision: a click shows
	// them.
	b.do(t, "a folded call",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(srv.URL+"/sessions/"+s.ToolsWork),
		chromedp.WaitVisible(chromedp.CSS(`details.block.call > summary`)),
		chromedp.Click(chromedp.CSS(`details.block.call > summary`)),
		chromedp.WaitVisible(chromedp.CSS(`details.block.call[open] .result`)),
	)
	decision := get(t, b, "the call's decision", chromedp.Text(chromedp.CSS(`details.block.call[open] .decided`)))
	if !strings.Contains(decision, "Decided") {
		t.Errorf("the opened call says %q, not how it was decided", decision)
	}

	// A subagent's turn under the call that started it: a click on the
	// call shows it, its answer rendered.
	b.do(t, "a subagent under its call",
		chromedp.Navigate(srv.URL+"/sessions/"+nested),
		chromedp.WaitVisible(chromedp.CSS(`details.block:has(details.subagent) > summary`)),
		chromedp.Click(chromedp.CSS(`details.block:has(details.subagent) > summary`)),
		chromedp.WaitVisible(chromedp.CSS(`details.block[open] details.subagent ol.nested .md strong`)),
	)

	// A fork against its parent: its copies above the fork point.
	b.do(t, "a fork",
		chromedp.Navigate(srv.URL+"/sessions/"+s.Demo.Fork.To),
		chromedp.WaitVisible(chromedp.CSS(`li.forkpoint a`)),
	)
	if n := get(t, b, "copied messages", chromedp.Evaluate[int64](`document.querySelectorAll("li.msg.shared").length`)); n == 0 {
		t.Error("the fork's page marks no message as its parent's")
	}

	// The sessions list, two a page: next, then previous, with their
	// position; the failed-hooks filter keeps the session hooks failed on.
	position := `document.querySelector("p.count").textContent`
	b.do(t, "sessions pages",
		chromedp.EmulateViewport(390, 900),
		chromedp.Navigate(srv.URL+"/sessions?limit=2"),
		chromedp.WaitVisible(chromedp.CSS(`nav.pager a[rel="next"]`)),
		chromedp.Click(chromedp.CSS(`nav.pager a[rel="next"]`)),
		chromedp.WaitVisible(chromedp.CSS(`nav.pager a[rel="prev"]`)),
	)
	if at := get(t, b, "second page", chromedp.Evaluate[string](position)); !strings.HasPrefix(at, "3–4 of ") {
		t.Errorf("the second page of two says %q", at)
	}
	b.do(t, "previous page", chromedp.Click(chromedp.CSS(`nav.pager a[rel="prev"]`)), chromedp.WaitNotPresent(chromedp.CSS(`nav.pager a[rel="prev"]`)))
	if at := get(t, b, "first page", chromedp.Evaluate[string](position)); !strings.HasPrefix(at, "1–2 of ") {
		t.Errorf("the page before the second says %q", at)
	}
	b.do(t, "failed hooks filter",
		chromedp.Click(chromedp.CSS(`input[name="failed"]`)),
		chromedp.Click(chromedp.CSS(`form.filters button`)),
		chromedp.WaitVisible(chromedp.CSS(`form.filters a`)), // "clear", on a filtered page only
	)
	listed := get(t, b, "filtered sessions", chromedp.Evaluate[[]string](`[...document.querySelectorAll("ul.sessions a.id")].map(e => e.textContent)`))
	if !slices.Contains(listed, s.Work) {
		t.Errorf("the failed-hooks filter lists %q, without %s", listed, s.Work)
	}
	// The events page, two a page, newest first: its last page is the
	// two oldest events, and the one before it the next two; oldest
	// first, its next page the same two.
	evs := testkit.Events(t, s.Engine.Store())
	rows := `[...document.querySelectorAll("ol.events > li")].map(e => e.id)`
	b.do(t, "events pages",
		chromedp.Navigate(srv.URL+"/events?limit=2"),
		chromedp.WaitVisible(chromedp.CSS(`nav.pager a[rel="next"]`)),
		chromedp.Click(chromedp.Search(`//nav[@class="pager"]/a[.="Last"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`nav.pager a[rel="next"]`)),
	)
	if ids := get(t, b, "the last page", chromedp.Evaluate[[]string](rows)); !slices.Equal(ids, []string{"p-2", "p-1"}) {
		t.Errorf("the last page of events, newest first, shows %q, want p-2 and p-1", ids)
	}
	if at := get(t, b, "the last page's position", chromedp.Evaluate[string](position)); !strings.HasPrefix(at, fmt.Sprintf("%d–%d of ", len(evs)-1, len(evs))) {
		t.Errorf("the last page of %d events says %q", len(evs), at)
	}
	b.do(t, "the page before the last",
		chromedp.Click(chromedp.CSS(`nav.pager a[rel="prev"]`)),
		chromedp.WaitVisible(chromedp.CSS(`nav.pager a[rel="next"]`)),
	)
	if ids := get(t, b, "the page before the last", chromedp.Evaluate[[]string](rows)); !slices.Equal(ids, []string{"p-4", "p-3"}) {
		t.Errorf("the page before the last, newest first, shows %q, want p-4 and p-3", ids)
	}
	b.do(t, "events oldest first",
		chromedp.Click(chromedp.Search(`//p[@class="count"]/a[.="oldest first"]`)),
		chromedp.WaitVisible(chromedp.CSS(`li#p-1`)),
		chromedp.Click(chromedp.CSS(`nav.pager a[rel="next"]`)),
		chromedp.WaitVisible(chromedp.CSS(`li#p-3`)),
	)
	if ids := get(t, b, "the second page, oldest first", chromedp.Evaluate[[]string](rows)); !slices.Equal(ids, []string{"p-3", "p-4"}) {
		t.Errorf("the second page of events, oldest first, shows %q, want p-3 and p-4", ids)
	}
	if at := get(t, b, "the second page's position", chromedp.Evaluate[string](position)); !strings.HasPrefix(at, fmt.Sprintf("3–4 of %d event(s), oldest first", len(evs))) {
		t.Errorf("the second page of events, oldest first, says %q", at)
	}
	// The events page's type filter.
	b.do(t, "events filter",
		chromedp.Navigate(srv.URL+"/events"),
		chromedp.WaitVisible(chromedp.CSS(`form.filters input[name="type"]`)),
		chromedp.SendKeys(chromedp.CSS(`form.filters input[name="type"]`), "SessionStartHookRan\n"),
		chromedp.WaitVisible(chromedp.CSS(`form.filters input[name="type"][value="SessionStartHookRan"]`)),
	)
	types := get(t, b, "event types", chromedp.Evaluate[[]string](`[...document.querySelectorAll("ol.events summary strong")].map(e => e.textContent)`))
	if len(types) == 0 || slices.ContainsFunc(types, func(ty string) bool { return ty != "SessionStartHookRan" }) {
		t.Errorf("the type filter lists %q", types)
	}

	// The health page: the failing hook first among those that failed,
	// its failed runs a click away, each linked to its event.
	b.do(t, "health page",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(srv.URL+"/hooks"),
		chromedp.WaitVisible(chromedp.CSS(`table.health`)),
		chromedp.Click(chromedp.CSS(`table.health details.failed > summary`)),
		chromedp.WaitVisible(chromedp.CSS(`table.health details.failed[open] li a`)),
	)
	sparks := get(t, b, "sparklines", chromedp.Evaluate[int64](`document.querySelectorAll('svg.spark rect.runs[height]:not([height="0"])').length`))
	if sparks == 0 {
		t.Error("the health page draws no run in its sparklines")
	}
	b.do(t, "open a failed run",
		chromedp.Click(chromedp.CSS(`table.health details.failed[open] li a`)),
		chromedp.WaitVisible(chromedp.CSS(`ol.events`)),
	)
	if hash := get(t, b, "failed run's anchor", chromedp.Evaluate[string](`location.hash`)); !strings.HasPrefix(hash, "#p-") {
		t.Errorf("a failed run opened %q, not an event", hash)
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors on search, the answer or the health page: %q", errs)
	}

	// A live append: the page shows it without a reload.
	b.do(t, "open the session",
		chromedp.Navigate(srv.URL+"/sessions/"+s.Work),
		chromedp.WaitVisible(chromedp.CSS("ol.chat")),
	)
	get(t, b, "mark the page", chromedp.Evaluate[bool](`window.notReloaded = true`))
	waitLive(t, b)
	s.Append(t, s.Work, "appended while the page is open")
	b.do(t, "live append",
		chromedp.WaitVisible(chromedp.Search(`//div[@class="text"][contains(., "appended while the page is open")]`)),
	)
	still := get(t, b, "reload check", chromedp.Evaluate[bool](`window.notReloaded === true`))
	if !still {
		t.Error("the page reloaded to show the append")
	}
	if errs := b.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors after the live append: %q", errs)
	}
}

// waitLive waits until the page's live connection is open.
func waitLive(t *testing.T, b *browser) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		status := get(t, b, "live status", chromedp.TextContent(chromedp.CSS(`#live-status`)))
		if strings.HasPrefix(status, "live") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(errors.New("the page never connected to the live endpoint"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hasBar reports whether a bar's label shows status and name.
func hasBar(labels []string, status, name string) bool {
	for _, l := range labels {
		if strings.HasPrefix(l, status+" "+name+" · ") {
			return true
		}
	}
	return false
}

// subagentTurn makes, in e, a session whose Agent call started a subagent
// that answered in Markdown, and returns the session's id.
func subagentTurn(t *testing.T, e *reprise.Engine) string {
	t.Helper()
	ctx := context.Background()
	allow := `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'`
	if err := e.Hooks().Add(hookexec.Hook{Event: hookexec.PreToolUse, Name: "allow-agents", Source: "fixture",
		Body: hookexec.Command{Line: allow}}); err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "delegating", t.TempDir(), "find the config")
	a := testkit.Agent(t, e, "delegator")
	if _, err := a.Start(ctx, "delegating"); err != nil {
		t.Fatal(err)
	}
	call := reprise.ToolCall{ID: "toolu_agent1", Name: "Agent", Input: json.RawMessage(`{"description": "look", "prompt": "find it"}`), AddToolUse: true}
	if d, err := a.PreToolUse(ctx, call); err != nil || d.Decision != hookexec.Allow {
		t.Fatalf("the Agent call: %+v, %v", d, err)
	}
	sub, err := a.StartSubagent(ctx, reprise.SubagentCall{ToolUseID: "toolu_agent1", Description: "look", Prompt: "find it"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, sub.Current(), reprise.Text("assistant", "It is in **config.yaml**.")); err != nil {
		t.Fatal(err)
	}
	return "delegating"
}
